import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as ed from '@noble/ed25519';
import { describe, expect, it } from 'vitest';
import { identityRSignature } from '../../../test/support/identity-r.js';
import { vectorsDir } from '../../../test/support/paths.js';
import {
  type Ed25519Backend,
  PublicKey,
  publicKeyProblem,
  signatureProblem,
  verifyStrict,
} from '../src/ed25519.js';
import { DelegateGitError } from '../src/errors.js';
import { libsodiumVerify } from '../src/libsodium.js';
import { generateSigningKey, signingKeyFromSeed } from '../src/signing-key.js';
import { refusalWith } from './support.js';

const BACKENDS: readonly Ed25519Backend[] = ['node', 'noble', 'libsodium'];
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

const ed25519Vectors = path.join(vectorsDir, 'ed25519');
const readVectors = (file: string): unknown =>
  JSON.parse(fs.readFileSync(path.join(ed25519Vectors, file), 'utf8'));
const hex = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'hex'));
const toHex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
const leToBigInt = (bytes: Uint8Array): bigint =>
  BigInt('0x' + (toHex(Uint8Array.from(bytes).reverse()) || '0'));
const bigIntToLe32 = (value: bigint): Uint8Array => hex(value.toString(16).padStart(64, '0')).reverse();

interface Rfc8032Vector {
  secretKey: string;
  publicKey: string;
  message: string;
  signature: string;
}
interface WycheproofTest {
  tcId: number;
  comment: string;
  msg: string;
  sig: string;
  result: 'valid' | 'invalid';
}
interface WycheproofFile {
  numberOfTests: number;
  testGroups: { publicKey?: { pk: string }; key?: { pk: string }; tests: WycheproofTest[] }[];
}
interface SpeccheckCase {
  message: string;
  pub_key: string;
  signature: string;
}

describe('RFC 8032 §7.1 test vectors', () => {
  const { vectors } = readVectors('rfc8032.json') as { vectors: Rfc8032Vector[] };

  it('has the five published tests', () => {
    expect(vectors).toHaveLength(5);
  });

  it.each(vectors.map((v, i) => [i, v] as const))(
    'vector %i: key, signature and verification',
    async (_, v) => {
      const key = signingKeyFromSeed(hex(v.secretKey));
      expect(toHex(key.publicKey.raw)).toBe(v.publicKey);
      expect(toHex(key.sign(hex(v.message)))).toBe(v.signature);
      for (const backend of BACKENDS) {
        expect(verifyStrict(hex(v.publicKey), hex(v.message), hex(v.signature), backend)).toEqual({
          valid: true,
        });
        expect(key.publicKey.verify(hex(v.message), hex(v.signature), backend)).toBe(true);
      }
      expect(await key.publicKey.verifySoon(hex(v.message), hex(v.signature))).toBe(true);
    },
  );
});

describe('Wycheproof EdDSA vectors give the expected result in every back-end, and on the thread pool', () => {
  const files = [
    { file: 'wycheproof_eddsa.json', total: 151, valid: 88, invalid: 63 },
    { file: 'wycheproof_eddsa_legacy.json', total: 145, valid: 84, invalid: 61 },
  ];
  let runTotal = 0;

  it.each(files)(
    '$file: $total tests, $valid valid and $invalid invalid',
    async ({ file, total, valid, invalid }) => {
      const vectors = readVectors(file) as WycheproofFile;
      expect(vectors.numberOfTests).toBe(total);
      const counts = { valid: 0, invalid: 0 };
      const mismatches: string[] = [];
      const pooled: Promise<void>[] = [];
      for (const group of vectors.testGroups) {
        const pk = group.publicKey?.pk ?? group.key?.pk;
        expect(pk, 'every group names its public key').toBeTypeOf('string');
        for (const test of group.tests) {
          counts[test.result] += 1;
          for (const backend of BACKENDS) {
            const outcome = verifyStrict(hex(pk!), hex(test.msg), hex(test.sig), backend);
            if (outcome.valid !== (test.result === 'valid')) {
              mismatches.push(`tcId ${test.tcId} (${test.comment}) ${backend}: ${outcome.reason ?? 'valid'}`);
            }
          }
          // verifySoon (the server gate's) is reached only with a key that has no problem.
          if (publicKeyProblem(hex(pk!)) === null) {
            const soon = PublicKey.fromRaw(hex(pk!)).verifySoon(hex(test.msg), hex(test.sig));
            pooled.push(
              soon.then((v) => {
                if (v !== (test.result === 'valid')) mismatches.push(`tcId ${test.tcId} verifySoon: ${v}`);
              }),
            );
          }
        }
      }
      await Promise.all(pooled);
      expect(pooled.length).toBeGreaterThan(total / 2);
      expect(mismatches).toEqual([]);
      expect(counts).toEqual({ valid, invalid });
      runTotal += counts.valid + counts.invalid;
    },
  );

  it('ran 296 Wycheproof cases in all', () => {
    expect(runTotal).toBe(296);
  });
});

