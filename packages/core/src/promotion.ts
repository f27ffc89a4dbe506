/**
 * The single promotion rule every gate uses (DESIGN 4.1), as a pure function of what the ledger holds.
 * I/O (reading notes, verifying signatures, hashing content) happens before; this only decides and explains.
 */

import { datedAhead } from './dated-ahead.js';
import type { LedgerRecord, RecordTrust } from './record.js';
import { shownPath } from './shown-path.js';
import type { VerdictName } from './statement.js';
import { holderOf } from './trust-root.js';

export interface Candidate {
  path: string;
  sha256: string;
  gitBlob: string;
}

/** A record found on the candidate's blob, with the trust decision already made for it. */
export interface JudgedRecord {
  record: LedgerRecord;
  trust: RecordTrust;
}

/** What the ledger said about the same path on other content (for the reason only; never promotes). */
export interface EarlierRecord {
  kind: 'verdict' | 'review';
  verdict?: VerdictName;
  decision?: 'approve' | 'reject';
  signer?: string;
}

export interface PromotionRules {
  requireReview: boolean;
  reviewThreshold: number;
  /**
   * For a change to the policy or a key file: approvals count only when made no earlier than this time (when the
   * version the change replaces was admitted, admittedAt). An approval covers exact content for good, so without this,
   * putting back an older approved policy, or a key file from before its revocation, would need no one's approval.
   */
  approvedSince?: number;
  /** What `approvedSince` is the date of, for a refusal's reason (default: the version the change replaces). */
  approvedSinceOf?: string;
  /** The clock that judges (default: this machine's): a record dated ahead of it does not count (dated-ahead.ts). */
  now?: number;
}

export interface Promotion {
  path: string;
  promoted: boolean;
  reason: string;
  /** Names of the signers whose records promote it (or, when refused, whose records refuse it). */
  by: string[];
}

const VERDICT_MEANING: Partial<Record<VerdictName, string>> = {
  UNIT_FAILED: 'the unit that wrote it failed verification',
  UNIT_FLAKY: 'the contract disagreed with itself across repeated runs',
  UNIT_UNVERIFIED: 'the unit that wrote it was never verified',
  INCOHERENT: 'the unit passed but the project-wide check failed',
  CONTRACT_MODIFIED: 'the unit changed its contract files, so its verdict is void',
  VERIFICATION_NOT_APPROVED: 'the verification command was never approved to run',
};

export const REASONS = {
  passed: 'a unit passed it and its content is unchanged',
  noVerdict: 'no verdict: no delegated unit is recorded as writing it',
  changedAfterVerdict: 'its content changed after the verdict, so it is not the version anything verified',
} as const;

const NOT_THIS_CONTENT = 'so it is not about this content';

/**
 * `unreadable`: why each line on the blob that is not a record at all failed to decode (a forged or damaged line
 * never promotes, but a refusal should say it was there).
 */
