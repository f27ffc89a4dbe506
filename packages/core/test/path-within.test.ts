import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { relativeWithin } from '../src/path-within.js';

describe('relativeWithin', () => {
  const root = path.resolve('/work/repo');
  it.each([
    ['the root itself', root, ''],
    ['a file beneath', path.join(root, 'src/a.ts'), path.join('src', 'a.ts')],
    ['a name starting with two dots', path.join(root, '..weird.ts'), '..weird.ts'],
    ['a directory named with two dots and more', path.join(root, '...', 'x'), path.join('...', 'x')],
  ])('%s is within', (_, candidate, expected) => {
    expect(relativeWithin(root, candidate)).toBe(expected);
  });
  it.each([
    ['the parent', path.dirname(root)],
    ['a sibling sharing the prefix', `${root}2/a.ts`],
    ['a path climbing out', path.join(root, '..', 'other', 'a.ts')],
  ])('%s is not', (_, candidate) => {
    expect(relativeWithin(root, candidate)).toBeNull();
  });
});
