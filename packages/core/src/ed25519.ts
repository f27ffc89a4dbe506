/**
 * Ed25519 public keys and the one strict verification rule of DESIGN 3.4, with two back-ends that must agree.
 *
 * Ed25519 verifiers differ in the edge cases (eprint 2020/1244, "Taming the many EdDSAs"): whether S >= L, a
 * non-canonical R or A, a small-order or mixed-order A, and the cofactored vs. cofactorless equation are
 * accepted. If two verifiers of the ledger gave different answers for the same bytes, one could accept a record
 * the other refuses. So the rule is fixed here, and both back-ends are brought to it:
 * - the key: 32 bytes, canonical (y < p, not x = 0 with the sign bit set), a curve point, not small-order and
 *   torsion-free. Checked once, when a PublicKey is built; a key that fails is refused, never used.
 * - the signature: 64 bytes, S < L, R canonical, and the cofactorless equation [S]B = R + [k]A (what OpenSSL,
 *   and so node:crypto, computes).
 *
 * 'node' (node:crypto, about 20x faster) is the default. 'noble' (@noble/ed25519 in its RFC 8032 mode) is the
 * reference. Noble checks the cofactored equation, which also accepts an R = R0 + T with T a small-order point;
 * only the key's owner can make such a signature, but node:crypto refuses it. With a torsion-free A, the two
 * equations agree exactly when R is torsion-free as well, so the noble path adds that check.
 *
 * 'libsodium' is node:crypto's answer, reached sooner (libsodium.ts): libsodium computes the same cofactorless
 * equation on the same bytes after checks of its own that refuse more (a small-order R, which the strict rule
 * allows), never less, once the key is sound and S and R are checked here. So its "valid" is taken, and whatever it
 * refuses is asked of node:crypto. Without libsodium it is 'node'.
 */
import { createHash, createPublicKey, type KeyObject, verify as nodeVerify } from 'node:crypto';
import * as ed from '@noble/ed25519';
import { sha512 } from '@noble/hashes/sha2.js';
import { DelegateGitError } from './errors.js';
import { libsodiumVerify } from './libsodium.js';
import { isTorsionFree } from './prime-order.js';

// @noble/ed25519 needs a synchronous SHA-512 for its sync API (its README: set `hashes.sha512`).
ed.hashes.sha512 = sha512;

export type Ed25519Backend = 'node' | 'noble' | 'libsodium';

export type KeyProblem = 'wrong length' | 'not canonical' | 'small order' | 'mixed order (torsion component)';

/** What is wrong with a signature's encoding, before any curve arithmetic. */
export type SignatureProblem = 'wrong length' | 'S >= L' | 'R not canonical';

const KEY_LENGTH = 32;
const SIGNATURE_LENGTH = 64;
/** The field prime p = 2^255 - 19. */
const P = 2n ** 255n - 19n;
/** The order L of the prime-order subgroup (RFC 8032 §5.1). */
const L = 2n ** 252n + 27742317777372353535851937790883648493n;
/** DER SubjectPublicKeyInfo header for an Ed25519 key (RFC 8410); the 32 raw bytes follow. */
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** A number below 2^256 as the 32 little-endian bytes Ed25519 encodes it in. */
function littleEndian32(n: bigint): Uint8Array {
  return Uint8Array.from(Buffer.from(n.toString(16).padStart(64, '0'), 'hex').reverse());
}

const P_BYTES = littleEndian32(P);
const P_MINUS_1_BYTES = littleEndian32(P - 1n);
const ONE_BYTES = littleEndian32(1n);
const L_BYTES = littleEndian32(L);

/**
 * Compares two 32-byte little-endian numbers, the top byte first; `topMask` clears bits of `a`'s top byte (the sign
 * bit of a point encoding). Byte arithmetic, not BigInt: it runs for every signature `verify` checks.
 */
function compareLittleEndian(a: Uint8Array, b: Uint8Array, topMask = 0xff): number {
  for (let i = 31; i >= 0; i--) {
    const x = i === 31 ? a[i]! & topMask : a[i]!;
    if (x !== b[i]) return x - b[i]!;
  }
  return 0;
}

/**
 * Whether 32 bytes are the one encoding RFC 8032 §5.1.2 gives a point: y < p, and not "x = 0 with the sign bit
 * set" (x = 0 exactly when y = ±1). Pure byte arithmetic: whether y is on the curve is left to decoding.
 */
