/**
 * Which paths the ledger has ever spoken about, and what it said. A path with any record is governed from then on
 * (DESIGN 4.1). Built from the decoded records (signatures are not needed to govern: a forged line can only add
 * restrictions), and cached per notes commit in the git dir, because the gate runs on every commit.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { NotesLedger } from './notes-ledger.js';
import type { EarlierRecord } from './promotion.js';
import { decodeRecord } from './record.js';
import type { TrustRoot } from './trust-root.js';

/** One record about a path: kind, verdict or decision, signer keyid, and the blob it sits on. */
type IndexEntry = [kind: 'v' | 'r', outcome: string, keyid: string, blob: string];

const CACHE_VERSION = 1;

export class PathIndex {
  constructor(private readonly byPath: Map<string, IndexEntry[]>) {}

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

  /** What was recorded on this path for content other than `blob`, newest-insertion first. */
  earlier(path: string, blob: string, trustRoot: TrustRoot): EarlierRecord[] {
    return (this.byPath.get(path) ?? [])
      .filter((e) => e[3] !== blob)
      .map(([kind, outcome, keyid]) => {
        const signer = trustRoot.byKeyid(keyid)?.name;
        return kind === 'v'
          ? { kind: 'verdict', verdict: outcome as EarlierRecord['verdict'], signer }
          : { kind: 'review', decision: outcome as EarlierRecord['decision'], signer };
      });
  }

  /** Blobs other than `blob` that records on this path sit on, most recently indexed first. */
  earlierBlobs(path: string, blob: string): string[] {
    return (this.byPath.get(path) ?? []).map((e) => e[3]).filter((b) => b !== blob).reverse();
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
    const decoded = decodeRecord(line);
    if (!decoded.ok) continue;
    const r = decoded.record;
    const entry: IndexEntry = [
      r.kind === 'verdict' ? 'v' : 'r',
      r.kind === 'verdict' ? r.verdict : r.decision,
      r.envelope.signatures[0]?.keyid ?? '',
      blob,
    ];
    for (const s of r.subjects) {
      const list = byPath.get(s.path);
      if (list) list.push(entry);
      else byPath.set(s.path, [entry]);
    }
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
 */
export async function loadPathIndex(ledger: NotesLedger, tip: string | null, cacheDir: string | null): Promise<PathIndex> {
  if (tip === null) return PathIndex.empty();
  const file = cacheDir ? path.join(cacheDir, `path-index-${tip}.json`) : null;
  if (file) {
    try {
      const cached = PathIndex.fromJSON(JSON.parse(await readFile(file, 'utf8')));
      if (cached) return cached;
    } catch {
      // No cache yet (or unreadable): rebuild below.
    }
  }
  const index = await buildPathIndex(ledger, tip);
  if (file && cacheDir) {
    try {
      await mkdir(cacheDir, { recursive: true });
      const tmp = `${file}.${process.pid}.tmp`;
      await writeFile(tmp, JSON.stringify(index));
      await rename(tmp, file);
    } catch {
      // A read-only git dir (a server, a CI cache) still gets a correct answer, only slower.
    }
  }
  return index;
}
