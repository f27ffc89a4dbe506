/**
 * Signatures whose R is the identity point (r = 0, so S = k·a mod L): valid under DESIGN 3.4's strict rule (R is a
 * canonical encoding and the cofactorless equation holds), and only the key's owner can make one, but libsodium refuses
 * every small-order R. They take the path where libsodium says no and node:crypto decides (ed25519.ts, 'libsodium').
 */
import { createHash } from 'node:crypto';
import type { SigningKey } from '../../packages/core/src/signing-key.js';

const L = 2n ** 252n + 27742317777372353535851937790883648493n;
const IDENTITY = Uint8Array.from([1, ...new Array(31).fill(0)]);

const littleEndian = (bytes: Uint8Array): bigint =>
  BigInt(`0x${Buffer.from(bytes).reverse().toString('hex') || '0'}`);
const littleEndian32 = (n: bigint): Uint8Array =>
  Uint8Array.from(Buffer.from(n.toString(16).padStart(64, '0'), 'hex').reverse());

/** The identity-R signature of `message` by the key with this 32-byte seed and this public key. */
export function identityRSignature(seed: Uint8Array, publicKey: Uint8Array, message: Uint8Array): Uint8Array {
  // The secret scalar a: the first half of SHA-512(seed), clamped (RFC 8032 §5.1.5).
  const a = createHash('sha512').update(seed).digest().subarray(0, 32);
  a[0]! &= 248;
  a[31] = (a[31]! & 127) | 64;
  const scalar = littleEndian(a);
  const k =
    littleEndian(createHash('sha512').update(IDENTITY).update(publicKey).update(message).digest()) % L;
  return Uint8Array.from([...IDENTITY, ...littleEndian32((k * scalar) % L)]);
}

/** `key`, signing every message with an identity R (its seed read back from its PKCS#8 PEM: the last 32 bytes). */
export function identityRSigningKey(key: SigningKey): SigningKey {
  const der = Buffer.from(key.toPem().replace(/-----[^-]+-----|\s/g, ''), 'base64');
  const seed = new Uint8Array(der.subarray(der.length - 32));
  return {
    publicKey: key.publicKey,
    toPem: () => key.toPem(),
    sign: (message) => identityRSignature(seed, key.publicKey.raw, message),
  };
}
