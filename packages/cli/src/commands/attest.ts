import {
  assertKeyMaySign,
  checkoutSnapshot,
  checkStaged,
  DelegateGitError,
  defaultBranchRules,
  type Governance,
  gitSnapshot,
  governedMatcher,
  isGovernanceFile,
  judgeFiles,
  judgeLines,
  keyRefusal,
  literalPathspecs,
  loadGovernance,
  loadPathIndex,
  Repository,
  type ReviewPredicate,
  recordStatements,
  resolveCommit,
  reviewStatement,
  rfc3339,
  rulesInForce,
  signingKeyFor,
  stagedFiles,
  toRepositoryPath,
  treeFiles,
  withVersionsReplaced,
  worktreeBlobs,
} from '@delegate-git/core';
import { sha256Hex } from '@delegate-git/core/sha256';
import { holdsUnprintable, shownOutput, shownPath, shownText } from '@delegate-git/core/shown-path';
import { blobDiffs } from '../blob-diffs.js';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';
import { hooksNotRun, hooksWarning } from '../hooks-in-effect.js';
import { restoreBeforeWriting } from '../ledger-restore.js';

const help = `
Usage: delegate-git attest (--approve | --reject) [<path>... | --staged | --rev <commit> <path>...] [-m <comment>]
                          [--key <name>] [--yes] [--json]

Signs a review (urn:delegate-git:review:v1) of the exact content of each path with your reviewer key and
records it in the ledger on that content's blob (one record per file). An approval promotes exactly that content; any later change
makes it stale. A rejection refuses that content whatever else is recorded, until you approve it yourself.
Before signing it shows each path, its sha256, every record already on that content and the diff since the
version that was promoted last. Your name and email in the record come from the trust root, not from git.
  --staged       review the staged content of every staged governed file (otherwise the work-tree content)
  --rev <commit> review each path's content in that commit, leaving the work tree and the index as they are: a
                 change fetched from the author's fork or bundle that the server refuses until enough reviewers
                 approve it (reviewThreshold 2 or more)
  -m <comment>   a comment carried in the record
  --key <name>   which of your signing keys to use (default: your only key, else the only one the trust root
                 lets review)
  --yes          sign without confirming (needed where there is no terminal to ask on)
  --json         {"decision","reviewer","files":[{"path","sha256","gitBlob","before","governed","records",
                  "reviewed","lastPromoted","envelope"}],"notesCommit"} (one signed record per file)

Example:
  delegate-git attest --approve src/parser.ts -m "read it; tests cover the edge cases"
  delegate-git attest --approve --staged --yes
  git fetch ../alice-fork feature && delegate-git attest --approve --rev FETCH_HEAD src/parser.ts
`;

interface Target {
  path: string;
  blob: string;
}

