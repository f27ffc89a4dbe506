/**
 * The CI gate (`verify`, DESIGN 4.2): every ledger line verifies, every governed file at a revision is promoted, and
 * the ledger only ever grew. Lines are streamed, so memory follows the number of problems, not the ledger's size.
 */
import { checkRevision, type CheckResult } from './checks.js';
import { DelegateGitError } from './errors.js';
import { gitTry } from './git.js';
import { type Governance, loadGovernance } from './governance.js';
import { decodeRecord, verifyRecord } from './record.js';
import type { Repository } from './repository.js';
import { gitSnapshot } from './snapshot.js';

export interface LineProblem {
  blob: string;
  /** 1-based line number within the note. */
  line: number;
  reason: string;
}

export interface LedgerVerification {
  rev: string;
  commit: string;
  ledgerTip: string | null;
  records: number;
  notes: number;
  byVerdict: Record<string, number>;
  bySigner: Record<string, number>;
  /** Lines that do not parse or verify: forged, untrusted, malformed, another repository's. */
  invalid: LineProblem[];
  /** Records of revoked keys: valid once, they no longer count; content they promoted needs promoting again. */
  revoked: LineProblem[];
  files: CheckResult[];
  appendOnly: { checked: string; removed: Array<{ commit: string; blob: string; line: string }>; problem?: string };
}

export interface VerifyOptions {
  rev?: string;
  baseline?: string;
}

export function verificationExitCode(v: LedgerVerification): 0 | 1 {
  const bad = v.invalid.length > 0 || v.files.some((f) => !f.promoted) || v.appendOnly.removed.length > 0 || v.appendOnly.problem;
  return bad ? 1 : 0;
}

export async function verifyLedger(repo: Repository, opts: VerifyOptions = {}): Promise<LedgerVerification> {
  const rev = opts.rev ?? 'HEAD';
  const resolved = await gitTry(['rev-parse', '--verify', '-q', `${rev}^{commit}`], { cwd: repo.cwd, env: repo.env });
  if (resolved.code !== 0) throw new DelegateGitError('GIT', `"${rev}" is not a commit in this repository. Name a branch, tag or commit id.`);
  const commit = resolved.stdout.toString().trim();
  const governance = await loadGovernance(gitSnapshot(repo.cwd, repo.objects, commit, repo.env));
  const ledgerTip = await repo.ledger.tip();
  const result: LedgerVerification = {
    rev,
    commit,
    ledgerTip,
    records: 0,
    notes: 0,
    byVerdict: {},
    bySigner: {},
    invalid: [],
    revoked: [],
    files: [],
    appendOnly: { checked: 'no ledger', removed: [] },
  };
  if (ledgerTip) await verifyLines(repo, governance, ledgerTip, result);
  const files = await checkRevision(repo, commit);
  result.files = files.results;
  if (ledgerTip) result.appendOnly = await checkAppendOnly(repo, ledgerTip, opts.baseline);
  return result;
}

async function verifyLines(repo: Repository, governance: Governance, tip: string, out: LedgerVerification) {
  const { trustRoot, policy } = governance;
  for await (const { annotated, lines } of repo.ledger.entries(tip)) {
    out.notes++;
    lines.forEach((line, i) => {
      out.records++;
      const problem = (reason: string) => ({ blob: annotated, line: i + 1, reason });
      const decoded = decodeRecord(line);
      if (!decoded.ok) {
        out.invalid.push(problem(`not a valid record: ${decoded.reason}`));
        return;
      }
      const r = decoded.record;
      if (!r.subjects.some((s) => s.gitBlob === annotated)) {
        out.invalid.push(problem('the record does not name the blob it is attached to'));
        return;
      }
      const trust = verifyRecord(r, trustRoot, policy.repositoryId);
      if (!trust.ok) {
        if (trust.signer?.revoked !== undefined && trust.reason.endsWith('was revoked')) out.revoked.push(problem(trust.reason));
        else out.invalid.push(problem(trust.reason));
        return;
      }
      const outcome = r.kind === 'verdict' ? r.verdict : `review:${r.decision}`;
      out.byVerdict[outcome] = (out.byVerdict[outcome] ?? 0) + 1;
      out.bySigner[trust.signer.name] = (out.bySigner[trust.signer.name] ?? 0) + 1;
    });
  }
}

/**
 * With a baseline: it must be an ancestor of the tip and every line it held must still be there. Without one, every
 * notes commit in the history must hold every line of each of its parents.
 */
async function checkAppendOnly(repo: Repository, tip: string, baseline: string | undefined): Promise<LedgerVerification['appendOnly']> {
  const removed: LedgerVerification['appendOnly']['removed'] = [];
  if (baseline) {
    const exists = await gitTry(['rev-parse', '--verify', '-q', `${baseline}^{commit}`], { cwd: repo.cwd, env: repo.env });
    if (exists.code !== 0) {
      return { checked: `baseline ${baseline}`, removed, problem: `the baseline ${baseline} is not in this repository: the ledger history was replaced or not fetched` };
    }
    const base = exists.stdout.toString().trim();
    const ff = await gitTry(['merge-base', '--is-ancestor', base, tip], { cwd: repo.cwd, env: repo.env });
    if (ff.code !== 0) {
      return { checked: `baseline ${base}`, removed, problem: `the baseline ${base.slice(0, 12)} is not an ancestor of the ledger tip: its history was rewritten` };
    }
    for (const d of await repo.ledger.droppedLines(base, tip)) removed.push({ commit: tip, blob: d.annotated, line: d.line });
    return { checked: `since baseline ${base}`, removed };
  }
  for await (const { commit, parents } of repo.ledger.history()) {
    for (const parent of parents) {
      for (const d of await repo.ledger.droppedLines(parent, commit)) removed.push({ commit, blob: d.annotated, line: d.line });
    }
  }
  return { checked: 'whole history', removed };
}