describe('ed25519-speccheck edge cases: all rejected, for the stated reason, in every back-end and on the thread pool', () => {
  const cases = readVectors('speccheck_cases.json') as SpeccheckCase[];
  const expectedReason = [
    'public key small order',
    'public key small order',
    'public key mixed order (torsion component)',
    'public key mixed order (torsion component)',
    'public key mixed order (torsion component)',
    'public key mixed order (torsion component)',
    'signature S >= L',
    'signature S >= L',
    'public key mixed order (torsion component)',
    'public key mixed order (torsion component)',
    'public key not canonical',
    'public key not canonical',
  ];

  it('has 12 cases', () => {
    expect(cases).toHaveLength(12);
  });

  it.each(cases.map((c, i) => [i, expectedReason[i]!, c] as const))('case %i: %s', async (_, reason, c) => {
    for (const backend of BACKENDS) {
      expect(verifyStrict(hex(c.pub_key), hex(c.message), hex(c.signature), backend)).toEqual({
        valid: false,
        reason,
      });
    }
    // verifySoon is reached only with a key that has no problem (cases 6 and 7: S >= L).
    if (publicKeyProblem(hex(c.pub_key)) === null)
      expect(await PublicKey.fromRaw(hex(c.pub_key)).verifySoon(hex(c.message), hex(c.signature))).toBe(
        false,
      );
  });

  it('a key with a problem is refused when a PublicKey is built, with TRUST_ROOT', () => {
    const problems = cases.map((c) => publicKeyProblem(hex(c.pub_key)));
    expect(problems[0]).toBe('small order');
    for (const [i, c] of cases.entries()) {
      if (problems[i] === null) {
        expect(() => PublicKey.fromRaw(hex(c.pub_key))).not.toThrow(); // control: cases 6 and 7 have good keys
        continue;
      }
      const attempt = (): PublicKey => PublicKey.fromRaw(hex(c.pub_key));
      expect(attempt).toThrow(DelegateGitError);
      expect(attempt).toThrow(`the public key is ${problems[i]}`);
    }
    expect(problems.filter((p) => p === null)).toHaveLength(2);
  });
});

describe('signature malleability and tampering', () => {
  const key = generateSigningKey();
  const message = new TextEncoder().encode('delegate-git record');
  const signature = key.sign(message);

  it('accepts the unmodified signature (control)', () => {
    for (const backend of BACKENDS) expect(key.publicKey.verify(message, signature, backend)).toBe(true);
  });

  it('rejects S + L (the same point equation, a second encoding)', () => {
    const s = leToBigInt(signature.subarray(32));
    const malleated = Uint8Array.from([...signature.subarray(0, 32), ...bigIntToLe32(s + L)]);
    expect(toHex(malleated)).not.toBe(toHex(signature));
    for (const backend of BACKENDS) {
      expect(key.publicKey.verify(message, malleated, backend)).toBe(false);
      expect(verifyStrict(key.publicKey.raw, message, malleated, backend)).toEqual({
        valid: false,
        reason: 'signature S >= L',
      });
    }
  });

  it('rejects a flipped bit in R, in S, or in the message', () => {
    const flipped = (bytes: Uint8Array, index: number): Uint8Array => {
      const copy = Uint8Array.from(bytes);
      copy[index]! ^= 0x01;
      return copy;
    };
    for (const backend of BACKENDS) {
      expect(key.publicKey.verify(message, flipped(signature, 5), backend)).toBe(false);
      expect(key.publicKey.verify(message, flipped(signature, 40), backend)).toBe(false);
      expect(key.publicKey.verify(flipped(message, 0), signature, backend)).toBe(false);
    }
  });

  it('rejects an R with a small-order component, which the cofactored equation alone would accept', async () => {
    // Only the key's owner can make this: R = [r]B + T with T of order 2, and S computed over that R.
    const seed = hex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60');
    const owner = signingKeyFromSeed(seed);
    const { scalar, pointBytes } = ed.utils.getExtendedPublicKey(seed);
    const orderTwo = ed.Point.fromHex('ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f');
    const r = 1234567890123456789n;
    const signWithR = (R: ed.Point): Uint8Array => {
      const rBytes = R.toBytes();
      const digest = createHash('sha512').update(rBytes).update(pointBytes).update(message).digest();
      const k = leToBigInt(digest) % L;
      return Uint8Array.from([...rBytes, ...bigIntToLe32((r + k * scalar) % L)]);
    };
    const honest = signWithR(ed.Point.BASE.multiply(r));
    const withTorsion = signWithR(ed.Point.BASE.multiply(r).add(orderTwo));

    expect(signatureProblem(withTorsion)).toBeNull(); // well-formed bytes: only the equation can tell
    // Noble's own strict verify (cofactored) accepts it: this is the disagreement the rule removes.
    expect(ed.verify(withTorsion, message, pointBytes, { zip215: false })).toBe(true);
    for (const backend of BACKENDS) {
      expect(owner.publicKey.verify(message, honest, backend)).toBe(true); // control
      expect(owner.publicKey.verify(message, withTorsion, backend)).toBe(false);
    }
    expect(await owner.publicKey.verifySoon(message, honest)).toBe(true);
    expect(await owner.publicKey.verifySoon(message, withTorsion)).toBe(false);
  });
});

