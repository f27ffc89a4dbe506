// The promotion rule (DESIGN 4.1) case by case, over real signed lines decoded and verified by the project's own
// code. Every refusal is paired with a control that promotes, and the reasons are asserted exactly: they are
// what a user reads when a commit is refused.
import { describe, expect, it } from 'vitest';
import {
  reviewLine,
  subjectOf,
  testKey,
  testPolicy,
  trustRootOf,
  verdictLine,
} from '../../../test/support/records.js';
import { judgeLines } from '../src/judge.js';
import {
  admittedAt,
  type EarlierRecord,
  type JudgedRecord,
  type PromotionRules,
  promotionOf,
  REASONS,
  type VersionAt,
} from '../src/promotion.js';
import type { VerdictName } from '../src/statement.js';

const alice = testKey({ name: 'alice', roles: ['delegator'] });
const rita = testKey({ name: 'rita', roles: ['reviewer'] });
const rob = testKey({ name: 'rob', roles: ['reviewer'] });
const mallory = testKey({ name: 'mallory', roles: ['delegator', 'reviewer'] });
const governance = { policy: testPolicy(), trustRoot: trustRootOf([alice, rita, rob]), source: 'test' };

const OPEN: PromotionRules = { requireReview: false, reviewThreshold: 1 };
const TWO_REVIEWS: PromotionRules = { requireReview: true, reviewThreshold: 2 };

const file = subjectOf('src/a.ts', 'export const a = 1;\n');
const otherVersion = subjectOf('src/a.ts', 'export const a = 2;\n');
const T1 = '2026-03-01T10:00:00Z';
const T2 = '2026-03-01T11:00:00Z';

/** The note lines on the file's blob, decoded and judged against the trust root as a gate does. */
function onBlob(...lines: string[]): JudgedRecord[] {
  return judgeLines(lines, { governance });
}

function promote(lines: string[], rules = OPEN, earlier: EarlierRecord[] = []) {
  return promotionOf(file, onBlob(...lines), rules, earlier);
}

describe('verdicts', () => {
  it('a UNIT_PASSED verdict by a delegator promotes', () => {
    const result = promote([verdictLine(alice, [file])]);
    expect(result).toEqual({ path: 'src/a.ts', promoted: true, reason: REASONS.passed, by: ['alice'] });
    expect(REASONS.passed).toBe('a unit passed it and its content is unchanged');
  });

  const failing: Array<[VerdictName, string]> = [
    ['UNIT_FAILED', 'verdict was UNIT_FAILED: the unit that wrote it failed verification'],
    ['UNIT_FLAKY', 'verdict was UNIT_FLAKY: the contract disagreed with itself across repeated runs'],
    ['UNIT_UNVERIFIED', 'verdict was UNIT_UNVERIFIED: the unit that wrote it was never verified'],
    ['INCOHERENT', 'verdict was INCOHERENT: the unit passed but the project-wide check failed'],
    [
      'CONTRACT_MODIFIED',
      'verdict was CONTRACT_MODIFIED: the unit changed its contract files, so its verdict is void',
    ],
    [
      'VERIFICATION_NOT_APPROVED',
      'verdict was VERIFICATION_NOT_APPROVED: the verification command was never approved to run',
    ],
    ['CONTEXT_REFUSED', 'verdict was CONTEXT_REFUSED: it does not promote'],
    ['WORKER_ERROR', 'verdict was WORKER_ERROR: it does not promote'],
  ];
  it.each(failing)('%s refuses, saying why', (verdict, reason) => {
    const result = promote([verdictLine(alice, [file], { verdict })]);
    expect(result).toEqual({ path: 'src/a.ts', promoted: false, reason, by: ['alice'] });
  });

  it('names the latest failing verdict when there are several', () => {
    const lines = [
      verdictLine(alice, [file], { verdict: 'UNIT_FLAKY', createdAt: T2 }),
      verdictLine(alice, [file], { verdict: 'UNIT_FAILED', createdAt: T1 }),
    ];
    expect(promote(lines).reason).toMatch(/^verdict was UNIT_FLAKY:/);
  });

  it('a passing verdict on the same content outweighs a failing one (the content is what was verified)', () => {
    const lines = [
      verdictLine(alice, [file], { verdict: 'UNIT_FAILED', createdAt: T2 }),
      verdictLine(alice, [file], { createdAt: T1 }),
    ];
    expect(promote(lines)).toMatchObject({ promoted: true, reason: REASONS.passed });
  });

  it('a record covering several files promotes each of them', () => {
    const other = subjectOf('src/b.ts', 'b\n');
    expect(promote([verdictLine(alice, [other, file])]).promoted).toBe(true);
  });
});

