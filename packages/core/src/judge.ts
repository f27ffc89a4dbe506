/**
 * The gate's I/O around the pure promotion rule: pick the governed files, read their content and the records on
 * their blobs, verify those records against the trust root in force, and ask promotionOf.
 */
import { createHash } from 'node:crypto';
import { DATED_AHEAD } from './dated-ahead.js';
import type { DecisionCache } from './decision-cache.js';
import type { Ed25519Backend } from './ed25519.js';
import type { CatFileBatch } from './git.js';
import type { Governance } from './governance.js';
import { NotePool } from './ledger-pass.js';
import { type BatchCandidate, NoteBatchBuilder } from './note-batch.js';
import { parseNote } from './notes-format.js';
import type { NotesLedger } from './notes-ledger.js';
import type { PathHistory } from './path-history.js';
import type { PathIndex } from './path-index.js';
import {
  foldedPath,
  governedMatcher,
  isGovernanceFile,
  POLICY_PATH,
  parsePolicy,
  type RecordedPaths,
  type RefusalKind,
  recordedAsCheckedOut,
} from './policy.js';
import {
  admittedAt,
  type EarlierRecord,
  type JudgedRecord,
  type Promotion,
  type PromotionRules,
  promotionOf,
} from './promotion.js';
import { judgeLine } from './record.js';
import { keyFileRefusal, type TrustRoot } from './trust-root.js';

export interface FileToJudge {
  path: string;
  blob: string;
  /** A submodule (gitlink): `blob` is a commit of another repository, so no record can promote it. */
  submodule?: boolean;
  /**
   * A symbolic link: `blob` is its target's text, judged as a file's content is (a reviewer's approval of the link
   * promotes it). It is governed also where files would appear beneath it (GovernedMatcher's `link`).
   */
  symlink?: boolean;
  /**
   * Its content, where the object store does not hold `blob` (a work tree judged where git could not store it:
   * a read-only object store).
   */
  content?: Buffer;
  /**
   * The blob the change replaces at this path (a modification). For the policy and key files, approvals must not
   * be older than that version's admission (PromotionRules.approvedSince).
   */
  replaces?: string;
  /**
   * The commit holding `replaces` at this path, along whose history that version was admitted (admittedAt; read
   * through JudgeContext.historyOf). Without it, the version is dated by its own approvals alone.
   */
  replacedAt?: string;
  /**
   * The path `replaces` is a version of, when not this file's own: a key file joining the trust root through a move of
   * the keys directory is dated by the policy version the move replaces (withJoiningKeys).
   */
  replacedPath?: string;
  /**
   * A second version the change replaces, dated the same way: a key file the change itself rewrites while it moves
   * the keys directory replaces both its own earlier content and the policy version the move replaces
   * (withJoiningKeys), and its approvals must be as new as the later of the two.
   */
  alsoReplaces?: ReplacedVersion;
}

/** A version of `path` (its blob, and the commit holding it) that a change replaces. */
export interface ReplacedVersion {
  blob: string;
  path: string;
  at: string;
}

export interface JudgeContext {
  governance: Governance;
  ledger: NotesLedger;
  /** Notes commit to read records from (null: no ledger yet). */
  notesAt: string | null;
  /** What the ledger recorded per path; read only to word a refusal, so it may be given as a loader. */
  index: PathIndex | (() => Promise<PathIndex>);
  batch: CatFileBatch;
  /** Decisions already taken at this ledger tip under this governance (see decision-cache.ts). */
  decisions?: DecisionCache;
  backend?: Ed25519Backend;
  /**
   * The governance already in force (e.g. HEAD's for a commit), which judges changes to the policy file and the
   * keys directory themselves, so a weakening cannot approve itself. Defaults to `governance`.
   */
  anchor?: Governance;
  /** The history of a path behind a commit (pathHistory). */
  historyOf?: (commit: string, path: string) => Promise<PathHistory>;
}

export interface Judgement extends Promotion {
  blob: string;
  sha256: string;
  /** Set when refused for what no record can promote (a submodule). */
  kind?: RefusalKind;
}

