/**
 * The commands a push's client sent, checked before the push is judged (rt51 f01, f02): each ref once, each old id
 * the ref's value now, and standard input only as git writes it.
 */
import { describe, expect, it } from 'vitest';
import { DelegateGitError } from '../src/errors.js';
import { parseRefUpdates, repeatedRefs, staleOldIds } from '../src/push-claims.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);
const ZERO = '0'.repeat(40);
const LEDGER = 'refs/notes/delegations';

describe('parseRefUpdates', () => {
  it('reads the lines git writes, SHA-1 and SHA-256 ids alike', () => {
    const long = 'd'.repeat(64);
    expect(parseRefUpdates(`${A} ${B} refs/heads/main\n${ZERO} ${C} refs/tags/v1\n`)).toEqual([
      { oldId: A, newId: B, ref: 'refs/heads/main' },
      { oldId: ZERO, newId: C, ref: 'refs/tags/v1' },
    ]);
    expect(parseRefUpdates(`${long} ${long} refs/heads/x\n`)).toEqual([
      { oldId: long, newId: long, ref: 'refs/heads/x' },
    ]);
    expect(parseRefUpdates('')).toEqual([]);
  });

  it.each([
    ['a missing field', `${A} refs/heads/main\n`],
    ['an id that is no object id', `${A.slice(1)} ${B} refs/heads/main\n`],
    ['a name outside refs/', `${A} ${B} HEAD\n`],
    ['a name with a space', `${A} ${B} refs/heads/a b\n`],
  ])('refuses %s: nothing is judged from input git did not write', (_, input) => {
    expect(() => parseRefUpdates(input)).toThrow(DelegateGitError);
    expect(() => parseRefUpdates(input)).toThrow(/where git writes "<old id> <new id> <ref>"/);
  });
});

describe('repeatedRefs', () => {
  it('names a ref the push names twice, once', () => {
    expect(
      repeatedRefs([
        { oldId: A, newId: A, ref: LEDGER },
        { oldId: A, newId: B, ref: LEDGER },
        { oldId: A, newId: C, ref: 'refs/heads/main' },
      ]),
    ).toEqual([
      {
        ref: LEDGER,
        kind: 'repeated ref',
        reason:
          'named 2 times in one push; a push names each ref once (git push does), so this one is not judged',
      },
    ]);
  });

  it('control: every ref once', () => {
    expect(
      repeatedRefs([
        { oldId: A, newId: B, ref: LEDGER },
        { oldId: A, newId: C, ref: 'refs/heads/main' },
      ]),
    ).toEqual([]);
  });
});

describe('staleOldIds', () => {
  const current = new Map([
    [LEDGER, B],
    ['refs/heads/main', A],
  ]);

  it('refuses an old id that is not the ref’s value, and a new ref that exists already', () => {
    expect(
      staleOldIds(
        [
          { oldId: A, newId: A, ref: LEDGER },
          { oldId: ZERO, newId: C, ref: 'refs/heads/main' },
          { oldId: C, newId: A, ref: 'refs/heads/gone' },
        ],
        current,
      ),
    ).toEqual([
      {
        ref: LEDGER,
        reason: `the push expects it at ${A}, but on the server it is at ${B}; fetch, and push again`,
      },
      {
        ref: 'refs/heads/main',
        reason: `the push expects it not to exist, but on the server it is at ${A}; fetch, and push again`,
      },
      {
        ref: 'refs/heads/gone',
        reason: `the push expects it at ${C}, but on the server it does not exist; fetch, and push again`,
      },
    ]);
  });

  it('control: old ids as the refs are, a new ref that does not exist, a deletion of one that does', () => {
    expect(
      staleOldIds(
        [
          { oldId: B, newId: C, ref: LEDGER },
          { oldId: A, newId: ZERO, ref: 'refs/heads/main' },
          { oldId: ZERO, newId: C, ref: 'refs/heads/new' },
        ],
        current,
      ),
    ).toEqual([]);
  });
});
