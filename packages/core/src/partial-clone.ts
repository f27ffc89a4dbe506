/**
 * The ledger in a partial clone (`git clone --filter=blob:none`): the notes commits and trees come with a fetch, their
 * blobs do not, and git fetches each missing blob when it is read, with a `git fetch` of its own, one after another,
 * and without a word (rt48 f03: 120 notes, 121 fetches, 12 s on a local remote; a remote that stalls stalls the
 * commit in silence). Before the ledger is read in bulk, its missing objects are listed in one git process and
 * fetched in one batch, with one line saying so.
 *
 * An ordinary clone pays one read of its config file per ledger (no git process): only a config that names a
 * promisor remote is asked anything. The commits whose objects are known to be all here are remembered in the cache,
 * so a later run lists only what a newer ledger brings.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { replaceCacheFile } from './cache-file.js';
import { DelegateGitError } from './errors.js';
import { gitRecords, gitTry } from './git.js';
import { isObjectId } from './notes-format.js';

/** The notes commits remembered as whole: enough to cover the ledger, its tracking ref and a few tips of each. */
const REMEMBERED = 16;
/**
 * A clone filtered by trees (`--filter=tree:0`) lacks the notes trees too: the first round fetches them, the next
 * their blobs (git's own fetch of a missing object asks for no blobs beyond it, as here).
 */
const MAX_ROUNDS = 3;

interface Where {
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** The repository's common git dir: its config and the cache are there. */
  commonDir: string;
  /** Where the line announcing a fetch goes (a line ending in a newline). */
  say?: (line: string) => void;
}

export class PartialClone {
  private readonly done = new Map<string, Promise<void>>();

  private constructor(
    private readonly where: Where,
    /** The remotes git fetches a missing object from, in the order git tries them. */
    readonly remotes: readonly string[],
  ) {}

  /**
   * The repository's promisor remotes, or null when it is no partial clone. Only a config file that mentions one
   * (`remote.<name>.promisor`, `extensions.partialClone`; both are written by `git clone --filter` into the
   * repository's own config) costs a git process.
   */
  static async of(where: Where): Promise<PartialClone | null> {
    let config: string;
    try {
      config = readFileSync(path.join(where.commonDir, 'config'), 'utf8');
    } catch {
      return null;
    }
    if (!/promisor|partialclone/i.test(config)) return null;
    const listed = await gitTry(
      ['config', '--get-regexp', '^(extensions\\.partialclone|remote\\..*\\.promisor)$'],
      where,
    );
    const remotes: string[] = [];
    for (const line of listed.stdout.toString('utf8').split('\n')) {
      const space = line.indexOf(' ');
      const [key, value] = [line.slice(0, space), line.slice(space + 1)];
      if (key === 'extensions.partialclone' && value !== '') remotes.unshift(value);
      else if (/^remote\..+\.promisor$/.test(key) && /^(true|yes|on|1)$/i.test(value))
        remotes.push(key.slice('remote.'.length, -'.promisor'.length));
    }
    const unique = [...new Set(remotes)];
    return unique.length === 0 ? null : new PartialClone(where, unique);
  }

  /**
   * Makes every object reachable from the notes commit `at` (and its history) local, fetching what is missing in
   * one batch; once per `at` per run. A fetch that fails is a LEDGER error: the ledger cannot be read here.
   */
  fetchMissing(at: string): Promise<void> {
    let done = this.done.get(at);
    if (!done) {
      done = this.fetchRounds(at);
      this.done.set(at, done);
    }
    return done;
  }

  private async fetchRounds(at: string): Promise<void> {
    const known = this.remembered();
    let before = '';
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const { commit, missing } = await this.missingFrom(at, known);
      if (missing.length === 0) {
        if (commit !== null) await this.remember(commit, known);
        return;
      }
      // The remote did not have them (or gave something else): git's own fetch on read says what is wrong.
      const key = missing.join('\n');
      if (key === before) return;
      before = key;
      await this.fetch(missing);
    }
  }

  /**
   * The objects reachable from `at` and not from a commit known whole, that are not here: one `rev-list`, which lists
   * them without fetching (`--missing=print`). `commit`: `at`'s id when anything was listed at all.
   */
  private async missingFrom(
    at: string,
    known: readonly string[],
  ): Promise<{ commit: string | null; missing: string[] }> {
    // --ignore-missing: a remembered commit that is gone (a rewritten ledger, pruned) only means more is listed.
    const args = ['rev-list', '--objects', '--missing=print', '--ignore-missing', at];
    if (known.length > 0) args.push('--not', ...known);
    let commit: string | null = null;
    const missing: string[] = [];
    for await (const line of gitRecords(args, this.where)) {
      if (line.startsWith('?')) missing.push(line.slice(1));
      else commit ??= line.split(' ')[0] || null;
    }
    return { commit, missing };
  }

  private async fetch(missing: readonly string[]): Promise<void> {
    const failures: string[] = [];
    for (const remote of this.remotes) {
      // Said before the wait: a slow or stalled remote is then seen for what it is.
      this.where.say?.(
        `delegate-git: fetching ${missing.length} ledger object${missing.length === 1 ? '' : 's'} from ${remote} (a partial clone)…\n`,
      );
      // What git runs for one missing object (promisor-remote.c), for all of them at once: the ids on stdin.
      const args = [
        '-c',
        'fetch.negotiationAlgorithm=noop',
        'fetch',
        remote,
        '--no-tags',
        '--no-write-fetch-head',
        '--recurse-submodules=no',
        '--no-auto-maintenance',
        '--filter=blob:none',
        '--stdin',
      ];
      const result = await gitTry(args, { ...this.where, input: `${missing.join('\n')}\n` });
      if (result.code === 0) return;
      failures.push(`${remote}: ${firstLines(result.stderr)} (exit code ${result.code})`);
    }
    throw new DelegateGitError(
      'LEDGER',
      `this repository is a partial clone (git clone --filter), which left ${missing.length} object${missing.length === 1 ? '' : 's'} of the ledger out, and fetching them from ${this.remotes.join(', ')} failed (${failures.join('; ')}). ` +
        'The ledger cannot be read without them: run the command again where the remote can be reached (once fetched, they stay here).',
    );
  }

  private get file(): string {
    return path.join(this.where.commonDir, 'delegate-git', 'cache', 'ledger-objects-here');
  }

  /** Notes commits whose every object was found here by an earlier run, newest first. */
  private remembered(): string[] {
    try {
      return readFileSync(this.file, 'utf8').split('\n').filter(isObjectId);
    } catch {
      return [];
    }
  }

  private async remember(commit: string, known: readonly string[]): Promise<void> {
    const kept = [commit, ...known.filter((id) => id !== commit)].slice(0, REMEMBERED);
    await replaceCacheFile(this.file, `${kept.join('\n')}\n`);
  }
}

function firstLines(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  return lines.length === 0 ? 'no message' : lines.slice(0, 2).join(' ');
}