/** The files each gate judges: by path, and for a link (symlink or submodule) also by what it could bring beneath it. */
export function governedFiles<T extends LinkedEntry>(
  files: readonly T[],
  governance: Governance,
  recorded: RecordedPaths,
): T[] {
  const governed = governedMatcher(governance.policy);
  const everRecorded = recordedAsCheckedOut(recorded);
  return files.filter((f) => governed(f.path, everRecorded.has(f.path), isLink(f)));
}

/** An entry as the gates list it: a path, and whether it is a submodule or a symbolic link. */
export interface LinkedEntry {
  path: string;
  submodule?: boolean;
  symlink?: boolean;
}

/** A symbolic link or a submodule: checked out, it puts files beneath its path that no tree entry names. */
export function isLink(entry: { submodule?: boolean; symlink?: boolean }): boolean {
  return entry.submodule === true || entry.symlink === true;
}

export async function judgeFiles(files: readonly FileToJudge[], ctx: JudgeContext): Promise<Judgement[]> {
  // Only a change to a governance file is judged with the version it replaces (PromotionRules.approvedSince); any
  // other file is decided by its own content, and so may be taken from the decisions kept per (path, blob).
  const anchor = ctx.anchor ?? ctx.governance;
  const judged = files.map((f): FileToJudge => {
    if (!f.replaces || rulesFor(f.path, ctx.governance, anchor).governanceFile) return f;
    const { replaces: _, alsoReplaces: __, ...rest } = f;
    return rest;
  });
  const known = judged.map((f) =>
    f.submodule ? submoduleRefusal(f) : f.replaces ? undefined : ctx.decisions?.get(f.path, f.blob),
  );
  const asked = judged.filter((_, i) => !known[i]);
  const fresh = await judgeUncached(asked, ctx);
  fresh.forEach((j, i) => {
    // A refusal for a record dated ahead lasts until the clock reaches it, not for as long as the ledger tip.
    if (j.sha256 !== '' && !asked[i]!.replaces && !j.reason.includes(DATED_AHEAD)) ctx.decisions?.set(j);
  });
  let next = 0;
  return known.map((k) => k ?? fresh[next++]!);
}

async function judgeUncached(files: readonly FileToJudge[], ctx: JudgeContext): Promise<Judgement[]> {
  if (files.length === 0) return [];
  // Only governance files still carry `replaces` here (judgeFiles): each replaced version is dated by its history.
  const histories = await replacedHistories(files, ctx);
  const replaced = [...histories.values()].flatMap((versions) =>
    versions.flatMap(({ history }) =>
      [...history.commits.values()].flatMap((c) => (c.blob === null ? [] : [c.blob])),
    ),
  );
  // The replaced versions' notes are only weighed here, for their dates: read once per ledger tip, however many
  // changes of a long policy history verify's walk judges, and neither hashed nor sent to the threads.
  const replacedNotes = readNotesOnce(ctx, replaced);
  replacedNotes.catch(() => {}); // awaited below
  const anchor = ctx.anchor ?? ctx.governance;
  const keyFiles = new Set(files.filter((f) => isKeyFile(f.path, ctx.governance, anchor)));
  const read = await readAndCheck(files, ctx, anchor, new Set([...keyFiles].map((f) => f.blob)));
  for (const [blob, note] of await replacedNotes) if (!read.notes.has(blob)) read.notes.set(blob, note);
  const records = new RecordsOnBlobs(read.notes, ctx, anchor);
  // A promotion never reads the path's earlier records; only a refusal's wording does, so the index (a read of the
  // whole ledger when not cached) is loaded only when something is refused.
  let index: PathIndex | undefined;
  const out: Judgement[] = [];
  for (const f of files) {
    out.push(
      await judgementOf(f, {
        sha256: read.sha256.get(f.blob),
        threaded: read.onThreads.get(`${f.blob}\0${f.path}`),
        keyRefusal:
          keyFiles.has(f) && read.keyTexts.has(f.blob)
            ? keyFileRefusal(anchor.trustRoot, f.path, read.keyTexts.get(f.blob)!)
            : null,
        governance: ctx.governance,
        anchor,
        recordsOn: (governanceFile) => records.on(f.blob, governanceFile),
        replacedAdmitted: (threshold) => {
          const dates = histories
            .get(f)!
            .map(({ path, history, thresholds }) =>
              admittedAt(
                path,
                history.tip,
                history.commits,
                (b) => records.on(b, true).records,
                (commit) => thresholds.get(commit) ?? threshold,
                undefined,
                datesFound(ctx, anchor, path, threshold),
              ),
            )
            .filter((t): t is number => t !== undefined);
          return dates.length === 0 ? undefined : Math.max(...dates);
        },
        earlier: async (trustRoot) => {
          index ??= typeof ctx.index === 'function' ? await ctx.index() : ctx.index;
          return index.earlier(f.path, f.blob, trustRoot);
        },
      }),
    );
  }
  return out;
}

