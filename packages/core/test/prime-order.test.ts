import { randomBytes } from 'node:crypto';
import * as ed from '@noble/ed25519';
import { describe, expect, it } from 'vitest';
import { publicKeyProblem } from '../src/ed25519.js';
import { isTorsionFree } from '../src/prime-order.js';

/** A point of order 8 (the 8-torsion is cyclic: its multiples are the whole 8-torsion). */
const ORDER_EIGHT = ed.Point.fromHex(
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
  false,
);
const torsion = Array.from({ length: 8 }, (_, i) => ORDER_EIGHT.multiplyUnsafe(BigInt(i)));

const primeOrderPoints = Array.from({ length: 40 }, () =>
  ed.Point.BASE.multiply(
    ed.etc.mod(BigInt(`0x${randomBytes(32).toString('hex')}`), ed.Point.CURVE().n - 1n) + 1n,
  ),
);

describe('isTorsionFree (one X25519 multiplication) agrees with noble (the reference, [L]A = O)', () => {
  it('the torsion points are what they are', () => {
    expect(torsion[0]!.is0()).toBe(true);
    for (const t of torsion.slice(1)) expect(t.isSmallOrder()).toBe(true);
    expect(ORDER_EIGHT.multiplyUnsafe(4n).is0()).toBe(false);
  });

  it('on points of the prime-order subgroup, each with every torsion point added', () => {
    let mixed = 0;
    for (const point of primeOrderPoints) {
      for (const [i, t] of torsion.entries()) {
        const candidate = point.add(t);
        const reference = candidate.isTorsionFree();
        expect(reference).toBe(i === 0);
        expect(isTorsionFree(candidate)).toBe(reference);
        if (!reference) mixed++;
      }
    }
    expect(mixed).toBe(primeOrderPoints.length * 7);
  });

  it('on decoded keys, as publicKeyProblem meets them', () => {
    for (const point of primeOrderPoints.slice(0, 10)) {
      expect(publicKeyProblem(point.toBytes())).toBeNull();
      expect(publicKeyProblem(point.add(torsion[1]!).toBytes())).toBe('mixed order (torsion component)');
      expect(publicKeyProblem(point.add(torsion[4]!).toBytes())).toBe('mixed order (torsion component)');
    }
    expect(publicKeyProblem(torsion[2]!.toBytes())).toBe('small order');
  });
});
