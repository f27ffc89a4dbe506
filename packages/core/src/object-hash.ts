/**
 * SHA-1 and SHA-256 for the quick pre-commit answer, which hashes about a kilobyte in all (a loose commit, the trees
 * a change invalidated, a cache key). In JavaScript, because loading node:crypto costs 2-4 ms of a run that takes
 * 10-30 ms beyond starting Node. Past a budget (a first commit after a clone can hash hundreds of kilobytes of
 * trees, where JavaScript in a process V8 has not warmed up is ten times slower) node:crypto takes over, loaded
 * synchronously where Node offers that (20.16 and later).
 */
import { sha1 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';

export type HashAlgorithm = 'sha1' | 'sha256';

/** Bytes hashed in JavaScript before node:crypto is loaded for the rest of the run. */
const JS_BUDGET = 32 * 1024;
let hashedInJs = 0;
let native: typeof import('node:crypto') | null | undefined;

/** The digest of `data` (a string is taken as latin1: one character per byte, as git objects are built here). */
export function digestOf(algorithm: HashAlgorithm, data: Uint8Array | string): Uint8Array {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
  const crypto = nativeCrypto(bytes.byteLength);
  if (crypto) return crypto.createHash(algorithm).update(bytes).digest();
  return algorithm === 'sha1' ? sha1(bytes) : sha256(bytes);
}

export function hexDigestOf(algorithm: HashAlgorithm, data: Uint8Array | string): string {
  return Buffer.from(digestOf(algorithm, data)).toString('hex');
}

function nativeCrypto(bytes: number): typeof import('node:crypto') | null {
  if (native !== undefined) return native;
  hashedInJs += bytes;
  if (hashedInJs <= JS_BUDGET) return null;
  native = (process.getBuiltinModule?.('node:crypto') as typeof import('node:crypto') | undefined) ?? null;
  return native;
}
