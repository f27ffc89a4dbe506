/**
 * The delegation unit: the one input the architect (a model) writes. Everything here is model input, so the
 * schema is strict: a field the unit does not define is refused rather than ignored, and the fields that belong
 * to the operator (where the worker lives, what may run unattended, where files may land) are refused with a
 * message that says where they are set instead. An ignored field would let a unit believe it changed something
 * it did not; an honoured one would let a model redirect the worker or widen its own permissions.
 */
import fs from 'node:fs/promises';
import {
  encodingProblem,
  MAX_JSON_DEPTH,
  nestsDeeperThan,
  parseStrictJson,
} from '@delegate-git/core/canonical-json';
import { DelegateGitError } from '@delegate-git/core/errors';
import { shownLine } from '@delegate-git/core/shown-path';
import * as z from 'zod/mini';

/** Operator settings a unit might try to carry, and the setting that really controls each. */
const OPERATOR_FIELDS: Readonly<Record<string, string>> = {
  endpoint: 'worker.endpoint',
  localEndpoint: 'worker.endpoint',
  baseUrl: 'worker.endpoint',
  model: 'worker.model',
  apiKey: 'worker.apiKeyEnv',
  apiKeyEnv: 'worker.apiKeyEnv',
  timeoutMs: 'worker.timeoutMs',
  temperature: 'worker.temperature',
  maxTokens: 'worker.maxTokens',
  approval: 'verification.approval',
  verificationApproval: 'verification.approval',
  verificationPolicy: 'verification.approval',
  allowlist: 'verification.allowlist',
  verificationAllowlist: 'verification.allowlist',
  verificationTimeoutMs: 'verification.timeoutMs',
  coherenceVerification: 'verification.coherence',
  coherence: 'verification.coherence',
  emitAllowlist: 'emitAllowlist',
  unitScope: 'unitScope',
  retryContext: 'retryContext',
  redactVerification: 'verification.redact',
};

/** Fields of the original plugin's tool that became a reviewer's own act in delegate-git. */
const ATTESTATION_FIELDS = new Set(['attestTargets', 'attestEvidence', 'attestOperator']);

const requiredText = (what: string) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? 'is required' : `must be ${what}`) })
    .check(z.refine((value) => value.trim() !== '', { error: 'must not be empty' }));

// Blank entries are refused rather than dropped: a blank target is a mistake the unit's author should see, not a
// silent narrowing (scope.ts would read a blank-only targetFiles as "nothing may be written").
const pathList = z.array(requiredText('a path string'), { error: 'must be an array of path strings' });

const lineNumber = z
  .int({ error: 'must be a whole line number' })
  .check(z.minimum(1, { error: 'must be 1 or more (lines are numbered from 1)' }));

const contextFile = z
  .strictObject(
    {
      path: requiredText('a path string'),
      startLine: z.optional(lineNumber),
      endLine: z.optional(lineNumber),
    },
    { error: 'must be an object {path, startLine?, endLine?}' },
  )
  .check(
    z.refine(
      (range) =>
        range.startLine === undefined || range.endLine === undefined || range.endLine >= range.startLine,
      { error: 'endLine must not be before startLine', path: ['endLine'] },
    ),
  );

const repeatsError = 'must be a whole number from 1 to 20';

// zod/mini, not full zod: the CLI bundle shares zod's core with the gates, and full zod would add ~400 KB (every
// locale) to the chunk every pre-commit hook loads.
export const unitSchema = z.strictObject(
  {
    taskName: requiredText('a string'),
    instruction: requiredText('a string'),
    // What the worker may write (files, or directories for their subtree). Left out or empty: nothing may be
    // written (scope.ts), unless the operator set unitScope "off"; a missing list never means "anywhere".
    targetFiles: z.optional(pathList),
    contextFiles: z.optional(
      z.array(contextFile, { error: 'must be an array of {path, startLine?, endLine?}' }),
    ),
    contractFiles: z.optional(pathList),
    runVerification: z.optional(
      z.string({ error: 'must be a command string' }).check(
        z.refine((value) => value.trim() !== '', {
          error: 'must not be empty; leave the field out to run no command',
        }),
      ),
    ),
    verificationRepeats: z.optional(
      z
        .int({ error: repeatsError })
        .check(z.minimum(1, { error: repeatsError }), z.maximum(20, { error: repeatsError })),
    ),
    workspaceDir: z.optional(requiredText('a directory path string')),
  },
  { error: 'a unit must be a JSON object' },
);

export type Unit = z.infer<typeof unitSchema>;

const UNIT_FIELDS = Object.keys(unitSchema.shape).join(', ');

