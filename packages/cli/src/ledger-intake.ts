/**
 * Taking a remote's ledger into this clone's without losing a record or gaining one a server would refuse: fetched
 * into `refs/notes/remotes/<remote>/delegations` with sync's own refspec only, checked as a server with the hook
 * checks a ledger update (entries that are no notes, in its history too; objects git's own checks refuse; lines that
 * do not verify under the policy and keys of HEAD and of the default branches a server judges them by), then taken in
 * as the union of both. `sync` does this before it pushes; `init` in a clone of an adopted repository, and the commit
 * hooks when a fetched ledger holds what this one lacks, do it alone.
 */

import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  DelegateGitError,
  droppedAlongText,
  gitText,
  gitTry,
  LEDGER_REF,
  POLICY_PATH,
  type Repository,
  readNotesDiff,
  refObject,
  remoteLineProblems,
  shownPath,
  type UpdateWalk,
  whyNotANote,
} from '@delegate-git/core';
import type { Io } from './command.js';
import { restoredText, restoreForcedLedger, writesLedger } from './ledger-restore.js';
import { listRemote } from './remote-listing.js';

/** Where sync and the fetch refspec init sets keep a remote's ledger. */
export function trackingRef(remote: string): string {
  return `refs/notes/remotes/${remote}/delegations`;
}

/**
 * Makes a plain `git fetch <remote>` (and `git pull`) bring the remote's ledger into its tracking ref, where the commit
 * hooks take it in: init sets it for the remotes there are, sync for one added since. Returns whether it was missing,
 * and the remote's fetch refspecs that write the ledger itself (each replaces the clone's records on every fetch).
 */