/** What judging the files reads: each blob's note and sha256, key files' texts, and what the threads promoted. */
interface ReadForJudging {
  notes: Map<string, Buffer>;
  sha256: Map<string, string>;
  keyTexts: Map<string, string>;
  /** Per `<blob>\0<path>`, the promotion the checking threads found (none: judged on this thread). */
  onThreads: Map<string, Promotion>;
}

/**
 * Reads every file's content and note. Every content is asked for at once (git answers in order); the notes arrive a
 * window at a time, and each window goes to the checking threads as soon as its contents are hashed, while git still
 * reads the rest.
 */
async function readAndCheck(
  files: readonly FileToJudge[],
  ctx: JudgeContext,
  anchor: Governance,
  keyBlobs: ReadonlySet<string>,
): Promise<ReadForJudging> {
  const read: ReadForJudging = {
    notes: new Map(),
    sha256: new Map(),
    keyTexts: new Map(),
    onThreads: new Map(),
  };
  const blobs = [...new Set(files.map((f) => f.blob))];
  // Threads take a while to start: start them while git reads, when the batch is large enough to use them.
  const pool = blobs.length >= THREADED_BLOBS ? NotePool.start(ctx.governance) : null;
  try {
    const given = new Map(
      files.flatMap((f) => (f.content ? [[f.blob, { content: f.content }] as const] : [])),
    );
    const contents = new Map(
      blobs.map((blob) => [blob, ctx.batch.read(blob).then((object) => object ?? given.get(blob) ?? null)]),
    );
    for (const content of contents.values()) content.catch(() => {}); // awaited below, window by window
    const filesOf = groupedByBlob(files);
    const checks: Array<Promise<void>> = [];
    const onWindow = async (window: Map<string, Buffer>) => {
      for (const [blob, note] of window) {
        read.notes.set(blob, note);
        const object = await contents.get(blob)!;
        if (object) read.sha256.set(blob, createHash('sha256').update(object.content).digest('hex'));
        if (object && keyBlobs.has(blob)) read.keyTexts.set(blob, object.content.toString('utf8'));
      }
      if (!pool) return;
      const part = [...window.keys()].flatMap((blob) => filesOf.get(blob) ?? []);
      const check = promotedOnThreads(pool, part, window, read.sha256, ctx.governance, anchor).then(
        (promoted) => {
          for (const [key, p] of promoted) read.onThreads.set(key, p);
        },
      );
      check.catch(() => {}); // awaited after the last window
      checks.push(check);
    };
    if (ctx.notesAt === null) await onWindow(new Map(blobs.map((blob) => [blob, NO_NOTE])));
    else await ctx.ledger.notesOnManyInWindows(blobs, ctx.notesAt, NOTES_WINDOW, onWindow);
    await Promise.all(checks);
  } finally {
    await pool?.close();
  }
  return read;
}

/**
 * The records on each blob, judged on this thread when first asked for (those of blobs no thread promoted a file of,
 * or of every blob when few), by the rules in force or, for a governance file, by the anchor's.
 */
