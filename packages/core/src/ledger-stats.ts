/**
 * The ledger as an accounting (`report`, `log`). Every distinct envelope line is judged once against one trust root
 * (a record sits on the note of each of its subjects' blobs, so the same line is met several times), then folded
 * into counts: delegations by verdict, per model, per signer, per day; tokens spent on local workers; and which
 * file versions the promotion rule (promotion.ts, with the policy in force) promotes by a passing verdict, by a
 * review, or both, and which it refuses.
 *
 * Only the fields the promotion rule needs are required in a record (DESIGN 3.2); everything this module reads
 * beyond them (worker, verification) is informative and may be absent when another tool wrote the record.
 */
import { datedAhead } from './dated-ahead.js';
import type { Ed25519Backend } from './ed25519.js';
import { countingAt, type JudgedRecord, type PromotionRules, promotionOf } from './promotion.js';
import { decodeRecord, type LedgerRecord, MISPLACED, type RecordTrust, verifyRecord } from './record.js';
import { sha256Hex } from './sha256.js';
import { VERDICTS, type VerdictName } from './statement.js';
import type { TrustRoot } from './trust-root.js';

/** What judges a line: the trust root and repository id in force. */
export interface LedgerJudge {
  trustRoot: TrustRoot;
  repositoryId: string;
  backend?: Ed25519Backend;
  /**
   * The promotion rules of a path (judge.ts rulesFor); by default one approval or a passing verdict promotes. Null
   * for a path whose versions the counts leave out (the policy and key files, see PromotionCounts.governance).
   */
  rulesOf?: (path: string) => PromotionRules | null;
}

/** One distinct envelope line, decoded (when it decodes) and judged. */
export interface JudgedLine {
  line: string;
  /** Hex SHA-256 of the line: its identity across the notes it sits on. */
  lineSha256: string;
  /** A blob the line sits on (one its subjects name, whenever any does). */
  blob: string;
  /** null when the line is not a readable record. */
  record: LedgerRecord | null;
  valid: boolean;
  /**
   * Not valid, but signed by a key of the trust root that may not sign it now (revoked, its role removed, outside
   * its dates): `verify` lists such a line as revoked or disallowed, not as a problem.
   */
  notCounted: boolean;
  /** Name of the trusted key that signed it (also for a refused record, when the key is known). */
  signer: string | null;
  /** How the record counts (as promotion weighs it); null when the line is no record. */
  trust: RecordTrust | null;
  /** 'signature verified', or why the record does not count. */
  reason: string;
}

export const VERIFIED_REASON = 'signature verified';

/**
 * Streams each distinct line of the ledger once, judged. A line met on a blob none of its subjects names does not
 * count there; it is reported as misplaced only if it was never met on a blob it names.
 */
export async function* judgeDistinctLines(
  entries: AsyncIterable<{ annotated: string; lines: readonly string[] }>,
  judge: LedgerJudge,
): AsyncGenerator<JudgedLine> {
  const seen = new Set<string>();
  const misplaced = new Map<string, { line: string; blob: string; record: LedgerRecord }>();
  for await (const { annotated, lines } of entries) {
    for (const line of lines) {
      const lineSha256 = sha256Hex(line);
      if (seen.has(lineSha256)) continue;
      const decoded = decodeRecord(line);
      if (!decoded.ok) {
        seen.add(lineSha256);
        const reason = `not a valid record: ${decoded.reason}`;
        yield {
          line,
          lineSha256,
          blob: annotated,
          record: null,
          valid: false,
          notCounted: false,
          signer: null,
          trust: null,
          reason,
        };
        continue;
      }
      const record = decoded.record;
      if (!record.subjects.some((s) => s.gitBlob === annotated)) {
        if (!misplaced.has(lineSha256)) misplaced.set(lineSha256, { line, blob: annotated, record });
        continue;
      }
      seen.add(lineSha256);
      misplaced.delete(lineSha256);
      yield judgeRecord(line, lineSha256, annotated, record, judge);
    }
  }
  for (const [lineSha256, { line, blob, record }] of misplaced) {
    const trust = judgeRecord(line, lineSha256, blob, record, judge);
    yield { ...trust, valid: false, notCounted: false, reason: MISPLACED };
  }
}

