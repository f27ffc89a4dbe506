/**
 * The CI gate (`verify`, DESIGN 4.2): every ledger line verifies, every governed file at a revision is promoted, and
 * the ledger only ever grew. One pass over the ledger (ledger-pass.ts) serves all three: each line is decoded and
 * its signature checked once, on worker threads; its listing also finds what the ledger's tree holds besides notes
 * (it must hold only notes); the governed-paths index is built from the same pass; the revision's files are weighed
 * against the records on their blobs as those are checked (revision-judge.ts); the append-only check runs beside it
 * in git processes of its own. Lines are streamed, so memory follows the number of problems (and paths recorded),
 * not the size of the records.
 */
import fs from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { type CheckResult, resolveCommit } from './checks.js';
import { DelegateGitError } from './errors.js';
import { git, gitTry } from './git.js';
import { type Governance, loadGovernance, revokedWhere, withRevocationsOf } from './governance.js';
import {
  type GovernanceChangeProblem,
  unapprovedGovernanceChanges,
  withGovernanceHistory,
} from './governance-history.js';
import { type PassStats, passOverLedger } from './ledger-pass.js';
import { lineOutcome } from './line-check.js';
import { ForeignEntries, type ForeignEntry, isObjectId } from './notes-format.js';
import { type addLines, PathIndex, recordFacts, writeCache } from './path-index.js';
import { POLICY_PATH } from './policy.js';
import type { Promotion } from './promotion.js';
import { judgeLine } from './record.js';
import type { Repository } from './repository.js';
import { judgeRevision, type NoteAtRevision, planRevision, type RevisionPlan } from './revision-judge.js';
import {
  judgeSinceVerified,
  resolveVerified,
  type SinceVerified,
  verifiedMissing,
} from './since-verified.js';
import { gitSnapshot, treeFiles } from './snapshot.js';

export interface LineProblem {
  blob: string;
  /** 1-based position among the note's record lines (sorted, blank lines not counted). */
  line: number;
  /** SHA-256 of the line, to find it whatever the numbering (`git notes show <blob> | …`). */
  sha256: string;
  reason: string;
  /** The paths the record names on this blob, for a line that decodes: what it counted for. */
  paths?: string[];
}

export interface LedgerVerification {
  rev: string;
  commit: string;
  ledgerTip: string | null;
  /** Distinct records: a record about several files sits on each file's blob but counts once. */
  records: number;
  /** Record lines over all notes (a record on N blobs is N lines). */
  lines: number;
  notes: number;
  byVerdict: Record<string, number>;
  bySigner: Record<string, number>;
  /** Lines that do not parse or verify: forged, untrusted, malformed, another repository's. */
  invalid: LineProblem[];
  /** Records of revoked keys: valid once, they no longer count; content they promoted needs promoting again. */
  revoked: LineProblem[];
  /**
   * Lines signed by a key of the trust root that may not sign them: without the role, or dated outside its validity
   * (a role removed or a notAfter set after they were made). They count for nothing; no problem by themselves.
   */
  disallowed: LineProblem[];
  /**
   * Entries of the ledger's tree at its tip that are no notes (not a regular file named by a full object id, nor a
   * fanout directory), in git's order; a foreign directory is named once. Every reader skips them.
   */
  foreignEntries: ForeignEntry[];
  files: CheckResult[];
  /**
   * Changes to the policy file or the keys directory, anywhere in the revision's history, that were not approved under
   * the rules in force before them. Each is also reported in `files` against the path, so every summary shows it.
   */
  governanceChanges: GovernanceChangeProblem[];
  /**
   * With `--since`: the commits the revision adds beyond the commit verified last, judged as a push onto it. The
   * history up to that commit is then taken as verified, and governanceChanges stays empty unless the whole history
   * was judged after all (`since.wholeHistory`).
   */
  since?: SinceVerified;
  appendOnly: {
    checked: string;
    /**
     * Records removed: lines a key of the trust root signed (whether or not they count now), with that key's holder
     * as the trust root names it.
     */
    removed: Array<{ commit: string; blob: string; line: string; signer?: string }>;
    /**
     * How many lines were removed that no key of the trust root signed (junk, or a key never trusted here): no
     * record was lost, and removing such a line is the way out of it on a host without the server's hook.
     */
    unsignedRemoved?: number;
    problem?: string;
  };
}