describe('reviews', () => {
  it('an approval by a reviewer promotes', () => {
    expect(promote([reviewLine(rita, [file])])).toEqual({
      path: 'src/a.ts',
      promoted: true,
      reason: 'approved by rita and unchanged since',
      by: ['rita'],
    });
  });

  it('a rejection outranks a passing verdict (control: the verdict alone promotes)', () => {
    const verdict = verdictLine(alice, [file]);
    expect(promote([verdict]).promoted).toBe(true);
    expect(promote([verdict, reviewLine(rita, [file], { decision: 'reject' })])).toEqual({
      path: 'src/a.ts',
      promoted: false,
      reason: 'rejected by rita',
      by: ['rita'],
    });
  });

  it('a rejection outranks another reviewer’s approval', () => {
    const lines = [
      reviewLine(rob, [file], { createdAt: T2 }),
      reviewLine(rita, [file], { decision: 'reject', createdAt: T1 }),
    ];
    expect(promote(lines)).toMatchObject({ promoted: false, reason: 'rejected by rita' });
  });

  it('the same reviewer approving later lifts their own rejection', () => {
    const lines = [
      reviewLine(rita, [file], { decision: 'reject', createdAt: T1 }),
      reviewLine(rita, [file], { decision: 'approve', createdAt: T2 }),
    ];
    expect(promote(lines)).toMatchObject({ promoted: true, reason: 'approved by rita and unchanged since' });
  });

  it('the same reviewer rejecting later withdraws their approval', () => {
    const lines = [
      reviewLine(rita, [file], { decision: 'approve', createdAt: T1 }),
      reviewLine(rita, [file], { decision: 'reject', createdAt: T2 }),
    ];
    expect(promote(lines)).toMatchObject({ promoted: false, reason: 'rejected by rita' });
  });

  it('an approval and a rejection by the same reviewer at the same time: the rejection stands', () => {
    const lines = [
      reviewLine(rita, [file], { decision: 'approve', createdAt: T1 }),
      reviewLine(rita, [file], { decision: 'reject', createdAt: T1 }),
    ];
    expect(promote(lines)).toMatchObject({ promoted: false, reason: 'rejected by rita' });
    expect(promote([...lines].reverse())).toMatchObject({ promoted: false, reason: 'rejected by rita' });
  });

  it('a rejection about another path or other content does not count here', () => {
    const elsewhere = subjectOf('src/b.ts', 'export const a = 1;\n');
    const lines = [
      verdictLine(alice, [file]),
      reviewLine(rita, [elsewhere, otherVersion], { decision: 'reject' }),
    ];
    expect(promote(lines).promoted).toBe(true);
  });
});