export default {
  summary: "sign a reviewer's approval or rejection of exact content",
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values, positionals } = parseCommandArgs('attest', argv, {
      approve: { type: 'boolean' },
      reject: { type: 'boolean' },
      staged: { type: 'boolean' },
      rev: { type: 'string' },
      message: { type: 'string', short: 'm' },
      key: { type: 'string' },
      yes: { type: 'boolean', short: 'y' },
      json: { type: 'boolean' },
    });
    if (Boolean(values.approve) === Boolean(values.reject))
      throw usageError('attest', 'Give exactly one of --approve or --reject.');
    if (values.staged && positionals.length > 0)
      throw usageError('attest', 'Give paths or --staged, not both.');
    if (values.staged && values.rev !== undefined)
      throw usageError('attest', 'Give --staged or --rev, not both.');
    if (!values.staged && positionals.length === 0)
      throw usageError('attest', 'Name the paths to review, or use --staged.');
    // A signature is a reviewer's decision: a script (or a pipe) that nobody reads signs only when told to.
    if (!io.interactive && !values.yes)
      throw usageError(
        'attest',
        'There is no terminal to confirm the signature on, so nothing was signed. ' +
          ((positionals as string[]).includes('--yes')
            ? 'The --yes given after `--` was read as a path: put it before `--`.'
            : 'Add --yes to sign without confirming (in a script).'),
      );
    const decision = values.approve ? 'approve' : 'reject';
    const repo = await Repository.open(io.cwd, io.env, io.err);
    try {
      const top = repo.layout.topLevel;
      if (top === null)
        throw new DelegateGitError('USAGE', 'Run `delegate-git attest` in a clone with a work tree.');
      const reviewedAt = values.rev === undefined ? null : await resolveCommit(repo, values.rev);
      const snapshot =
        reviewedAt !== null
          ? gitSnapshot(top, repo.objects, reviewedAt, repo.env)
          : values.staged
            ? gitSnapshot(top, repo.objects, null, repo.env)
            : checkoutSnapshot(top, repo.layout.gitDir, repo.objects, repo.env);
      // First: the records shown, and the ledger the review is written onto, are this clone's own.
      await restoreBeforeWriting(repo, 'attest', io.err);
      // As the commit hook judges: a key revoked on origin's default branch counts for nothing here either (rt62 f05).
      const defaultBranch = await defaultBranchRules(
        repo,
        (await repo.objects.read('HEAD^{commit}'))?.oid ?? null,
      );
      const governance = defaultBranch.bind(await loadGovernance(snapshot));
      const { key } = signingKeyFor(governance.trustRoot, 'reviewer', values.key, io.env);
      const { targets, submodules } = values.staged
        ? await stagedTargets(repo)
        : reviewedAt !== null
          ? {
              targets: await commitTargets(repo, top, io.cwd, reviewedAt, values.rev!, positionals),
              submodules: [],
            }
          : { targets: await worktreeTargets(repo, top, io.cwd, positionals), submodules: [] };
      const signing = defaultBranch.bind(
        await signingGovernance(repo, top, governance, key.publicKey.keyid, targets),
      );
      if (signing.trustRoot.revokedElsewhere.has(key.publicKey.keyid))
        throw new DelegateGitError(
          'SIGNING_KEY',
          `Cannot sign as ${signing.trustRoot.byKeyid(key.publicKey.keyid)!.name}: the key was revoked on origin's default branch (as this clone last fetched it), so what it signs counts nowhere and the server refuses a ledger holding it. Nothing was recorded.`,
        );
      const reviewer = assertKeyMaySign(signing.trustRoot, key, 'reviewer', signing.policy.keysDir);
      const trusted = signing.trustRoot.byKeyid(key.publicKey.keyid)!;
      if (targets.length === 0) {
        if (values.json) io.out(json({ decision, reviewer, files: [], notesCommit: null }));
        else
          io.out(
            `Nothing to review: no staged governed file.${submodules.length > 0 ? ` A submodule is no file: no review promotes ${submodules.map(shownPath).join(', ')} (remove it, or exclude its path in a policy change pushed first).` : ''}\n`,
          );
        return 0;
      }
      // The policy and key files are judged as the commit hook judges them: by HEAD's rules, dated by the versions
      // they replace there. Read once, for what is shown and for the "now:" lines after signing.
      const inForce = await rulesInForce(repo);
      const anchor = inForce && defaultBranch.bind(inForce);
      const judging = await withVersionsReplaced(repo, targets, anchor);
      const shown = await describe(repo, governance, anchor, judging);
      if (!values.json) io.out(shown.text);
      if (io.interactive && !values.yes) {
        const answer = await io.prompt(
          `Sign this ${decision === 'approve' ? 'APPROVAL' : 'REJECTION'} as ${reviewer}? [y/N] `,
        );
        if (!/^y(es)?$/i.test(answer.trim())) {
          io.err('Nothing recorded.\n');
          return 1;
        }
      }
      const predicate: ReviewPredicate = {
        decision,
        reviewer: { name: trusted.name, email: trusted.email },
        ...(values.message ? { comment: values.message } : {}),
        repository: { id: governance.policy.repositoryId },
        createdAt: rfc3339(),
      };
      const { lines, commit } = await recordStatements(
        repo.ledger,
        shown.files.map((f) =>
          reviewStatement([{ path: f.path, sha256: f.sha256, gitBlob: f.gitBlob }], {
            ...predicate,
            ...(f.reviewed.length > 0 ? { reviewed: f.reviewed } : {}),
          }),
        ),
        key,
        `delegate-git attest --${decision}: ${namesOf(shown.files.map((f) => f.path))}`,
      );
      if (values.json)
        io.out(
          json({
            decision,
            reviewer,
            files: shown.files.map((f, i) => ({ ...f, envelope: lines[i] })),
            notesCommit: commit,
          }),
        );
      else
        io.out(
          `Recorded ${decision === 'approve' ? 'approval' : 'rejection'} by ${reviewer} of ${shown.files.length} file(s) in refs/notes/delegations.\n` +
            (await stateAfter(repo, governance, anchor, judging)),
        );
      io.err(hooksWarning('attest', await hooksNotRun(repo)));
      return 0;
    } finally {
      await repo.close();
    }
  },
} satisfies CommandModule;

