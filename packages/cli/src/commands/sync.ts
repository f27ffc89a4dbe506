import {
  DelegateGitError,
  foreignAlongUpdate,
  gitText,
  gitTry,
  LEDGER_REF,
  loadRecordedPaths,
  Repository,
  readNotesDiff,
  refObject,
  remoteLineProblems,
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
is not a notes commit, holds entries that are no notes, or would add lines that are no valid records under the
policy and keys committed at HEAD, is refused and nothing of it is taken. The remote's fetch refspecs and mirror
setting do not apply to sync's fetch and push. Default remote: origin.

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
        const theirs = await fetchKeepingLedger(remote, tracking, io, opts);
        if (theirs !== null) {
          const ours = await repo.ledger.tip();
          await refuseForeign(remote, ours, theirs, opts);
          await refuseUnverified(repo, remote, ours, theirs);
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

/**
 * Another git holding the ref's lock file, or moving the ref between git's read and its lock: gone a moment later. Not
 * every "cannot lock ref": a ref that cannot exist beside another (a directory/file conflict) never goes away.
 */
const LOCKED = /Unable to create '[^']*\.lock'|cannot lock ref '[^']*': is at [0-9a-f]+ but expected/i;
/** git's words for a ref that cannot be created because another ref is named like a directory of it, or below it. */
const NAME_CONFLICT =
  /cannot lock ref '([^']*)': (?:'([^']*)' exists; cannot create|there is a non-empty directory '([^']*)' blocking)/i;

/**
 * `--refmap=`: only sync's own refspec is applied. Without it git also applies the remote's configured fetch
 * refspecs to what it fetched, and the common `+refs/notes/*:refs/notes/*` force-moves the local ledger to the
 * remote's, losing every line recorded here since. `--no-tags`: a `remote.<name>.tagOpt` must not make the fetch
 * fail over a tag.
 */
function fetchArgs(remote: string, tracking: string): string[] {
  // fsck: a tree git's checks refuse (a note named twice) would be refused by a server that checks objects
  // (`init --server` has it do so) in every later push of the ledger.
  return [
    '-c',
    'fetch.fsckObjects=true',
    'fetch',
    '--quiet',
    '--no-tags',
    '--refmap=',
    remote,
    `+${LEDGER_REF}:${tracking}`,
  ];
}

