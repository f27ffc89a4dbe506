/**
 * Which paths the ledger has ever spoken about, and what it said. A path with any record is governed from then on
 * (DESIGN 4.1). Built from the decoded records (signatures are not needed to govern: a forged line can only add
 * restrictions), and cached per notes commit in the git dir, because the gate runs on every commit. Each path keeps
 * a bounded history (historyWorthKeeping), so the index grows with the paths, not with the records on them.
 */
import { mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from './atomic-file.js';
import { pathsName, recordedPathsBody, recordedPathsText } from './cache-file.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './canonical-json.js';
import type { IndexFact } from './line-check.js';
import type { IndexedBatch } from './note-batch.js';
import { type NotesLedger, notesIn } from './notes-ledger.js';
import type { EarlierRecord } from './promotion.js';
import { parseRfc3339Utc, REVIEW_PREDICATE, VERDICT_PREDICATE } from './statement.js';
import type { TrustRoot } from './trust-root.js';

/** One record about a path: kind, verdict or decision, signer keyid, the blob it judged, and when it was made. */
type IndexEntry = [kind: 'v' | 'r', outcome: string, keyid: string, blob: string, createdAt: number];

/**
 * 3: each path's history is bounded (historyWorthKeeping).
 * 4: a record's time is read as the strict decode reads it (parseRfc3339Utc), which takes every UTC form.
 */
const CACHE_VERSION = 4;

export class PathIndex {
  constructor(private readonly byPath: Map<string, IndexEntry[]>) {}

  /** The map itself, for extending an index with newly added lines. */
  get entries(): Map<string, IndexEntry[]> {
    return this.byPath;
  }

  static empty(): PathIndex {
    return new PathIndex(new Map());
  }

  has(path: string): boolean {
    return this.byPath.has(path);
  }

  get size(): number {
    return this.byPath.size;
  }

  paths(): string[] {
    return [...this.byPath.keys()].sort();
  }

  /** What was recorded on this path for content other than `blob`, newest first. */
  earlier(path: string, blob: string, trustRoot: TrustRoot): EarlierRecord[] {
    return this.others(path, blob).map(([kind, outcome, keyid]) => {
      const signer = trustRoot.byKeyid(keyid)?.name;
      return kind === 'v'
        ? { kind: 'verdict', verdict: outcome as EarlierRecord['verdict'], signer }
        : { kind: 'review', decision: outcome as EarlierRecord['decision'], signer };
    });
  }

  /** Other contents this path had records on, newest record first (those its bounded history still holds). */
  earlierBlobs(path: string, blob: string): string[] {
    return [...new Set(this.others(path, blob).map((e) => e[3]))];
  }

  private others(path: string, blob: string): IndexEntry[] {
    return (this.byPath.get(path) ?? []).filter((e) => e[3] !== blob).sort((a, b) => b[4] - a[4]);
  }

  /**
   * The cache file's JSON, `{"version", "paths": {path: entries}}`, in pieces: the whole text of a large ledger's
   * index is as big as the index itself (15 MB at 100,000 records), and would double what the gate holds.
   */
  *serialized(): Generator<string> {
    let piece = `{"version":${CACHE_VERSION},"paths":{`;
    let first = true;
    for (const [p, entries] of this.byPath) {
      piece += `${first ? '' : ','}${JSON.stringify(p)}:${JSON.stringify(entries)}`;
      first = false;
      if (piece.length >= 1 << 16) {
        yield piece;
        piece = '';
      }
    }
    yield `${piece}}}`;
  }

  static fromJSON(data: unknown): PathIndex | null {
    const d = data as { version?: number; paths?: Record<string, IndexEntry[]> };
    if (d?.version !== CACHE_VERSION || typeof d.paths !== 'object' || d.paths === null) return null;
    return new PathIndex(new Map(Object.entries(d.paths)));
  }
}

export function addLines(byPath: Map<string, IndexEntry[]>, blob: string, lines: readonly string[]): void {
  for (const line of lines) {
    const r = peekRecord(line);
    if (!r) continue;
    const entry: IndexEntry = [r.kind, interned(r.outcome), interned(r.keyid), blob, r.createdAt];
    // A record with several subjects sits on each subject's blob; index each path once, from its own blob.
    for (const s of r.subjects) if (s.gitBlob === blob) recordOnPath(byPath, s.path, entry);
  }
}

/** Adds a record to a path's history, which stays bounded however many records the path gets. */
export function recordOnPath(byPath: Map<string, IndexEntry[]>, path: string, entry: IndexEntry): void {
  const list = byPath.get(path);
  if (!list) byPath.set(path, [entry]);
  else {
    list.push(entry);
    if (list.length > 2 * HISTORY_KEPT) byPath.set(path, historyWorthKeeping(list));
  }
}

/** Each of the three things history tells (below) needs at most two records; six in all. */
const HISTORY_KEPT = 6;

/**
 * The records of a path that `earlier` can still need, in their order. A refusal's wording is told from the records
 * on the path's other contents (promotion.ts): the newest approval, whether any UNIT_PASSED verdict exists, and the
 * newest verdict. For any one content left out, each is found among the newest records of two distinct contents:
 * so those are kept, and what the gates and verify hold of a path does not grow with its records (DESIGN 6: memory
 * flat). A record dropped here is never needed later: newer records only push it further back. (`attest` looks for
 * the last promoted version among the contents kept: the newest ones that passed, were approved or were judged.)
 */
function historyWorthKeeping(entries: readonly IndexEntry[]): IndexEntry[] {
  const newestFirst = [...entries].sort((a, b) => b[4] - a[4]);
  const keep = new Set<IndexEntry>();
  const newestOfTwoContents = (wanted: (e: IndexEntry) => boolean) => {
    const contents = new Set<string>();
    for (const e of newestFirst) {
      if (!wanted(e) || contents.has(e[3])) continue;
      contents.add(e[3]);
      keep.add(e);
      if (contents.size === 2) return;
    }
  };
  newestOfTwoContents((e) => e[0] === 'r' && e[1] === 'approve');
  newestOfTwoContents((e) => e[0] === 'v' && e[1] === 'UNIT_PASSED');
  newestOfTwoContents((e) => e[0] === 'v');
  return entries.filter((e) => keep.has(e));
}

// A ledger has a few signers and verdicts but many records: one string each instead of one per record (bounded,
// in case a forged ledger names a new key on every line).
const internTable = new Map<string, string>();
function interned(text: string): string {
  let known = internTable.get(text);
  if (known === undefined) {
    known = text;
    if (internTable.size < 10_000) internTable.set(text, text);
  }
  return known;
}

interface PeekedRecord {
  kind: 'v' | 'r';
  outcome: string;
  keyid: string;
  createdAt: number;
  subjects: Array<{ path: string; gitBlob: string }>;
}

/**
 * What a line says, read leniently (plain JSON, no canonical or signature checks): enough to know which paths the
 * ledger has spoken about. Governing needs no trust, since a bogus line can only make a path governed (refused
 * until promoted), and the strict decode costs as much as a signature check over a large ledger.
 */
function peekRecord(line: string): PeekedRecord | null {
  try {
    if (nestsDeeperThan(line, MAX_JSON_DEPTH)) return null;
    const envelope = JSON.parse(line);
    const payload = Buffer.from(String(envelope.payload), 'base64').toString('utf8');
    if (nestsDeeperThan(payload, MAX_JSON_DEPTH)) return null;
    const statement = JSON.parse(payload);
    const p = statement.predicate ?? {};
    const kind =
      statement.predicateType === VERDICT_PREDICATE
        ? 'v'
        : statement.predicateType === REVIEW_PREDICATE
          ? 'r'
          : null;
    if (!kind || !Array.isArray(statement.subject)) return null;
    const subjects = statement.subject
      .map((s: { name?: unknown; digest?: { gitBlob?: unknown } }) => ({
        path: s?.name,
        gitBlob: s?.digest?.gitBlob,
      }))
      .filter(
        (s: { path: unknown; gitBlob: unknown }) =>
          typeof s.path === 'string' && typeof s.gitBlob === 'string',
      );
    return {
      kind,
      outcome: String(kind === 'v' ? p.verdict : p.decision),
      keyid: String(envelope.signatures?.[0]?.keyid ?? ''),
      createdAt: parseRfc3339Utc(String(p.createdAt)) ?? 0,
      subjects,
    };
  } catch {
    return null;
  }
}

export async function buildPathIndex(ledger: NotesLedger, at: string): Promise<PathIndex> {
  const byPath = new Map<string, IndexEntry[]>();
  const listed = await ledger.noteContents(at);
  if (!listed) return new PathIndex(byPath);
  // Loaded here, not imported above: the threads read lines with this module's own functions.
  const [threads, batches] =
    listed.count >= THREADED_NOTES
      ? await Promise.all([import('./ledger-pass.js'), import('./note-batch.js')])
      : [null, null];
  const pool = threads?.NotePool.forIndex() ?? null;
  if (!batches || !pool) {
    for await (const { annotated, lines } of notesIn(listed.windows)) addLines(byPath, annotated, lines);
    return new PathIndex(byPath);
  }
  try {
    // Read on the threads, recorded here in the listing's order (what is kept of a path depends on the order).
    const inFlight: Array<{ ids: string[]; facts: Promise<IndexedBatch> }> = [];
    const recordOldest = async () => {
      const { ids, facts } = inFlight.shift()!;
      (await facts).facts.forEach((lines, i) => {
        recordFacts(byPath, ids[i]!, lines);
      });
    };
    for await (const window of listed.windows) {
      const builder = new batches.NoteBatchBuilder();
      for (const { annotated, content } of window) builder.add(annotated, content, null, false);
      inFlight.push({ ids: window.map((n) => n.annotated), facts: pool.index(builder.take(0)) });
      if (inFlight.length > 2 * pool.size) await recordOldest();
    }
    while (inFlight.length > 0) await recordOldest();
  } finally {
    await pool.close();
  }
  return new PathIndex(byPath);
}

/** What addLines records for a note's lines, from their facts as a thread read them (line-check's indexFactOf). */
export function recordFacts(
  byPath: Map<string, IndexEntry[]>,
  blob: string,
  facts: ReadonlyArray<IndexFact | null>,
): void {
  for (const fact of facts) {
    if (fact === null) continue;
    const [kind, outcome, keyid, createdAt, paths] = fact;
    const entry: IndexEntry = [kind, interned(outcome), interned(keyid), blob, createdAt];
    for (const p of paths) recordOnPath(byPath, p, entry);
  }
}

/**
 * From this many notes, a first build of the index reads their lines on worker threads (JSON.parse of every record
 * is most of it): 100,000 records on 50,000 notes took 5.7-6.1 s on the main thread alone.
 */
export const THREADED_NOTES = 4096;

/**
 * What the ledger added from notes commit `since` to the tip being loaded, when the caller has read it already
 * (the server gate reads it to verify a push): extending a cache made at `since` then reads no notes.
 */
export interface KnownAddition {
  since: string;
  added: Promise<ReadonlyArray<{ annotated: string; lines: readonly string[] }>>;
}

/**
 * The index for the ledger at `tip`, from `<cacheDir>/path-index-<tip>.json` when present. The cache is only an
 * accelerator: it is derived from the notes commit named in its file name, and a missing or corrupt cache is rebuilt.
 * When the ledger has moved on since the last cached tip (every append moves it), only the notes that changed are
 * read and added: the ledger only grows, and a line that somehow vanished can only leave a path over-governed.
 */
export async function loadPathIndex(
  ledger: NotesLedger,
  tip: string | null,
  cacheDir: string | null,
  known?: KnownAddition,
): Promise<PathIndex> {
  if (tip === null) return PathIndex.empty();
  if (cacheDir === null) return buildPathIndex(ledger, tip);
  const exact = await readCache(path.join(cacheDir, cacheName(tip)));
  if (exact) return exact;
  const extended = await extendLatestCache(ledger, tip, cacheDir, known);
  const index = extended?.index ?? (await buildPathIndex(ledger, tip));
  // Extended for a caller that has not moved the ledger yet (the server gate), the cache extended from is kept
  // beside the new one: the ledger stays at that tip if the push is refused.
  const stays = known !== undefined && extended?.from === known.since ? known.since : undefined;
  await writeCache(cacheDir, tip, index, stays);
  return index;
}

const CACHE_FILE = /^path-index-([0-9a-f]{40,64})\.json$/;
const PATHS_FILE = /^recorded-paths-([0-9a-f]{40,64})$/;

/**
 * Just the set of paths the ledger ever recorded: all a commit that touches nothing governed needs. Kept in its own
 * small cache file, because parsing the full index (megabytes on a large ledger) would dominate such a commit.
 * With `known` (what the ledger added since an earlier tip) and that tip's file, the set is grown from it and saved
 * for `tip`, without the full index.
 */
export async function loadRecordedPaths(
  ledger: NotesLedger,
  tip: string | null,
  cacheDir: string | null,
  known?: KnownAddition,
): Promise<Set<string>> {
  if (tip === null) return new Set();
  if (cacheDir !== null) {
    const exact = await readRecordedPaths(cacheDir, tip);
    if (exact) return exact;
    const grown = known ? await growRecordedPaths(cacheDir, tip, known) : null;
    if (grown) return grown;
  }
  const index = await loadPathIndex(ledger, tip, cacheDir, known);
  // Written again where it was missing beside a cached index, not whole, or of an older format: the next commit that
  // stages nothing governed reads this small file, not the index (loadPathIndex writes it only when it builds one).
  if (cacheDir !== null) {
    await writeFileAtomic(path.join(cacheDir, pathsName(tip)), recordedPathsText(index.paths())).catch(
      () => {},
    );
  }
  return new Set(index.paths());
}

async function readRecordedPaths(cacheDir: string, tip: string): Promise<Set<string> | null> {
  try {
    const body = recordedPathsBody(await readFile(path.join(cacheDir, pathsName(tip)), 'utf8'));
    if (body === null) return null;
    return new Set(body === '' ? [] : body.split('\0'));
  } catch {
    return null;
  }
}

async function growRecordedPaths(
  cacheDir: string,
  tip: string,
  known: KnownAddition,
): Promise<Set<string> | null> {
  const before = await readRecordedPaths(cacheDir, known.since);
  if (!before) return null;
  let added: Awaited<KnownAddition['added']>;
  try {
    added = await known.added;
  } catch {
    return null;
  }
  // The same paths the full index gains from these lines (addLines decides what a line records).
  const byPath = new Map<string, IndexEntry[]>();
  for (const { annotated, lines } of added) addLines(byPath, annotated, lines);
  for (const p of byPath.keys()) before.add(p);
  try {
    await writeFileAtomic(path.join(cacheDir, pathsName(tip)), recordedPathsText([...before].sort()));
    // Kept: this tip's and the one it grew from (the ledger stays there if the push that read it is refused).
    for (const n of await readdir(cacheDir)) {
      if (PATHS_FILE.test(n) && n !== pathsName(tip) && n !== pathsName(known.since))
        await rm(path.join(cacheDir, n), { force: true });
    }
  } catch {
    // A read-only git dir still gets the answer.
  }
  return before;
}

function cacheName(tip: string): string {
  return `path-index-${tip}.json`;
}

async function readCache(file: string): Promise<PathIndex | null> {
  try {
    return PathIndex.fromJSON(JSON.parse(await readFile(file, 'utf8')));
  } catch {
    return null;
  }
}

/** An index extended from the cache of an earlier tip, and that tip. */
interface Extended {
  index: PathIndex;
  from: string;
}

/**
 * The cache of `known.since` when there is one (the tip the caller read the addition from, e.g. the ledger a server
 * holds while a push is judged), else the newest cache, extended to `tip`.
 */
async function extendLatestCache(
  ledger: NotesLedger,
  tip: string,
  cacheDir: string,
  known: KnownAddition | undefined,
): Promise<Extended | null> {
  let names: string[];
  try {
    names = (await readdir(cacheDir)).filter((n) => CACHE_FILE.test(n));
  } catch {
    return null;
  }
  let chosen: string | undefined;
  if (known && names.includes(cacheName(known.since))) chosen = cacheName(known.since);
  else {
    const dated = await Promise.all(
      names.map(async (n) => ({
        n,
        at: await stat(path.join(cacheDir, n)).then(
          (s) => s.mtimeMs,
          () => 0,
        ),
      })),
    );
    chosen = dated.sort((a, b) => b.at - a.at)[0]?.n;
  }
  if (!chosen) return null;
  const cached = await readCache(path.join(cacheDir, chosen));
  if (!cached) return null;
  const older = CACHE_FILE.exec(chosen)![1]!;
  try {
    const added = older === known?.since ? await known.added : await ledger.addedLines(older, tip);
    for (const { annotated, lines } of added) addLines(cached.entries, annotated, lines);
    return { index: cached, from: older };
  } catch {
    return null; // the cached tip is gone (gc after a rewrite): rebuild from scratch
  }
}

/** Saves an index (the gates build one when they need it; verify, while it reads the whole ledger anyway). */
export async function writeCache(
  cacheDir: string,
  tip: string,
  index: PathIndex,
  alsoKeep?: string,
): Promise<void> {
  try {
    await mkdir(cacheDir, { recursive: true });
    await writeFileAtomic(path.join(cacheDir, cacheName(tip)), index.serialized());
    await writeFileAtomic(path.join(cacheDir, pathsName(tip)), recordedPathsText(index.paths()));
    // Keep the newest only (and `alsoKeep`'s): the next tip extends it.
    const kept = new Set([cacheName(tip), pathsName(tip)]);
    if (alsoKeep !== undefined) kept.add(cacheName(alsoKeep)).add(pathsName(alsoKeep));
    for (const n of await readdir(cacheDir)) {
      if ((CACHE_FILE.test(n) || PATHS_FILE.test(n)) && !kept.has(n))
        await rm(path.join(cacheDir, n), { force: true });
    }
  } catch {
    // A read-only git dir (a server, a CI cache) still gets a correct answer, only slower.
  }
}