describe('requireReview with a threshold of 2', () => {
  it('one reviewer approving twice counts once: refused', () => {
    const lines = [reviewLine(rita, [file], { createdAt: T1 }), reviewLine(rita, [file], { createdAt: T2 })];
    expect(promote(lines, TWO_REVIEWS)).toEqual({
      path: 'src/a.ts',
      promoted: false,
      reason: 'the policy requires 2 reviewer approval(s) and it has 1 (rita)',
      by: ['rita'],
    });
  });

  it('two distinct reviewers promote', () => {
    const lines = [reviewLine(rita, [file]), reviewLine(rob, [file])];
    expect(promote(lines, TWO_REVIEWS)).toEqual({
      path: 'src/a.ts',
      promoted: true,
      reason: 'approved by rita, rob and unchanged since',
      by: ['rita', 'rob'],
    });
  });

  it("one person's two keys (a rotation's overlap: the same email, any letter case) count once: refused; control: keys of other emails, or of none, count apart", () => {
    const rita2 = testKey({ name: 'rita-2', roles: ['reviewer'], email: 'Rita@Example.COM ' });
    const nobody1 = testKey({ name: 'anon-1', roles: ['reviewer'], email: '' });
    const nobody2 = testKey({ name: 'anon-2', roles: ['reviewer'], email: '' });
    const rotated = { ...governance, trustRoot: trustRootOf([alice, rita, rita2, rob, nobody1, nobody2]) };
    const judged = (...lines: string[]) =>
      promotionOf(file, judgeLines(lines, { governance: rotated }), TWO_REVIEWS);
    expect(
      judged(reviewLine(rita, [file], { createdAt: T1 }), reviewLine(rita2, [file], { createdAt: T2 })),
    ).toEqual({
      path: 'src/a.ts',
      promoted: false,
      reason:
        'the policy requires 2 reviewer approval(s) and it has 1 (rita-2); rita and rita-2 count as one reviewer (their key files name one email)',
      by: ['rita-2'],
    });
    expect(judged(reviewLine(rita2, [file]), reviewLine(rob, [file])).promoted).toBe(true);
    // Characters that show as nothing, and compatibility forms, do not make another reviewer of the same email.
    const hidden = testKey({ name: 'rita-3', roles: ['reviewer'], email: 'ri\u200bta@ｅxample.com' });
    const hiding = { ...governance, trustRoot: trustRootOf([alice, rita, hidden, rob]) };
    const lines = [reviewLine(rita, [file]), reviewLine(hidden, [file])];
    expect(promotionOf(file, judgeLines(lines, { governance: hiding }), TWO_REVIEWS).reason).toBe(
      'the policy requires 2 reviewer approval(s) and it has 1 (rita); rita and rita-3 count as one reviewer (their key files name one email)',
    );
    expect(judged(reviewLine(nobody1, [file]), reviewLine(nobody2, [file])).promoted).toBe(true);
    // The person's latest decision is theirs, whichever key made it.
    expect(
      judged(
        reviewLine(rita, [file], { decision: 'reject', createdAt: T1 }),
        reviewLine(rita2, [file], { createdAt: T2 }),
        reviewLine(rob, [file]),
      ).promoted,
    ).toBe(true);
  });

  it('an approval that no longer counts (its key revoked, or no reviewer now) is named beside the count; control: none to name', () => {
    const ruth = testKey({ name: 'ruth', roles: ['reviewer'], revoked: '2026-06-01T00:00:00Z' });
    const walt = testKey({ name: 'walt', roles: ['delegator'] });
    const later = { ...governance, trustRoot: trustRootOf([alice, rita, rob, ruth, walt]) };
    const judged = (...lines: string[]) =>
      promotionOf(file, judgeLines(lines, { governance: later }), TWO_REVIEWS);
    expect(judged(reviewLine(rita, [file]), reviewLine(ruth, [file]), reviewLine(walt, [file])).reason).toBe(
      "the policy requires 2 reviewer approval(s) and it has 1 (rita); not counted: signer ruth's key was revoked; signer walt does not have the reviewer role",
    );
    expect(judged(reviewLine(rita, [file])).reason).toBe(
      'the policy requires 2 reviewer approval(s) and it has 1 (rita)',
    );
  });

  it('a passing verdict alone is not enough, and the reason names the requirement', () => {
    const lines = [verdictLine(alice, [file])];
    expect(promote(lines, OPEN).promoted).toBe(true);
    expect(promote(lines, TWO_REVIEWS)).toEqual({
      path: 'src/a.ts',
      promoted: false,
      reason: 'a unit passed it, but the policy requires 2 reviewer approval(s) and it has none',
      by: ['alice'],
    });
  });

  it('a passing verdict with enough approvals promotes, naming all of them', () => {
    const lines = [verdictLine(alice, [file]), reviewLine(rita, [file]), reviewLine(rob, [file])];
    expect(promote(lines, TWO_REVIEWS)).toMatchObject({ promoted: true, by: ['alice', 'rita', 'rob'] });
  });
});

