/**
 * Which paths the ledger has ever spoken about, and what it said. A path with any record is governed from then on
 * (DESIGN 4.1). Built from the decoded records (signatures are not needed to govern: a forged line can only add
 * restrictions), and cached per notes commit in the git dir, because the gate runs on every commit.
 */
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { NotesLedger } from './notes-ledger.js';
import type { EarlierRecord } from './promotion.js';
import { REVIEW_PREDICATE, VERDICT_PREDICATE } from './statement.js';
import type { TrustRoot } from './trust-root.js';

/** One record about a path: kind, verdict or decision, signer keyid, the blob it judged, and when it was made. */
type IndexEntry = [kind: 'v' | 'r', outcome: string, keyid: string, blob: string, createdAt: number];

const CACHE_VERSION = 2;

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

  /** Other contents this path had records on, newest record first. */
  earlierBlobs(path: string, blob: string): string[] {
    return [...new Set(this.others(path, blob).map((e) => e[3]))];
  }

  private others(path: string, blob: string): IndexEntry[] {
    return (this.byPath.get(path) ?? []).filter((e) => e[3] !== blob).sort((a, b) => b[4] - a[4]);
  }

  toJSON(): unknown {
    return { version: CACHE_VERSION, paths: Object.fromEntries(this.byPath) };
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
    const entry: IndexEntry = [r.kind, r.outcome, r.keyid, blob, r.createdAt];
    // A record with several subjects sits on each subject's blob; index each path once, from its own blob.
    for (const s of r.subjects) {
      if (s.gitBlob !== blob) continue;
      const list = byPath.get(s.path);
      if (list) list.push(entry);
      else byPath.set(s.path, [entry]);
    }
  }
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
    const envelope = JSON.parse(line);
    const statement = JSON.parse(Buffer.from(String(envelope.payload), 'base64').toString('utf8'));
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
    const createdAt = Date.parse(String(p.createdAt));
    return {
      kind,
      outcome: String(kind === 'v' ? p.verdict : p.decision),
      keyid: String(envelope.signatures?.[0]?.keyid ?? ''),
      createdAt: Number.isNaN(createdAt) ? 0 : createdAt,
      subjects,
    };
  } catch {
    return null;
  }
}

export async function buildPathIndex(ledger: NotesLedger, at: string): Promise<PathIndex> {
  const byPath = new Map<string, IndexEntry[]>();
  for await (const { annotated, lines } of ledger.entries(at)) addLines(byPath, annotated, lines);
  return new PathIndex(byPath);
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
): Promise<PathIndex> {
  if (tip === null) return PathIndex.empty();
  if (cacheDir === null) return buildPathIndex(ledger, tip);
  const exact = await readCache(path.join(cacheDir, cacheName(tip)));
  if (exact) return exact;
  const index = (await extendLatestCache(ledger, tip, cacheDir)) ?? (await buildPathIndex(ledger, tip));
  await writeCache(cacheDir, tip, index);
  return index;
}

const CACHE_FILE = /^path-index-([0-9a-f]{40,64})\.json$/;
const PATHS_FILE = /^recorded-paths-([0-9a-f]{40,64})$/;

function pathsName(tip: string): string {
  return `recorded-paths-${tip}`;
}

async function writeAtomic(file: string, text: string): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, file);
}

/**
 * Just the set of paths the ledger ever recorded: all a commit that touches nothing governed needs. Kept in its own
 * small cache file, because parsing the full index (megabytes on a large ledger) would dominate such a commit.
 */
export async function loadRecordedPaths(
  ledger: NotesLedger,
  tip: string | null,
  cacheDir: string | null,
): Promise<Set<string>> {
  if (tip === null) return new Set();
  if (cacheDir !== null) {
    try {
      const text = await readFile(path.join(cacheDir, pathsName(tip)), 'utf8');
      return new Set(text === '' ? [] : text.split('\0'));
    } catch {
      // Not cached yet: the full index below writes it.
    }
  }
  return new Set((await loadPathIndex(ledger, tip, cacheDir)).paths());
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

async function extendLatestCache(
  ledger: NotesLedger,
  tip: string,
  cacheDir: string,
): Promise<PathIndex | null> {
  let names: string[];
  try {
    names = (await readdir(cacheDir)).filter((n) => CACHE_FILE.test(n));
  } catch {
    return null;
  }
  const dated = await Promise.all(
    names.map(async (n) => ({
      n,
      at: await stat(path.join(cacheDir, n)).then(
        (s) => s.mtimeMs,
        () => 0,
      ),
    })),
  );
  const latest = dated.sort((a, b) => b.at - a.at)[0];
  if (!latest) return null;
  const cached = await readCache(path.join(cacheDir, latest.n));
  if (!cached) return null;
  try {
    const older = CACHE_FILE.exec(latest.n)![1]!;
    for (const { annotated, lines } of await ledger.addedLines(older, tip))
      addLines(cached.entries, annotated, lines);
    return cached;
  } catch {
    return null; // the cached tip is gone (gc after a rewrite): rebuild from scratch
  }
}

/** Saves an index built elsewhere (verify builds one while it reads the whole ledger anyway). */
export async function writeCache(cacheDir: string, tip: string, index: PathIndex): Promise<void> {
  try {
    await mkdir(cacheDir, { recursive: true });
    await writeAtomic(path.join(cacheDir, cacheName(tip)), JSON.stringify(index));
    await writeAtomic(path.join(cacheDir, pathsName(tip)), index.paths().join('\0'));
    // Keep the newest only: the next tip extends it.
    for (const n of await readdir(cacheDir)) {
      const stale =
        (CACHE_FILE.test(n) && n !== cacheName(tip)) || (PATHS_FILE.test(n) && n !== pathsName(tip));
      if (stale) await rm(path.join(cacheDir, n), { force: true });
    }
  } catch {
    // A read-only git dir (a server, a CI cache) still gets a correct answer, only slower.
  }
}