function isCanonicalPointEncoding(bytes: Uint8Array): boolean {
  if (compareLittleEndian(bytes, P_BYTES, 0x7f) >= 0) return false;
  const signBit = (bytes[31]! & 0x80) !== 0;
  return !(
    signBit &&
    (compareLittleEndian(bytes, ONE_BYTES, 0x7f) === 0 ||
      compareLittleEndian(bytes, P_MINUS_1_BYTES, 0x7f) === 0)
  );
}

/** DESIGN 3.4: the key must be 32 bytes, a canonical encoding (y < p, no x=0 with sign bit set), not small-order, torsion-free. */
export function publicKeyProblem(raw: Uint8Array): KeyProblem | null {
  if (!(raw instanceof Uint8Array) || raw.length !== KEY_LENGTH) return 'wrong length';
  // The torsion check is a scalar multiplication (prime-order.ts); a run meets the same key several times (the trust
  // root read twice, the operator's own signing key), and the answer depends on its bytes.
  const hex = Buffer.from(raw).toString('hex');
  let problem = checkedKeys.get(hex);
  if (problem === undefined) {
    problem = pointProblem(raw);
    checkedKeys.set(hex, problem);
  }
  return problem;
}

const checkedKeys = new Map<string, KeyProblem | null>();

/** Keys (lowercase hex) an earlier run found sound, taken as checked (key-checks.ts keeps them between runs). */
export function trustKeyChecks(hexKeys: Iterable<string>): void {
  for (const hex of hexKeys)
    if (/^[0-9a-f]{64}$/.test(hex) && !checkedKeys.has(hex)) checkedKeys.set(hex, null);
}

/** The keys (lowercase hex) found sound in this process, by a check or by trustKeyChecks. */
export function soundKeys(): string[] {
  return [...checkedKeys].filter(([, problem]) => problem === null).map(([hex]) => hex);
}

function pointProblem(raw: Uint8Array): KeyProblem | null {
  if (!isCanonicalPointEncoding(raw)) return 'not canonical';
  let point: ed.Point;
  try {
    point = ed.Point.fromBytes(raw, false);
  } catch {
    // Canonical-looking bytes whose y has no matching x: no point has this encoding, so it is not a canonical
    // encoding of one either.
    return 'not canonical';
  }
  if (point.isSmallOrder()) return 'small order';
  if (!isTorsionFree(point)) return 'mixed order (torsion component)';
  return null;
}

/** Checks on a signature's bytes that both back-ends must apply identically before the equation. */
export function signatureProblem(signature: Uint8Array): SignatureProblem | null {
  if (!(signature instanceof Uint8Array) || signature.length !== SIGNATURE_LENGTH) return 'wrong length';
  if (compareLittleEndian(signature.subarray(32, 64), L_BYTES) >= 0) return 'S >= L';
  if (!isCanonicalPointEncoding(signature.subarray(0, 32))) return 'R not canonical';
  return null;
}

const KEY_PROBLEM_EXPLANATION: Record<KeyProblem, string> = {
  'wrong length': 'the wrong length (an Ed25519 public key is exactly 32 bytes)',
  'not canonical': 'not canonical (not the one valid RFC 8032 encoding of a curve point)',
  'small order': 'small order (a degenerate key that signatures can match without any private key)',
  'mixed order (torsion component)':
    'mixed order (torsion component): it is not a key an Ed25519 implementation generates, and verifiers disagree on it',
};

function refuseKey(problem: KeyProblem, got: string): never {
  throw new DelegateGitError(
    'TRUST_ROOT',
    `the public key is ${KEY_PROBLEM_EXPLANATION[problem]}${got}. Such a key is refused, not ignored: replace it with ` +
      'the standard base64 of the 32-byte Ed25519 public key (as `delegate-git keygen` prints it), or remove it.',
  );
}

/** What both ways of verifying refuse before OpenSSL sees the bytes (the strict rule's byte checks on S and R). */
function wellFormed(message: Uint8Array, signature: Uint8Array): boolean {
  return message instanceof Uint8Array && signatureProblem(signature) === null;
}

/** A validated public key. Constructing one refuses a key with a problem. */
export class PublicKey {
  readonly #raw: Uint8Array;
  readonly base64: string;
  readonly keyid: string;
  // Built on first node:crypto use and kept: creating a KeyObject per call halves verify speed (DESIGN 6).
  #keyObject: KeyObject | undefined;

