// Only the quick path is loaded up front: most commits stage nothing governed (or only what was already found
// promoted), and the hook runs on every one.

import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import type { CheckReport } from '@delegate-git/core/checks';
import { type QuickAnswer, quickPreCommit, rememberIndexTree } from '@delegate-git/core/quiet-commit';
import type { Repository } from '@delegate-git/core/repository';
import { shownPath, shownText } from '@delegate-git/core/shown-path';
import { renderCheckReport, rulesChangeText } from '../check-report-text.js';
import { type CommandModule, type Given, type Io, parseCommandArgs, usageError } from '../command.js';
import { pushRefusalAdvice } from '../push-advice.js';

const help = `
Usage: delegate-git hook pre-commit
       delegate-git hook pre-merge-commit
       delegate-git hook post-merge
       delegate-git hook post-rewrite
       delegate-git hook pre-push <remote> [<url>]   (reads git's pre-push lines on stdin)
       delegate-git hook pre-receive     (reads "<old> <new> <ref>" lines on stdin, as git gives them)

What the installed hook scripts run. pre-commit judges the staged content (the index) of every governed
file the commit changes; pre-merge-commit does the same for the commit a merge makes by itself (git runs
that hook instead of pre-commit there); pre-receive judges every new commit of every pushed ref against the ledger as it
will be after the push, by the policy already in force on the server, and refuses any deletion, rewrite or
unverifiable line of refs/notes/delegations. Both refuse on 1 (not promoted) and on 2 (could not check).
In policy mode "warn", pre-commit reports refusals and lets the commit through.
post-merge and post-rewrite (after a pull that merged, fast-forwarded or rebased) take the records the
pull fetched into refs/notes/remotes/origin/delegations into this clone's ledger, checked as sync checks
them, so that the ledger can be pushed beside the branch; they refuse nothing. pre-push does the same when a push
of the ledger would not be a fast-forward (a pull that found the branch up to date ran neither), or names sync;
it refuses nothing either.

Example:
  delegate-git hook pre-commit
`;

export default {
  summary:
    'run a gate as a git hook (pre-commit, pre-merge-commit, pre-receive; post-merge, post-rewrite, pre-push)',
  help,
  async run(argv: string[], io: Io, given?: Given): Promise<number> {
    const { positionals } = parseCommandArgs('hook', argv, {});
    const [name, ...extra] = positionals;
    // git gives pre-push the remote's name and address.
    if (name === 'pre-push') return beforePushHook(io, extra[0]);
    if (extra.length > 0) throw usageError('hook', 'Name exactly one hook.');
    if (name === 'pre-commit' || name === 'pre-merge-commit')
      return preCommit(io, name, given?.quickPreCommit);
    if (name === 'pre-receive') return preReceive(io);
    if (name === 'post-merge' || name === 'post-rewrite') return afterPull(io);
    const known = 'pre-commit, pre-merge-commit, post-merge, post-rewrite, pre-push or pre-receive';
    throw usageError(
      'hook',
      name === undefined ? `Name the hook to run: ${known}.` : `Unknown hook "${name}": use ${known}.`,
    );
  },
} satisfies CommandModule;