class RecordsOnBlobs {
  private readonly judged = new Map<string, { records: JudgedRecord[]; unreadable: string[] }>();

  constructor(
    private readonly notes: ReadonlyMap<string, Buffer>,
    private readonly ctx: JudgeContext,
    private readonly anchor: Governance,
  ) {}

  on(blob: string, governanceFile: boolean): { records: JudgedRecord[]; unreadable: string[] } {
    const governance = governanceFile ? this.anchor : this.ctx.governance;
    const key = governance === this.ctx.governance ? blob : `anchor:${blob}`;
    let j = this.judged.get(key);
    if (!j) {
      const unreadable: string[] = [];
      const lines = parseNote(this.notes.get(blob) ?? NO_NOTE);
      j = { records: judgeLines(lines, { governance, backend: this.ctx.backend }, unreadable), unreadable };
      this.judged.set(key, j);
    }
    return j;
  }
}

/**
 * A replaced version's history, and per commit of it the review threshold in force when that commit's version was
 * admitted (the highest of its parents' policies; 1 for the adoption, whose author alone approves it).
 */
interface ReplacedHistory {
  path: string;
  history: PathHistory;
  thresholds: ReadonlyMap<string, number>;
}

/** Per file that replaces a version (or two): the history each version was admitted along, with its path. */
async function replacedHistories(
  files: readonly FileToJudge[],
  ctx: JudgeContext,
): Promise<Map<FileToJudge, ReplacedHistory[]>> {
  const histories = new Map<FileToJudge, ReplacedHistory[]>();
  const historyOf = async ({ blob, path, at }: { blob: string; path: string; at?: string }) => {
    const read = at && ctx.historyOf ? await ctx.historyOf(at, path) : null;
    if (!read || read.commits.get(read.tip)?.blob !== blob) {
      // Without its history (or where it does not hold that version), the version stands alone.
      const alone = { tip: blob, commits: new Map([[blob, { blob, parents: [] }]]) };
      return { path, history: alone, thresholds: new Map<string, number>() };
    }
    return { path, history: read, thresholds: await thresholdsAlong(read, ctx.batch) };
  };
  await Promise.all(
    files.map(async (f) => {
      if (!f.replaces) return;
      const own = { blob: f.replaces, path: f.replacedPath ?? f.path, at: f.replacedAt };
      histories.set(f, await Promise.all([own, ...(f.alsoReplaces ? [f.alsoReplaces] : [])].map(historyOf)));
    }),
  );
  return histories;
}

/**
 * The review threshold in force before each commit of a history, read as committed: the highest of its parents'
 * policies. A merge's first parent is the merger's choice (git commit-tree orders parents at will): a merge into a
 * branch under threshold 2, whose first parent is an older commit under 1, was admitted under 2, and dated by one
 * approval it let a single reviewer bring back a revoked key on other reviewers' old approvals. 1 only where no
 * parent holds a policy (the adoption, approved by its author alone).
 */
async function thresholdsAlong(history: PathHistory, batch: CatFileBatch): Promise<Map<string, number>> {
  const memo = keptFor(thresholdsRead, batch, () => new Map());
  const once = (key: string, read: () => Promise<number | null | undefined>) => keptFor(memo, key, read);
  const thresholds = new Map<string, number>();
  await Promise.all(
    [...history.commits.keys()].map(async (commit) => {
      const threshold = await once(`before:${commit}`, async () => {
        // A failed read says nothing (today's threshold applies).
        const object = await batch.read(commit).catch(() => null);
        if (object?.type !== 'commit') return undefined;
        const parents = await Promise.all(
          parentsOf(object.content).map((p) => once(p, () => committedThreshold(p, batch))),
        );
        if (parents.includes(undefined)) return undefined;
        const held = parents.filter((t): t is number => t !== null);
        return held.length === 0 ? 1 : Math.max(...held);
      });
      if (typeof threshold === 'number') thresholds.set(commit, threshold);
    }),
  );
  return thresholds;
}