describe('what the ledger says about other content or other paths', () => {
  it('nothing at all: no verdict', () => {
    expect(promote([])).toEqual({ path: 'src/a.ts', promoted: false, reason: REASONS.noVerdict, by: [] });
    expect(REASONS.noVerdict).toBe('no verdict: no delegated unit is recorded as writing it');
  });

  it('nothing at all where only reviewers promote (requireReview, the policy and key files): says no reviewer approved it, not that a verdict is missing (admin audit a07)', () => {
    expect(promote([], TWO_REVIEWS).reason).toBe(
      'no reviewer approved it, and the policy requires 2 reviewer approval(s)',
    );
  });

  it('an approval of an earlier version: stale (control: the same approval on this content promotes)', () => {
    expect(promote([reviewLine(rita, [file])]).promoted).toBe(true);
    const earlier: EarlierRecord[] = [{ kind: 'review', decision: 'approve', signer: 'rita' }];
    expect(promote([], OPEN, earlier)).toMatchObject({
      promoted: false,
      reason: 'approved by rita for another version',
    });
  });

  it('a passing verdict on an earlier version: the content changed after the verdict', () => {
    const earlier: EarlierRecord[] = [{ kind: 'verdict', verdict: 'UNIT_PASSED', signer: 'alice' }];
    expect(promote([], OPEN, earlier)).toMatchObject({
      promoted: false,
      reason: REASONS.changedAfterVerdict,
    });
    expect(REASONS.changedAfterVerdict).toBe(
      'its content changed after the verdict, so it is not the version anything verified',
    );
  });

  it('a failing verdict on an earlier version is named', () => {
    const earlier: EarlierRecord[] = [{ kind: 'verdict', verdict: 'UNIT_FAILED', signer: 'alice' }];
    expect(promote([], OPEN, earlier).reason).toBe(
      'its content changed after the last verdict (UNIT_FAILED), and no record covers this version',
    );
  });

  it('a record on this content under another Unicode form or letter case of the name says so, the forms shown byte by byte', () => {
    const nfd = subjectOf('src/cafe\u0301.ts', 'export const a = 1;\n');
    const nfc = subjectOf('src/caf\u00e9.ts', 'export const a = 1;\n');
    expect(promotionOf(nfc, onBlob(verdictLine(alice, [nfd])), OPEN).reason).toBe(
      'no verdict for this path (the same content is recorded as "src/cafe\\314\\201.ts", another Unicode form of this path\'s name "src/caf\\303\\251.ts")',
    );
    const upper = subjectOf('src/A.ts', 'export const a = 1;\n');
    expect(promote([verdictLine(alice, [upper])]).reason).toBe(
      'no verdict for this path (the same content is recorded as src/A.ts, which differs from this path in letter case only)',
    );
  });

  it('a record on this content for another path does not promote this path', () => {
    const sameContentElsewhere = subjectOf('src/copy.ts', 'export const a = 1;\n');
    expect(sameContentElsewhere.gitBlob).toBe(file.gitBlob);
    expect(promote([verdictLine(alice, [sameContentElsewhere])])).toMatchObject({
      promoted: false,
      reason: 'no verdict for this path (the same content is recorded as src/copy.ts)',
    });
  });

  it('a line naming several files names as "the same content" only a subject of this content (rt45 f11)', () => {
    const other = subjectOf('src/one.ts', 'export const one = 1;\n');
    const same = subjectOf('src/two.ts', 'export const a = 1;\n');
    expect(same.gitBlob).toBe(file.gitBlob);
    expect(promote([verdictLine(alice, [other, same])]).reason).toBe(
      'no verdict for this path (the same content is recorded as src/two.ts)',
    );
    expect(promote([verdictLine(alice, [other])]).reason).not.toContain('the same content');
  });

  it('a record naming this path with other digests is not about this content', () => {
    const wrongSha = { ...file, sha256: otherVersion.sha256 };
    const wrongBlob = { ...file, gitBlob: otherVersion.gitBlob };
    expect(promote([verdictLine(alice, [wrongSha])]).reason).toBe(
      'the record on it names this path with another sha256 digest, so it is not about this content',
    );
    expect(promote([verdictLine(alice, [wrongBlob])]).reason).toBe(
      'the record on it names this path with another gitBlob digest, so it is not about this content',
    );
  });

  it('a line on the blob that is not a record is named in the refusal', () => {
    const result = promotionOf(file, [], OPEN, [], ['payload is not canonical JSON (RFC 8785)']);
    expect(result).toMatchObject({
      promoted: false,
      reason: 'the line on it is not a valid record: payload is not canonical JSON (RFC 8785)',
    });
    // Control: a valid record beside it still promotes.
    expect(promotionOf(file, onBlob(verdictLine(alice, [file])), OPEN, [], ['junk']).promoted).toBe(true);
  });
});

describe('records that do not count', () => {
  it('an untrusted signer’s verdict does not promote, and the reason says why', () => {
    expect(promote([verdictLine(mallory, [file])])).toEqual({
      path: 'src/a.ts',
      promoted: false,
      reason: `the record on it does not count: signed by a key that is not in the trust root (keyid ${mallory.signer.publicKey.keyid.slice(0, 12)})`,
      by: [],
    });
  });

  it('a verdict signed by a reviewer-only key does not count', () => {
    expect(promote([verdictLine(rita, [file])]).reason).toBe(
      'the record on it does not count: signer rita does not have the delegator role',
    );
  });

  it('an untrusted rejection cannot block a promoted file, nor an untrusted approval promote one', () => {
    const lines = [verdictLine(alice, [file]), reviewLine(mallory, [file], { decision: 'reject' })];
    expect(promote(lines)).toMatchObject({ promoted: true, reason: REASONS.passed });
    expect(promote([reviewLine(mallory, [file])]).promoted).toBe(false);
  });

  it('a record dated more than an hour ahead of the judging clock counts only once the clock reaches it', () => {
    const now = Date.parse(T1);
    const aheadRules = { ...OPEN, now };
    const ahead = '2026-03-01T11:00:01Z'; // an hour and a second after T1
    expect(promote([reviewLine(rita, [file], { createdAt: ahead })], aheadRules)).toEqual({
      path: 'src/a.ts',
      promoted: false,
      reason:
        "the record on it does not count: created in the future: createdAt 2026-03-01T11:00:01.000Z is more than an hour ahead of this machine's clock (the signer's clock is wrong: drop the line from the note on that blob, `git notes --ref delegations edit <blob>`, and sign again with the clock set right)",
      by: [],
    });
    expect(promote([verdictLine(alice, [file], { createdAt: ahead })], aheadRules).promoted).toBe(false);
    // Controls: within the hour a drifting clock is allowed; once the clock reaches the date it counts.
    expect(promote([reviewLine(rita, [file], { createdAt: T2 })], aheadRules).promoted).toBe(true);
    expect(
      promote([reviewLine(rita, [file], { createdAt: ahead })], { ...OPEN, now: now + 1000 }).promoted,
    ).toBe(true);
  });

  it('a rejection dated ahead refuses all the same: refusing is the safe side', () => {
    const rules = { ...OPEN, now: Date.parse(T1) };
    const rejected = reviewLine(rob, [file], { decision: 'reject', createdAt: '2027-01-01T00:00:00Z' });
    const passed = verdictLine(alice, [file], { createdAt: T1 });
    expect(promote([passed, rejected], rules)).toMatchObject({ promoted: false, reason: 'rejected by rob' });
    expect(promote([passed], rules)).toMatchObject({ promoted: true, reason: REASONS.passed }); // control
  });

  it('a trusted failing verdict is reported before an untrusted record', () => {
    const lines = [verdictLine(mallory, [file]), verdictLine(alice, [file], { verdict: 'UNIT_FAILED' })];
    expect(promote(lines).reason).toMatch(/^verdict was UNIT_FAILED/);
  });
});