/** `quick`: the answer bin/delegate-git.js already got from dist/pre-commit-quick.cjs. */
async function preCommit(
  io: Io,
  name: 'pre-commit' | 'pre-merge-commit',
  given?: QuickAnswer,
): Promise<number> {
  const quick = given ?? (await quickPreCommit(io.cwd, io.env));
  if (quick.passes) return 0;
  // The modules of the staged check only, not all of core (a commit staging governed files pays for what it loads).
  const [{ checkStaged, reportExitCode }, { Repository }] = await Promise.all([
    import('@delegate-git/core/checks'),
    import('@delegate-git/core/repository'),
  ]);
  const repo = await Repository.open(io.cwd, io.env, io.err);
  try {
    let report = await checkStaged(repo);
    let code = reportExitCode(report);
    // A stopped merge concluded here gets no post-merge hook (quiet-commit.ts): this one takes the pull's records in.
    const concludesMerge = existsSync(path.join(repo.layout.gitDir, 'MERGE_HEAD'));
    if (code !== 0 || concludesMerge) {
      // The records of what a `git pull` merges come with it into the remote's tracking ledger, which no gate reads:
      // taken in (checked as sync checks them), they count, and the refused files are judged again.
      const { takeInFetchedLedger } = await import('../ledger-intake.js');
      const { said, took, why, quietUnlessRefused } = await takeInFetchedLedger(repo);
      // A refused commit says why; a passing one says a refusal once, as after a pull.
      if (said && code !== 0) io.err(`delegate-git: ${said}${why ? ` Why: ${why}` : ''}\n`);
      else if (said && !quietUnlessRefused) io.err(`delegate-git: ${said}\n`);
      if (took && code !== 0) {
        report = await checkStaged(repo);
        code = reportExitCode(report);
      }
    }
    // The commit goes ahead: what the full check cached now lets the index's tree be learned for the next commit.
    // Learning only saves time later, so it never changes this answer.
    if (code === 0 || report.mode === 'warn') {
      try {
        rememberIndexTree(io.cwd, io.env);
      } catch {}
    }
    if (code === 0) {
      if (report.notice) io.err(`delegate-git: ${report.notice}\n`);
      // Deleting a governed path passes unless the policy protects deletions, but it is never silent.
      for (const d of report.deletions) io.err(`delegate-git: deleted (governed) ${shownPath(d.path)}\n`);
      const rulesChange = rulesChangeText(report.rulesChange);
      if (rulesChange.length > 0) io.err(prefixLines(rulesChange.join('\n')));
      return 0;
    }
    io.err(
      prefixLines(renderCheckReport(report, onTemporaryIndex(repo, io.env) ? 'temporary index' : 'index')),
    );
    if (report.mode === 'warn') {
      io.err(
        'delegate-git: policy mode is "warn": the commit goes through; these files would be refused under "enforce",\n' +
          'delegate-git: and a server with the hook and `verify` still refuse them: promote them before you push.\n',
      );
      return 0;
    }
    const unchanged =
      name === 'pre-merge-commit' || concludesMerge ? await mergedUnchangedAdvice(repo, report) : '';
    if (unchanged) io.err(prefixLines(unchanged));
    io.err(
      name === 'pre-commit'
        ? 'delegate-git: commit refused.\n'
        : 'delegate-git: merge commit refused. The merge stays staged: promote these files, then conclude it with `git commit`.\n',
    );
    return code;
  } finally {
    await repo.close();
  }
}

/**
 * After `git pull --rebase` or a fast-forward pull no commit is made, so no commit hook takes in origin's ledger,
 * and pushing this clone's ledger beside the branch would be refused as not a fast-forward until `sync` ran.
 */
async function afterPull(io: Io): Promise<number> {
  const [{ takeInFetchedLedger }, { Repository }] = await Promise.all([
    import('../ledger-intake.js'),
    import('@delegate-git/core/repository'),
  ]);
  const repo = await Repository.open(io.cwd, io.env, io.err);
  try {
    const { said, quietUnlessRefused } = await takeInFetchedLedger(repo);
    // A refusal is said once, after the pull that fetched it, not after every amend or rebase since.
    if (said && !quietUnlessRefused) io.err(`delegate-git: ${said}\n`);
    return 0;
  } finally {
    await repo.close();
  }
}

async function beforePushHook(io: Io, remote: string | undefined): Promise<number> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const { beforePush } = await import('../before-push.js');
  return beforePush(io, remote, Buffer.concat(chunks).toString('utf8'));
}

/** The refusals the pusher is shown one by one: a crafted push may hold a hundred thousand (rt41 f02). */
const SHOWN_REFUSALS = 200;

