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

/**
 * 5: what verified-cache.ts's version 6 changed (times in every UTC form, a review's reviewer). 6: the promotions
 * file written beside each decisions file (a decisions file of 5 has none, and is not rewritten until it changes).
 */
export const STORE_VERSION = 6;
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
 * Beside each decisions file, its promotions alone, for the quick path: path and blob, NUL-ended, per promotion,
 * sorted by path, then blob. The hook asks in git's path order, which is this order but for names beyond ASCII, so
 * nearly every lookup is the entry after the last one found, with no table built for 10,000 staged files (building
 * one cost the hook more than reading the file).
 */
const PROMOTED_HEADER = `delegate-git promoted ${STORE_VERSION}`;
export const PROMOTED_FILE = /^promoted-([0-9a-f]{16})-([0-9a-f]{40,64}|none)$/;

export function promotedFile(cacheDir: string, digest: string, tip: string | null): string {
  return path.join(cacheDir, `promoted-${digest}-${tip ?? 'none'}`);
}

export function promotedText(stored: Stored): string {
  const pairs: Array<[string, string]> = [];
  for (const [key, e] of stored.entries) {
    const cut = key.indexOf('\0');
    if (e.promoted) pairs.push([key.slice(cut + 1), key.slice(0, cut)]);
  }
  pairs.sort(([p, b], [q, c]) => (p < q ? -1 : p > q ? 1 : b < c ? -1 : b > c ? 1 : 0));
  return [PROMOTED_HEADER, ...pairs.flat(), ''].join('\0');
}

/** Whether the full check decided this path as promoted with a blob `isBlob` says is the staged one (given in hex). */
export type PromotedTest = (filePath: string, isBlob: (hex: string) => boolean) => boolean;

/** The promotions file's test, or null when it is missing or not a whole file of this version. */
export function readPromotions(file: string): PromotedTest | null {
  let fields: string[];
  try {
    fields = readFileSync(file, 'utf8').split('\0');
  } catch {
    return null;
  }
  if (fields[0] !== PROMOTED_HEADER || fields.length % 2 !== 0 || fields.at(-1) !== '') return null;
  const count = (fields.length - 2) / 2;
  const pathAt = (i: number) => fields[1 + 2 * i]!;
  const firstAt = (p: string) => {
    let lo = 0;
    let hi = count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (pathAt(mid) < p) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  let next = 0;
  return (p, isBlob) => {
    let i = next < count && pathAt(next) === p ? next : firstAt(p);
    for (; i < count && pathAt(i) === p; i++) {
      if (!isBlob(fields[2 + 2 * i]!)) continue;
      for (next = i + 1; next < count && pathAt(next) === p; next++);
      return true;
    }
    return false;
  };
}

/**
 * The committed governance as git objects: the policy blob, the keys directory's tree (null: no such tree), and the
 * commit of origin's default branch whose revocations bind it (checks.ts, DEFAULT_BRANCH_REF; null: none).
 */
export interface GovernanceObjects {
  policyBlob: string;
  keysTree: string | null;
  defaultTip: string | null;
}

function aliasFile(cacheDir: string, g: GovernanceObjects): string {
  const name = `${g.policyBlob}-${g.keysTree ?? 'none'}-${g.defaultTip ?? 'none'}`;
  return path.join(cacheDir, `governance-${STORE_VERSION}-${name}.json`);
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