/**
 * The trust root the signer is checked against: the one being reviewed, except for a review of governance files
 * alone by a key it no longer lets sign. Those are judged by the rules already committed (HEAD's), so a reviewer
 * may approve the revocation of their own key (the only way out for a repository with one reviewer whose key leaked).
 */
async function signingGovernance(
  repo: Repository,
  top: string,
  governance: Governance,
  keyid: string,
  targets: ReadonlyArray<{ path: string }>,
): Promise<Governance> {
  const key = governance.trustRoot.byKeyid(keyid);
  if (key && keyRefusal(key, 'reviewer', Date.now()) === null) return governance;
  if (targets.length === 0 || !targets.every((t) => isGovernanceFile(governance.policy, t.path)))
    return governance;
  const committed = await loadGovernance(gitSnapshot(top, repo.objects, 'HEAD', repo.env)).catch(() => null);
  return committed && targets.every((t) => isGovernanceFile(committed.policy, t.path))
    ? committed
    : governance;
}

async function worktreeTargets(
  repo: Repository,
  top: string,
  cwd: string,
  paths: string[],
): Promise<Target[]> {
  const rel = repositoryPaths(top, cwd, paths);
  // Stored: the record about to be made names them, and the commit will hold them.
  const ids = await worktreeBlobs(top, rel, { env: repo.env, write: true });
  const absent = rel.find((_, i) => ids[i] === null);
  if (absent !== undefined) throw noContentAt(absent, 'the work tree');
  return rel.map((p, i) => ({ path: p, blob: ids[i]! }));
}

/** Each path's file in `commit` (named `rev` on the command line), as the work tree's would be reviewed. */
async function commitTargets(
  repo: Repository,
  top: string,
  cwd: string,
  commit: string,
  rev: string,
  paths: string[],
): Promise<Target[]> {
  const rel = repositoryPaths(top, cwd, paths);
  const files = new Map(
    (await treeFiles(top, commit, literalPathspecs(rel), repo.env)).map((f) => [f.path, f.blob]),
  );
  const absent = rel.find((p) => !files.has(p));
  if (absent !== undefined) throw noContentAt(absent, rev);
  return rel.map((p) => ({ path: p, blob: files.get(p)! }));
}

/** Each path once, however often and however spelled (`src/a.ts ./src/a.ts`): one review of it, counted once. */
function repositoryPaths(top: string, cwd: string, paths: string[]): string[] {
  return [...new Set(paths.map((p) => toRepositoryPath(top, cwd, p)))];
}

function noContentAt(path: string, where: string): DelegateGitError {
  return new DelegateGitError(
    'USAGE',
    `${path} is not a file in ${where} (nothing is there, or a directory or submodule); there is no content to review.`,
  );
}

/** The staged governed files, and the governed submodules staged, which no review promotes. */
async function stagedTargets(repo: Repository): Promise<{ targets: Target[]; submodules: string[] }> {
  const report = await checkStaged(repo);
  const staged = new Map((await stagedFiles(repo.cwd, [], repo.env)).map((f) => [f.path, f.blob]));
  const governed = report.results.filter((r) => r.governed);
  return {
    targets: governed.filter((r) => staged.has(r.path)).map((r) => ({ path: r.path, blob: r.blob })),
    submodules: governed.filter((r) => r.kind === 'submodule').map((r) => r.path),
  };
}

/** One record already on the content under review, as the reviewer is shown it. */
interface ShownRecord {
  /** `invalid`: a line that is not a record at all (damaged or forged); it never counts. */
  kind: 'verdict' | 'review' | 'invalid';
  /** The verdict name, or approve / reject. */
  outcome: string;
  signer: string | null;
  createdAt: string;
  /** Whether the trust root in force counts it. */
  counts: boolean;
  /** Why it does not count, when it does not. */
  reason?: string;
  comment?: string;
  /** Set when the record names this content under another path (so it says nothing about this one). */
  recordedAs?: string;
}