export function promotionOf(
  candidate: Candidate,
  onBlob: readonly JudgedRecord[],
  rules: PromotionRules,
  earlier: readonly EarlierRecord[] = [],
  unreadable: readonly string[] = [],
): Promotion {
  const { path } = candidate;
  const aboutIt = countingAt(
    rules.now ?? Date.now(),
    onBlob.filter(({ record }) => record.subjects.some((s) => sameContent(s, candidate))),
  );
  const trusted = aboutIt.filter((j) => j.trust.ok);

  const { approvers, rejectors, stale } = reviewOutcome(trusted, rules.approvedSince);
  if (rejectors.length > 0) {
    return refuse(path, `rejected by ${names(rejectors)}`, rejectors);
  }
  if (approvers.length === 0 && stale.length > 0) {
    return refuse(
      path,
      `approved by ${names(stale)} only before ${rules.approvedSinceOf ?? 'the version it replaces was approved: going back to earlier content needs a new approval (as does any change approved only before it)'}`,
      stale,
    );
  }
  const passers = unique(
    trusted.filter((j) => j.record.kind === 'verdict' && j.record.verdict === 'UNIT_PASSED').map(signerName),
  );

  if (rules.requireReview) {
    if (approvers.length >= rules.reviewThreshold) {
      return promote(path, `approved by ${names(approvers)} and unchanged since`, [...approvers, ...passers]);
    }
    if (approvers.length > 0 || passers.length > 0) {
      const has = approvers.length > 0 ? `has ${approvers.length} (${names(approvers)})` : 'has none';
      const lead = passers.length > 0 ? 'a unit passed it, but ' : '';
      return refuse(
        path,
        `${lead}the policy requires ${rules.reviewThreshold} reviewer approval(s) and it ${has}${oneReviewer(trusted)}${notCounted(aboutIt)}`,
        [...approvers, ...passers],
      );
    }
  } else {
    if (approvers.length > 0)
      return promote(path, `approved by ${names(approvers)} and unchanged since`, approvers);
    if (passers.length > 0) return promote(path, REASONS.passed, passers);
  }

  const failing = latest(trusted.filter((j) => j.record.kind === 'verdict'));
  if (failing && failing.record.kind === 'verdict') {
    const v = failing.record.verdict;
    return refuse(path, `verdict was ${v}: ${VERDICT_MEANING[v] ?? 'it does not promote'}`, [
      signerName(failing),
    ]);
  }
  const untrusted = aboutIt.find((j) => !j.trust.ok);
  if (untrusted && !untrusted.trust.ok) {
    return refuse(path, `the record on it does not count: ${untrusted.trust.reason}`, []);
  }
  const misdescribed = onBlob.flatMap((j) => j.record.subjects).find((s) => s.path === path);
  if (misdescribed) {
    const digest = misdescribed.sha256 !== candidate.sha256 ? 'sha256' : 'gitBlob';
    return refuse(
      path,
      `the record on it names this path with another ${digest} digest, ${NOT_THIS_CONTENT}`,
      [],
    );
  }
  if (unreadable.length > 0)
    return refuse(path, `the line on it is not a valid record: ${unreadable[0]}`, []);
  return refuse(path, reasonFromHistory(earlier, onBlob, candidate, rules), []);
}

/**
 * Approvals of this content whose signatures verify under keys that may not sign them now (revoked, expired, no longer
 * reviewers): a count of approvals that leaves them out should say so, or a reviewer who knows they approved reads
 * the count as wrong.
 */
function notCounted(aboutIt: readonly JudgedRecord[]): string {
  const why = unique(
    aboutIt
      .filter(
        (j) => j.record.kind === 'review' && j.record.decision === 'approve' && formerlyApproved(j.trust),
      )
      .map((j) => (j.trust.ok ? '' : j.trust.reason)),
  );
  return why.length === 0 ? '' : `; not counted: ${why.join('; ')}`;
}

/** Approvals by two keys of one holder (holderOf) count once: a count that merges them should say so. */
function oneReviewer(trusted: readonly JudgedRecord[]): string {
  const names = new Map<string, Set<string>>();
  for (const { record, trust } of trusted) {
    if (record.kind !== 'review' || record.decision !== 'approve' || !trust.ok) continue;
    const holder = holderOf(trust.signer);
    names.set(holder, (names.get(holder) ?? new Set()).add(trust.signer.name));
  }
  const merged = [...names.values()].filter((n) => n.size > 1).map((n) => [...n].sort().join(' and '));
  return merged.length === 0
    ? ''
    : `; ${merged.join('; ')} count as one reviewer (their key files name one email)`;
}