describe('PublicKey', () => {
  const key = generateSigningKey().publicKey;

  it('round-trips through base64 and gives the SHA-256 key id', () => {
    const again = PublicKey.fromBase64(key.base64);
    expect(again.raw).toEqual(key.raw);
    expect(key.base64).toHaveLength(44);
    expect(key.keyid).toBe(createHash('sha256').update(key.raw).digest('hex'));
    expect(key.keyid).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses base64 that does not round-trip', () => {
    const b64 = key.base64;
    const lastDataChar = b64[42]!;
    // The last character before "=" carries 2 unused low bits; changing them decodes to the same bytes.
    const sameBytes = b64.slice(0, 42) + String.fromCharCode(lastDataChar.charCodeAt(0) ^ 1) + '=';
    const variants = [b64.slice(0, 43), ` ${b64}`, `${b64}\n`, b64.replaceAll('+', '-').replaceAll('/', '_')];
    if (Buffer.from(sameBytes, 'base64').equals(Buffer.from(b64, 'base64'))) variants.push(sameBytes);
    for (const variant of variants.filter((v) => v !== b64)) {
      expect(() => PublicKey.fromBase64(variant), JSON.stringify(variant)).toThrow('not standard base64');
    }
    expect(() => PublicKey.fromBase64(Buffer.alloc(31, 7).toString('base64'))).toThrow(DelegateGitError);
    expect(PublicKey.fromBase64(b64).base64).toBe(b64); // control
  });

  it('refuses a key of the wrong length with TRUST_ROOT', () => {
    expect(publicKeyProblem(new Uint8Array(31))).toBe('wrong length');
    expect(publicKeyProblem(new Uint8Array(33))).toBe('wrong length');
    expect(refusalWith('TRUST_ROOT', () => PublicKey.fromRaw(new Uint8Array(31))).message).toMatch(
      /^the public key is the wrong length .*got 31 bytes/,
    );
  });

  it('finds non-canonical encodings by bytes: y >= p, and x = 0 with the sign bit set', () => {
    const identity = hex('01'.padEnd(64, '0')); // y = 1, x = 0: canonical but small order
    expect(publicKeyProblem(identity)).toBe('small order');
    const identityWithSign = Uint8Array.from(identity);
    identityWithSign[31] = 0x80;
    expect(publicKeyProblem(identityWithSign)).toBe('not canonical');
    const yIsP = hex('ed' + 'ff'.repeat(30) + '7f');
    expect(publicKeyProblem(yIsP)).toBe('not canonical');
    expect(publicKeyProblem(key.raw)).toBeNull(); // control
  });

  it('keeps its own copy of the raw bytes', () => {
    const raw = key.raw;
    const copy = PublicKey.fromRaw(raw);
    raw[0]! ^= 0xff;
    expect(copy.raw).toEqual(key.raw);
    copy.raw[0]! ^= 0xff;
    expect(copy.raw).toEqual(key.raw);
  });

  it('never throws on malformed input, and answers false (verifySoon too)', async () => {
    const message = new Uint8Array([1, 2, 3]);
    const signature = generateSigningKey().sign(message);
    const bad: unknown[] = [
      undefined,
      null,
      'text',
      new Uint8Array(63),
      new Uint8Array(65),
      new Uint8Array(64),
    ];
    for (const backend of BACKENDS) {
      for (const sig of bad) {
        expect(key.verify(message, sig as Uint8Array, backend)).toBe(false);
      }
      expect(key.verify('text' as unknown as Uint8Array, signature, backend)).toBe(false);
      expect(key.verify(message, signature, backend)).toBe(false); // another key's signature
    }
    for (const sig of bad) expect(await key.verifySoon(message, sig as Uint8Array)).toBe(false);
    expect(await key.verifySoon('text' as unknown as Uint8Array, signature)).toBe(false);
    expect(await key.verifySoon(message, signature)).toBe(false);
    const signer = generateSigningKey();
    expect(await signer.publicKey.verifySoon(message, signer.sign(message))).toBe(true); // control
    expect(key.verify(message, signature, 'other' as Ed25519Backend)).toBe(false);
    expect(verifyStrict(new Uint8Array(3), message, signature, 'node')).toEqual({
      valid: false,
      reason: 'public key wrong length',
    });
  });
});