/** A linear history of versions (oldest first), as path-history.ts reads one: commit i holds blobs[i]. */
function lineOf(blobs: readonly (string | null)[]): { tip: string; commits: Map<string, VersionAt> } {
  const commits = new Map<string, VersionAt>(
    blobs.map((blob, i) => [`c${i}`, { blob, parents: i === 0 ? [] : [`c${i - 1}`] }]),
  );
  return { tip: `c${blobs.length - 1}`, commits };
}

function admittedAlong(blobs: readonly (string | null)[], on: () => JudgedRecord[], threshold = 1) {
  const { tip, commits } = lineOf(blobs);
  return admittedAt('src/a.ts', tip, commits, on, threshold);
}

describe('dates kept between calls', () => {
  it('a second history sharing commits with the first is dated without weighing those again, to the same date', () => {
    const blobs = [otherVersion.gitBlob, file.gitBlob, otherVersion.gitBlob];
    const { commits } = lineOf(blobs);
    const records = onBlob(
      reviewLine(rita, [otherVersion], { createdAt: T1 }),
      reviewLine(rita, [file], { createdAt: T2 }),
      reviewLine(rob, [otherVersion], { createdAt: '2026-03-01T12:00:00Z' }),
    );
    const weighed: string[] = [];
    const recordsOn = (blob: string) => {
      weighed.push(blob);
      return records;
    };
    const kept = new Map<string, number | undefined>();
    const fresh = admittedAt('src/a.ts', 'c2', commits, () => records);
    expect(admittedAt('src/a.ts', 'c1', commits, recordsOn, 1, Date.now(), kept)).toBe(Date.parse(T2));
    weighed.length = 0;
    expect(admittedAt('src/a.ts', 'c2', commits, recordsOn, 1, Date.now(), kept)).toBe(fresh);
    expect(weighed).toEqual([otherVersion.gitBlob]); // only c2 itself: c0 and c1 were dated already
  });
});

describe('dating a version by approvals dated ahead of the clock', () => {
  const approved = (at: string) => onBlob(reviewLine(rita, [otherVersion], { createdAt: at }));
  const along = (records: JudgedRecord[], now: number) =>
    admittedAt(
      'src/a.ts',
      'c0',
      new Map([['c0', { blob: otherVersion.gitBlob, parents: [] }]]),
      () => records,
      1,
      now,
    );

  it('an approval more than an hour ahead does not date the version until the clock reaches it', () => {
    const far = '2031-01-01T00:00:00Z';
    expect(along(approved(far), Date.parse(T1))).toBeUndefined();
    expect(along([...approved(far), ...approved(T1)], Date.parse(T1))).toBe(Date.parse(T1));
    // Control: once the clock reaches it, it dates the version.
    expect(along(approved(far), Date.parse(far))).toBe(Date.parse(far));
  });

  it('an approval by a key that may not approve (a delegator’s) dates a version no one else approved, never from ahead of the clock', () => {
    const byDelegator = (at: string) => onBlob(reviewLine(alice, [otherVersion], { createdAt: at }));
    expect(along(byDelegator('2031-01-01T00:00:00Z'), Date.parse(T1))).toBeUndefined();
    expect(along(byDelegator(T1), Date.parse(T2))).toBe(Date.parse(T1));
    // A reviewer's approval that met the threshold decides the date, however late the other, and an earlier one by
    // the key that may not approve does not move it back.
    expect(along([...approved(T1), ...byDelegator(T2)], Date.parse(T2))).toBe(Date.parse(T1));
    expect(along([...approved(T2), ...byDelegator(T1)], Date.parse(T2))).toBe(Date.parse(T2));
  });
});