export interface VerifyOptions {
  rev?: string;
  baseline?: string;
  /** The commit verified last on the protected branch (see SinceVerified). */
  since?: string;
  /**
   * A commit whose trust root's revocations bind `rev` too (the protected branch's tip, for a branch made before a
   * revocation there): its keys revoked there count for nothing here either (withRevocationsOf).
   */
  revocationsOf?: string;
  /**
   * Reuse and keep the facts of lines already verified under this trust root (`.git/delegate-git/cache`, DESIGN 6).
   * Default true; the answer is the same either way.
   */
  cache?: boolean;
  /** Told how the pass over the ledger went (notes read, and how many the cache answered). */
  onPass?: (stats: PassStats) => void;
}

export function verificationExitCode(v: LedgerVerification): 0 | 1 {
  const bad =
    v.invalid.length > 0 ||
    v.foreignEntries.length > 0 ||
    v.files.some((f) => !f.promoted) ||
    v.appendOnly.removed.length > 0 ||
    v.appendOnly.problem ||
    v.since?.problem ||
    (v.since?.refusals.length ?? 0) > 0;
  return bad ? 1 : 0;
}

export async function verifyLedger(repo: Repository, opts: VerifyOptions = {}): Promise<LedgerVerification> {
  const rev = opts.rev ?? 'HEAD';
  refuseShallow(repo);
  await refuseReplaced(repo);
  const commit = await resolveCommit(repo, rev);
  const since = opts.since === undefined ? undefined : await resolveVerified(repo, opts.since);
  const revoking =
    opts.revocationsOf === undefined ? undefined : await resolveCommit(repo, opts.revocationsOf);
  const governance = await governanceWithRevocations(repo, commit, revoking);
  const ledgerTip = await repo.ledger.tip();
  const result: LedgerVerification = {
    rev,
    commit,
    ledgerTip,
    records: 0,
    lines: 0,
    notes: 0,
    // Keyed by names a key file chose: `__proto__` or `constructor` must count as any other name.
    byVerdict: Object.create(null) as Record<string, number>,
    bySigner: Object.create(null) as Record<string, number>,
    invalid: [],
    revoked: [],
    disallowed: [],
    foreignEntries: [],
    files: [],
    governanceChanges: [],
    appendOnly: { checked: 'no ledger', removed: [] },
  };
  // A baseline says a ledger was verified here before: none now means it was deleted (or not fetched).
  if (!ledgerTip && opts.baseline)
    result.appendOnly = {
      checked: `baseline ${opts.baseline}`,
      removed: [],
      problem: `there is no ledger (${repo.ledger.ref}) though the baseline ${opts.baseline} was verified: it was deleted, or not fetched`,
    };
  // The ledger's history is checked by git processes of its own, beside the pass.
  const appendOnly = ledgerTip ? checkAppendOnly(repo, governance, ledgerTip, opts.baseline, commit) : null;
  appendOnly?.catch(() => {}); // awaited below
  // The revision's files are listed, read and hashed while the notes are listed: the threads weigh their records.
  const files = treeFiles(repo.cwd, commit, [], repo.env, { submodules: true });
  const plan = files.then((f) => planRevision(f, governance, repo.objects));
  plan.catch(() => {}); // awaited below
  const atRevision = new Map<string, NoteAtRevision>();
  let index = PathIndex.empty();
  if (ledgerTip) {
    const pass = await verifyLines(repo, governance, ledgerTip, result, {
      plan,
      onRevisionBlob: (blob, note) => atRevision.set(blob, note),
      cache: opts.cache ?? true,
    });
    index = pass.index;
    opts.onPass?.(pass.stats);
  }
  const judged = await judgeRevision(await files, governance, index, await plan, atRevision, repo.objects);
  // A submodule has no record anywhere to bring in: its refusal says what keeps it.
  for (const f of judged)
    if (!f.promoted && !atRevision.has(f.blob) && f.kind !== 'submodule') f.unrecorded = true;
  atRevision.clear();
  if (opts.since !== undefined)
    result.since = since
      ? await judgeSinceVerified(repo, since, commit, revoking)
      : verifiedMissing(opts.since);
  if (result.since?.wholeHistory ?? true)
    result.governanceChanges = await unapprovedGovernanceChanges(repo, commit, ledgerTip, index);
  result.files = withGovernanceHistory(judged, result.governanceChanges);
  if (opts.revocationsOf !== undefined) {
    // Said where the revision's own key files show no revocation (red team r06).
    const where = `at ${opts.revocationsOf}`;
    result.files = result.files.map((f) => ({
      ...f,
      reason: revokedWhere(f.reason, governance.trustRoot, where),
    }));
    result.revoked = result.revoked.map((l) => ({
      ...l,
      reason: revokedWhere(l.reason, governance.trustRoot, where),
    }));
  }
  if (appendOnly) result.appendOnly = await appendOnly;
  return result;
}

