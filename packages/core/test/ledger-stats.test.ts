// The ledger accounting over real signed lines: each distinct line counted once however many notes it sits on,
// only valid records counted, informative fields optional, and every number asserted exactly.
import { describe, expect, it } from 'vitest';
import {
  reviewLine,
  signedLine,
  subjectOf,
  TEST_REPOSITORY_ID,
  type TestKey,
  testKey,
  trustRootOf,
  verdictLine,
} from '../../../test/support/records.js';
import {
  collectLedgerStats,
  type JudgedLine,
  judgeDistinctLines,
  LedgerStatsAccumulator,
  UNKNOWN_MODEL,
  VERIFIED_REASON,
} from '../src/ledger-stats.js';
import { MISPLACED } from '../src/record.js';
import { type SubjectFile, type VerdictName, verdictStatement } from '../src/statement.js';

const alice = testKey({ name: 'alice', roles: ['delegator'] });
const bob = testKey({ name: 'bob', roles: ['delegator'] });
const rita = testKey({ name: 'rita', roles: ['reviewer'] });
const mallory = testKey({ name: 'mallory', roles: ['delegator', 'reviewer'] });
const judge = { trustRoot: trustRootOf([alice, bob, rita]), repositoryId: TEST_REPOSITORY_ID };

const a1 = subjectOf('src/a.ts', 'export const a = 1;\n');
const a2 = subjectOf('src/a.ts', 'export const a = 2;\n');
const b1 = subjectOf('src/b.ts', 'export const b = 1;\n');
const c1 = subjectOf('src/c.ts', 'export const c = 1;\n');

interface Delegation {
  verdict: VerdictName;
  model?: string;
  promptTokens?: number;
  completionTokens?: number;
  durationMs?: number;
  flakyRuns?: boolean;
  createdAt: string;
}

/** A verdict line as `delegate` writes it, with the informative worker, verification and unit fields. */
function delegationLine(key: TestKey, files: SubjectFile[], d: Delegation): string {
  return signedLine(
    key,
    verdictStatement(files, {
      verdict: d.verdict,
      repository: { id: TEST_REPOSITORY_ID },
      createdAt: d.createdAt,
      unit: { name: 'unit' },
      verification: { runs: [], flaky: d.flakyRuns ?? false },
      worker: {
        endpointHost: '127.0.0.1:1234',
        model: d.model ?? 'qwen-coder',
        promptTokens: d.promptTokens ?? 100,
        completionTokens: d.completionTokens ?? 50,
        durationMs: d.durationMs ?? 1000,
      },
    }),
  );
}

/** The notes of a ledger: each line placed on the blob of every subject it names, as the ledger writes it. */
async function* notesOf(lines: string[], files: SubjectFile[][]) {
  const notes = new Map<string, string[]>();
  lines.forEach((line, i) => {
    for (const f of files[i]!) notes.set(f.gitBlob, [...(notes.get(f.gitBlob) ?? []), line]);
  });
  for (const [annotated, noteLines] of notes) yield { annotated, lines: noteLines };
}

async function judgedAll(
  entries: AsyncIterable<{ annotated: string; lines: string[] }>,
): Promise<JudgedLine[]> {
  const out: JudgedLine[] = [];
  for await (const j of judgeDistinctLines(entries, judge)) out.push(j);
  return out;
}

