/**
 * Operator settings (DESIGN 3.5): local, never committed, never settable by a unit. Stored at
 * `.git/delegate-git/config.json`; the environment may override the worker endpoint and model.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DelegateGitError } from '@delegate-git/core/errors';
import { describeIssue } from '@delegate-git/core/schema';
import { KEY_NAME } from '@delegate-git/core/signing-key';
import * as z from 'zod/mini';
import { errorCode } from './write-target.js';

/**
 * A time in milliseconds: Node keeps a timer of at most 2^31-1 ms and fires a longer one after 1 ms, which would make
 * a worker "time out" at once, or kill every verification run and sign a false UNIT_FAILED.
 */
const milliseconds = () =>
  z
    .int()
    .check(
      z.positive('must be a whole number of milliseconds, more than 0'),
      z.maximum(
        2_147_483_647,
        'must be at most 2147483647 ms (about 24.8 days), the longest timer Node keeps',
      ),
    );

// Kept in plain text in the state directory, and shown in receipts and by `config get`: a password belongs in the
// environment, where worker.apiKeyEnv names it. One reason for the settings file and the environment's override.
const PASSWORD_IN_ENDPOINT =
  'must not hold a password (user:password@): put the secret in an environment variable and name it with worker.apiKeyEnv';

const settingsSchema = z.strictObject({
  worker: z.prefault(
    z.strictObject({
      endpoint: z._default(
        z.string().check(
          z.refine(isHttpUrl, 'must be an http:// or https:// URL, like http://127.0.0.1:1234/v1'),
          z.refine((text) => !hasPassword(text), PASSWORD_IN_ENDPOINT),
        ),
        'http://127.0.0.1:1234/v1',
      ),
      model: z._default(z.string(), 'local-model'),
      apiKeyEnv: z._default(z.nullable(z.string()), null),
      timeoutMs: z._default(milliseconds(), 300_000),
      // The longest silence once the reply has begun (worker-http.ts, SilenceWatch).
      idleTimeoutMs: z._default(milliseconds(), 120_000),
      maxTokens: z._default(z.int().check(z.positive()), 4096),
    }),
    {},
  ),
  verification: z.prefault(
    z.strictObject({
      approval: z._default(z.enum(['ask', 'allow', 'deny']), 'ask'),
      allowlist: z._default(z.array(z.string()), []),
      repeats: z._default(z.int().check(z.minimum(1), z.maximum(20)), 3),
      timeoutMs: z._default(milliseconds(), 30_000),
    }),
    {},
  ),
  coherence: z._default(z.nullable(z.string().check(z.minLength(1))), null),
  emitAllowlist: z._default(z.array(z.string()), []),
  unitScope: z._default(z.enum(['enforce', 'off']), 'enforce'),
  retryContext: z._default(z.enum(['auto', 'off']), 'auto'),
  signingKey: z._default(
    z.nullable(
      z
        .string()
        .check(
          z.regex(
            KEY_NAME,
            'must be a key name (1 to 64 letters, digits, ".", "_" or "-", starting with a letter or a digit), as `delegate-git keygen` made it',
          ),
        ),
    ),
    null,
  ),
});

export type OperatorSettings = z.infer<typeof settingsSchema>;

function hasPassword(text: string): boolean {
  try {
    return new URL(text).password !== '';
  } catch {
    return false;
  }
}

/** The URL with its password masked, to name it in a message without printing the secret. */
function withoutPassword(text: string): string {
  const url = new URL(text);
  url.password = '***';
  return url.href;
}

function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

const CONFIG_HINT = 'Fix it with `delegate-git config set <key> <value>` (see `delegate-git config --help`).';
/** For a file `config set` cannot read either. */
const UNREADABLE_HINT =
  'Fix it by hand, or delete it to start from the defaults (`delegate-git config set <key> <value>` then writes a new one).';

function parseSettings(value: unknown, source: string, hint = CONFIG_HINT): OperatorSettings {
  const result = settingsSchema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const where = issue.path.length ? issue.path.join('.') : 'the settings';
  const detail = describeIssue(issue);
  throw new DelegateGitError('CONFIG', `${source}: ${where}: ${detail}. ${hint}`);
}

/** Reads the raw settings file (an object), or {} when there is none. */
export function readRawSettings(file: string): Record<string, unknown> {
  const text = settingsText(file);
  if (text === null) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new DelegateGitError(
      'CONFIG',
      `${file} is not valid JSON (${(error as Error).message}). ${UNREADABLE_HINT}`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new DelegateGitError('CONFIG', `${file} must hold a JSON object. ${UNREADABLE_HINT}`);
  }
  return value as Record<string, unknown>;
}

/**
 * The settings file's text, or null when there is none. One that is there but cannot be read (its directory or the
 * file unreadable, a directory in its place) is refused: the defaults in its place would run another endpoint and
 * another approval rule than the operator set, without a word (fc audit f04).
 */
function settingsText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return null;
    throw new DelegateGitError(
      'CONFIG',
      `The operator settings ${file} cannot be read (${(error as Error).message}), so the settings made there are unknown. Check the owner and permissions of the file and of ${path.dirname(file)} (it must be a directory you can read), then run the command again.`,
      { cause: error },
    );
  }
}

export function loadSettings(file: string, env: NodeJS.ProcessEnv = process.env): OperatorSettings {
  const settings = parseSettings(readRawSettings(file), file);
  const endpoint = env.DELEGATE_GIT_WORKER_ENDPOINT;
  if (endpoint && !isHttpUrl(endpoint))
    throw new DelegateGitError(
      'CONFIG',
      `DELEGATE_GIT_WORKER_ENDPOINT (${JSON.stringify(endpoint)}) must be an http:// or https:// URL, like http://127.0.0.1:1234/v1. Fix or unset it.`,
    );
  // The same rule as the file's: the override is printed by `config get` and recorded in receipts as well.
  if (endpoint && hasPassword(endpoint))
    throw new DelegateGitError(
      'CONFIG',
      `DELEGATE_GIT_WORKER_ENDPOINT (${JSON.stringify(withoutPassword(endpoint))}) ${PASSWORD_IN_ENDPOINT}. Fix or unset it.`,
    );
  if (endpoint) settings.worker.endpoint = endpoint;
  if (env.DELEGATE_GIT_WORKER_MODEL) settings.worker.model = env.DELEGATE_GIT_WORKER_MODEL;
  return settings;
}

/** Sets a dotted key in the raw settings and validates the whole result before it is written. */
export function withSetting(raw: Record<string, unknown>, key: string, value: unknown, source: string) {
  const next = structuredClone(raw);
  const parts = key.split('.');
  let node: Record<string, unknown> = next;
  for (const part of parts.slice(0, -1)) {
    const child = node[part];
    if (typeof child !== 'object' || child === null || Array.isArray(child)) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts.at(-1)!] = value;
  parseSettings(
    next,
    source,
    "Nothing was changed; `delegate-git config --help` lists each setting's values.",
  );
  return next;
}

export function settingAt(settings: OperatorSettings, key: string): unknown {
  let node: unknown = settings;
  for (const part of key.split('.')) {
    if (typeof node !== 'object' || node === null || !(part in node)) {
      throw new DelegateGitError(
        'CONFIG',
        `There is no setting "${key}". \`delegate-git config get\` lists them all; \`delegate-git config --help\` says what each does.`,
      );
    }
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}