/** Thresholds read per object reader: a commit's parents' policies do not change, and a walk asks at every change. */
const thresholdsRead = new WeakMap<CatFileBatch, Map<string, Promise<number | null | undefined>>>();

/** The parents a commit object names, in order. */
function parentsOf(commit: Buffer): string[] {
  const header = commit.toString('latin1', 0, Math.max(0, commit.indexOf('\n\n')));
  return [...header.matchAll(/^parent ([0-9a-f]+)$/gm)].map((m) => m[1]!);
}

/** The review threshold of the policy committed at `commit`: null where it has none; undefined where unreadable. */
async function committedThreshold(commit: string, batch: CatFileBatch): Promise<number | null | undefined> {
  const object = await batch.read(`${commit}:${POLICY_PATH}`).catch(() => undefined);
  if (object === undefined) return undefined;
  if (object === null) return null;
  try {
    return parsePolicy(object.content.toString('utf8')).reviewThreshold;
  } catch {
    return undefined;
  }
}

/** What is already known about one governed file when it is judged. */
export interface FileFacts {
  /** SHA-256 of its content; undefined when the content could not be read. */
  sha256: string | undefined;
  /** The promotion a worker thread already found for it, if any. */
  threaded: Promotion | undefined;
  /** For a key file: why it may not hold this key under the rules in force (keyFileRefusal), refusing it whatever approves it. */
  keyRefusal?: string | null;
  governance: Governance;
  anchor: Governance;
  /** The records on its blob, trusted under the anchor for a governance file, else under `governance`. */
  recordsOn(governanceFile: boolean): { records: JudgedRecord[]; unreadable: string[] };
  /**
   * When the version it replaces (FileToJudge.replaces) was admitted, by records trusted under the anchor, with
   * `threshold` distinct approvals.
   */
  replacedAdmitted?(threshold: number): number | undefined;
  /** What the ledger said about the path on other content: asked only to word a refusal. */
  earlier(trustRoot: TrustRoot): EarlierRecord[] | Promise<EarlierRecord[]>;
}

/** One file's judgement: the gates (judgeFiles) and `verify` (revision-judge.ts) both decide through here. */
export async function judgementOf(f: FileToJudge, facts: FileFacts): Promise<Judgement> {
  if (f.submodule) return submoduleRefusal(f);
  const { sha256 } = facts;
  if (sha256 === undefined) {
    return { path: f.path, blob: f.blob, sha256: '', promoted: false, reason: CONTENT_UNREADABLE, by: [] };
  }
  if (facts.threaded) {
    const { promoted, reason, by } = facts.threaded;
    return { path: f.path, promoted, reason, by, blob: f.blob, sha256 };
  }
  if (facts.keyRefusal)
    return { path: f.path, promoted: false, reason: facts.keyRefusal, by: [], blob: f.blob, sha256 };
  const { governanceFile, rules: ruled, trustRoot } = rulesFor(f.path, facts.governance, facts.anchor);
  const rules =
    governanceFile && f.replaces && facts.replacedAdmitted
      ? {
          ...ruled,
          approvedSince: facts.replacedAdmitted(ruled.reviewThreshold),
          ...(f.replacedPath !== undefined && { approvedSinceOf: MOVED_KEYS }),
        }
      : ruled;
  const candidate = { path: f.path, sha256, gitBlob: f.blob };
  const { records, unreadable } = facts.recordsOn(governanceFile);
  let promotion = promotionOf(candidate, records, rules, [], unreadable);
  if (!promotion.promoted) {
    promotion = promotionOf(candidate, records, rules, await facts.earlier(trustRoot), unreadable);
  }
  return { ...promotion, blob: f.blob, sha256 };
}

const CONTENT_UNREADABLE = 'its content could not be read';

/**
 * Records judge file content, and a submodule's entry is a commit of another repository: in a governed path it is
 * never promoted, so the way to have one there is to take its path out of governance, a reviewed policy change.
 */