describe('the byte checks on S and on point encodings, against BigInt arithmetic', () => {
  const P = 2n ** 255n - 19n;
  const leToBig = (b: Uint8Array) => leToBigInt(b);
  const canonicalByBigInt = (b: Uint8Array): boolean => {
    const masked = Uint8Array.from(b);
    masked[31] = b[31]! & 0x7f;
    const y = leToBig(masked);
    return y < P && !((b[31]! & 0x80) !== 0 && (y === 1n || y === P - 1n));
  };
  let seed = 7;
  const randomBytes32 = () =>
    Uint8Array.from({ length: 32 }, () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed >> 16;
    });
  const near = (n: bigint) => [n - 2n, n - 1n, n, n + 1n, n + 2n].filter((v) => v >= 0n && v < 2n ** 256n);
  const scalars = [...near(L), ...near(2n ** 252n), ...near(2n ** 253n), 0n, 2n ** 256n - 1n].map(
    bigIntToLe32,
  );
  const ys = [...near(P), ...near(0n), ...near(2n ** 255n - 1n)]
    .filter((v) => v < 2n ** 255n)
    .flatMap((v) => {
      const b = bigIntToLe32(v);
      const signed = Uint8Array.from(b);
      signed[31] = b[31]! | 0x80;
      return [b, signed];
    });

  it('S < L exactly as the number says, at the bounds and at random', () => {
    const zeroR = new Uint8Array(32);
    for (const s of [...scalars, ...Array.from({ length: 200 }, randomBytes32)]) {
      const problem = signatureProblem(Uint8Array.from([...zeroR, ...s]));
      expect(problem === 'S >= L').toBe(leToBig(s) >= L);
    }
  });

  it('a point encoding is canonical exactly as the number says (y < p, no x = 0 with the sign bit)', () => {
    for (const y of [...ys, ...Array.from({ length: 200 }, randomBytes32)]) {
      const problem = signatureProblem(Uint8Array.from([...y, ...new Uint8Array(32)]));
      expect(problem === 'R not canonical').toBe(!canonicalByBigInt(y));
    }
  });
});

describe('libsodium: its yes is taken, node:crypto answers what it refuses', () => {
  const seed = hex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60');
  const owner = signingKeyFromSeed(seed);
  const message = new TextEncoder().encode('a record');
  const sodium = libsodiumVerify();

  it('loads here (an optional dependency the lockfile installs)', () => {
    expect(sodium).toBeTypeOf('function');
  });

  it('an identity R (only the key owner can make one) is valid under the strict rule: libsodium refuses it, node:crypto decides', () => {
    const honest = owner.sign(message);
    const identityR = identityRSignature(seed, owner.publicKey.raw, message);
    expect(signatureProblem(identityR)).toBeNull();
    expect(sodium!(honest, message, owner.publicKey.raw)).toBe(true); // control: libsodium answers honest signatures
    expect(sodium!(identityR, message, owner.publicKey.raw)).toBe(false);
    for (const backend of BACKENDS) {
      expect(owner.publicKey.verify(message, identityR, backend)).toBe(true);
      // The same bytes signed over another message: the equation fails, in every back-end.
      expect(owner.publicKey.verify(new TextEncoder().encode('another'), identityR, backend)).toBe(false);
    }
  });

  it("on every published vector whose key and signature bytes pass the strict checks, libsodium's yes is node:crypto's yes", () => {
    const cases: Array<{ pk: Uint8Array; msg: Uint8Array; sig: Uint8Array }> = [];
    for (const c of readVectors('speccheck_cases.json') as SpeccheckCase[])
      cases.push({ pk: hex(c.pub_key), msg: hex(c.message), sig: hex(c.signature) });
    for (const file of ['wycheproof_eddsa.json', 'wycheproof_eddsa_legacy.json'])
      for (const group of (readVectors(file) as WycheproofFile).testGroups)
        for (const t of group.tests)
          cases.push({ pk: hex((group.publicKey ?? group.key)!.pk), msg: hex(t.msg), sig: hex(t.sig) });
    let libsodiumYes = 0;
    for (const { pk, msg, sig } of cases) {
      if (publicKeyProblem(pk) !== null || signatureProblem(sig) !== null) continue;
      if (!sodium!(sig, msg, pk)) continue;
      libsodiumYes++;
      expect(PublicKey.fromRaw(pk).verify(msg, sig, 'node')).toBe(true);
    }
    expect(libsodiumYes).toBeGreaterThan(150);
  });
});
