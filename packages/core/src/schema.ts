/**
 * Validation of the small committed JSON files (policy, key files, operator settings) with zod/mini: the full zod
 * build costs about 90 ms to import, more than a whole pre-commit hook may take. zod/mini ships no messages, and
 * its English locale module pulls every locale into a bundle (366 KB), so the few messages users see are here.
 */
import * as z from 'zod/mini';
import { encodingProblem, parseStrictJson, strictJsonProblem } from './canonical-json.js';
import { DelegateGitError, type ErrorCode } from './errors.js';
import { shownLine, shownText, UNPRINTABLE } from './shown-path.js';
import { parseRfc3339Utc } from './statement.js';

type Issue = z.core.$ZodIssue;

/** One readable clause for a validation problem: "expected boolean, received string", "has unknown field(s) "x"". */
export function describeIssue(issue: Issue): string {
  if (issue.message && issue.message !== 'Invalid input') return issue.message;
  switch (issue.code) {
    case 'invalid_type': {
      const input = (issue as { input?: unknown }).input;
      const received =
        input === undefined
          ? 'nothing'
          : input === null
            ? 'null'
            : Array.isArray(input)
              ? 'array'
              : typeof input;
      return `must be ${issue.expected} (got ${received})`;
    }
    case 'unrecognized_keys':
      return `has unknown field(s) ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'too_small':
      return issue.origin === 'array' || issue.origin === 'string'
        ? `must have at least ${issue.minimum} ${issue.origin === 'array' ? 'item(s)' : 'character(s)'}`
        : `must be ${issue.inclusive === false ? 'more than' : 'at least'} ${issue.minimum}`;
    case 'too_big':
      return issue.origin === 'array' || issue.origin === 'string'
        ? `must have at most ${issue.maximum} ${issue.origin === 'array' ? 'item(s)' : 'character(s)'}`
        : `must be ${issue.inclusive === false ? 'less than' : 'at most'} ${issue.maximum}`;
    case 'invalid_format':
      return `is not a valid ${issue.format}`;
    default:
      return 'is not valid';
  }
}

/** Text shown in reports, hook messages and CI summaries: one printable line (shown-path.ts's UNPRINTABLE). */
export const printableLine = z.refine<string>(
  (text) => !UNPRINTABLE.test(text),
  'must be printable text on one line (no control characters)',
);

/** RFC 3339 UTC timestamp, e.g. 2026-01-02T03:04:05Z or with milliseconds. */
export const rfc3339Utc = z
  .string()
  .check(
    z.refine(
      (s) => parseRfc3339Utc(s) !== null,
      'must be an RFC 3339 UTC time like 2026-01-31T12:00:00Z, of a date and time that exist',
    ),
  );

/** Parses JSON text and validates it, turning the first problem into one readable sentence naming the field. */
export function parseWithSchema<T>(
  schema: z.ZodMiniType<T>,
  text: string,
  source: string,
  code: ErrorCode,
  hint: string,
): T {
  let value: unknown;
  try {
    // Strict, as records are: a key given twice (`"roles"` again at the end of a long line) is refused, not the
    // last one taken.
    value = parseStrictJson(text);
  } catch (error) {
    // The parser's message quotes the text, and an invisible character there (a byte order mark an editor wrote)
    // must be seen, and named where it is the cause.
    const encoding = encodingProblem(text);
    const problem = encoding === null ? shownLine(strictJsonProblem(error)) : `it ${encoding}`;
    throw new DelegateGitError(code, `${shownText(source)} is not valid JSON (${problem}). ${hint}`);
  }
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const where = issue.path.length > 0 ? `field ${issue.path.map(String).join('.')}` : 'the file';
  const detail = describeIssue(issue);
  throw new DelegateGitError(code, shownText(`${source}: ${where} ${detail}. ${hint}`));
}