export const SUBMODULE_REFUSED =
  'a submodule: records judge file content, and a submodule is a commit of another repository, so none promotes it; ' +
  'it is governed because its path is, or because files it checks out beneath its path could be; ' +
  'to keep it, exclude its path in the policy (a change reviewers approve)';

function submoduleRefusal(f: FileToJudge): Judgement {
  return {
    path: f.path,
    blob: f.blob,
    sha256: '',
    promoted: false,
    reason: SUBMODULE_REFUSED,
    kind: 'submodule',
    by: [],
  };
}
const NO_NOTE = Buffer.alloc(0);

/** Dates of versions found (admittedAt), per ledger: a walk dates the same history at each of its changes. */
const datesRead = new WeakMap<object, Map<string, Map<string, number | undefined>>>();

/** The dates found along `path`'s history under the same ledger tip, anchor keys and fallback threshold. */
function datesFound(
  ctx: JudgeContext,
  anchor: Governance,
  path: string,
  threshold: number,
): Map<string, number | undefined> {
  const key = `${ctx.notesAt}\0${anchor.trustRoot.digest}\0${anchor.policy.repositoryId}\0${threshold}\0${path}`;
  return keptFor(
    keptFor(datesRead, ctx.ledger, () => new Map()),
    key,
    () => new Map(),
  );
}

/** What `kept` holds for `key`, made by `make` the first time it is asked for. */
function keptFor<K, V>(
  kept: { get(key: K): V | undefined; set(key: K, value: V): unknown },
  key: K,
  make: () => V,
): V {
  let value = kept.get(key);
  if (value === undefined) {
    value = make();
    kept.set(key, value);
  }
  return value;
}

/** Notes already read, per ledger and tip: a walk judges the same replaced versions at every change of a history. */
const notesRead = new WeakMap<object, Map<string, Promise<Buffer>>>();

/** The notes on `blobs` at ctx.notesAt, each read from git once per ledger and tip. */
async function readNotesOnce(ctx: JudgeContext, blobs: readonly string[]): Promise<Map<string, Buffer>> {
  const { notesAt } = ctx;
  if (notesAt === null) return new Map(blobs.map((blob) => [blob, NO_NOTE]));
  const read = keptFor(notesRead, ctx.ledger, () => new Map<string, Promise<Buffer>>());
  const missing = [...new Set(blobs)].filter((blob) => !read.has(`${notesAt}:${blob}`));
  if (missing.length > 0) {
    const all = new Map<string, Buffer>();
    const done = ctx.ledger.notesOnManyInWindows(missing, notesAt, missing.length, (window) => {
      for (const [blob, note] of window) all.set(blob, note);
    });
    for (const blob of missing)
      read.set(
        `${notesAt}:${blob}`,
        done.then(() => all.get(blob) ?? NO_NOTE),
      );
  }
  return new Map(
    await Promise.all(blobs.map(async (blob) => [blob, await read.get(`${notesAt}:${blob}`)!] as const)),
  );
}

/** From this many blobs with records on, their records are checked on worker threads, as `verify` does. */
const THREADED_BLOBS = 256;
/** Notes handed to the threads at a time, while git reads the rest (gate-threads.test.ts stages more than one window). */
const NOTES_WINDOW = 256;

function groupedByBlob(files: readonly FileToJudge[]): Map<string, FileToJudge[]> {
  const byBlob = new Map<string, FileToJudge[]>();
  for (const f of files) {
    const list = byBlob.get(f.blob);
    if (list) list.push(f);
    else byBlob.set(f.blob, [f]);
  }
  return byBlob;
}

/**
 * The promotions worker threads find (note-batch.ts), keyed "<blob>\0<path>", for large batches: a commit staging
 * thousands of governed files spends nearly all its time on signature checks. Files of the governance itself are
 * left to the main thread (judged under the anchor), and so is every refusal (its wording needs the path's
 * history). There is no pool without a worker script beside this module (tests run the sources).
 */
