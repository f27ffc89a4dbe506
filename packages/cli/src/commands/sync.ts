import {
  DelegateGitError,
  gitText,
  gitTry,
  LEDGER_REF,
  loadRecordedPaths,
  Repository,
} from '@delegate-git/core';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';

const help = `
Usage: delegate-git sync [<remote>] [--json]

Exchanges the ledger with a remote without losing a record: fetches the remote's refs/notes/delegations into
refs/notes/remotes/<remote>/delegations, merges it into the local ledger with git's cat_sort_uniq strategy (the
union of both, each note's lines sorted and unique), then pushes without force. If another clone pushed in
between, it fetches, merges and tries again. Default remote: origin.

Example:
  delegate-git sync
  git push --atomic origin main refs/notes/delegations   # a branch and its records in one push
`;

const ATTEMPTS = 5;
const LOST_RACE = /\((?:non-fast-forward|fetch first)\)|cannot lock ref|\(failed to update ref\)/i;

export default {
  summary: 'merge the ledger with a remote (fetch, cat_sort_uniq merge, push without force)',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values, positionals } = parseCommandArgs('sync', argv, { json: { type: 'boolean' } });
    if (positionals.length > 1) throw usageError('sync', 'Name at most one remote.');
    const remote = positionals[0] ?? 'origin';
    const repo = await Repository.open(io.cwd, io.env);
    try {
      // A notes merge makes a commit; give it an identity where the user has none configured (CI).
      const env = {
        GIT_COMMITTER_NAME: 'delegate-git',
        GIT_COMMITTER_EMAIL: 'delegate-git@localhost',
        ...repo.env,
      };
      const opts = { cwd: repo.cwd, env };
      await gitText(['remote', 'get-url', remote], opts).catch(() => {
        throw usageError('sync', `There is no remote named "${remote}".`);
      });
      const tracking = `refs/notes/remotes/${remote}/delegations`;
      for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
        const fetched = await gitTry(['fetch', '--quiet', remote, `+${LEDGER_REF}:${tracking}`], opts);
        const remoteHas = fetched.code === 0;
        if (!remoteHas && !/couldn't find remote ref/i.test(fetched.stderr)) {
          throw new DelegateGitError(
            'GIT',
            `could not fetch the ledger from ${remote}: ${fetched.stderr.trim().replace(/\s*\n\s*/g, ' ')} ` +
              `Check that ${remote} (\`git remote get-url ${remote}\`) can be reached and read, then run sync again.`,
          );
        }
        const local = await repo.ledger.tip();
        if (remoteHas) {
          if (local === null) await gitText(['update-ref', LEDGER_REF, tracking, ''], opts);
          else
            await gitText(
              ['notes', `--ref=${LEDGER_REF}`, 'merge', '-q', '-s', 'cat_sort_uniq', tracking],
              opts,
            );
        }
        if ((await repo.ledger.tip()) === null) {
          io.out(
            values.json
              ? json({ remote, pushed: false, attempts: attempt })
              : 'Nothing to sync: neither side has a ledger.\n',
          );
          return 0;
        }
        const pushed = await gitTry(['push', '--quiet', remote, `${LEDGER_REF}:${LEDGER_REF}`], opts);
        if (pushed.code === 0) {
          const tip = await repo.ledger.tip();
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
        // Only a lost race is worth another round: behind the remote, or another push taking the ref between our
        // fetch and the remote's update ("cannot lock ref"); "[remote rejected]" by a server hook is final.
        if (!LOST_RACE.test(pushed.stderr)) {
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