interface ShownFile {
  path: string;
  sha256: string;
  gitBlob: string;
  /** The promotion rule's answer before this review is recorded. */
  before: { promoted: boolean; reason: string };
  /** Whether the path is governed now; a record on it makes it governed for good (the ledger only grows). */
  governed: boolean;
  records: ShownRecord[];
  /**
   * The sha256 of each note line shown in `records` (DESIGN 3.2's `reviewed`): the review then says which records
   * its reviewer saw, and a record added to that content later is known to be one the reviewer did not see.
   */
  reviewed: string[];
  /** The most recently promoted earlier version of the path, and the diff from it to this content. */
  lastPromoted: { gitBlob: string; diff: string } | null;
}

/** Where the reviewed files stand with the new records (an approval short of the threshold leaves one refused). */
async function stateAfter(
  repo: Repository,
  governance: Governance,
  anchor: Governance | undefined,
  targets: Target[],
): Promise<string> {
  const notesAt = await repo.ledger.tip();
  const index = await loadPathIndex(repo.ledger, notesAt, repo.cacheDir);
  const judged = await judgeFiles(targets, {
    governance,
    anchor,
    ledger: repo.ledger,
    notesAt,
    index,
    batch: repo.objects,
  });
  return judged
    .map(
      (j) =>
        `${shownPath(j.path)} now: ${j.promoted ? 'promoted' : 'not promoted'} (${shownText(j.reason)})\n`,
    )
    .join('');
}

/**
 * What the reviewer is about to sign: each path, its sha256, every record already on that content (not only the one
 * that decides), and the diff from the version of the path that was promoted last, when there is one.
 */
async function describe(
  repo: Repository,
  governance: Governance,
  anchor: Governance | undefined,
  targets: Target[],
): Promise<{ files: ShownFile[]; text: string }> {
  const notesAt = await repo.ledger.tip();
  const index = await loadPathIndex(repo.ledger, notesAt, repo.cacheDir);
  const ctx = { governance, anchor, ledger: repo.ledger, notesAt, index, batch: repo.objects };
  const now = await judgeFiles(targets, ctx);
  const governedNow = governedMatcher(governance.policy);
  const recordsOn = async (blobs: string[]) =>
    notesAt === null || blobs.length === 0
      ? new Map<string, string[]>()
      : repo.ledger.linesOnMany(blobs, notesAt);
  const current = await recordsOn([...new Set(now.map((j) => j.blob))]);
  const previous: Array<string | null> = [];
  for (const j of now)
    previous.push(await lastPromoted(j.path, j.blob, index.earlierBlobs(j.path, j.blob), ctx, recordsOn));
  const compared = now.flatMap((j, i) => {
    const from = previous[i];
    return from ? [{ path: j.path, from, to: j.blob }] : [];
  });
  const diffs = new Map(
    (await blobDiffs(compared, { cwd: repo.cwd, env: repo.env })).map((diff, i) => [compared[i]!.path, diff]),
  );
  const files: ShownFile[] = now.map((j, i) => ({
    path: j.path,
    sha256: j.sha256,
    gitBlob: j.blob,
    before: { promoted: j.promoted, reason: j.reason },
    governed: governedNow(j.path, index.has(j.path)),
    records: shownRecords(current.get(j.blob) ?? [], governance, j.path),
    reviewed: [...new Set((current.get(j.blob) ?? []).map(sha256Hex))].sort(),
    lastPromoted: previous[i] ? { gitBlob: previous[i]!, diff: diffs.get(j.path) ?? '' } : null,
  }));
  return { files, text: files.map(renderShown).join('') };
}

function shownRecords(lines: readonly string[], governance: Governance, path: string): ShownRecord[] {
  const unreadable: string[] = [];
  const judged = judgeLines(lines, { governance }, unreadable).sort(
    (a, b) => a.record.createdAt - b.record.createdAt,
  );
  const shown: ShownRecord[] = judged.map(({ record, trust }) => {
    const comment = record.predicate.comment;
    const other = record.subjects.some((s) => s.path === path) ? undefined : record.subjects[0]?.path;
    return {
      kind: record.kind,
      outcome: record.kind === 'verdict' ? record.verdict : record.decision,
      signer: trust.signer?.name ?? null,
      createdAt: record.createdAtText,
      counts: trust.ok,
      ...(trust.ok ? {} : { reason: trust.reason }),
      ...(typeof comment === 'string' && comment !== '' ? { comment } : {}),
      ...(other !== undefined ? { recordedAs: other } : {}),
    };
  });
  for (const reason of unreadable) {
    shown.push({
      kind: 'invalid',
      outcome: '',
      signer: null,
      createdAt: '',
      counts: false,
      reason: `not a valid record: ${reason}`,
    });
  }
  return shown;
}