describe('a change that goes back to earlier content (the policy and key files)', () => {
  const REVIEWED: PromotionRules = { requireReview: true, reviewThreshold: 1 };
  const since = (at: string) => ({ ...REVIEWED, approvedSince: Date.parse(at) });
  const approvedAt = (at: string) => reviewLine(rita, [file], { createdAt: at });

  it('an approval older than the first approval of the version replaced does not count; one as old or newer does', () => {
    const stale = promote([approvedAt(T1)], since(T2));
    expect(stale).toEqual({
      path: 'src/a.ts',
      promoted: false,
      reason:
        'approved by rita only before the version it replaces was approved: going back to earlier content needs a new approval (as does any change approved only before it)',
      by: ['rita'],
    });
    expect(promote([approvedAt(T1), approvedAt(T2)], since(T2)).promoted).toBe(true);
    expect(promote([approvedAt(T2)], since(T2)).promoted).toBe(true);
    // Control: without a version replaced (an added file), the old approval counts.
    expect(promote([approvedAt(T1)], REVIEWED).promoted).toBe(true);
  });

  it('the first approval of the version replaced is its earliest trusted one about that path and blob', () => {
    const replaced = onBlob(
      reviewLine(rita, [otherVersion], { createdAt: T2 }),
      reviewLine(rob, [otherVersion], { createdAt: T1 }),
      reviewLine(mallory, [otherVersion], { createdAt: '2026-01-01T00:00:00Z' }), // not in the trust root
      reviewLine(rita, [subjectOf('src/b.ts', 'export const a = 2;\n')], {
        createdAt: '2026-02-01T00:00:00Z',
      }),
    );
    const admitted = (blob: string) => admittedAlong([blob], () => replaced);
    expect(admitted(otherVersion.gitBlob)).toBe(Date.parse(T1));
    expect(admitted(file.gitBlob)).toBeUndefined();
  });

  it('counts an approval by a key revoked since: a version approved only by a rotated-out key was still approved', () => {
    const ruth = testKey({ name: 'ruth', roles: ['reviewer'], revoked: '2026-06-01T00:00:00Z' });
    const rotated = { ...governance, trustRoot: trustRootOf([alice, rita, rob, ruth]) };
    const replaced = judgeLines([reviewLine(ruth, [otherVersion], { createdAt: T2 })], {
      governance: rotated,
    });
    expect(replaced[0]!.trust.ok).toBe(false); // her records no longer promote
    expect(admittedAlong([otherVersion.gitBlob], () => replaced)).toBe(Date.parse(T2));
    // Control: a signature that does not verify (here, a key the trust root does not hold) dates nothing.
    const unknown = judgeLines([reviewLine(mallory, [otherVersion], { createdAt: T1 })], {
      governance: rotated,
    });
    expect(admittedAlong([otherVersion.gitBlob], () => unknown)).toBeUndefined();
  });

  it('a version two reviewers admitted keeps its date when the one who completed the threshold is rotated out (rt40 f01)', () => {
    const ruth = testKey({ name: 'ruth', roles: ['reviewer'] });
    const lines = [
      reviewLine(rita, [otherVersion], { createdAt: T1 }),
      reviewLine(ruth, [otherVersion], { createdAt: T2 }),
    ];
    const before = judgeLines(lines, { governance: { ...governance, trustRoot: trustRootOf([rita, ruth]) } });
    expect(admittedAlong([otherVersion.gitBlob], () => before, 2)).toBe(Date.parse(T2));
    // ruth's key revoked, or her reviewer role taken away: the version was admitted when she approved, still.
    const revoked = { ...ruth.keyFile, revoked: '2026-06-01T00:00:00Z' };
    const delegatorOnly = { ...ruth.keyFile, roles: ['delegator' as const] };
    for (const keyFile of [revoked, delegatorOnly]) {
      const rotated = { ...governance, trustRoot: trustRootOf([rita, { ...ruth, keyFile }]) };
      const after = judgeLines(lines, { governance: rotated });
      expect(after[1]!.trust.ok).toBe(false);
      expect(admittedAlong([otherVersion.gitBlob], () => after, 2)).toBe(Date.parse(T2));
    }
    // Control: an approval that counts dates it as before, and one that does not verify dates nothing.
    const unknown = judgeLines([lines[1]!], {
      governance: { ...governance, trustRoot: trustRootOf([rita]) },
    });
    expect(admittedAlong([otherVersion.gitBlob], () => [before[0]!, ...unknown], 2)).toBe(Date.parse(T1));
  });

  it('a late, redundant approval by a reviewer rotated out since does not move the date of a version two others admitted (rt42 f01)', () => {
    const ruth = testKey({ name: 'ruth', roles: ['reviewer'] });
    const late = '2026-05-01T00:00:00Z';
    const lines = [
      reviewLine(rita, [otherVersion], { createdAt: T1 }),
      reviewLine(rob, [otherVersion], { createdAt: T2 }),
      reviewLine(ruth, [otherVersion], { createdAt: late }),
    ];
    const revoked = { ...ruth, keyFile: { ...ruth.keyFile, revoked: '2026-06-01T00:00:00Z' } };
    for (const keys of [
      [rita, rob, ruth],
      [rita, rob, revoked],
    ]) {
      const judged = judgeLines(lines, { governance: { ...governance, trustRoot: trustRootOf(keys) } });
      expect(admittedAlong([otherVersion.gitBlob], () => judged, 2)).toBe(Date.parse(T2));
    }
  });

  // S approved at T1, T approved at T2, S approved again at T3 to go back: S came back on T3's approval.
  const T3 = '2026-04-01T00:00:00Z';
  const s = otherVersion;
  const t = file;
  const backAndForth = () =>
    onBlob(
      reviewLine(rita, [s], { createdAt: T1 }),
      reviewLine(rita, [t], { createdAt: T2 }),
      reviewLine(rob, [s], { createdAt: T3 }),
    );

  it('a version that came back is dated by the approval it came back on, not by its first one', () => {
    const records = backAndForth();
    const on = () => records;
    expect(admittedAlong([s.gitBlob], on)).toBe(Date.parse(T1));
    expect(admittedAlong([s.gitBlob, t.gitBlob], on)).toBe(Date.parse(T2));
    expect(admittedAlong([s.gitBlob, t.gitBlob, s.gitBlob], on)).toBe(Date.parse(T3));
    // So T, replacing S a second time, needs an approval from T3 on: its own from T2 is stale.
    const again = admittedAlong([s.gitBlob, t.gitBlob, s.gitBlob], on);
    expect(promote([approvedAt(T2)], { ...REVIEWED, approvedSince: again }).promoted).toBe(false);
    // A version let in without an approval as new as its predecessor's keeps the predecessor's date.
    const unapproved = onBlob(
      reviewLine(rita, [s], { createdAt: T2 }),
      reviewLine(rita, [t], { createdAt: T1 }),
    );
    expect(admittedAlong([s.gitBlob, t.gitBlob], () => unapproved)).toBe(Date.parse(T2));
    // Carried unchanged by a later commit, a version keeps its date; deleted and added again, it starts afresh.
    expect(admittedAlong([s.gitBlob, t.gitBlob, s.gitBlob, s.gitBlob], on)).toBe(Date.parse(T3));
    expect(admittedAlong([s.gitBlob, t.gitBlob, null, s.gitBlob], on)).toBe(Date.parse(T1));
  });

  it('a merge carrying a version from several parents keeps the latest date: an orphan or older first parent does not restart it', () => {
    const records = backAndForth();
    // main: S, T, S again (T3). An orphan holding S, and a merge of it (first parent) with main.
    const { commits } = lineOf([s.gitBlob, t.gitBlob, s.gitBlob]);
    commits.set('orphan', { blob: s.gitBlob, parents: [] });
    commits.set('merge', { blob: s.gitBlob, parents: ['orphan', 'c2'] });
    expect(admittedAt('src/a.ts', 'merge', commits, () => records)).toBe(Date.parse(T3));
    expect(admittedAt('src/a.ts', 'orphan', commits, () => records)).toBe(Date.parse(T1)); // control
    // A merge that changes it is dated from the latest of what its parents held.
    commits.set('changed', { blob: t.gitBlob, parents: ['orphan', 'c2'] });
    expect(admittedAt('src/a.ts', 'changed', commits, () => records)).toBe(Date.parse(T3));
  });

  it("a merge keeping a stale side's version over the other side's is dated as that change, not by the stale side", () => {
    const records = backAndForth();
    // main: S (T1), T (T2); a side branch still holding S from c0; their merge keeps S, approved again at T3.
    const { commits } = lineOf([s.gitBlob, t.gitBlob]);
    commits.set('side', { blob: s.gitBlob, parents: ['c0'] });
    commits.set('merge', { blob: s.gitBlob, parents: ['c1', 'side'] });
    expect(admittedAt('src/a.ts', 'side', commits, () => records)).toBe(Date.parse(T1)); // control: carried
    expect(admittedAt('src/a.ts', 'merge', commits, () => records)).toBe(Date.parse(T3));
    // Kept without an approval as new as main's version, it is dated no earlier than that version.
    const unapproved = onBlob(
      reviewLine(rita, [s], { createdAt: T1 }),
      reviewLine(rita, [t], { createdAt: T2 }),
    );
    expect(admittedAt('src/a.ts', 'merge', commits, () => unapproved)).toBe(Date.parse(T2));
    // A merge keeping main's version over the stale side's stays dated as main's.
    commits.set('kept', { blob: t.gitBlob, parents: ['c1', 'side'] });
    expect(admittedAt('src/a.ts', 'kept', commits, () => records)).toBe(Date.parse(T2));
  });

  it('a revoked key cannot lower a date: its approvals count only where no trusted key approved, by their latest, whenever made', () => {
    const ruth = testKey({ name: 'ruth', roles: ['reviewer'], revoked: '2026-06-01T00:00:00Z' });
    const rotated = { ...governance, trustRoot: trustRootOf([alice, rita, rob, ruth]) };
    const T0 = '2026-02-01T00:00:00Z';
    const judged = (...lines: string[]) => judgeLines(lines, { governance: rotated });
    // s: ruth unrevoked, approved at T0; t: her revocation, approved by rita at T2, and by ruth back-dated to T0.
    const records = judged(
      reviewLine(rita, [s], { createdAt: T0 }),
      reviewLine(rita, [t], { createdAt: T2 }),
      reviewLine(ruth, [t], { createdAt: T0 }),
    );
    expect(admittedAlong([s.gitBlob, t.gitBlob], () => records)).toBe(Date.parse(T2));
    // Approved by her alone (before her revocation), a version is dated by the latest of her approvals.
    const alone = judged(reviewLine(ruth, [t], { createdAt: T0 }), reviewLine(ruth, [t], { createdAt: T2 }));
    expect(admittedAlong([t.gitBlob], () => alone)).toBe(Date.parse(T2));
    // One she claims to have made after her revocation dates a version no trusted key approved: a later date only
    // asks newer approvals of whatever goes back from it (without one, the version it replaced could come back).
    const after = judged(reviewLine(ruth, [t], { createdAt: '2026-07-01T00:00:00Z' }));
    expect(admittedAlong([t.gitBlob], () => after)).toBe(Date.parse('2026-07-01T00:00:00Z'));
  });

  it('a threshold per commit: a version admitted under a lower one keeps its date when a later approval reaches today’s', () => {
    const late = onBlob(
      reviewLine(rita, [otherVersion], { createdAt: T1 }), // enough then, under a threshold of 1
      reviewLine(rob, [otherVersion], { createdAt: T3 }), // a second key, long after
    );
    const { tip, commits } = lineOf([otherVersion.gitBlob]);
    expect(
      admittedAt(
        'src/a.ts',
        tip,
        commits,
        () => late,
        () => 1,
      ),
    ).toBe(Date.parse(T1));
    expect(admittedAt('src/a.ts', tip, commits, () => late, 2)).toBe(Date.parse(T3)); // control: today's threshold
  });

  it('with a threshold, a version is dated when enough distinct keys had approved it: one back-dated approval does not lower it', () => {
    const T0 = '2026-02-01T00:00:00Z';
    const backdated = onBlob(
      reviewLine(rita, [otherVersion], { createdAt: T0 }), // rita alone, stamped early
      reviewLine(rita, [otherVersion], { createdAt: T2 }),
      reviewLine(rob, [otherVersion], { createdAt: T3 }),
    );
    expect(admittedAlong([otherVersion.gitBlob], () => backdated, 1)).toBe(Date.parse(T0));
    expect(admittedAlong([otherVersion.gitBlob], () => backdated, 2)).toBe(Date.parse(T3));
    // Approved by one key only (under a lower threshold of its time): dated by the last of its approvals, so a
    // version it replaced cannot come back on an approval older than that.
    expect(admittedAlong([otherVersion.gitBlob], () => backdated.slice(0, 2), 2)).toBe(Date.parse(T2));
  });

  it("with a threshold, two keys of one person are one approval when a version is dated; control: another person's key", () => {
    const T0 = '2026-02-01T00:00:00Z';
    const rita2 = testKey({ name: 'rita-2', roles: ['reviewer'], email: 'rita@example.com' });
    const rotated = { ...governance, trustRoot: trustRootOf([alice, rita, rita2, rob]) };
    const records = judgeLines(
      [
        reviewLine(rita, [otherVersion], { createdAt: T0 }),
        reviewLine(rita2, [otherVersion], { createdAt: T2 }),
        reviewLine(rob, [otherVersion], { createdAt: T3 }),
      ],
      { governance: rotated },
    );
    expect(admittedAlong([otherVersion.gitBlob], () => records, 2)).toBe(Date.parse(T3));
    const apart = { ...governance, trustRoot: trustRootOf([alice, rita, rob]) };
    const control = judgeLines(
      [
        reviewLine(rita, [otherVersion], { createdAt: T0 }),
        reviewLine(rob, [otherVersion], { createdAt: T2 }),
      ],
      { governance: apart },
    );
    expect(admittedAlong([otherVersion.gitBlob], () => control, 2)).toBe(Date.parse(T2));
  });
});