  private constructor(raw: Uint8Array) {
    this.#raw = raw;
    this.base64 = Buffer.from(raw).toString('base64');
    this.keyid = createHash('sha256').update(raw).digest('hex');
  }

  static fromRaw(raw: Uint8Array): PublicKey {
    const problem = publicKeyProblem(raw);
    if (problem !== null) {
      const got = raw instanceof Uint8Array && problem === 'wrong length' ? ` (got ${raw.length} bytes)` : '';
      refuseKey(problem, got);
    }
    // A private copy: a caller changing its array later must not change the trusted key.
    return new PublicKey(Uint8Array.from(raw));
  }

  /** Standard base64 of the 32 raw bytes; strict: refuses anything that does not round-trip. */
  static fromBase64(b64: string): PublicKey {
    const raw = typeof b64 === 'string' ? Buffer.from(b64, 'base64') : Buffer.alloc(0);
    if (typeof b64 !== 'string' || raw.toString('base64') !== b64) {
      throw new DelegateGitError(
        'TRUST_ROOT',
        'the public key is not standard base64 (RFC 4648 §4, with padding, no spaces or line breaks) of 32 bytes. ' +
          'Copy the key exactly as `delegate-git keygen` prints it: 44 characters ending in "=".',
      );
    }
    return PublicKey.fromRaw(new Uint8Array(raw));
  }

  /** The 32 raw bytes (a copy). */
  get raw(): Uint8Array {
    return Uint8Array.from(this.#raw);
  }

  /**
   * Strict rule (same answer in both back-ends): signature is 64 bytes, S < L, R canonical; pure Ed25519
   * (RFC 8032), no prehash. Never throws: false on any malformed input. Default backend 'node'.
   */
  verify(message: Uint8Array, signature: Uint8Array, backend: Ed25519Backend = 'node'): boolean {
    if (!wellFormed(message, signature)) return false;
    try {
      if (backend === 'libsodium' && libsodiumVerify()?.(signature, message, this.#raw)) return true;
      if (backend === 'node' || backend === 'libsodium')
        return nodeVerify(null, message, this.#nodeKey(), signature);
      if (backend === 'noble') return this.#verifyNoble(message, signature);
      return false;
    } catch {
      return false;
    }
  }

  /**
   * verify's answer (node:crypto), computed on libuv's thread pool: the caller's thread goes on decoding other records
   * meanwhile. The same rule and the same OpenSSL call as verify, so the two never disagree.
   */
  verifySoon(message: Uint8Array, signature: Uint8Array): Promise<boolean> {
    if (!wellFormed(message, signature)) return Promise.resolve(false);
    return new Promise((resolve) => {
      try {
        nodeVerify(null, message, this.#nodeKey(), signature, (error, valid) => resolve(!error && valid));
      } catch {
        resolve(false);
      }
    });
  }

  #nodeKey(): KeyObject {
    this.#keyObject ??= createPublicKey({
      key: Buffer.concat([SPKI_ED25519_PREFIX, this.#raw]),
      format: 'der',
      type: 'spki',
    });
    return this.#keyObject;
  }

  #verifyNoble(message: Uint8Array, signature: Uint8Array): boolean {
    if (!ed.verify(signature, message, this.#raw, { zip215: false })) return false;
    // Noble's equation is cofactored; requiring a torsion-free R makes it the cofactorless one (see top).
    return ed.Point.fromBytes(signature.subarray(0, 32), false).isTorsionFree();
  }
}

/**
 * Same checks for raw bytes without building a PublicKey (for running the vectors): returns {valid:false, reason}
 * when the key has a problem or the signature fails.
 */
export function verifyStrict(
  publicKey: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
  backend: Ed25519Backend,
): { valid: boolean; reason?: string } {
  const keyProblem = publicKeyProblem(publicKey);
  if (keyProblem !== null) return { valid: false, reason: `public key ${keyProblem}` };
  const sigProblem = signatureProblem(signature);
  if (sigProblem !== null) return { valid: false, reason: `signature ${sigProblem}` };
  if (!PublicKey.fromRaw(publicKey).verify(message, signature, backend)) {
    return { valid: false, reason: 'signature does not verify' };
  }
  return { valid: true };
}