function unknownFieldProblem(field: string): string {
  // Own keys only: `__proto__`, `constructor` or `toString` would find Object.prototype's.
  const setting = Object.hasOwn(OPERATOR_FIELDS, field) ? OPERATOR_FIELDS[field] : undefined;
  if (setting !== undefined) {
    return `\`${field}\` is an operator setting; a unit cannot set it. Use \`delegate-git config set ${setting} …\``;
  }
  if (ATTESTATION_FIELDS.has(field)) {
    return `\`${field}\` is not a unit field; attestation is a reviewer's act: use \`delegate-git attest\``;
  }
  return `\`${field}\` is not a unit field (a unit has: ${UNIT_FIELDS})`;
}

function describePath(path: readonly PropertyKey[]): string {
  let text = '';
  for (const segment of path) {
    text +=
      typeof segment === 'number' ? `[${segment}]` : text === '' ? String(segment) : `.${String(segment)}`;
  }
  return text === '' ? '(unit)' : text;
}

function describeIssue(issue: z.core.$ZodIssue): string[] {
  if (issue.code === 'unrecognized_keys') {
    const prefix = issue.path.length === 0 ? '' : `${describePath(issue.path)}.`;
    return issue.keys.map((key) => `${prefix}${key}: ${unknownFieldProblem(key)}`);
  }
  return [`${describePath(issue.path)}: ${issue.message}`];
}

/**
 * The largest unit file read, in bytes. A unit is a contract, not a payload (the files the worker needs go in
 * contextFiles, under the context budget): a 50 MB instruction was read, parsed and sent whole to the worker.
 */
export const MAX_UNIT_BYTES = 4 * 1024 * 1024;

function unitError(message: string, cause?: unknown): DelegateGitError {
  // A parse error quotes the text, and a unit's name is the architect's: nothing invisible reaches the terminal.
  return new DelegateGitError('UNIT', shownLine(message), cause === undefined ? undefined : { cause });
}

function tooLarge(source: string, size: string): DelegateGitError {
  return unitError(
    `unit ${source} is ${size} bytes, over the ${MAX_UNIT_BYTES}-byte limit for a unit; name the files the worker needs in contextFiles rather than pasting them into the unit`,
  );
}

/**
 * The text of the unit file at `file` (absolute), read no further than MAX_UNIT_BYTES, so neither a huge file nor an
 * endless pipe is read whole. `source` names it in messages.
 */
export async function readUnitFile(file: string, source: string): Promise<string> {
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(file, 'r');
    const { size } = await handle.stat();
    if (size > MAX_UNIT_BYTES) throw tooLarge(source, String(size));
    const buffer = Buffer.allocUnsafe(MAX_UNIT_BYTES + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > MAX_UNIT_BYTES) throw tooLarge(source, `more than ${MAX_UNIT_BYTES}`);
    }
    return buffer.toString('utf8', 0, length);
  } catch (error) {
    if (error instanceof DelegateGitError) throw error;
    throw unitError(`Cannot read the unit file ${source} (${(error as NodeJS.ErrnoException).code}).`, error);
  } finally {
    await handle?.close();
  }
}

/**
 * Parses and validates a unit file. `source` names it in messages (usually the file path). Duplicate JSON keys
 * are refused too: which of two `targetFiles` a reader honours must never be a question.
 */
export function parseUnit(text: string, source: string): Unit {
  // Characters are at most as many as the bytes: a text this long is over the limit without counting them.
  if (text.length > MAX_UNIT_BYTES || Buffer.byteLength(text) > MAX_UNIT_BYTES)
    throw tooLarge(source, String(Buffer.byteLength(text)));
  const encoding = encodingProblem(text);
  if (encoding !== null) throw unitError(`unit ${source} ${encoding}`);
  // The depth first (parseStrictJson refuses it before parsing): JSON.parse builds whatever it is given.
  if (!nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    try {
      JSON.parse(text);
    } catch (error) {
      throw unitError(`unit ${source}: not valid JSON (${(error as Error).message}); fix the syntax`, error);
    }
  }
  let raw: unknown;
  try {
    raw = parseStrictJson(text);
  } catch (error) {
    // Valid JSON that is ambiguous (duplicate keys, lone surrogates, unsafe integers), or nested too deep.
    const detail = (error as Error).message.replace(/\. Records must be .*$/s, '');
    throw unitError(`unit ${source}: ${detail}`, error);
  }
  const result = unitSchema.safeParse(raw);
  if (result.success) return result.data;
  const problems = result.error.issues.flatMap(describeIssue);
  throw unitError(`unit ${source}: ${problems.join('; ')}`);
}
