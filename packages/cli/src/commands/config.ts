import path from 'node:path';
import { DelegateGitError, Repository, withFileLock } from '@delegate-git/core';
import { loadSettings, readRawSettings, settingAt, withSetting } from '@delegate-git/delegate';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';
import { writeFileAtomic } from '../fs.js';

const help = `
Usage: delegate-git config get [<key>]
       delegate-git config set <key> <value>

Operator settings for delegation, local to this clone (.git/delegate-git/config.json, never committed; a
unit can never change them). Values are JSON where they parse as JSON of the type the setting takes, else
strings. Times are in milliseconds, from 1 to 2147483647 (Node's longest timer). Two 'config set' at once
take turns (config.json.lock beside the file), so neither loses the other's setting.
Keys: worker.endpoint (default http://127.0.0.1:1234/v1; no user:password@, name the secret with
worker.apiKeyEnv), worker.model, worker.apiKeyEnv, worker.timeoutMs
(default 300000), worker.idleTimeoutMs (the longest silence once the reply has begun, default 120000),
worker.maxTokens (default 4096), verification.approval (ask | allow | deny), verification.allowlist (programs),
verification.repeats (1..20, default 3; the least a unit gets), verification.timeoutMs (default 30000), coherence (a command or null),
emitAllowlist, unitScope (enforce | off), retryContext (auto | off), signingKey (the key
delegate signs verdicts with; attest takes --key).
Environment overrides: DELEGATE_GIT_WORKER_ENDPOINT (the same rules as worker.endpoint), DELEGATE_GIT_WORKER_MODEL.

Example:
  delegate-git config set worker.endpoint http://127.0.0.1:11434/v1
  delegate-git config set verification.allowlist '["node","npx"]'
  delegate-git config get worker
`;

/** A `config set` holds the lock for milliseconds: a wait this long means its holder is stuck or was killed. */
const CONFIG_LOCK_WAIT_MS = 5_000;

export default {
  summary: 'read or change local operator settings (worker endpoint, approval, ...)',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { positionals } = parseCommandArgs('config', argv, {});
    const [sub, key, value, ...extra] = positionals;
    const repo = await Repository.open(io.cwd, io.env, io.err);
    const file = path.join(repo.stateDir, 'config.json');
    await repo.close();
    if (sub === 'get' && value === undefined) {
      const settings = loadSettings(file, io.env);
      io.out(json(key ? settingAt(settings, key) : settings));
      return 0;
    }
    if (sub === 'set' && key && value !== undefined && extra.length === 0) {
      // Read, changed and written under a lock: two `config set` at once would each write back the file as it was
      // before the other's change, and one setting would be lost though both said it was set.
      const taken = await withFileLock(
        `${file}.lock`,
        { waitMs: CONFIG_LOCK_WAIT_MS, holderDoing: 'is changing the same settings' },
        async () => {
          const { next, taken } = settingFromText(readRawSettings(file), key, value);
          await writeFileAtomic(file, `${JSON.stringify(next, null, 2)}\n`);
          return taken;
        },
      );
      io.out(`${key} = ${JSON.stringify(taken)}\n`);
      return 0;
    }
    if (sub !== 'get' && sub !== 'set')
      throw usageError('config', `Unknown subcommand "${sub ?? ''}": use get or set.`);
    throw new DelegateGitError(
      'USAGE',
      'config set takes a key and a value; config get takes at most a key. See `delegate-git config --help`.',
    );
  },
} satisfies CommandModule;

/**
 * The settings with `key` set to `text`: as JSON where it parses as JSON and the setting takes that, else as the
 * string itself (a model named 2024 or true is a name, not a number). Refused with what the JSON value lacks.
 */
function settingFromText(raw: Record<string, unknown>, key: string, text: string) {
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: a plain string such as a URL or a model name.
  }
  try {
    return { next: withSetting(raw, key, parsed, `setting ${key}`), taken: parsed };
  } catch (error) {
    if (parsed === text) throw error;
    try {
      return { next: withSetting(raw, key, text, `setting ${key}`), taken: text };
    } catch {
      throw error;
    }
  }
}
