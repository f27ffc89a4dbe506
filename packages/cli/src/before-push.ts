/**
 * The pre-push hook's work, once its script found the remote's fetched ledger holds what this one lacks, or the push
 * names a ledger behind the remote's: git refuses such a push as not a fast-forward, and its advice, to pull, changes
 * nothing when the branch is up to date (a pull then runs no post-merge hook). Takes in what the last fetch brought
 * of origin's ledger, checked as sync checks it, or names `sync`. Refuses nothing: git decides the push.
 */
import { gitTry } from '@delegate-git/core/git';
import { LEDGER_REF } from '@delegate-git/core/notes-ledger';
import { Repository } from '@delegate-git/core/repository';
import type { Io } from './command.js';
import { takeInFetchedLedger } from './ledger-intake.js';

/**
 * `input`: the lines git gives pre-push on stdin (`<local ref> <local id> <remote ref> <remote id>`). git leaves out
 * a ref it already refuses as not a fast-forward: with no line for the ledger, what origin's fetched ledger holds is
 * taken in (another remote's gets the sync advice). A line for it is a fast-forward, a forced push (the pusher's
 * choice, left alone), or a ledger whose remote tip was never fetched here, which only sync can join.
 */
export async function beforePush(io: Io, remote: string | undefined, input: string): Promise<number> {
  const repo = await Repository.open(io.cwd, io.env, io.err);
  try {
    const ledger = ledgerUpdate(input);
    if (ledger === null) {
      // Only origin's fetched ledger is taken in without asking (ledger-intake.ts says why); another remote's is
      // joined by sync, which checks its lines by that remote's branch too.
      if (remote !== undefined && remote !== 'origin') {
        io.err(
          `delegate-git: ${remote}'s ledger as last fetched holds records this clone lacks, so git refuses the ` +
            `ledger's push below if this push includes it (not a fast-forward): run \`delegate-git sync ${remote}\`, ` +
            'which takes them in checked and pushes the ledger, then push again.\n',
        );
        return 0;
      }
      const { said, took, why, quietUnlessRefused } = await takeInFetchedLedger(repo);
      if (took)
        io.err(
          `delegate-git: ${said}; a push of the ledger that git refuses below as not a fast-forward goes through when run again.\n`,
        );
      else if (said && !quietUnlessRefused) io.err(`delegate-git: ${said}${why ? ` Why: ${why}` : ''}\n`);
      return 0;
    }
    const known = await gitTry(['cat-file', '-e', `${ledger.theirs}^{commit}`], {
      cwd: repo.cwd,
      env: repo.env,
    });
    if (known.code !== 0)
      io.err(
        `delegate-git: ${remote ?? 'the remote'}'s ledger holds records this clone has not fetched, so git refuses ` +
          "the ledger's push below (pulling the branch does not bring them when it is up to date): run " +
          `\`delegate-git sync${remote ? ` ${remote}` : ''}\`, which takes them in checked and pushes the ledger, ` +
          'then push again.\n',
      );
    return 0;
  } finally {
    await repo.close();
  }
}

const ZERO = /^0+$/;

/** The ledger's line, when the push moves an existing ledger on the remote to an existing local one. */
function ledgerUpdate(input: string): { ours: string; theirs: string } | null {
  for (const line of input.split('\n')) {
    const [, ours, remoteRef, theirs] = line.trim().split(' ');
    if (remoteRef === LEDGER_REF && ours && theirs && !ZERO.test(ours) && !ZERO.test(theirs))
      return { ours, theirs };
  }
  return null;
}