function judgeRecord(
  line: string,
  lineSha256: string,
  blob: string,
  record: LedgerRecord,
  judge: LedgerJudge,
): JudgedLine {
  const verified = verifyRecord(record, judge.trustRoot, judge.repositoryId, judge.backend);
  const now = Date.now();
  // As promotion weighs it (a rejection dated ahead still refuses); as verify counts it, no line dated ahead is valid.
  const [{ trust }] = countingAt(now, [{ record, trust: verified }]) as [JudgedRecord];
  const ahead = trust.ok ? datedAhead(record.createdAt, now) : null;
  return {
    line,
    lineSha256,
    blob,
    record,
    valid: trust.ok && ahead === null,
    notCounted: !verified.ok && verified.verified === true,
    signer: verified.signer?.name ?? null,
    trust,
    reason: ahead ?? (trust.ok ? VERIFIED_REASON : trust.reason),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Informative fields, read tolerantly.

export interface WorkerInfo {
  model: string | null;
  reportedModel: string | null;
  endpointHost: string | null;
  promptTokens: number | null;
  completionTokens: number | null;
  /** The counts are the client's estimate (the server reported none), not the server's. */
  tokensEstimated: boolean;
  durationMs: number | null;
}

/**
 * A count read from a record: a whole number from 0 to 2^53-1, as the writer keeps them (formats.md), else null
 * (absent, or written oddly by some tool: a fraction or a huge number would make every sum wrong).
 */
function count(value: unknown): number | null {
  return Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : null;
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

export function workerOf(predicate: Record<string, unknown>): WorkerInfo {
  const worker = predicate.worker;
  return {
    model: text(field(worker, 'model')),
    reportedModel: text(field(worker, 'reportedModel')),
    endpointHost: text(field(worker, 'endpointHost')),
    promptTokens: count(field(worker, 'promptTokens')),
    completionTokens: count(field(worker, 'completionTokens')),
    tokensEstimated: field(worker, 'tokensEstimated') === true,
    durationMs: count(field(worker, 'durationMs')),
  };
}

export function unitNameOf(predicate: Record<string, unknown>): string | null {
  return text(field(predicate.unit, 'name'));
}

/** Flaky: the verdict says so, or the verification runs disagreed (a record whose verdict outranked UNIT_FLAKY). */
function isFlaky(record: LedgerRecord): boolean {
  if (record.kind !== 'verdict') return false;
  return record.verdict === 'UNIT_FLAKY' || field(record.predicate.verification, 'flaky') === true;
}

// ---------------------------------------------------------------------------------------------------------------
// The accounting.

export type VerdictCounts = Record<VerdictName, number>;

/** Used as the model name of delegations whose record does not say which model worked. */
export const UNKNOWN_MODEL = '(unknown)';

export interface TokenTotals {
  prompt: number;
  completion: number;
  total: number;
  /** Time the workers took, summed (ms). */
  workerMs: number;
  /** Delegations whose record reports token usage (the server's counts; what the others hold is not summed). */
  delegationsWithUsage: number;
  /** Delegations whose counts the client estimated, the server sending none (`worker.tokensEstimated`): not summed. */
  delegationsEstimated: number;
}

export interface ModelStats {
  /** The operator's `worker.model` setting. */
  model: string;
  /** The name the server's replies gave, where it differed (its own claim): a row of its own per name. */
  reportedModel: string | null;
  /** How a table names the row: the setting, and the served name beside it. */
  label: string;
  delegations: number;
  passed: number;
  flaky: number;
  passRate: number | null;
  byVerdict: VerdictCounts;
  tokens: TokenTotals;
}

export interface SignerStats {
  signer: string;
  delegations: number;
  passed: number;
  byVerdict: VerdictCounts;
  approvals: number;
  rejections: number;
  /** Lines it signed that verify but count for nothing now (its key revoked, or a role or validity it lacks). */
  notCounted: number;
}

export interface DayStats {
  /** UTC day, YYYY-MM-DD. */
  day: string;
  delegations: number;
  passed: number;
  failed: number;
  flaky: number;
  reviews: number;
  /** passed / delegations; null on a day with reviews only. */
  passRate: number | null;
  /** flaky / delegations. */
  flakyRate: number | null;
  promptTokens: number;
  completionTokens: number;
  tokens: number;
}

/** File versions as the promotion rule judges them under the policy in force (promotion.ts), as the gates would. */
export interface PromotionCounts {
  /** Distinct file versions (path, content) some valid record is about. */
  total: number;
  /** Promoted by a passing verdict, with no approval counting. */
  byVerdict: number;
  /** Promoted by approvals (as many as the policy asks), with no passing verdict on it. */
  byReview: number;
  /** Promoted by approvals, and a passing verdict is on it too. */
  byBoth: number;
  /** Refused by a reviewer's standing rejection. */
  rejected: number;
  /** Refused otherwise: a failing verdict only, fewer approvals than the policy asks, or a verdict where only reviews promote. */
  notPromoted: number;
  /**
   * Versions of the policy and key files, not in the counts above: each change of them is judged by the rules in
   * force before it, which the ledger alone does not tell (verify walks that history).
   */
  governance: number;
}

export interface LedgerStats {
  /** Distinct envelope lines in the ledger. */
  lines: number;
  /** Lines that are valid records under the trust root in force. */
  valid: number;
  /** Lines that are no valid record: forged, unreadable, of unknown keys, misplaced, dated ahead. */
  invalid: { total: number; reasons: Record<string, number> };
  /**
   * Records whose signature verifies under a key of the trust root that may not sign them now (revoked, role removed,
   * outside its dates): no problem (`verify` lists them apart), and counted for nothing.
   */
  notCounting: { total: number; reasons: Record<string, number> };
  /** createdAt of the oldest and newest valid record (RFC 3339, as recorded). */
  first: string | null;
  last: string | null;
  delegations: {
    total: number;
    passed: number;
    flaky: number;
    passRate: number | null;
    flakyRate: number | null;
  };
  byVerdict: VerdictCounts;
  reviews: { approve: number; reject: number };
  /** Most delegations first. */
  byModel: ModelStats[];
  /** Most records first. */
  bySigner: SignerStats[];
  /** Oldest day first; only days with records. */
  byDay: DayStats[];
  tokens: TokenTotals;
  promotions: PromotionCounts;
}

function zeroVerdicts(): VerdictCounts {
  return Object.fromEntries(VERDICTS.map((v) => [v, 0])) as VerdictCounts;
}

function zeroTokens(): TokenTotals {
  return {
    prompt: 0,
    completion: 0,
    total: 0,
    workerMs: 0,
    delegationsWithUsage: 0,
    delegationsEstimated: 0,
  };
}

function tally(reasons: ReadonlyMap<string, number>): { total: number; reasons: Record<string, number> } {
  const sorted = [...reasons].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { total: sorted.reduce((sum, [, n]) => sum + n, 0), reasons: Object.fromEntries(sorted) };
}

function ratio(part: number, whole: number): number | null {
  return whole === 0 ? null : part / whole;
}

const FAILED_VERDICTS: ReadonlySet<VerdictName> = new Set(['UNIT_FAILED', 'INCOHERENT', 'CONTRACT_MODIFIED']);
/** The policy's defaults: one approval, or a passing verdict, promotes. */
const ANY_ONE: PromotionRules = { requireReview: false, reviewThreshold: 1 };
const EMPTY = Buffer.alloc(0);
const NO_ENVELOPE = { payload: '', payloadType: '', signatures: [] };

/** Folds judged lines into LedgerStats. Pure: feed it lines in any order, read result() at any point. */
export class LedgerStatsAccumulator {
  private lines = 0;
  private valid = 0;
  private readonly invalidReasons = new Map<string, number>();
  private readonly notCountingReasons = new Map<string, number>();
  private first: { at: number; text: string } | null = null;
  private last: { at: number; text: string } | null = null;
  private readonly byVerdict = zeroVerdicts();
  private readonly reviews = { approve: 0, reject: 0 };
  private flaky = 0;
  private readonly models = new Map<string, ModelStats>();
  private readonly signers = new Map<string, SignerStats>();
  private readonly days = new Map<string, DayStats>();
  private readonly tokens = zeroTokens();
  /** `path\0sha256\0gitBlob` → the valid records about that file version, kept to what the promotion rule reads. */
  private readonly fileVersions = new Map<string, JudgedRecord[]>();

  constructor(private readonly rulesOf: (path: string) => PromotionRules | null = () => ANY_ONE) {}

  add(judged: JudgedLine): void {
    this.lines++;
    const record = judged.record;
    if (!judged.valid || record === null) {
      const reasons = judged.notCounted ? this.notCountingReasons : this.invalidReasons;
      reasons.set(judged.reason, (reasons.get(judged.reason) ?? 0) + 1);
      // By signer too: what a revoked key signed is otherwise only counted by reason (a05).
      if (judged.notCounted && judged.signer !== null) this.signer(judged.signer).notCounted++;
      // Not counted, and yet weighed by the promotion rule: a rejection dated ahead refuses its content.
      if (record !== null && judged.trust?.ok) this.remember(record, judged.trust);
      return;
    }
    this.valid++;
    if (this.first === null || record.createdAt < this.first.at)
      this.first = { at: record.createdAt, text: record.createdAtText };
    if (this.last === null || record.createdAt > this.last.at)
      this.last = { at: record.createdAt, text: record.createdAtText };
    const signer = this.signer(judged.signer ?? '(unknown key)');
    const day = this.day(new Date(record.createdAt).toISOString().slice(0, 10));
    if (record.kind === 'review') {
      this.reviews[record.decision]++;
      day.reviews++;
      if (record.decision === 'approve') signer.approvals++;
      else signer.rejections++;
      this.remember(record, judged.trust!);
      return;
    }
    const { verdict } = record;
    const passed = verdict === 'UNIT_PASSED' ? 1 : 0;
    const flaky = isFlaky(record) ? 1 : 0;
    const worker = workerOf(record.predicate);
    const model = this.model(worker.model ?? UNKNOWN_MODEL, worker.reportedModel);
    this.byVerdict[verdict]++;
    this.flaky += flaky;
    for (const s of [model, signer]) {
      s.delegations++;
      s.passed += passed;
      s.byVerdict[verdict]++;
    }
    model.flaky += flaky;
    day.delegations++;
    day.passed += passed;
    day.flaky += flaky;
    if (FAILED_VERDICTS.has(verdict)) day.failed++;
    // An estimate is no count of what was spent: it is counted apart, never summed with the servers' counts.
    const reported = !worker.tokensEstimated;
    const prompt = reported ? (worker.promptTokens ?? 0) : 0;
    const completion = reported ? (worker.completionTokens ?? 0) : 0;
    const hasUsage = worker.promptTokens !== null || worker.completionTokens !== null ? 1 : 0;
    for (const t of [this.tokens, model.tokens]) {
      t.prompt += prompt;
      t.completion += completion;
      t.total += prompt + completion;
      t.workerMs += worker.durationMs ?? 0;
      if (reported) t.delegationsWithUsage += hasUsage;
      else t.delegationsEstimated++;
    }
    day.promptTokens += prompt;
    day.completionTokens += completion;
    day.tokens += prompt + completion;
    this.remember(record, judged.trust!);
  }

  result(): LedgerStats {
    const delegations = VERDICTS.reduce((sum, v) => sum + this.byVerdict[v], 0);
    const passed = this.byVerdict.UNIT_PASSED;
    const promotions = this.promotions();
    const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    return {
      lines: this.lines,
      valid: this.valid,
      invalid: tally(this.invalidReasons),
      notCounting: tally(this.notCountingReasons),
      first: this.first?.text ?? null,
      last: this.last?.text ?? null,
      delegations: {
        total: delegations,
        passed,
        flaky: this.flaky,
        passRate: ratio(passed, delegations),
        flakyRate: ratio(this.flaky, delegations),
      },
      byVerdict: { ...this.byVerdict },
      reviews: { ...this.reviews },
      byModel: [...this.models.values()]
        .map((m) => ({
          ...m,
          passRate: ratio(m.passed, m.delegations),
          byVerdict: { ...m.byVerdict },
          tokens: { ...m.tokens },
        }))
        .sort((a, b) => b.delegations - a.delegations || byName(a.label, b.label)),
      bySigner: [...this.signers.values()]
        .map((s) => ({ ...s, byVerdict: { ...s.byVerdict } }))
        .sort(
          (a, b) =>
            b.delegations + b.approvals + b.rejections - (a.delegations + a.approvals + a.rejections) ||
            b.notCounted - a.notCounted ||
            byName(a.signer, b.signer),
        ),
      byDay: [...this.days.values()]
        .map((d) => ({
          ...d,
          passRate: ratio(d.passed, d.delegations),
          flakyRate: ratio(d.flaky, d.delegations),
        }))
        .sort((a, b) => byName(a.day, b.day)),
      tokens: { ...this.tokens },
      promotions,
    };
  }

  /**
   * Kept per subject, slimmed to what promotionOf reads (kind, outcome, date, that subject): the predicates of a large
   * ledger are not held.
   */
  private remember(record: LedgerRecord, trust: RecordTrust): void {
    for (const subject of record.subjects) {
      const key = `${subject.path}\0${subject.sha256}\0${subject.gitBlob}`;
      const slim = {
        ...record,
        line: '',
        envelope: NO_ENVELOPE,
        body: EMPTY,
        predicate: {},
        subjects: [subject],
      };
      const records = this.fileVersions.get(key);
      if (records) records.push({ record: slim, trust });
      else this.fileVersions.set(key, [{ record: slim, trust }]);
    }
  }

  private promotions(): PromotionCounts {
    const counts: PromotionCounts = {
      total: 0,
      byVerdict: 0,
      byReview: 0,
      byBoth: 0,
      rejected: 0,
      notPromoted: 0,
      governance: 0,
    };
    for (const [key, records] of this.fileVersions) {
      const [path, sha256, gitBlob] = key.split('\0') as [string, string, string];
      const rules = this.rulesOf(path);
      if (rules === null) {
        counts.governance++;
        continue;
      }
      const judged = promotionOf({ path, sha256, gitBlob }, records, rules);
      counts.total++;
      if (!judged.promoted) {
        if (judged.reason.startsWith('rejected by ')) counts.rejected++;
        else counts.notPromoted++;
        continue;
      }
      const passedToo = records.some(
        (r) => r.trust.ok && r.record.kind === 'verdict' && r.record.verdict === 'UNIT_PASSED',
      );
      if (!judged.reason.startsWith('approved by ')) counts.byVerdict++;
      else if (passedToo) counts.byBoth++;
      else counts.byReview++;
    }
    return counts;
  }

  private model(name: string, reportedModel: string | null): ModelStats {
    const key = `${name}\0${reportedModel ?? ''}`;
    let m = this.models.get(key);
    if (!m) {
      m = {
        model: name,
        reportedModel,
        label: reportedModel === null ? name : `${name} (served as ${reportedModel})`,
        delegations: 0,
        passed: 0,
        flaky: 0,
        passRate: null,
        byVerdict: zeroVerdicts(),
        tokens: zeroTokens(),
      };
      this.models.set(key, m);
    }
    return m;
  }

  private signer(name: string): SignerStats {
    let s = this.signers.get(name);
    if (!s) {
      s = {
        signer: name,
        delegations: 0,
        passed: 0,
        byVerdict: zeroVerdicts(),
        approvals: 0,
        rejections: 0,
        notCounted: 0,
      };
      this.signers.set(name, s);
    }
    return s;
  }

  private day(day: string): DayStats {
    let d = this.days.get(day);
    if (!d) {
      d = {
        day,
        delegations: 0,
        passed: 0,
        failed: 0,
        flaky: 0,
        reviews: 0,
        passRate: null,
        flakyRate: null,
        promptTokens: 0,
        completionTokens: 0,
        tokens: 0,
      };
      this.days.set(day, d);
    }
    return d;
  }
}

/**
 * The accounting of a whole ledger, streamed from `NotesLedger.entries()`: memory follows the number of distinct
 * lines (one hash each) and of file versions judged, not the size of the records.
 */
export async function collectLedgerStats(
  entries: AsyncIterable<{ annotated: string; lines: readonly string[] }>,
  judge: LedgerJudge,
): Promise<LedgerStats> {
  const accumulator = new LedgerStatsAccumulator(judge.rulesOf);
  for await (const judged of judgeDistinctLines(entries, judge)) accumulator.add(judged);
  return accumulator.result();
}
