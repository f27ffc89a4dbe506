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
import path from 'node:path';
import { replaceCacheFile } from './cache-file.js';

/** 5: what verified-cache.ts's version 6 changed (times in every UTC form, a review's reviewer). */
export const STORE_VERSION = 5;
/** Also matches the JSON files of version 2, so they are cleaned away like any older tip's. */
export const DECISIONS_FILE = /^decisions-([0-9a-f]{16})-([0-9a-f]{40,64}|none)(?:\.json)?$/;

/** One decision; the reason and the signers (a JSON list) are indexes into the file's table of texts. */
export interface Entry {
  sha256: string;
  promoted: boolean;
  reason: number;
  by: number;
}

export interface Stored {
  texts: string[];
  /** Keyed "<blob>\0<path>", oldest first (the order the newest survive a bound in). */
  entries: Map<string, Entry>;
}

/**
 * On disk: a header, the texts as one JSON array, then six fields per entry (blob, path, sha256, 1 or 0, reason,
 * signers), every field ended by NUL. A git path never holds a NUL, and the texts are JSON, so none can be mistaken
 * for a separator; and splitting on NUL reads the file several times faster than JSON.parse of the same entries.
 */
const HEADER = `delegate-git decisions ${STORE_VERSION}`;
const FIELDS = 6;

export function decisionsFile(cacheDir: string, digest: string, tip: string | null): string {
  return path.join(cacheDir, `decisions-${digest}-${tip ?? 'none'}`);
}

export function entryKey(filePath: string, blob: string): string {
  return `${blob}\0${filePath}`;
}

export function storeText(stored: Stored): string {
  const parts = [HEADER, JSON.stringify(stored.texts)];
  for (const [key, e] of stored.entries) {
    parts.push(key, e.sha256, e.promoted ? '1' : '0', String(e.reason), String(e.by));
  }
  parts.push('');
  return parts.join('\0');
}

/**
 * The file's fields, or null when it is missing or not a whole file of this version. Read synchronously: the quick
 * path has nothing else to do meanwhile, and a thread-pool round trip costs more.
 */
function fieldsOf(file: string): string[] | null {
  try {
    const fields = readFileSync(file, 'utf8').split('\0');
    const whole = fields[0] === HEADER && (fields.length - 3) % FIELDS === 0 && fields.at(-1) === '';
    return whole ? fields : null;
  } catch {
    return null;
  }
}

export function readStore(file: string): Stored | null {
  const fields = fieldsOf(file);
  if (fields === null) return null;
  try {
    const texts = JSON.parse(fields[1]!) as unknown;
    if (!Array.isArray(texts) || !texts.every((t) => typeof t === 'string')) return null;
    const entries = new Map<string, Entry>();
    const isText = (n: number) => Number.isInteger(n) && n >= 0 && n < texts.length;
    for (let i = 2; i < fields.length - 1; i += FIELDS) {
      const reason = Number(fields[i + 4]);
      const by = Number(fields[i + 5]);
      if (!isText(reason) || !isText(by)) return null;
      entries.set(`${fields[i]}\0${fields[i + 1]}`, {
        sha256: fields[i + 2]!,
        promoted: fields[i + 3] === '1',
        reason,
        by,
      });
    }
    return { texts, entries };
  } catch {
    return null;
  }
}

/**
 * Only the promotions of a decisions file, by blob (each with the paths it was promoted at): what the pre-commit
 * quick path asks for every staged file, read without building an entry, or a key, per decision.
 */
export function promotionsByBlob(file: string): Map<string, string | string[]> | null {
  const fields = fieldsOf(file);
  if (fields === null) return null;
  const byBlob = new Map<string, string | string[]>();
  for (let i = 2; i < fields.length - 1; i += FIELDS) {
    if (fields[i + 3] !== '1') continue;
    const blob = fields[i]!;
    const at = byBlob.get(blob);
    const filePath = fields[i + 1]!;
    byBlob.set(blob, at === undefined ? filePath : [...(typeof at === 'string' ? [at] : at), filePath]);
  }
  return byBlob;
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
  // Unwritten (a read-only git dir): the full check answers every time.
  await replaceCacheFile(aliasFile(cacheDir, g), JSON.stringify({ digest }));
}

export function governanceDigestOf(cacheDir: string, g: GovernanceObjects): string | null {
  try {
    const { digest } = JSON.parse(readFileSync(aliasFile(cacheDir, g), 'utf8')) as { digest?: unknown };
    return typeof digest === 'string' && /^[0-9a-f]{16}$/.test(digest) ? digest : null;
  } catch {
    return null;
  }
}
