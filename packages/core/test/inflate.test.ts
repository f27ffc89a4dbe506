import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { constants, deflateSync, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { makeTempRepo } from '../../../test/support/git-repo.js';
import { inflateZlib } from '../src/inflate.js';

/** The small decoder against node:zlib itself, over what zlib writes at every level and strategy, and git's objects. */
describe('inflateZlib', () => {
  let seed = 7;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const inputs = (): Buffer[] => [
    Buffer.alloc(0),
    Buffer.from('commit 180\0tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@b> 1 +0000\n'),
    randomBytes(1),
    randomBytes(300), // incompressible: stored blocks, or codes no better
    randomBytes(70_000), // more than one stored block (65,535 bytes each)
    Buffer.from('abcabcabcabc'.repeat(5000)), // long matches, distances far back
    Buffer.from(Array.from({ length: 20_000 }, () => 'the quick brown fox '.charAt(random(20))).join('')),
  ];
  const strategies = [
    constants.Z_DEFAULT_STRATEGY,
    constants.Z_FILTERED,
    constants.Z_HUFFMAN_ONLY,
    constants.Z_RLE,
    constants.Z_FIXED,
  ];

  it('decodes what zlib writes at every level and strategy', () => {
    let cases = 0;
    for (const input of inputs())
      for (let level = 0; level <= 9; level++)
        for (const strategy of strategies) {
          const out = inflateZlib(deflateSync(input, { level, strategy }));
          expect(out && Buffer.from(out).equals(input), `level ${level} strategy ${strategy}`).toBe(true);
          cases++;
        }
    expect(cases).toBe(7 * 10 * 5);
  });

  it('decodes the loose objects git writes (commit, tree, blob) as zlib does', () => {
    const repo = makeTempRepo();
    try {
      const commit = repo.commit(
        { 'a.txt': 'a\n', 'dir/b.txt': 'b\n'.repeat(1000) },
        'a message\n\nwith a body',
      );
      const objects = repo.git(['rev-list', '--objects', commit]).split('\n').filter(Boolean);
      expect(objects.length).toBe(5);
      for (const line of objects) {
        const id = line.split(' ')[0]!;
        const file = fs.readFileSync(path.join(repo.dir, '.git', 'objects', id.slice(0, 2), id.slice(2)));
        expect(Buffer.from(inflateZlib(file)!).equals(inflateSync(file))).toBe(true);
      }
    } finally {
      repo.cleanup();
    }
  });

  it('says null for what is not a zlib stream it reads, and never runs past its input or its limit', () => {
    const input = Buffer.from('abcabcabcabc'.repeat(100));
    const good = deflateSync(input);
    expect(Buffer.from(inflateZlib(good)!).equals(input)).toBe(true);
    expect(inflateZlib(good.subarray(0, 1))).toBeNull();
    expect(inflateZlib(Buffer.from([0x78, 0x9d]))).toBeNull(); // header check fails
    expect(inflateZlib(Buffer.from([0x78, 0xbb, 0, 0, 0, 0]))).toBeNull(); // preset dictionary
    expect(inflateZlib(good.subarray(0, good.length - 8))).toBeNull(); // cut before the last block ends
    expect(inflateZlib(good, 100)).toBeNull(); // 1,200 bytes of output against a limit of 100
    // Damage anywhere: null, or bytes that are not the input (the caller checks the object's id), never a throw.
    for (let i = 2; i < good.length - 5; i++) {
      // not the last byte before the checksum: it may end in padding bits
      const damaged = Buffer.from(good);
      damaged[i] = damaged[i]! ^ (1 << random(8));
      const out = inflateZlib(damaged);
      if (out !== null) expect(out.length === input.length && Buffer.from(out).equals(input)).toBe(false);
    }
  });
});