async function preReceive(io: Io): Promise<number> {
  await sizeThreadPool();
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const [{ judgePush, LEDGER_REF }, { emptyJudgement }, { parseRefUpdates, refusedClaims }, { Repository }] =
    await Promise.all([
      import('@delegate-git/core/pre-receive'),
      import('@delegate-git/core/push-judgement'),
      import('@delegate-git/core/push-claims'),
      import('@delegate-git/core/repository'),
    ]);
  const updates = parseRefUpdates(Buffer.concat(chunks).toString('utf8'));
  const repo = await Repository.open(io.cwd, io.env, io.err);
  try {
    // The commands are the pusher's word until they are checked against the refs: only then is the push judged.
    const claims = await refusedClaims(repo, updates);
    const result = claims.length > 0 ? emptyJudgement(claims) : await judgePush(repo, updates);
    if (result.bootstrap)
      io.err(
        'delegate-git: no policy was in force yet; this push was judged by its own policy (first push).\n',
      );
    for (const r of result.refusals.slice(0, SHOWN_REFUSALS)) {
      const where = [r.ref, r.commit?.slice(0, 12), r.path === undefined ? undefined : shownPath(r.path)]
        .filter(Boolean)
        .join(' ');
      io.err(`delegate-git: refused ${where}: ${shownText(r.reason)}\n`);
    }
    const unshown = result.refusals.length - SHOWN_REFUSALS;
    if (unshown > 0) io.err(`delegate-git: and ${unshown} more refusal(s) like these, not shown.\n`);
    if (result.refusals.length > 0) {
      const ledgerPushed = updates.some((u) => u.ref === LEDGER_REF);
      const tips = new Map(updates.map((u) => [u.ref, u.newId]));
      const advice = pushRefusalAdvice(result.refusals, result.changingRules, LEDGER_REF, ledgerPushed, tips);
      io.err(
        `delegate-git: push refused.${advice.length > 0 ? ` ${advice.join('\ndelegate-git: ')}` : ''}\n`,
      );
      return 1;
    }
    return 0;
  } finally {
    await repo.close();
  }
}

/**
 * The pushed lines' signatures are checked on libuv's thread pool while this thread decodes the next ones
 * (verifySoon). One pool thread per core beside this one: on 2 cores, libuv's default of 4 threads took this
 * thread's CPU and gave no gain for a push of 1,000 notes (771 against 780 ms); one thread gave 677 ms. libuv reads
 * the size once, when the pool starts, which nothing in this process has made it do yet. A size the operator set
 * is kept.
 */
async function sizeThreadPool(): Promise<void> {
  const { availableParallelism } = await import('node:os');
  process.env.UV_THREADPOOL_SIZE ??= String(Math.max(1, availableParallelism() - 1));
}

/**
 * `git commit -a`, `--include` and `git commit <path>` run the hook on a temporary index (GIT_INDEX_FILE names it
 * instead of the index itself), dropped when the commit is refused: `attest --staged` would then read other content.
 */
function onTemporaryIndex(repo: Repository, env: NodeJS.ProcessEnv): boolean {
  if (!env.GIT_INDEX_FILE) return false;
  const real = (file: string) => {
    try {
      return realpathSync(file);
    } catch {
      return file;
    }
  };
  const named = path.resolve(repo.layout.topLevel ?? repo.cwd, env.GIT_INDEX_FILE);
  return real(named) !== real(path.join(repo.layout.gitDir, 'index'));
}

/**
 * Refused files a merge takes unchanged from the side merged in: approved where they come from, most likely, with
 * records that did not come along (a `git pull <remote> <branch>` fetches no ledger). Syncing, not approving
 * content the puller never reviewed, is the way. Empty when there are none.
 */
async function mergedUnchangedAdvice(repo: Repository, report: CheckReport): Promise<string> {
  const refused = report.results.filter((r) => r.governed && !r.promoted && !r.absent).slice(0, 100);
  if (refused.length === 0) return '';
  const [{ treeFiles }, { mergeSources }] = await Promise.all([
    import('@delegate-git/core/snapshot'),
    import('../merge-sources.js'),
  ]);
  const pathspecs = refused.map((r) => `:(literal)${r.path}`);
  const theirs = new Set<string>();
  for (const source of await mergeSources(repo))
    for (const f of await treeFiles(repo.cwd, source, pathspecs, repo.env).catch(() => []))
      theirs.add(`${f.path}\0${f.blob}`);
  const unchanged = refused.filter((r) => theirs.has(`${r.path}\0${r.blob}`)).map((r) => shownPath(r.path));
  if (unchanged.length === 0) return '';
  return (
    `${unchanged.join(', ')}: as the branch merged in has it, unchanged. Its records may not be here ` +
    'yet (a `git pull <remote> <branch>`, or a fetch of one branch, brings no ledger): run `delegate-git sync`, ' +
    'then `git commit`; approve it yourself only once you have reviewed it.'
  );
}

function prefixLines(text: string): string {
  return text
    .trimEnd()
    .split('\n')
    .map((l) => `delegate-git: ${l}\n`)
    .join('');
}