function reasonFromHistory(
  earlier: readonly EarlierRecord[],
  onBlob: readonly JudgedRecord[],
  c: Candidate,
  rules: PromotionRules,
): string {
  const approval = earlier.find((e) => e.kind === 'review' && e.decision === 'approve');
  if (approval) return `approved by ${approval.signer ?? 'a reviewer'} for another version`;
  if (earlier.some((e) => e.kind === 'verdict' && e.verdict === 'UNIT_PASSED'))
    return REASONS.changedAfterVerdict;
  const last = earlier.find((e) => e.kind === 'verdict');
  if (last)
    return `its content changed after the last verdict (${last.verdict}), and no record covers this version`;
  // A line on this blob may name other files beside it (one unit wrote several): only a subject of this content counts.
  const elsewhere = onBlob
    .flatMap((j) => j.record.subjects)
    .find((s) => s.path !== c.path && s.gitBlob === c.gitBlob && s.sha256 === c.sha256);
  if (elsewhere)
    return `no verdict for this path (the same content is recorded as ${otherName(elsewhere.path, c.path)})`;
  // Where only reviewers promote (the policy and key files, requireReview), a missing verdict is not what is missing.
  return rules.requireReview
    ? `no reviewer approved it, and the policy requires ${rules.reviewThreshold} reviewer approval(s)`
    : REASONS.noVerdict;
}

/**
 * The recorded name, told apart from this path where the two would print alike: another Unicode form of the same
 * characters (a decomposed é, as macOS writes it, against a composed one) is shown byte by byte, as git quotes names
 * with core.quotePath.
 */
function otherName(recorded: string, path: string): string {
  if (recorded.normalize('NFC') === path.normalize('NFC'))
    return `${byteQuoted(recorded)}, another Unicode form of this path's name ${byteQuoted(path)}`;
  if (recorded.toLowerCase() === path.toLowerCase())
    return `${shownPath(recorded)}, which differs from this path in letter case only`;
  return shownPath(recorded);
}

function byteQuoted(name: string): string {
  const bytes = [...Buffer.from(name, 'utf8')];
  const shown = bytes.map((b) =>
    b >= 0x20 && b < 0x7f && b !== 0x22 && b !== 0x5c
      ? String.fromCharCode(b)
      : `\\${b.toString(8).padStart(3, '0')}`,
  );
  return `"${shown.join('')}"`;
}

/**
 * Each reviewer's latest decision on this content counts once: a later approval lifts their own rejection; on a tie
 * the rejection stands (fail closed). Distinct reviewers are distinct holders (holderOf: the email of the key file),
 * so two keys of one person count once. An approval made before `approvedSince` does not count (`stale`); a rejection
 * always does.
 */
function reviewOutcome(
  trusted: readonly JudgedRecord[],
  approvedSince = Number.NEGATIVE_INFINITY,
): { approvers: string[]; rejectors: string[]; stale: string[] } {
  const byHolder = new Map<string, JudgedRecord>();
  for (const j of trusted) {
    if (j.record.kind !== 'review' || !j.trust.ok) continue;
    const holder = holderOf(j.trust.signer);
    const prev = byHolder.get(holder);
    if (!prev || isLater(j, prev)) byHolder.set(holder, j);
  }
  const approvers: string[] = [];
  const rejectors: string[] = [];
  const stale: string[] = [];
  for (const j of byHolder.values()) {
    if (j.record.kind !== 'review') continue;
    if (j.record.decision === 'reject') rejectors.push(signerName(j));
    else (j.record.createdAt >= approvedSince ? approvers : stale).push(signerName(j));
  }
  return { approvers: approvers.sort(), rejectors: rejectors.sort(), stale: stale.sort() };
}

/** One commit of a policy or key file's history (path-history.ts): its content there and its parents in it. */
export interface VersionAt {
  blob: string | null;
  parents: readonly string[];
}

/**
 * When the content of `path` at `tip` was admitted, along its history `commits` (every commit that changed it, and
 * every merge, with their parents among them). Content a commit carries unchanged from a parent keeps that parent's
 * date, the latest where several parents hold it, unless another parent holds other content (a merge keeping one
side's version): that is a change from the other side's version, and dated as one too. Content a commit changes or
adds is dated by the moment
 * `threshold` distinct holders of keys (holderOf) had approved it no earlier than the date of what it replaced (the latest of its parents'
 * versions; with fewer such keys, by the last of their approvals), and keeps that date where none had. Dating by the
 * first approval alone let a version come back a second time on an old approval (the policy S, then T, then S approved
 * again, then T once more on the approval it had before S came back); dating by one approval let one reviewer lower a
 * date below a higher threshold by back-dating an approval (createdAt is the signer's word). `threshold` may be given
 * per commit, the one in force when that commit's version was admitted: approvals made later toward a higher
 * threshold of today do not move the date of a version admitted under a lower one. An approval dated ahead of `now`
 * counts for nothing (countingAt). Undefined when nothing along the way was ever approved. `dated`: the dates of
 * commits found so far, kept by a caller that asks again along the same history with the same records and thresholds
 * (a commit's date depends only on what is behind it).
 */
