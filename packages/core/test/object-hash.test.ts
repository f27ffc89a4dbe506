import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { digestOf, hexDigestOf } from '../src/object-hash.js';

const native = (algorithm: string, data: Uint8Array | string) =>
  createHash(algorithm)
    .update(typeof data === 'string' ? Buffer.from(data, 'latin1') : data)
    .digest('hex');

// Sizes around SHA's 64-byte block and its 8-byte length field, where a hand-fed hash goes wrong first.
const SIZES = [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000, 4500];

describe('object hashes for the quick pre-commit answer', () => {
  it('match node:crypto for bytes and for latin1 strings, below the budget (hashed in JavaScript)', () => {
    for (const algorithm of ['sha1', 'sha256'] as const) {
      for (const size of SIZES) {
        const bytes = randomBytes(size);
        expect(hexDigestOf(algorithm, bytes)).toBe(native(algorithm, bytes));
        // A tree object as index-trees.ts builds it: one character per byte, every byte value included.
        const text = `tree ${size}\0${bytes.toString('latin1')}`;
        expect(Buffer.from(digestOf(algorithm, text)).toString('hex')).toBe(native(algorithm, text));
      }
    }
    expect(hexDigestOf('sha1', 'blob 0\0')).toBe('e69de29bb2d1d6434b8b29ae775ad8c2e48c5391'); // git's empty blob
  });

  it('still match past the budget, where node:crypto takes over', () => {
    for (let i = 0; i < 12; i++) {
      const bytes = randomBytes(8 * 1024 + i);
      expect(hexDigestOf(i % 2 ? 'sha1' : 'sha256', bytes)).toBe(native(i % 2 ? 'sha1' : 'sha256', bytes));
    }
  });
});
