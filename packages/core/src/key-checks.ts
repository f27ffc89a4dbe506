/**
 * The public keys found sound, remembered between runs. Checking a key (canonical, not small-order, torsion-free)
 * costs decoding its point and two scalar multiplications, about 0.5 ms per key, and every run that loads a trust
 * root meets the same keys again. The answer depends only on the key's 32 bytes, so the keys that passed are kept in the
 * repository's cache directory (docs/threat-model.md, "Local caches"), one lowercase hex key per line. A key that
 * failed is never remembered: it is checked, and refused, every time.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { replaceCacheFile } from './cache-file.js';
import { soundKeys, trustKeyChecks } from './ed25519.js';

const FILE = 'sound-keys-1';
/** A trust root has a handful of keys, rarely thousands; the file keeps the newest this many (65 bytes each). */
const MAX_KEYS = 20_000;

/** Takes the keys an earlier run found sound as checked; returns how many there were. */
export function recallKeyChecks(cacheDir: string): number {
  let text: string;
  try {
    text = readFileSync(path.join(cacheDir, FILE), 'utf8');
  } catch {
    return 0;
  }
  const keys = text.split('\n').filter((line) => line !== '');
  trustKeyChecks(keys);
  return keys.length;
}

/** Adds the keys this run found sound to the file, when there are new ones. */
export async function keepKeyChecks(cacheDir: string, recalled: number): Promise<void> {
  const keys = soundKeys();
  if (keys.length === recalled) return;
  await replaceCacheFile(path.join(cacheDir, FILE), `${keys.slice(-MAX_KEYS).join('\n')}\n`);
}