export function admittedAt(
  path: string,
  tip: string,
  commits: ReadonlyMap<string, VersionAt>,
  recordsOn: (blob: string) => readonly JudgedRecord[],
  threshold: number | ((commit: string) => number) = 1,
  now = Date.now(),
  dated = new Map<string, number | undefined>(),
): number | undefined {
  const thresholdAt = typeof threshold === 'number' ? () => threshold : threshold;
  // Parents before children, without recursion: a long history must not exhaust the stack.
  const stack: Array<{ id: string; expanded: boolean }> = [{ id: tip, expanded: false }];
  while (stack.length > 0) {
    const top = stack.pop()!;
    if (dated.has(top.id)) continue;
    const at = commits.get(top.id);
    if (!at || at.blob === null) {
      dated.set(top.id, undefined);
      continue;
    }
    const parents = at.parents.filter((p) => commits.has(p));
    if (!top.expanded) {
      stack.push({ id: top.id, expanded: true });
      for (const p of parents) if (!dated.has(p)) stack.push({ id: p, expanded: false });
      continue;
    }
    const holding = parents.filter((p) => commits.get(p)!.blob !== null);
    const carried = latestTime(
      holding.filter((p) => commits.get(p)!.blob === at.blob).map((p) => dated.get(p)),
    );
    const others = holding.filter((p) => commits.get(p)!.blob !== at.blob);
    if (others.length === 0 && holding.length > 0) {
      dated.set(top.id, carried);
      continue;
    }
    // A merge that keeps one side's version replaces the other sides' versions with it: it is dated as that change
    // too, or a version taken from a stale side would keep the side's old date and come back again on it later.
    const replaced = latestTime(others.map((p) => dated.get(p)));
    const admitted =
      approvedBy(thresholdAt(top.id), path, at.blob, countingAt(now, recordsOn(at.blob)), replaced) ??
      replaced;
    dated.set(top.id, latestTime([carried, admitted]));
  }
  return dated.get(tip);
}

function latestTime(times: ReadonlyArray<number | undefined>): number | undefined {
  const known = times.filter((t): t is number => t !== undefined);
  return known.length === 0 ? undefined : Math.max(...known);
}

/**
 * When `threshold` distinct holders of keys (holderOf) had approved the content (records on that blob about that path) no earlier than
 * `since`; where fewer did (a version admitted under a lower threshold of its time), the last of those approvals, so
 * a later one, back-dated or not, can only move that date on. Keys the rules trust now decide it, and a rotation
 * does not move it back: the approvals of keys not allowed now (formerlyApproved) count toward the threshold as they
 * did when they were made, and the later of the two dates stands. So T, approved by alice and then by bob, who
 * completed the threshold, keeps bob's date after bob's key is revoked (rt40 f01), while a late, redundant approval
 * by bob moves nothing (rt42 f01). Where no key trusted now approved it, the latest of the others' approvals dates
 * it. Never earlier than the trusted keys' date alone: an approval back-dated by a key revoked since can at most
 * undo what its key's approvals added. Undefined when no key of the trust root approved it.
 */