describe('collectLedgerStats', () => {
  it('counts delegations by verdict, model, signer and day, with tokens and rates', async () => {
    const records: Array<[string, SubjectFile[]]> = [
      [
        delegationLine(alice, [a1, b1], {
          verdict: 'UNIT_PASSED',
          model: 'qwen-coder',
          createdAt: '2026-11-28T09:00:00Z',
        }),
        [a1, b1],
      ],
      [
        delegationLine(alice, [a2], {
          verdict: 'UNIT_FAILED',
          model: 'qwen-coder',
          promptTokens: 300,
          completionTokens: 70,
          createdAt: '2026-11-28T10:00:00Z',
        }),
        [a2],
      ],
      [
        delegationLine(bob, [c1], {
          verdict: 'UNIT_FLAKY',
          model: 'llama',
          durationMs: 2500,
          createdAt: '2026-11-29T10:00:00Z',
        }),
        [c1],
      ],
      [
        delegationLine(bob, [a2], {
          verdict: 'CONTRACT_MODIFIED',
          model: 'llama',
          flakyRuns: true,
          createdAt: '2026-11-30T08:00:00Z',
        }),
        [a2],
      ],
      [reviewLine(rita, [a2], { createdAt: '2026-11-30T09:00:00Z' }), [a2]],
      [reviewLine(rita, [b1], { createdAt: '2026-11-30T09:30:00Z' }), [b1]],
      [reviewLine(rita, [c1], { decision: 'reject', createdAt: '2026-11-30T10:00:00Z' }), [c1]],
    ];
    const stats = await collectLedgerStats(
      notesOf(
        records.map(([l]) => l),
        records.map(([, f]) => f),
      ),
      judge,
    );
    expect(stats.lines).toBe(7);
    expect(stats.valid).toBe(7);
    expect(stats.invalid).toEqual({ total: 0, reasons: {} });
    expect(stats.first).toBe('2026-11-28T09:00:00Z');
    expect(stats.last).toBe('2026-11-30T10:00:00Z');
    expect(stats.delegations).toEqual({ total: 4, passed: 1, flaky: 2, passRate: 0.25, flakyRate: 0.5 });
    expect(stats.byVerdict).toMatchObject({
      UNIT_PASSED: 1,
      UNIT_FAILED: 1,
      UNIT_FLAKY: 1,
      CONTRACT_MODIFIED: 1,
      WORKER_ERROR: 0,
    });
    expect(Object.keys(stats.byVerdict)).toHaveLength(10);
    expect(stats.reviews).toEqual({ approve: 2, reject: 1 });
    expect(stats.byModel.map((m) => [m.model, m.delegations, m.passed, m.flaky, m.passRate])).toEqual([
      ['llama', 2, 0, 2, 0],
      ['qwen-coder', 2, 1, 0, 0.5],
    ]);
    expect(stats.byModel[1]!.tokens).toEqual({
      prompt: 400,
      completion: 120,
      total: 520,
      workerMs: 2000,
      delegationsWithUsage: 2,
      delegationsEstimated: 0,
    });
    expect(stats.bySigner.map((s) => [s.signer, s.delegations, s.passed, s.approvals, s.rejections])).toEqual(
      [
        ['rita', 0, 0, 2, 1],
        ['alice', 2, 1, 0, 0],
        ['bob', 2, 0, 0, 0],
      ],
    );
    expect(stats.bySigner[1]!.byVerdict).toMatchObject({ UNIT_PASSED: 1, UNIT_FAILED: 1 });
    expect(stats.byDay).toEqual([
      {
        day: '2026-11-28',
        delegations: 2,
        passed: 1,
        failed: 1,
        flaky: 0,
        reviews: 0,
        passRate: 0.5,
        flakyRate: 0,
        promptTokens: 400,
        completionTokens: 120,
        tokens: 520,
      },
      {
        day: '2026-11-29',
        delegations: 1,
        passed: 0,
        failed: 0,
        flaky: 1,
        reviews: 0,
        passRate: 0,
        flakyRate: 1,
        promptTokens: 100,
        completionTokens: 50,
        tokens: 150,
      },
      {
        day: '2026-11-30',
        delegations: 1,
        passed: 0,
        failed: 1,
        flaky: 1,
        reviews: 3,
        passRate: 0,
        flakyRate: 1,
        promptTokens: 100,
        completionTokens: 50,
        tokens: 150,
      },
    ]);
    expect(stats.tokens).toEqual({
      prompt: 600,
      completion: 220,
      total: 820,
      workerMs: 5500,
      delegationsWithUsage: 4,
      delegationsEstimated: 0,
    });
    // a1: verdict only; b1: verdict and approval; a2: approval only (its verdicts did not pass); c1: rejected.
    expect(stats.promotions).toEqual({
      total: 4,
      byVerdict: 1,
      byReview: 1,
      byBoth: 1,
      rejected: 1,
      notPromoted: 0,
      governance: 0,
    });
  });

  it('counts a line once however many notes carry it, and a line on another blob once too', async () => {
    const line = delegationLine(alice, [a1, b1, c1], {
      verdict: 'UNIT_PASSED',
      createdAt: '2026-11-28T09:00:00Z',
    });
    async function* twice() {
      yield { annotated: a1.gitBlob, lines: [line] };
      yield { annotated: b1.gitBlob, lines: [line] };
      yield { annotated: c1.gitBlob, lines: [line] };
      yield { annotated: a2.gitBlob, lines: [line] }; // copied onto a blob it does not name
    }
    const stats = await collectLedgerStats(twice(), judge);
    expect(stats.lines).toBe(1);
    expect(stats.delegations.total).toBe(1);
    expect(stats.tokens.total).toBe(150);
    expect(stats.promotions.byVerdict).toBe(3);
  });

  it('a line only ever met on blobs it does not name is invalid; met where it belongs, it counts', async () => {
    const line = delegationLine(alice, [a1], { verdict: 'UNIT_PASSED', createdAt: '2026-11-28T09:00:00Z' });
    async function* misplacedOnly() {
      yield { annotated: b1.gitBlob, lines: [line] };
    }
    async function* misplacedFirst() {
      yield { annotated: b1.gitBlob, lines: [line] };
      yield { annotated: a1.gitBlob, lines: [line] };
    }
    const refused = await judgedAll(misplacedOnly());
    expect(refused.map((j) => [j.valid, j.reason, j.signer, j.blob])).toEqual([
      [false, MISPLACED, 'alice', b1.gitBlob],
    ]);
    const counted = await judgedAll(misplacedFirst());
    expect(counted.map((j) => [j.valid, j.reason, j.blob])).toEqual([[true, VERIFIED_REASON, a1.gitBlob]]);
  });

  it('does not count forged, untrusted, foreign or unreadable lines, and says why', async () => {
    const good = verdictLine(alice, [a1], { createdAt: '2026-11-28T09:00:00Z' });
    const untrusted = verdictLine(mallory, [a1], { createdAt: '2026-11-28T09:00:00Z' });
    const foreign = verdictLine(alice, [a1], {
      createdAt: '2026-11-28T09:00:00Z',
      repositoryId: 'other-repo',
    });
    const wrongRole = reviewLine(alice, [a1], { createdAt: '2026-11-28T09:00:00Z' });
    const envelope = JSON.parse(good) as { signatures: Array<{ keyid: string; sig: string }> };
    const sig = Buffer.from(envelope.signatures[0]!.sig, 'base64');
    sig[0] = (sig[0] ?? 0) ^ 1;
    envelope.signatures[0]!.sig = sig.toString('base64');
    const forged = JSON.stringify(envelope);
    async function* notes() {
      yield { annotated: a1.gitBlob, lines: [good, untrusted, foreign, wrongRole, forged, 'not json'] };
    }
    const stats = await collectLedgerStats(notes(), judge);
    expect(stats.lines).toBe(6);
    expect(stats.valid).toBe(1);
    expect(stats.invalid.total).toBe(4);
    expect(Object.values(stats.invalid.reasons).reduce((a, b) => a + b, 0)).toBe(4);
    // A review by alice, whose key verifies but may not sign reviews: no problem, as verify says, and no count.
    expect(stats.notCounting.total).toBe(1);
    expect(Object.keys(stats.notCounting.reasons)).toEqual([expect.stringContaining('alice')]);
    const reasons = Object.keys(stats.invalid.reasons).join('\n');
    expect(reasons).toContain('the record belongs to another repository');
    expect(reasons).toContain('not in the trust root');
    expect(reasons).toContain('the signature by alice does not verify');
    expect(reasons).toContain('not a valid record');
    expect(stats.delegations.total).toBe(1);
    expect(stats.bySigner.map((s) => s.signer)).toEqual(['alice']);
    expect(stats.reviews).toEqual({ approve: 0, reject: 0 });
  });

  it('handles records without informative fields (written by other tools)', async () => {
    const bare = verdictLine(alice, [a1], { verdict: 'UNIT_PASSED', createdAt: '2026-11-28T09:00:00Z' });
    const odd = signedLine(
      bob,
      verdictStatement([b1], {
        verdict: 'UNIT_FAILED',
        repository: { id: TEST_REPOSITORY_ID },
        createdAt: '2026-11-28T10:00:00.5Z',
        worker: { model: 42, promptTokens: 'many', completionTokens: -3 },
        verification: 'yes',
      }),
    );
    async function* notes() {
      yield { annotated: a1.gitBlob, lines: [bare] };
      yield { annotated: b1.gitBlob, lines: [odd] };
    }
    const stats = await collectLedgerStats(notes(), judge);
    expect(stats.valid).toBe(2);
    expect(stats.byModel.map((m) => [m.model, m.delegations])).toEqual([[UNKNOWN_MODEL, 2]]);
    expect(stats.tokens).toEqual({
      prompt: 0,
      completion: 0,
      total: 0,
      workerMs: 0,
      delegationsWithUsage: 0,
      delegationsEstimated: 0,
    });
    expect(stats.delegations.flaky).toBe(0);
    expect(stats.last).toBe('2026-11-28T10:00:00.5Z');
  });

  it('keeps token counts the client estimated apart, and sums only whole counts a sum can hold', async () => {
    const worker = (extra: Record<string, unknown>) =>
      signedLine(
        alice,
        verdictStatement([a1], {
          verdict: 'UNIT_PASSED',
          repository: { id: TEST_REPOSITORY_ID },
          createdAt: '2026-11-28T09:00:00Z',
          worker: { model: 'm', promptTokens: 300, completionTokens: 40, ...extra },
        }),
      );
    const reported = worker({});
    const estimated = worker({ promptTokens: 423, completionTokens: 1, tokensEstimated: true });
    const huge = worker({ promptTokens: 1e308, completionTokens: 0.5 });
    async function* notes() {
      yield { annotated: a1.gitBlob, lines: [reported, estimated, huge] };
    }
    const stats = await collectLedgerStats(notes(), judge);
    expect(stats.delegations.total).toBe(3);
    // Only the server's whole counts are summed; the estimate is counted apart, the odd numbers not at all.
    expect(stats.tokens).toMatchObject({
      prompt: 300,
      completion: 40,
      total: 340,
      delegationsWithUsage: 1,
      delegationsEstimated: 1,
    });
  });

  it('a rejection dated ahead of the clock is no valid line, as verify says, yet still refuses its content', async () => {
    const ahead = new Date(Date.now() + 3 * 24 * 3600 * 1000).toISOString();
    const passed = verdictLine(alice, [a1], { createdAt: '2026-11-28T09:00:00Z' });
    for (const [createdAt, valid] of [
      [ahead, 1],
      ['2026-11-28T10:00:00Z', 2],
    ] as const) {
      const rejected = reviewLine(rita, [a1], { decision: 'reject', createdAt });
      async function* notes() {
        yield { annotated: a1.gitBlob, lines: [passed, rejected] };
      }
      const stats = await collectLedgerStats(notes(), judge);
      expect(stats.valid).toBe(valid);
      expect(stats.promotions).toMatchObject({ total: 1, rejected: 1 });
      if (createdAt === ahead) {
        expect(Object.keys(stats.invalid.reasons)).toEqual([expect.stringMatching(/^created in the future/)]);
        expect(stats.last).toBe('2026-11-28T09:00:00Z');
        expect(stats.byDay.map((d) => d.day)).toEqual(['2026-11-28']);
      } else expect(stats.invalid.total).toBe(0);
    }
  });

  it('a row per model the server said answered, beside the operator setting; one setting alone is one row', async () => {
    const served = (reportedModel: string | undefined, createdAt: string) =>
      signedLine(
        alice,
        verdictStatement([a1], {
          verdict: 'UNIT_PASSED',
          repository: { id: TEST_REPOSITORY_ID },
          createdAt,
          worker: { model: 'local', ...(reportedModel ? { reportedModel } : {}) },
        }),
      );
    async function* notes() {
      yield {
        annotated: a1.gitBlob,
        lines: [
          served('qwen-7b', '2026-11-28T09:00:00Z'),
          served('llama-3b', '2026-11-28T10:00:00Z'),
          served(undefined, '2026-11-28T11:00:00Z'),
        ],
      };
    }
    const stats = await collectLedgerStats(notes(), judge);
    expect(stats.byModel.map((m) => [m.label, m.model, m.reportedModel, m.delegations])).toEqual([
      ['local', 'local', null, 1],
      ['local (served as llama-3b)', 'local', 'llama-3b', 1],
      ['local (served as qwen-7b)', 'local', 'qwen-7b', 1],
    ]);
  });

  it('an empty ledger gives zeros and no rates', () => {
    const stats = new LedgerStatsAccumulator().result();
    expect(stats.lines).toBe(0);
    expect(stats.delegations).toEqual({ total: 0, passed: 0, flaky: 0, passRate: null, flakyRate: null });
    expect(stats.byDay).toEqual([]);
    expect(stats.first).toBeNull();
    expect(stats.promotions.total).toBe(0);
  });
});
