import {
  DelegateGitError,
  gitText,
  gitTry,
  LEDGER_REF,
  loadRecordedPaths,
  Repository,
  readNotesDiff,
  refObject,
  shownPath,
  whyNotANote,
} from '@delegate-git/core';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';

const help = `
Usage: delegate-git sync [<remote>] [--json]

Exchanges the ledger with a remote without losing a record: fetches the remote's refs/notes/delegations into
refs/notes/remotes/<remote>/delegations, takes every line it holds into the local ledger (the union of both:
a merge commit when each side has lines the other lacks, a fast-forward only when the remote drops nothing), then
pushes without force. If another clone pushed in between, it fetches, merges and tries again. A remote ledger that
is not a notes commit, or holds entries that are no notes, is refused and nothing of it is taken. Default remote:
origin.

Example:
  delegate-git sync
  git push --atomic origin main refs/notes/delegations   # a branch and its records in one push
`;

const ATTEMPTS = 5;
/**
 * A push status (`git push --porcelain`: "!<TAB>src:dst<TAB>[rejected] (why)") that only a lost race gives: behind the
 * remote, or another push taking the ref between our fetch and the remote's update. Read from git's own status line,
 * never from the remote's messages (a server hook may print anything).
 */
const LOST_RACE =
  /^\[rejected\] \((?:non-fast-forward|fetch first)\)$|^\[remote rejected\] \((?:cannot lock ref|failed to update ref|incorrect old value)/;

export default {
  summary: 'merge the ledger with a remote (fetch, union of both, push without force)',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values, positionals } = parseCommandArgs('sync', argv, { json: { type: 'boolean' } });
    if (positionals.length > 1) throw usageError('sync', 'Name at most one remote.');
    const remote = positionals[0] ?? 'origin';
    const repo = await Repository.open(io.cwd, io.env);
    try {
      const opts = { cwd: repo.cwd, env: repo.env };
      await gitText(['remote', 'get-url', remote], opts).catch(() => {
        throw usageError('sync', `There is no remote named "${remote}".`);
      });
      const tracking = `refs/notes/remotes/${remote}/delegations`;
      for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
        const theirs = await fetchLedger(remote, tracking, opts);
        if (theirs !== null) {
          await refuseForeign(remote, await repo.ledger.tip(), theirs, opts);
          await repo.ledger.takeIn(theirs, `delegate-git: sync with ${remote}`);
        }
        const tip = await repo.ledger.tip();
        if (tip === null) {
          io.out(
            values.json
              ? json({ remote, pushed: false, attempts: attempt })
              : 'Nothing to sync: neither side has a ledger.\n',
          );
          return 0;
        }
        const pushed = await gitTry(['push', '--porcelain', remote, `${tip}:${LEDGER_REF}`], opts);
        if (pushed.code === 0) {
          // Every commit asks which paths the ledger ever recorded. A first sync of a large ledger would leave that
          // to the next commit (reading every note once, seconds); answer it here, where waiting is expected.
          await loadRecordedPaths(repo.ledger, tip, repo.cacheDir).catch(() => undefined);
          io.out(
            values.json
              ? json({ remote, pushed: true, attempts: attempt, tip })
              : `Ledger synced with ${remote}.\n`,
          );
          return 0;
        }
        // "[remote rejected]" by a server hook is final; only a lost race is worth another round.
        if (!LOST_RACE.test(pushStatus(pushed.stdout.toString('utf8')))) {
          io.err(`delegate-git sync: the push to ${remote} was refused:\n${pushed.stderr}`);
          return 1;
        }
        // Apart, so that clones that lost together do not meet again at once.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 50 * attempt));
      }
      io.err(
        `delegate-git sync: ${remote} kept moving; gave up after ${ATTEMPTS} attempts. Run sync again.\n`,
      );
      return 1;
    } finally {
      await repo.close();
    }
  },
} satisfies CommandModule;

type GitOptions = { cwd: string; env?: NodeJS.ProcessEnv };

const LOCKED = /cannot lock ref|Unable to create '[^']*\.lock'/i;

/** Fetches the remote's ledger into `tracking`: its notes commit, or null when the remote has none. */
async function fetchLedger(remote: string, tracking: string, opts: GitOptions): Promise<string | null> {
  let fetched = await gitTry(['fetch', '--quiet', remote, `+${LEDGER_REF}:${tracking}`], opts);
  // Another sync (or fetch) holding the tracking ref's lock: the race is git's, and a moment later it is gone.
  for (let attempt = 1; fetched.code !== 0 && LOCKED.test(fetched.stderr) && attempt < ATTEMPTS; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 50 * attempt));
    fetched = await gitTry(['fetch', '--quiet', remote, `+${LEDGER_REF}:${tracking}`], opts);
  }
  if (fetched.code !== 0) {
    if (/couldn't find remote ref/i.test(fetched.stderr)) return null;
    if (LOCKED.test(fetched.stderr))
      throw new DelegateGitError(
        'GIT',
        `could not update ${tracking}: another sync or fetch in this repository kept it locked (${fetched.stderr
          .split('\n')
          .find((line) => LOCKED.test(line))
          ?.trim()}). Nothing was lost; run sync again.`,
      );
    throw new DelegateGitError(
      'GIT',
      `could not fetch the ledger from ${remote}: ${fetched.stderr.trim().replace(/\s*\n\s*/g, ' ')} ` +
        `Check that ${remote} (\`git remote get-url ${remote}\`) can be reached and read, then run sync again.`,
    );
  }
  const named = await refObject(tracking, opts);
  if (named?.type === 'commit') return named.oid;
  // Read as it is, as the gates read a ledger ref (a tag of a notes commit is damage there). Not kept: a tracking ref that names no commit would fail every later notes command that reads it.
  await gitTry(['update-ref', '-d', tracking], opts);
  throw new DelegateGitError(
    'LEDGER',
    `the ledger on ${remote} is damaged: its ${LEDGER_REF} names a ${named?.type ?? 'missing object'}, not a notes ` +
      'commit, so sync took nothing from it and pushed nothing. Whoever administers that remote should point the ' +
      'ref back at the last good notes commit (a clone that synced before has it), then run sync again.',
  );
}

/** Refuses a remote ledger that adds entries that are no notes (git reads around them; the gates refuse them). */
async function refuseForeign(
  remote: string,
  ours: string | null,
  theirs: string,
  opts: GitOptions,
): Promise<void> {
  const { foreign } = await readNotesDiff(opts, ours, theirs);
  if (foreign.length === 0) return;
  const named = foreign
    .slice(0, 3)
    .map((e) => `${shownPath(e.path)} (${whyNotANote(e)})`)
    .join('; ');
  const more = foreign.length > 3 ? ` and ${foreign.length - 3} more` : '';
  throw new DelegateGitError(
    'LEDGER',
    `the ledger on ${remote} (${theirs.slice(0, 12)}) holds entries that are no notes: ${named}${more}. ` +
      'A ledger holds only notes, so sync took nothing from it and pushed nothing. If that ref is not a ledger at ' +
      'all (another branch pushed there), or someone added these by hand, have it restored to a notes commit ' +
      'without them, then run sync again.',
  );
}

/** The status of the one ref pushed, from `git push --porcelain`'s stdout ("<flag>\t<from>:<to>\t<summary>"). */
function pushStatus(porcelain: string): string {
  const line = porcelain.split('\n').find((l) => l.includes(`:${LEDGER_REF}\t`));
  return line?.split('\t')[2]?.trim() ?? '';
}