export async function setLedgerRefspec(
  remote: string,
  opts: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<{ added: boolean; overwriting: string[] }> {
  const spec = `+${LEDGER_REF}:${trackingRef(remote)}`;
  const existing = (await gitTry(['config', '--get-all', `remote.${remote}.fetch`], opts)).stdout
    .toString()
    .split('\n');
  const added = !existing.includes(spec);
  if (added) await gitText(['config', '--add', `remote.${remote}.fetch`, spec], opts);
  return { added, overwriting: existing.filter(writesLedger) };
}

/** Attempts of a fetch that found the tracking ref locked by another git. */
const ATTEMPTS = 5;

/**
 * `work`, saying `text` on a terminal once it has taken longer than a moment: taking in a large ledger checks every
 * record it adds (100,000 take about as long as a cold `verify`), which would otherwise look like a hang.
 */
export async function sayingWhenSlow<T>(io: Io, text: string, work: Promise<T>): Promise<T> {
  const slow = io.interactive ? setTimeout(() => io.err(text), 1500) : undefined;
  try {
    return await work;
  } finally {
    clearTimeout(slow);
  }
}

/** The commit whose committed policy and keys judge the lines a remote's ledger adds, as a refusal names it. */
export interface LineJudge {
  commit: string;
  label: string;
  /** What to do when a line is signed by a key the judge does not trust yet. */
  newKeyAdvice: string;
}

/**
 * Checks the fetched remote ledger `theirs` and takes it into the local ledger (`ours`: its tip before the fetch), its
 * lines judged by each of `judges` (by default syncJudges). Throws a LEDGER error, taking nothing, when the checks
 * refuse it.
 */
export async function takeInRemoteLedger(
  repo: Repository,
  remote: string,
  ours: string | null,
  theirs: string,
  message: string,
  judges?: readonly LineJudge[],
): Promise<{ how: 'up to date' | 'fast-forward' | 'merge' | 'restore'; added: number }> {
  const opts = { cwd: repo.cwd, env: repo.env };
  // Every commit it brings, walked once as the server walks a ledger update: the entries that are no notes (a branch
  // fetched here, a pull request, was judged by nobody), and the lines dropped along them. A first intake takes the
  // remote's ledger as it is, history and all: this clone then holds what the remote holds (its own verify says the
  // same of it), and comparing a history of 100,000 notes commits would add seconds to init. The entries that are no
  // notes are refused first, so the walk stops once it has found enough of them.
  const along = repo.ledger.walkUpdate(theirs, ours, {
    foreign: true,
    dropped: ours !== null,
    foreignFirst: true,
  });
  await refuseForeign(remote, ours, theirs, opts, along);
  // In a partial clone the notes came without their blobs: fetched in one batch, said, and refused clearly when the
  // remote cannot be reached (packing them below would have git fetch them in silence).
  await repo.ledger.fetchMissing(theirs);
  await refuseMalformed(remote, ours, theirs, opts);
  await refuseDroppedAlong(repo, remote, ours, theirs, (await along).dropped());
  // Nothing to judge, and no remote to ask, when the remote adds nothing: it holds what this ledger holds, or
  // less (behind it, or rewound by a force-push; refuseDroppedAlong has said whether it dropped a line).
  const addsNothing =
    ours === theirs ||
    (ours !== null && (await gitTry(['merge-base', '--is-ancestor', theirs, ours], opts)).code === 0);
  if (!addsNothing) {
    const judgedBy = new Set<string>();
    for (const judge of judges ?? (await syncJudges(remote, opts)))
      await refuseUnverified(repo, remote, ours, theirs, judge, judgedBy);
  }
  return repo.ledger.takeIn(theirs, message);
}

const HEAD_JUDGE: LineJudge = {
  commit: 'HEAD',
  label: 'HEAD',
  newKeyAdvice:
    'if they are signed by a key trusted on a branch this one has not merged yet (the default branch as it is now, ' +
    'or another), bring that branch in first (`git pull`, or `git merge <branch>`)',
};

/**
 * Who must accept each line a synced remote adds. Every line taken in goes to every remote this clone syncs with, so
 * no single branch may decide: HEAD (the old rule; it may be a branch under review that trusts a key of its own), the
 * synced remote's default branch, which a server with the hook judges an update by, and, syncing another remote (a
 * fork), origin's default branch as last fetched, whose server the lines reach at the next `sync`: a fork's default
 * branch may trust any key its owner likes. A default branch not known here, or holding no policy yet (adopting on
 * a branch not merged there), judges nothing.
 */
async function syncJudges(remote: string, opts: GitOptions): Promise<LineJudge[]> {
  const known = (name: string) => trackedHead(name, opts);
  const hasOrigin = remote !== 'origin' && (await gitTry(['remote', 'get-url', 'origin'], opts)).code === 0;
  // Origin is not asked over the network while another remote is synced (its credentials, its wait): known here, or
  // the user says which branch it is.
  const origin = hasOrigin ? await known('origin') : null;
  if (hasOrigin && origin === null)
    throw new DelegateGitError(
      'USAGE',
      `sync judges what ${remote} adds by origin's default branch too (each line taken in reaches origin at the next ` +
        'sync), and this clone does not know which branch that is (no refs/remotes/origin/HEAD). Run ' +
        '`git remote set-head origin --auto`, then sync again. Nothing was taken.',
    );
  const branches = [(await known(remote)) ?? (await advertisedDefaultBranch(remote, opts)), origin];
  const judges = [HEAD_JUDGE];
  const judged = new Set([(await commitOf('HEAD', opts))?.commit]);
  for (const [i, branch] of branches.entries()) {
    if (!branch || judged.has(branch.commit)) continue;
    if ((await gitTry(['cat-file', '-e', `${branch.commit}:${POLICY_PATH}`], opts)).code !== 0) continue;
    judged.add(branch.commit);
    judges.push(defaultBranchJudge(i === 0 ? remote : 'origin', branch));
  }
  return judges;
}

/**
 * The remote's default branch as the remote names it, as this clone last fetched it: for a clone made of an empty
 * repository, or a remote added by hand, which have no `refs/remotes/<remote>/HEAD`. Asked of the remote (one round
 * trip; `git remote set-head <remote> --auto` records the answer, and then none is needed); null when it cannot be
 * asked or that branch was never fetched here.
 */
async function advertisedDefaultBranch(
  remote: string,
  opts: GitOptions,
): Promise<{ ref: string; commit: string } | null> {
  const listed = await listRemote(remote, ['--symref'], ['HEAD'], opts);
  const branch = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(listed.stdout.toString('utf8'))?.[1];
  if (listed.code !== 0 || branch === undefined) return null;
  return commitOf(`refs/remotes/${remote}/${branch}`, opts);
}

function defaultBranchJudge(remote: string, branch: { ref: string; commit: string }): LineJudge {
  return {
    commit: branch.commit,
    label: `${remote}'s default branch as last fetched (${branch.ref.replace(/^refs\/remotes\//, '')}, ${branch.commit.slice(0, 12)})`,
    newKeyAdvice:
      `if they are signed by a key ${remote}'s default branch has trusted since this clone last fetched it, run ` +
      `\`git fetch ${remote}\` first (where ${remote} is a fork behind the repository it came from, bring its default ` +
      'branch up to date first); if by a key added on a branch not merged there yet, merge that branch there first',
  };
}

/**
 * Refuses a remote ledger whose objects git's own checks refuse (a tree naming a note twice): a server that checks
 * what it receives (`init --server` has it do so) would refuse every later push of a ledger holding them. Sync's fetch
 * checks what it transfers; what a plain `git fetch` brought earlier, unchecked, is checked here, by packing the
 * objects the remote ledger adds and having `git index-pack --strict` read them, as a receiving server would.
 */
async function refuseMalformed(
  remote: string,
  ours: string | null,
  theirs: string,
  opts: GitOptions,
): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'delegate-git-intake-'));
  try {
    const pack = path.join(dir, 'ledger.pack');
    const packed = await gitTry(['pack-objects', '--revs', '--stdout', '-q'], {
      ...opts,
      input: `${theirs}\n${ours ? `^${ours}\n` : ''}`,
    });
    if (packed.code !== 0)
      throw new DelegateGitError(
        'LEDGER',
        `the ledger on ${remote} (${theirs.slice(0, 12)}) could not be read whole (${packed.stderr.trim()}); nothing of ` +
          'it was taken. Fetch it again (`delegate-git sync`).',
      );
    await writeFile(pack, packed.stdout);
    const checked = await gitTry(['index-pack', '--strict', '-o', path.join(dir, 'ledger.idx'), pack], opts);
    const malformed = /^error: object [0-9a-f]+: .*$/m.exec(checked.stderr);
    if (checked.code !== 0)
      throw new DelegateGitError(
        'LEDGER',
        `the ledger on ${remote} (${theirs.slice(0, 12)}) holds objects git's own checks refuse ` +
          `(${(malformed?.[0] ?? checked.stderr.trim()).replace(/^error: /, '')}), and a server that checks what it ` +
          'receives would refuse every later push of a ledger holding them. Nothing of it was taken, and nothing ' +
          `pushed. Whoever administers ${remote} must rewrite its ledger without them (a clone that synced before has ` +
          'the last good notes commit); then run `delegate-git sync` again.',
      );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

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
export async function fetchKeepingLedger(
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
  judge: LineJudge,
  judgedBy: Set<string>,
): Promise<void> {
  const problems = await remoteLineProblems(repo, ours, theirs, judge.commit, judgedBy);
  if (problems.length === 0) return;
  const named = problems
    .slice(0, NAMED_LINES)
    .map((p) => `note on blob ${p.blob.slice(0, 12)}: ${p.reason}`)
    .join('; ');
  const more = problems.length > NAMED_LINES ? `; and ${problems.length - NAMED_LINES} more` : '';
  throw new DelegateGitError(
    'LEDGER',
    `the ledger on ${remote} (${theirs.slice(0, 12)}) holds ${problems.length} line(s) that are no valid records ` +
      `under the policy and keys committed at ${judge.label}: ${named}${more}. Nothing of it was taken, and nothing ` +
      `pushed; the local ledger is unchanged. First, ${judge.newKeyAdvice}; then run \`delegate-git sync\` again. ` +
      'Lines no branch trusts are damage: taken in, they could never leave the append-only ledger, and a server with ' +
      `the pre-receive hook refuses a ledger holding lines its rules reject. Whoever administers ${remote} must then ` +
      `remove them from its ${LEDGER_REF}.`,
  );
}

/**
 * Refuses a remote ledger whose history drops lines that neither ledger holds, as the server refuses such an update.
 * `along`: the lines dropped along the commits it brings (null for a first intake, which is not asked).
 */
async function refuseDroppedAlong(
  repo: Repository,
  remote: string,
  ours: string | null,
  theirs: string,
  along: Array<{ commit: string; annotated: string; line: string }> | null,
): Promise<void> {
  if (ours === null || along === null) return;
  // Lines taken in give back what either side dropped; only what neither tip holds is lost.
  const dropped = await repo.ledger.notHeldAt(along, [theirs, ours]);
  if (dropped.length === 0) return;
  throw new DelegateGitError(
    'LEDGER',
    `the ledger on ${remote} (${theirs.slice(0, 12)}) has a history in which ${droppedAlongText(dropped)}. Nothing of it was ` +
      `taken, and nothing pushed; taken in, its history would fail every \`delegate-git verify\` of this clone for good. ` +
      `Whoever administers ${remote} must restore its ${LEDGER_REF} to a history without such commits, then run \`delegate-git sync\` again.`,
  );
}

/** Refuses a remote ledger that adds entries that are no notes (git reads around them; the gates refuse them). */
async function refuseForeign(
  remote: string,
  ours: string | null,
  theirs: string,
  opts: GitOptions,
  along: Promise<UpdateWalk>,
): Promise<void> {
  // At its tip, and in every commit it brings: a server with the hook refuses a ledger whose history holds content.
  const [{ foreign: atTip }, { foreign: brought }] = await Promise.all([
    readNotesDiff(opts, ours, theirs),
    along,
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
      'A ledger holds only notes, so nothing of it was taken, and nothing pushed. If that ref is not a ledger at ' +
      'all (another branch pushed there), or someone added these by hand, have it restored to a notes commit ' +
      'without them, then run `delegate-git sync` again.',
  );
}

/**
 * Takes in origin's ledger as the last fetch brought it, when it holds what this one lacks: init's fetch refspec keeps
 * it in its tracking ref, so a `git pull` brings the records of what it merges. Its lines are judged by the policy and
 * keys of origin's default branch as fetched (remoteDefaultBranch), which is what a server with the hook
 * judges them by: neither HEAD, which may be a fork's branch under review that trusts a key of its own, nor a merge's
 * other side. Only origin's: a remote fetched for a look would otherwise put its lines here. A tip refused once is not
 * checked again at every commit. First, the ledger is put back where this clone last wrote it if a fetch has dropped
 * that since (ledger-restore.ts). One sentence for the hook to print, if any.
 */
export async function takeInFetchedLedger(repo: Repository): Promise<Intake> {
  const restored = await restoreForcedLedger(repo);
  const intake = await takeInOrigins(repo);
  if (!restored) return intake;
  const said = restoredText(restored, 'delegate-git');
  // Judged again either way: the records put back may promote what was refused.
  return {
    ...intake,
    took: true,
    said: intake.said ? `${said} And it ${intake.said}` : said,
    quietUnlessRefused: undefined,
  };
}

/** What taking in origin's fetched ledger did, in a sentence for the hook to print, if any. */
export interface Intake {
  said: string | null;
  took: boolean;
  /** Say it only where a commit is refused (a refusal said before, a hint that may not apply), not after every pull. */
  quietUnlessRefused?: true;
  /** The details of a refusal, for a refused commit. */
  why?: string;
}

async function takeInOrigins(repo: Repository): Promise<Intake> {
  const opts = { cwd: repo.cwd, env: repo.env };
  const tracking = trackingRef('origin');
  const named = await refObject(tracking, opts);
  if (named === null) return unfetchedLedger(opts);
  const ours = await repo.ledger.tip();
  if (named.type !== 'commit' || named.oid === ours) return { said: null, took: false };
  const theirs = named.oid;
  if (ours !== null && (await gitTry(['merge-base', '--is-ancestor', theirs, ours], opts)).code === 0)
    return { said: null, took: false };
  const branch = await remoteDefaultBranch('origin', opts);
  if (branch === null)
    return {
      said: "origin's fetched ledger holds records this clone lacks, and no branch of origin's is known here to judge them by (`git remote set-head origin --auto`); run `delegate-git sync` to take them",
      took: false,
    };
  // The same ledger judged by the same rules is refused again: said in a line, not checked at every commit.
  const refusedBefore = path.join(repo.cacheDir, 'intake-refused');
  const asked = `${theirs} ${branch.commit}`;
  if ((await readFile(refusedBefore, 'utf8').catch(() => '')).trim() === asked)
    return {
      said: `origin's fetched ledger (${theirs.slice(0, 12)}) was refused before; \`delegate-git sync\` says why`,
      took: false,
      quietUnlessRefused: true,
    };
  try {
    await takeInRemoteLedger(repo, 'origin', ours, theirs, "delegate-git: take in origin's fetched ledger", [
      defaultBranchJudge('origin', branch),
    ]);
    return {
      said: `took the records of origin's ledger (fetched into ${tracking}) into this clone's ledger`,
      took: true,
    };
  } catch (error) {
    if (!(error instanceof DelegateGitError)) throw error;
    // Only saves checking again: a cache the hook cannot write costs time, never an answer.
    await mkdir(repo.cacheDir, { recursive: true })
      .then(() => writeFile(refusedBefore, `${asked}\n`))
      .catch(() => {});
    // Said after a pull in a line or two, sync (the same check) giving the details; a refused commit adds `why`.
    return {
      said:
        `did not take origin's fetched ledger (${theirs.slice(0, 12)}): it holds what this clone may not take in; ` +
        "`delegate-git sync` says what and why. Until origin's ledger is repaired, this clone's ledger cannot be " +
        'pushed there (not a fast-forward).',
      took: false,
      why: error.message,
    };
  }
}

/**
 * No tracking ledger for origin: when origin's fetch refspecs leave its ledger out (a remote added or replaced after
 * init), a pull never brings the records of what it merges, and a refused commit should say so. Said only when the
 * commit is refused: origin may hold no ledger at all.
 */
async function unfetchedLedger(opts: GitOptions): Promise<Intake> {
  // No url: there is no origin (a url is what makes a remote).
  const [url, specs] = await Promise.all([
    gitTry(['config', '--get', 'remote.origin.url'], opts),
    gitTry(['config', '--get-all', 'remote.origin.fetch'], opts),
  ]);
  if (url.code !== 0 || specs.stdout.toString('utf8').includes('refs/notes/'))
    return { said: null, took: false };
  return {
    said:
      `origin is not set to fetch its ledger (${LEDGER_REF}), so no pull brought the records made there; ` +
      '`delegate-git sync` fetches and takes them in, and sets the refspec for the pulls after it',
    took: false,
    quietUnlessRefused: true,
  };
}

/**
 * A remote's default branch as last fetched (`refs/remotes/<remote>/HEAD`); in a clone of a repository that was empty
 * then, which has none, the branch's upstream there. Null when neither is known.
 */
async function remoteDefaultBranch(
  remote: string,
  opts: GitOptions,
): Promise<{ ref: string; commit: string } | null> {
  const head = await trackedHead(remote, opts);
  if (head) return head;
  const upstream = (await gitTry(['rev-parse', '--symbolic-full-name', '@{upstream}'], opts)).stdout
    .toString('utf8')
    .trim();
  return upstream.startsWith(`refs/remotes/${remote}/`) ? commitOf(upstream, opts) : null;
}

/** The branch `refs/remotes/<remote>/HEAD` names (as a clone or `git remote set-head` set it), named as that branch. */
async function trackedHead(
  remote: string,
  opts: GitOptions,
): Promise<{ ref: string; commit: string } | null> {
  const symbolic = `refs/remotes/${remote}/HEAD`;
  const target = (await gitTry(['symbolic-ref', '-q', symbolic], opts)).stdout.toString('utf8').trim();
  return commitOf(target || symbolic, opts);
}

async function commitOf(ref: string, opts: GitOptions): Promise<{ ref: string; commit: string } | null> {
  const named = await gitTry(['rev-parse', '--verify', '-q', `${ref}^{commit}`], opts);
  return named.code === 0 ? { ref, commit: named.stdout.toString('utf8').trim() } : null;
}