/**
 * The earlier blob of `path` that is promoted and whose records about the path are the newest. The path index lists
 * blobs in notes-tree order (by blob id), which says nothing about time, so order by the records' createdAt.
 */
async function lastPromoted(
  path: string,
  blob: string,
  earlier: string[],
  ctx: Parameters<typeof judgeFiles>[1],
  recordsOn: (blobs: string[]) => Promise<Map<string, string[]>>,
): Promise<string | null> {
  const blobs = [...new Set(earlier)].filter((b) => b !== blob);
  if (blobs.length === 0) return null;
  const promoted = (
    await judgeFiles(
      blobs.map((b) => ({ path, blob: b })),
      ctx,
    )
  )
    .filter((j) => j.promoted)
    .map((j) => j.blob);
  if (promoted.length === 0) return null;
  const lines = await recordsOn(promoted);
  const newest = (b: string) =>
    Math.max(
      0,
      ...judgeLines(lines.get(b) ?? [], ctx)
        .filter(
          ({ record, trust }) => trust.ok && record.subjects.some((s) => s.path === path && s.gitBlob === b),
        )
        .map(({ record }) => record.createdAt),
    );
  return promoted.reduce((best, b) => (newest(b) > newest(best) ? b : best));
}

function renderShown(f: ShownFile): string {
  const out = [
    `${shownPath(f.path)}\n  sha256 ${f.sha256}\n  now: ${f.before.promoted ? 'promoted' : 'not promoted'} (${shownText(f.before.reason)})\n`,
  ];
  if (!f.governed)
    out.push(
      '  not governed now: a record on it makes this path governed for good (the ledger only grows), so every later\n' +
        '  change to it must be promoted too\n',
    );
  if (f.records.length === 0) out.push('  recorded on this content: no records\n');
  else {
    out.push('  recorded on this content:\n');
    for (const r of f.records) {
      const what = r.kind === 'invalid' ? 'a line that is not a record' : `${r.kind} ${r.outcome}`;
      const who = r.signer ? ` by ${r.signer}` : '';
      const when = r.createdAt ? ` at ${r.createdAt}` : '';
      const notes = [
        r.recordedAs ? `recorded as ${shownPath(r.recordedAs)}` : '',
        r.counts ? '' : `does not count: ${r.reason}`,
        r.comment ? `"${r.comment}"` : '',
      ].filter(Boolean);
      // One line per record, whatever its comment or reason holds: a reviewer must not be shown a record line that
      // is not there.
      out.push(`    ${shownText(`${what}${who}${when}${notes.length ? ` (${notes.join('; ')})` : ''}`)}\n`);
    }
  }
  if (f.lastPromoted) {
    out.push(
      `  changes since the last promoted version (${f.lastPromoted.gitBlob.slice(0, 12)}):\n${shownDiff(f.lastPromoted.diff)}`,
    );
  }
  return out.join('');
}

/**
 * The diff as a reviewer reads it. A carriage return, an escape sequence or a bidirectional override in the content
 * would redraw what is shown, so each is written as `\uXXXX`; and as the text `\u000d` may stand in content too, a
 * line that held such a character is marked `!` in the margin, under a warning saying so.
 */
function shownDiff(text: string): string {
  const lines = text.split('\n').filter(Boolean);
  const out = lines.map((l) => `  ${holdsUnprintable(l) ? '!' : ' '} ${shownOutput(l)}\n`);
  if (lines.some(holdsUnprintable))
    out.unshift(
      '  ! marks a line holding characters a terminal does not show as they are (a carriage return, an escape, a bidirectional override), written here as \\uXXXX: read its bytes (git diff | cat -A) before you sign\n',
    );
  return out.join('');
}

/** Named in the notes commit's message: the first few paths, and how many more. */
const NAMED_IN_MESSAGE = 10;

function namesOf(paths: string[]): string {
  const named = paths.slice(0, NAMED_IN_MESSAGE).map(shownPath).join(', ');
  return paths.length > NAMED_IN_MESSAGE ? `${named} and ${paths.length - NAMED_IN_MESSAGE} more` : named;
}
