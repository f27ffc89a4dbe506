import {
  DelegateGitError,
  gitText,
  gitTry,
  LEDGER_REF,
  loadRecordedPaths,
  Repository,
} from '@delegate-git/core';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';
import { hooksNotRun, hooksWarning } from '../hooks-in-effect.js';
import {
  fetchKeepingLedger,
  sayingWhenSlow,
  setLedgerRefspec,
  takeInRemoteLedger,
  trackingRef,
} from '../ledger-intake.js';
import { restoreBeforeWriting } from '../ledger-restore.js';

const help = `
Usage: delegate-git sync [<remote>] [--json]

Exchanges the ledger with a remote without losing a record: fetches the remote's refs/notes/delegations into
refs/notes/remotes/<remote>/delegations, takes every line it holds into the local ledger (the union of both:
a merge commit when each side has lines the other lacks, a fast-forward only when the remote drops nothing), then
pushes without force. If another clone pushed in between, it fetches, merges and tries again. A remote ledger that
is not a notes commit, holds entries that are no notes, or would add lines that are no valid records under the
policy and keys committed at HEAD, at the remote's default branch as last fetched (what a server with the hook
judges them by) and, syncing another remote than origin, at origin's (the lines go there at the next sync; it must
be known here: \`git remote set-head origin --auto\`), is refused and nothing of it is taken. The remote's fetch
refspecs and mirror setting do not apply to sync's fetch and push. Default remote: origin.

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

const HOOK_DECLINED = /^\[remote rejected\] \(pre-receive hook declined\)/;

/** Whether the remote's ledger is no longer `fetched` (null: it had none); false when the remote cannot be asked. */
async function remoteMoved(
  remote: string,
  fetched: string | null,
  opts: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<boolean> {
  const listed = await gitTry(['ls-remote', remote, LEDGER_REF], opts);
  if (listed.code !== 0) return false;
  const now = listed.stdout.toString('utf8').split(/\s/)[0] || null;
  return now !== fetched;
}

export default {
  summary: 'merge the ledger with a remote (fetch, union of both, push without force)',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values, positionals } = parseCommandArgs('sync', argv, { json: { type: 'boolean' } });
    if (positionals.length > 1) throw usageError('sync', 'Name at most one remote.');
    const remote = positionals[0] ?? 'origin';
    const repo = await Repository.open(io.cwd, io.env, io.err);
    try {
      const opts = { cwd: repo.cwd, env: repo.env };
      await gitText(['remote', 'get-url', remote], opts).catch(() => {
        throw usageError('sync', `There is no remote named "${remote}".`);
      });
      const tracking = trackingRef(remote);
      // A lock a stopped git left, or a ref file a crash cut short, is named now, not after every retry.
      await repo.ledger.assertWritable();
      await restoreBeforeWriting(repo, 'sync', io.err, 'delegate-git sync: warning: ');
      io.err(hooksWarning('sync', await hooksNotRun(repo)));
      for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
        const theirs = await fetchKeepingLedger(remote, tracking, io, opts);
        // A remote added after init: from now on a plain fetch or pull brings its ledger too, as init set for the
        // others. Only once sync's own fetch into the tracking ref worked: a refspec git cannot follow fails every fetch.
        if (attempt === 1 && (await setLedgerRefspec(remote, opts)).added)
          io.err(
            `delegate-git sync: set remote.${remote}.fetch to bring ${remote}'s ledger into ${tracking}, so that \`git fetch\` and \`git pull\` take it in from now on.\n`,
          );
        if (theirs !== null) {
          const ours = await repo.ledger.tip();
          await sayingWhenSlow(
            io,
            `delegate-git sync: checking every record ${remote}'s ledger adds before taking it in...\n`,
            takeInRemoteLedger(repo, remote, ours, theirs, `delegate-git: sync with ${remote}`),
          );
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
        const pushed = await gitTry(['push', '--porcelain', remote, `${tip}:${LEDGER_REF}`], {
          ...opts,
          env: pushEnvironment(remote, opts.env),
        });
        if (pushed.code === 0) {
          // What git would have done but for pushEnvironment's negative refspec: the tracking ref now names what the
          // remote holds. Only a cache of the remote's tip, so a failure costs nothing but a fetch next time.
          await gitTry(['update-ref', tracking, tip], opts);
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
        const status = pushStatus(pushed.stdout.toString('utf8'));
        // No status for the ref: the remote was never reached, or went away, so nothing was refused.
        if (status === '')
          throw new DelegateGitError(
            'GIT',
            `could not push the ledger to ${remote}: ${pushed.stderr.trim().replace(/\s*\n\s*/g, ' ')} The local ledger holds every ` +
              `record, taken in or made here. Check that ${remote} (\`git remote get-url --push ${remote}\`) can be ` +
              'reached and written, then run sync again.',
          );
        // "[remote rejected]" by a server hook is final; only a lost race is worth another round. The server's hook
        // refuses a push whose old id the ledger no longer holds (push-claims.ts): declined while the remote's ledger
        // moved since this round's fetch, the push lost a race, whatever the hook said.
        if (
          !LOST_RACE.test(status) &&
          !(HOOK_DECLINED.test(status) && (await remoteMoved(remote, theirs, opts)))
        ) {
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

/**
 * The environment of sync's push, so that the remote's configuration does not change it:
 * - `remote.<name>.mirror` off: git refuses any refspec for a mirror remote (and would force the push);
 * - the ledger left out of the remote's fetch refspecs: after a push git moves the local ref a fetch refspec maps the
 *   pushed ref to (`+refs/notes/*:refs/notes/*` maps the ledger onto itself) to what was pushed, without
 *   compare-and-swap, undoing any record written here while the push ran. A negative refspec excludes it.
 * Given as GIT_CONFIG_* entries after any the caller set (not `-c`, which a remote name holding "=" would break). A git
 * older than 2.31 ignores them, and pushes as it did before; negative refspecs (2.29) are older than that.
 */
function pushEnvironment(remote: string, env: NodeJS.ProcessEnv | undefined): NodeJS.ProcessEnv {
  const base = env ?? process.env;
  const count = Number.parseInt(base.GIT_CONFIG_COUNT ?? '0', 10) || 0;
  return {
    ...base,
    GIT_CONFIG_COUNT: String(count + 2),
    [`GIT_CONFIG_KEY_${count}`]: `remote.${remote}.mirror`,
    [`GIT_CONFIG_VALUE_${count}`]: 'false',
    [`GIT_CONFIG_KEY_${count + 1}`]: `remote.${remote}.fetch`,
    [`GIT_CONFIG_VALUE_${count + 1}`]: `^${LEDGER_REF}`,
  };
}

/** The status of the one ref pushed, from `git push --porcelain`'s stdout ("<flag>\t<from>:<to>\t<summary>"). */
function pushStatus(porcelain: string): string {
  const line = porcelain.split('\n').find((l) => l.includes(`:${LEDGER_REF}\t`));
  return line?.split('\t')[2]?.trim() ?? '';
}
