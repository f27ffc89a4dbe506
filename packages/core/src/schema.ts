/**
 * Validation of the small committed JSON files (policy, key files, operator settings) with zod/mini: the full zod
 * build costs about 90 ms to import, more than a whole pre-commit hook may take; zod/mini bundled costs ~10 ms.
 */
import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';
import { DelegateGitError, type ErrorCode } from './errors.js';
import { parseRfc3339Utc } from './statement.js';

export { z };

// zod/mini ships without messages ("Invalid input" for every problem); the English ones say what was expected
// ("expected string, received number"). Full zod installs the same locale on import, so this only makes the
// messages independent of whether some other module happened to import it first.
z.config(en());

/** RFC 3339 UTC timestamp, e.g. 2026-01-02T03:04:05Z or with milliseconds. */
export const rfc3339Utc = z.string().check(
  z.regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z$/, 'must be an RFC 3339 UTC time like 2026-01-31T12:00:00Z'),
  z.refine((s) => parseRfc3339Utc(s) !== null, 'is not a real date'),
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
    value = JSON.parse(text);
  } catch (error) {
    throw new DelegateGitError(code, `${source} is not valid JSON (${(error as Error).message}). ${hint}`);
  }
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const where = issue.path.length > 0 ? `field ${issue.path.map(String).join('.')}` : 'the file';
  const detail =
    issue.code === 'unrecognized_keys'
      ? `has unknown field(s) ${(issue as { keys: string[] }).keys.map((k) => JSON.stringify(k)).join(', ')}`
      : issue.message;
  throw new DelegateGitError(code, `${source}: ${where} ${detail}. ${hint}`);
}
