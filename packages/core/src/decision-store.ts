/**
 * The decision cache's files on disk (docs/formats.md), readable without the rest of the gate: the pre-commit
 * hook's quick path answers, from these alone, a commit whose every governed file was already decided as promoted.
 *
 * A decisions file is named by a digest of the governance that judged it, which takes the policy and every key
 * file to compute. The quick path has read neither, so the full check also records which committed objects (the
 * policy blob and the keys directory's tree) it computed that digest from, when the staged governance is exactly
 * the committed one. Both are git object ids: the same ids are the same bytes.
 */
import { readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

export const STORE_VERSION = 2;
export const DECISIONS_FILE = /^decisions-([0-9a-f]{16})-([0-9a-f]{40,64}|none)\.json$/;

/** "<sha256>\t<1|0>\t<reason>\t<signers>", the last two as indexes into the file's table of texts. */
export type Entry = string;

export interface Stored {
  version: number;
  texts: string[];
  /** Keyed "<blob>\0<path>"; JSON keeps insertion order, oldest first. */
  entries: Record<string, Entry>;
}

export function decisionsFile(cacheDir: string, digest: string, tip: string | null): string {
  return path.join(cacheDir, `decisions-${digest}-${tip ?? 'none'}.json`);
}

export function entryKey(filePath: string, blob: string): string {
  return `${blob}\0${filePath}`;
}

export function isPromotion(entry: Entry): boolean {
  return entry.split('\t', 2)[1] === '1';
}

/** Read synchronously: the quick path has nothing else to do meanwhile, and a thread-pool round trip costs more. */
export function readStore(file: string): Stored | null {
  try {
    const data = JSON.parse(readFileSync(file, 'utf8')) as Partial<Stored>;
    const ok =
      data.version === STORE_VERSION &&
      Array.isArray(data.texts) &&
      typeof data.entries === 'object' &&
      data.entries !== null &&
      !Array.isArray(data.entries);
    return ok ? (data as Stored) : null;
  } catch {
    return null;
  }
}

/** The committed governance as git objects: the policy blob and the keys directory's tree (null: no such tree). */
export interface GovernanceObjects {
  policyBlob: string;
  keysTree: string | null;
}

function aliasFile(cacheDir: string, g: GovernanceObjects): string {
  return path.join(cacheDir, `governance-${STORE_VERSION}-${g.policyBlob}-${g.keysTree ?? 'none'}.json`);
}

/** Called by the full check with the digest it computed from exactly these objects. */
export async function rememberGovernanceDigest(
  cacheDir: string,
  g: GovernanceObjects,
  digest: string,
): Promise<void> {
  try {
    const file = aliasFile(cacheDir, g);
    const tmp = `${file}.${process.pid}.tmp`;
    await mkdir(cacheDir, { recursive: true });
    await writeFile(tmp, JSON.stringify({ digest }));
    await rename(tmp, file);
  } catch {
    // No cache (a read-only git dir): the full check answers every time.
  }
}

export function governanceDigestOf(cacheDir: string, g: GovernanceObjects): string | null {
  try {
    const { digest } = JSON.parse(readFileSync(aliasFile(cacheDir, g), 'utf8')) as { digest?: unknown };
    return typeof digest === 'string' && /^[0-9a-f]{16}$/.test(digest) ? digest : null;
  } catch {
    return null;
  }
}