/**
 * The rules at `commit`, with the revocations of `revoking`'s trust root when given. One that holds no policy (a
 * default branch not adopted yet, while a pull request adopts it) revokes nothing; one whose rules cannot be read is
 * no answer, said as the option's.
 */
async function governanceWithRevocations(
  repo: Repository,
  commit: string,
  revoking?: string,
): Promise<Governance> {
  const at = (c: string) => loadGovernance(gitSnapshot(repo.cwd, repo.objects, c, repo.env));
  const own = await at(commit);
  if (revoking === undefined || revoking === commit) return own;
  if ((await repo.objects.read(`${revoking}:${POLICY_PATH}`)) === null) return own;
  const binding = await at(revoking).catch((error: unknown) => {
    if (!(error instanceof DelegateGitError)) throw error;
    throw new DelegateGitError(
      error.code,
      `--revocations-of ${revoking.slice(0, 12)}: its rules cannot be read, so the keys it revokes are unknown. ${error.message}`,
      { cause: error },
    );
  });
  return withRevocationsOf(own, binding);
}

/**
 * A shallow clone (actions/checkout's default) holds neither the history of the policy and keys nor all of the
 * ledger's: verify would find nothing wrong there because it could not look, so it refuses to answer.
 */
function refuseShallow(repo: Repository): void {
  if (!fs.existsSync(path.join(repo.layout.commonDir, 'shallow'))) return;
  throw new DelegateGitError(
    'GIT',
    "This clone is shallow: verify judges the history of the policy and the keys, and the ledger's own history, which a shallow clone does not hold, so it cannot answer here. Fetch the whole history (`git fetch --unshallow`, or `fetch-depth: 0` for actions/checkout) and run verify again.",
  );
}

/**
 * Replace refs and a grafts file make git check out, show and archive other objects, or another history, than the
 * ones stored, while verify judges what is stored (gitEnv sets GIT_NO_REPLACE_OBJECTS): a pass would vouch for what
 * this clone does not hold (rt57 f01; the server hook refuses such refs, a host without it keeps them for every
 * mirror clone). So verify refuses to answer in such a clone.
 */