/** Fetches the remote's ledger into `tracking`: its notes commit, or null when the remote has none. */
async function fetchLedger(remote: string, tracking: string, opts: GitOptions): Promise<string | null> {
  let fetched = await gitTry(fetchArgs(remote, tracking), opts);
  // Another sync (or fetch) holding the tracking ref's lock: the race is git's, and a moment later it is gone.
  for (let attempt = 1; fetched.code !== 0 && LOCKED.test(fetched.stderr) && attempt < ATTEMPTS; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 50 * attempt));
    fetched = await gitTry(fetchArgs(remote, tracking), opts);
  }
  if (fetched.code !== 0) {
    if (/couldn't find remote ref/i.test(fetched.stderr)) return null;
    const conflict = NAME_CONFLICT.exec(fetched.stderr);
    if (conflict) throw nameConflict(remote, tracking, conflict[2] ?? conflict[3] ?? '');
    const malformed = /^error: object [0-9a-f]+: .*$/m.exec(fetched.stderr);
    if (malformed)
      throw new DelegateGitError(
        'LEDGER',
        `the ledger on ${remote} holds objects git's own checks refuse (${malformed[0].replace(/^error: /, '')}), ` +
          'and a server that checks what it receives would refuse every later push of a ledger holding them. Sync ' +
          'took nothing from it and pushed nothing. Whoever administers that remote must rewrite its ledger without ' +
          'them (a clone that synced before has the last good notes commit), then run sync again.',
      );
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
  // Read as it is, as the gates read a ledger ref (a tag of a notes commit is damage there). Not kept: a tracking
  // ref that names no commit would fail every later notes command that reads it.
  await gitTry(['update-ref', '-d', tracking], opts);
  throw new DelegateGitError(
    'LEDGER',
    `the ledger on ${remote} is damaged: its ${LEDGER_REF} names a ${named?.type ?? 'missing object'}, not a notes ` +
      'commit, so sync took nothing from it and pushed nothing. Whoever administers that remote should point the ' +
      'ref back at the last good notes commit (a clone that synced before has it), then run sync again.',
  );
}

/** The tracking ref cannot exist beside `other`: no retry helps, only another remote name or removing `other`. */
function nameConflict(remote: string, tracking: string, other: string): DelegateGitError {
  const blocking = other.replace(/^\.git\//, '');
  return new DelegateGitError(
    'GIT',
    `sync keeps ${remote}'s ledger in ${tracking}, and git cannot create that ref because ${blocking} exists and ` +
      'one name would be a directory of the other (as with remotes named "origin" and "origin/delegations"). ' +
      'Nothing was fetched or lost. Rename the remote (`git remote rename ' +
      `${remote} <name without "/">\`), or delete ${blocking} if nothing uses it (\`git update-ref -d ${blocking}\`), ` +
      'then run sync again.',
  );
}

/** fetchLedger, and the local ledger as it was before, whatever the fetch did to it (keepLocalLedger). */
async function fetchKeepingLedger(
  remote: string,
  tracking: string,
  io: Io,
  opts: GitOptions,
): Promise<string | null> {
  const before = (await refObject(LEDGER_REF, opts))?.oid ?? null;
  try {
    return await fetchLedger(remote, tracking, opts);
  } finally {
    if (await keepLocalLedger(remote, tracking, before, opts))
      io.err(
        `delegate-git sync: warning: fetching from ${remote} moved ${LEDGER_REF}, and sync put it back. A fetch ` +
          `refspec (\`git config --get-all remote.${remote}.fetch\`) or a hook of this repository writes the local ` +
          'ledger: remove it, or a plain `git fetch` will drop the records made here.\n',
      );
  }
}

/**
 * Puts the local ledger back if the fetch moved it anyway (a refspec `--refmap=` does not reach, a hook), by
 * compare-and-swap, so a line recorded here is never lost and a remote line never enters unchecked. Left alone: a
 * move that only builds on the old tip, as a local `attest` at the same moment does. True when it was put back.
 */
async function keepLocalLedger(
  remote: string,
  tracking: string,
  before: string | null,
  opts: GitOptions,
): Promise<boolean> {
  const after = await refObject(LEDGER_REF, opts);
  if ((after?.oid ?? null) === before) return false;
  // The remote's tip itself is never a local writer's work, even where it builds on ours: its lines are unchecked.
  if (after?.type === 'commit' && after.oid !== (await refObject(tracking, opts))?.oid) {
    const grew =
      before === null || (await gitTry(['merge-base', '--is-ancestor', before, after.oid], opts)).code === 0;
    if (grew) return false;
  }
  const args =
    before === null
      ? ['update-ref', '-d', LEDGER_REF, after!.oid]
      : ['update-ref', LEDGER_REF, before, after?.oid ?? ''];
  const restored = await gitTry(args, opts);
  if (restored.code === 0) return true;
  throw new DelegateGitError(
    'LEDGER',
    `fetching from ${remote} moved the local ${LEDGER_REF} from ${before ?? 'nothing'} to ` +
      `${after?.oid ?? 'nothing'}, and putting it back failed (${restored.stderr.trim().replace(/\s*\n\s*/g, ' ')}). ` +
      'A fetch refspec or hook of this repository writes the local ledger: remove it (`git config --get-all ' +
      `remote.${remote}.fetch\`), ` +
      (before === null
        ? `delete the ref (\`git update-ref -d ${LEDGER_REF}\`)`
        : `point the ref back (\`git update-ref ${LEDGER_REF} ${before}\`; \`git reflog ${LEDGER_REF}\` shows both)`) +
      ', then run sync again.',
  );
}

/** Names of offending lines in a refusal; the rest are counted. */
const NAMED_LINES = 10;

/**
 * Refuses a remote ledger that would add lines that are no valid records here. Exit 2 (a LEDGER error) as for a
 * remote ledger holding entries that are no notes: sync is no gate judging files (exit 1 in DESIGN 4.2 says a file
 * is not promoted), and here the exchange could not be made at all.
 */
async function refuseUnverified(
  repo: Repository,
  remote: string,
  ours: string | null,
  theirs: string,
): Promise<void> {
  const problems = await remoteLineProblems(repo, ours, theirs);
  if (problems.length === 0) return;
  const named = problems
    .slice(0, NAMED_LINES)
    .map((p) => `note on blob ${p.blob.slice(0, 12)}: ${p.reason}`)
    .join('; ');
  const more = problems.length > NAMED_LINES ? `; and ${problems.length - NAMED_LINES} more` : '';
  throw new DelegateGitError(
    'LEDGER',
    `the ledger on ${remote} (${theirs.slice(0, 12)}) holds ${problems.length} line(s) that are no valid records ` +
      `under the policy and keys committed at HEAD: ${named}${more}. Sync took nothing from it and pushed nothing; ` +
      'the local ledger is unchanged. Taken in, these lines could never leave the append-only ledger, and a server ' +
      `with the pre-receive hook would refuse every push of it. Whoever administers ${remote} must remove them from ` +
      `its ${LEDGER_REF}; if they are signed by a key added to the trust root on a branch not merged here yet, ` +
      'pull that branch first. Then run sync again.',
  );
}

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

/** Refuses a remote ledger that adds entries that are no notes (git reads around them; the gates refuse them). */
async function refuseForeign(
  remote: string,
  ours: string | null,
  theirs: string,
  opts: GitOptions,
): Promise<void> {
  // At its tip, and in every commit it brings: a server with the hook refuses a ledger whose history holds content.
  const [{ foreign: atTip }, brought] = await Promise.all([
    readNotesDiff(opts, ours, theirs),
    // Every commit it brings, as the server asks: a branch fetched here (a pull request) was judged by nobody.
    foreignAlongUpdate(opts, ours, theirs),
  ]);
  const foreign = [...new Map([...atTip, ...brought].map((entry) => [entry.path, entry])).values()];
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