function approvedBy(
  threshold: number,
  path: string,
  blob: string,
  onBlob: readonly JudgedRecord[],
  since = Number.NEGATIVE_INFINITY,
): number | undefined {
  const trusted: Approval[] = [];
  const ever: Approval[] = [];
  let formerly: number | undefined;
  for (const { record, trust } of onBlob) {
    if (record.kind !== 'review' || record.decision !== 'approve' || record.createdAt < since) continue;
    if (!record.subjects.some((s) => s.path === path && s.gitBlob === blob)) continue;
    if (trust.ok) trusted.push({ at: record.createdAt, holder: holderOf(trust.signer) });
    else if (formerlyApproved(trust)) formerly = Math.max(formerly ?? record.createdAt, record.createdAt);
    else continue;
    ever.push({ at: record.createdAt, holder: holderOf(trust.signer!) });
  }
  // Approved by no key trusted now: by the latest of the others' approvals, which an approval back-dated by a key
  // revoked since cannot lower.
  if (trusted.length === 0) return formerly;
  return latestTime([thresholdReached(threshold, trusted), thresholdReached(threshold, ever)]);
}

interface Approval {
  at: number;
  holder: string;
}

/** When the `threshold`-th distinct holder approved, or the last approval where fewer did; undefined for none. */
function thresholdReached(threshold: number, approvals: Approval[]): number | undefined {
  approvals.sort((a, b) => a.at - b.at);
  const holders = new Set<string>();
  for (const { at, holder } of approvals) {
    holders.add(holder);
    if (holders.size >= threshold) return at;
  }
  return approvals.at(-1)?.at;
}

/**
 * The records as they count at `now`: a trusted one dated ahead of it is not trusted (its date is the signer's word,
 * and dated ahead it would outlast every later version: see dated-ahead.ts), except a rejection, which refuses
 * whatever its date (refusing is the safe side). Nothing is copied when every record counts.
 */
export function countingAt(now: number, records: readonly JudgedRecord[]): readonly JudgedRecord[] {
  // An untrusted record whose signature verifies may still date a version (formerlyApproved): not from ahead either.
  const counts = ({ record, trust }: JudgedRecord) =>
    (!trust.ok && !trust.verified) ||
    (record.kind === 'review' && record.decision === 'reject') ||
    datedAhead(record.createdAt, now) === null;
  if (records.every(counts)) return records;
  return records.map((j) =>
    counts(j) ? j : { record: j.record, trust: { ok: false, reason: datedAhead(j.record.createdAt, now)! } },
  );
}

/**
 * An approval whose signature verifies under a key of the trust root that may not sign it now (revoked since, dated
 * after a revocation, expired, no longer a reviewer): it counts toward the date a version was admitted on as it did
 * when it was made (approvedBy), and can only move that date on. Such a date can only make going back from that
 * version harder (approvals must be newer than it), never easier;
 * without it, a version whose approvals all stopped counting (its reviewer revoked with a time before them, or no
 * longer a reviewer) lost its date, and the version it replaced could come back on its own old approvals.
 */
function formerlyApproved(trust: RecordTrust): boolean {
  return !trust.ok && trust.verified === true && trust.signer !== undefined;
}

function isLater(a: JudgedRecord, b: JudgedRecord): boolean {
  if (a.record.createdAt !== b.record.createdAt) return a.record.createdAt > b.record.createdAt;
  return a.record.kind === 'review' && a.record.decision === 'reject';
}

function latest(records: readonly JudgedRecord[]): JudgedRecord | undefined {
  return records.reduce<JudgedRecord | undefined>(
    (best, j) => (!best || j.record.createdAt > best.record.createdAt ? j : best),
    undefined,
  );
}

function sameContent(s: { path: string; sha256: string; gitBlob: string }, c: Candidate): boolean {
  return s.path === c.path && s.sha256 === c.sha256 && s.gitBlob === c.gitBlob;
}

function signerName(j: JudgedRecord): string {
  return j.trust.ok ? j.trust.signer.name : 'an untrusted key';
}

function names(list: readonly string[]): string {
  return list.join(', ');
}

function unique(list: readonly string[]): string[] {
  return [...new Set(list)].sort();
}

function promote(path: string, reason: string, by: string[]): Promotion {
  return { path, promoted: true, reason, by: unique(by) };
}

function refuse(path: string, reason: string, by: string[]): Promotion {
  return { path, promoted: false, reason, by: unique(by) };
}