async function refuseReplaced(repo: Repository): Promise<void> {
  // Where git looks for them in this environment, as it would for a checkout here (rt58 f08).
  const env = repo.env ?? process.env;
  const grafts = env.GIT_GRAFT_FILE
    ? path.resolve(repo.cwd, env.GIT_GRAFT_FILE)
    : path.join(repo.layout.commonDir, 'info', 'grafts');
  const base = (env.GIT_REPLACE_REF_BASE || 'refs/replace/').replace(/\/*$/, '/');
  if (fs.existsSync(grafts))
    throw new DelegateGitError(
      'GIT',
      `This clone has a grafts file (${grafts}): git reads the history through it, so verify's answer would not be about the history this clone shows. Remove it (or move it aside) and run verify again.`,
    );
  const listed = await git(['for-each-ref', '--format=%(refname)', base], { cwd: repo.cwd, env });
  const refs = listed.toString('utf8').split('\n').filter(Boolean);
  if (refs.length === 0) return;
  const first = refs[0]!.slice(base.length);
  throw new DelegateGitError(
    'GIT',
    `This clone holds ${refs.length === 1 ? 'a replace ref' : `${refs.length} replace refs`} (${base}${first}${refs.length > 1 ? ', …' : ''}): git checks out, shows and archives the object ${refs.length === 1 ? 'it names' : 'each names'} in place of the one stored, while verify judges what is stored, so its answer would not be about what this clone holds. The server hook refuses such refs; a host without it (github.com) keeps them for every mirror clone. Delete them (\`git replace -d ${first}\`${refs.length > 1 ? ', and so on' : ''}; on the remote too) and run verify again.`,
  );
}

type IndexEntries = Parameters<typeof addLines>[0];

/**
 * Counts and lists what the pass over the ledger finds, and builds the governed-paths index from the same pass, so
 * judging the revision's files reads the ledger no more.
 */
async function verifyLines(
  repo: Repository,
  governance: Governance,
  tip: string,
  out: LedgerVerification,
  opts: {
    plan: Promise<RevisionPlan>;
    onRevisionBlob: (blob: string, note: NoteAtRevision) => void;
    cache: boolean;
  },
): Promise<{ index: PathIndex; stats: PassStats }> {
  const { trustRoot } = governance;
  // A line counts once however many notes it sits on; only a record naming several blobs can sit on several.
  // 16 bytes of its SHA-256 are enough to tell them apart.
  const seen = new Set<string>();
  // The plan is awaited by the pass once the notes are listed, before the first note is handed on.
  let plan: RevisionPlan | undefined;
  const planned = opts.plan.then((p) => {
    plan = p;
    return p.candidates;
  });
  const byPath: IndexEntries = new Map();
  const foreign = new ForeignEntries();
  const now = Date.now();
  const stats = await passOverLedger(
    repo,
    governance,
    tip,
    (note) => {
      out.notes++;
      note.facts.forEach((facts, i) => {
        out.lines++;
        recordFacts(byPath, note.annotated, [facts.index]);
        const o = lineOutcome(facts, trustRoot, now);
        if (o.status !== 'valid') {
          const problem: LineProblem = {
            blob: note.annotated,
            line: i + 1,
            sha256: facts.sha256 ?? '',
            reason: o.reason,
            ...(facts.index ? { paths: facts.index[4] } : {}),
          };
          out[o.status].push(problem);
          return;
        }
        if (facts.elsewhere) {
          const key = facts.sha256!.slice(0, 32);
          if (seen.has(key)) return;
          seen.add(key);
        }
        out.records++;
        out.byVerdict[o.outcome] = (out.byVerdict[o.outcome] ?? 0) + 1;
        out.bySigner[o.signer] = (out.bySigner[o.signer] ?? 0) + 1;
      });
      const onRevision = plan!.candidates.get(note.annotated);
      if (onRevision || plan!.ifRecorded.has(note.annotated)) {
        const promoted = new Map<string, Promotion>();
        note.promotions?.forEach((p, i) => {
          if (p) promoted.set(onRevision![i]!.candidate.path, p);
        });
        // The facts are kept only for a note the main thread will weigh itself (it has its lines then).
        const facts = note.lines === null ? [] : note.facts;
        opts.onRevisionBlob(note.annotated, { facts, lines: note.lines, promoted });
      }
    },
    {
      candidates: planned,
      wantLines: (annotated) => plan!.ifRecorded.has(annotated),
      cache: opts.cache,
      foreign,
    },
  );
  out.foreignEntries = foreign.found;
  const index = new PathIndex(byPath);
  // The gate's index cache for this tip, unless an earlier run (or a gate) saved it already.
  const saved = await access(path.join(repo.cacheDir, `path-index-${tip}.json`)).then(
    () => true,
    () => false,
  );
  if (!saved) await writeCache(repo.cacheDir, tip, index);
  const order = (a: LineProblem, b: LineProblem) =>
    a.blob === b.blob ? a.line - b.line : a.blob < b.blob ? -1 : 1;
  out.invalid.sort(order);
  out.revoked.sort(order);
  out.disallowed.sort(order);
  return { index, stats };
}

/**
 * With a baseline: it must be an ancestor of the tip and every line it held must still be there. Without one, every
 * line any notes commit of the history held must be at the tip (a line dropped by one commit and put back by a later
 * one, as sync gives back what a clone removed, lost nothing): the same rule the server applies to what a push brings.
 */
async function checkAppendOnly(
  repo: Repository,
  governance: Governance,
  tip: string,
  baseline: string | undefined,
  revision: string,
): Promise<LedgerVerification['appendOnly']> {
  const older = baseline ? await baselineCommit(repo, baseline, tip, revision) : null;
  if (older && 'missing' in older)
    return {
      checked: `baseline ${older.missing}`,
      removed: [],
      problem:
        `the baseline ${older.missing} is not in this repository: the ledger history was replaced, or the baseline ` +
        'was never fetched here; which lines the replacement lost cannot be read without its commits',
    };
  if (older && !older.ancestor) {
    // Replaced: what the baseline held that the tip does not is what was lost, however the history got there.
    const { removed, unsigned } = signedOnly(
      (await repo.ledger.droppedLines(older.commit, tip)).map((d) => ({ ...d, commit: tip })),
      governance,
    );
    return {
      checked: `baseline ${older.commit}`,
      removed,
      ...(unsigned > 0 ? { unsignedRemoved: unsigned } : {}),
      problem:
        `the baseline ${older.commit.slice(0, 12)} is not an ancestor of the ledger tip: its history was rewritten` +
        (removed.length + unsigned === 0 ? ' (the tip still holds every line the baseline held)' : ''),
    };
  }
  // Since the baseline, every notes commit is checked, not only the tip: a signed rejection added after the last run
  // and removed before this one was otherwise never seen (rt47 F03).
  const { removed, unsigned } = signedOnly(
    await repo.ledger.notHeldAt(await repo.ledger.droppedLinesAlong(tip, older?.commit ?? null), [tip]),
    governance,
  );
  return {
    checked: older ? `since baseline ${older.commit}` : 'whole history',
    removed,
    ...(unsigned > 0 ? { unsignedRemoved: unsigned } : {}),
  };
}

/**
 * The notes commit `--baseline` names, and whether the ledger tip descends from it. A name that does not resolve, or
 * names anything but a ledger commit (a blob, a tree, a commit of the branch: the action's other remembered id), is
 * a bad argument, not a rewritten ledger; only a full id that is gone says the history was replaced.
 */
async function baselineCommit(
  repo: Repository,
  baseline: string,
  tip: string,
  revision: string,
): Promise<{ commit: string; ancestor: boolean } | { missing: string }> {
  const opts = { cwd: repo.cwd, env: repo.env };
  const bad = (what: string) =>
    new DelegateGitError(
      'USAGE',
      `--baseline ${JSON.stringify(baseline)} ${what}. Give the full id of the notes commit (${repo.ledger.ref}) verified last.`,
    );
  const type = (await gitTry(['cat-file', '-t', baseline], opts)).stdout.toString().trim();
  if (type === '') {
    if (isObjectId(baseline)) return { missing: baseline };
    throw bad('names no commit here');
  }
  const resolved = await gitTry(['rev-parse', '--verify', '-q', `${baseline}^{commit}`], opts);
  if (resolved.code !== 0) throw bad(`names a ${type}, not a notes commit`);
  const commit = resolved.stdout.toString().trim();
  const isAncestor = (of: string) =>
    gitTry(['merge-base', '--is-ancestor', commit, of], opts).then((r) => r.code === 0);
  if (await isAncestor(tip)) return { commit, ancestor: true };
  if (await isAncestor(revision))
    throw bad(`names a commit of the revision's history, not of ${repo.ledger.ref}`);
  return { commit, ancestor: false };
}

/** The removed lines a key of the trust root signed (records lost), and how many others (no record lost). */
function signedOnly(
  dropped: ReadonlyArray<{ commit: string; annotated: string; line: string }>,
  governance: Governance,
): { removed: LedgerVerification['appendOnly']['removed']; unsigned: number } {
  const removed = dropped.flatMap((d) => {
    const signer = signerHere(d.line, governance);
    return signer === null ? [] : [{ commit: d.commit, blob: d.annotated, line: d.line, signer }];
  });
  return { removed, unsigned: dropped.length - removed.length };
}

/** The holder of the trust root's key that signed the line, whether or not it may sign it now (revoked, say). */
function signerHere(line: string, governance: Governance): string | null {
  const judged = judgeLine(line, governance.trustRoot, governance.policy.repositoryId);
  if (!judged.ok || !(judged.trust.ok || judged.trust.verified === true)) return null;
  const keyid = judged.record.envelope.signatures[0]!.keyid;
  return governance.trustRoot.byKeyid(keyid)?.name ?? `key ${keyid.slice(0, 12)}`;
}