async function promotedOnThreads(
  pool: NotePool,
  files: readonly FileToJudge[],
  notes: ReadonlyMap<string, Buffer>,
  sha256: ReadonlyMap<string, string>,
  governance: Governance,
  anchor: Governance,
): Promise<Map<string, Promotion>> {
  const promoted = new Map<string, Promotion>();
  const candidates = new Map<string, BatchCandidate[]>();
  for (const f of files) {
    const digest = sha256.get(f.blob);
    if (digest === undefined || !notes.get(f.blob)?.length) continue;
    const { governanceFile, rules } = rulesFor(f.path, governance, anchor);
    if (governanceFile) continue;
    const list = candidates.get(f.blob) ?? [];
    list.push({ candidate: { path: f.path, sha256: digest, gitBlob: f.blob }, rules });
    candidates.set(f.blob, list);
  }
  const blobs = [...candidates.keys()];
  // One batch per thread and a few more, so a slow thread does not hold the rest back.
  const perBatch = Math.ceil(blobs.length / (pool.size * 4));
  const checks: Array<Promise<void>> = [];
  for (let i = 0; i < blobs.length; i += perBatch) {
    const builder = new NoteBatchBuilder();
    const part = blobs.slice(i, i + perBatch);
    for (const blob of part) builder.add(blob, notes.get(blob)!, candidates.get(blob)!, false);
    checks.push(
      pool.check(builder.take(i)).then((checked) => {
        checked.notes.forEach((note, n) => {
          note.promotions?.forEach((p, c) => {
            if (p) promoted.set(`${part[n]}\0${candidates.get(part[n]!)![c]!.candidate.path}`, p);
          });
        });
      }),
    );
  }
  await Promise.all(checks);
  return promoted;
}

/**
 * The rules and trust root a path is judged by. The policy and the trust root themselves always need reviewer
 * approval, under the governance already in force (`anchor`), so a weakening cannot approve itself.
 */
export function rulesFor(
  path: string,
  governance: Governance,
  anchor: Governance = governance,
): { governanceFile: boolean; rules: PromotionRules; trustRoot: TrustRoot } {
  const governanceFile = isGovernanceFile(governance.policy, path) || isGovernanceFile(anchor.policy, path);
  return governanceFile
    ? {
        governanceFile,
        rules: { requireReview: true, reviewThreshold: anchor.policy.reviewThreshold },
        trustRoot: anchor.trustRoot,
      }
    : { governanceFile, rules: governance.policy, trustRoot: governance.trustRoot };
}

const MOVED_KEYS =
  'the policy a move of the keys directory here replaces was admitted: every key file in the directory the keys move to needs an approval made since';

/** A file of either keys directory: the policy's in force, or the one a change moves it to. */
function isKeyFile(path: string, governance: Governance, anchor: Governance): boolean {
  return rulesFor(path, governance, anchor).governanceFile && foldedPath(path) !== POLICY_PATH;
}

/**
 * Decodes and verifies every line on one blob. A line that does not decode is not a record for anyone; why it
 * failed is pushed to `unreadable` (when given), so a refusal can say that a damaged or forged line was there.
 */
export function judgeLines(
  lines: readonly string[],
  ctx: Pick<JudgeContext, 'governance' | 'backend'>,
  unreadable?: string[],
): JudgedRecord[] {
  const out: JudgedRecord[] = [];
  for (const line of lines) {
    const judged = judgeLine(line, ctx.governance.trustRoot, ctx.governance.policy.repositoryId, ctx.backend);
    if (judged.ok) out.push({ record: judged.record, trust: judged.trust });
    else unreadable?.push(judged.reason);
  }
  return out;
}

/**
 * The rules a governance file at a revision is judged by (verify, check --rev): each version of the policy and keys
 * came in by the threshold in force then, which the walk of their history holds every change to, so at the revision
 * each needs an approval by a key trusted now. Asking the revision's own threshold of them would refuse every key file
 * once the threshold is raised.
 */
export function revisionAnchor(governance: Governance): Governance {
  return { ...governance, policy: { ...governance.policy, reviewThreshold: 1 } };
}
