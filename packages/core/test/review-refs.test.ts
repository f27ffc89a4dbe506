import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  holdsNothingJudged,
  isReviewRef,
  isSymbolicRef,
  judgedRefsArgs,
  reviewRefsIn,
  symbolicRefsIntoReview,
} from '../src/review-refs.js';

describe('reviewRefsIn', () => {
  it('takes ref prefixes outside what the gate judges', () => {
    expect(reviewRefsIn(['refs/review/', ' refs/for/ '])).toEqual({
      prefixes: ['refs/review/', 'refs/for/'],
    });
    expect(reviewRefsIn([])).toEqual({ prefixes: [] });
  });

  it.each([
    'refs/heads/',
    'refs/heads/review/',
    'refs/Tags/',
    'refs/notes/review/',
    'refs/replace/',
    'refs/',
    'refs/review',
    'review/',
    'refs/review/*/',
    'refs/a/../heads/',
    'refs//x/',
    'refs/namespaces/',
    'refs/namespaces/alice/refs/review/',
    'refs/remotes/',
    '',
  ])('refuses %s, and with it every value', (bad) => {
    const read = reviewRefsIn(['refs/review/', bad]);
    expect(read).toEqual({
      invalid: expect.stringContaining(`value ${JSON.stringify(bad)} is not a namespace`),
    });
    expect(isReviewRef('refs/review/x', read)).toBe(false);
  });
});

describe('what counts as a review ref, and the refs that hold judged content', () => {
  const review = reviewRefsIn(['refs/review/']);

  it('a ref under a prefix is one; a ref that only begins alike is not', () => {
    expect(isReviewRef('refs/review/alice/1', review)).toBe(true);
    expect(isReviewRef('refs/reviewed/x', review)).toBe(false);
    expect(isReviewRef('refs/heads/refs/review/x', review)).toBe(false);
  });

  it('leaves notes and review refs out of --all, review refs in any case and under any git namespace (rt59 f01, f02)', () => {
    const anyCase = '[rR][eE][fF][sS]/[rR][eE][vV][iI][eE][wW]/*';
    expect(judgedRefsArgs(review)).toEqual([
      '--exclude=refs/notes/*',
      `--exclude=${anyCase}`,
      `--exclude=refs/namespaces/*/${anyCase}`,
      '--all',
    ]);
    expect(judgedRefsArgs({ prefixes: [] })).toEqual(['--exclude=refs/notes/*', '--all']);
    for (const held of ['refs/REVIEW/a', 'refs/Review/a', 'refs/namespaces/alice/refs/review/a'])
      expect(holdsNothingJudged(held, review), held).toBe(true);
    expect(holdsNothingJudged('refs/heads/review/a', review)).toBe(false);
    // Taken unjudged only by its exact name.
    expect(isReviewRef('refs/REVIEW/a', review)).toBe(false);
  });

  it('under a git namespace, no ref is left to review', () => {
    expect(reviewRefsIn(['refs/review/'], { GIT_NAMESPACE: 'alice' })).toEqual({ prefixes: [] });
  });

  it('finds the symbolic refs that lead into a review namespace, HEAD included (rt59 f03, f04); control: others', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dg-review-'));
    try {
      fs.mkdirSync(path.join(dir, 'refs', 'heads'), { recursive: true });
      fs.mkdirSync(path.join(dir, 'refs', 'review'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'HEAD'), 'ref: refs/heads/main\n');
      fs.writeFileSync(path.join(dir, 'refs', 'heads', 'main'), `${'a'.repeat(40)}\n`);
      fs.writeFileSync(path.join(dir, 'refs', 'heads', 'alias'), 'ref: refs/heads/main\n');
      expect(symbolicRefsIntoReview(dir, review)).toEqual([]);
      fs.writeFileSync(path.join(dir, 'refs', 'heads', 'queue'), 'ref: refs/Review/q\n');
      fs.writeFileSync(path.join(dir, 'refs', 'review', 'link'), 'ref: refs/heads/main\n');
      expect(symbolicRefsIntoReview(dir, review)).toEqual(['refs/heads/queue']);
      fs.writeFileSync(path.join(dir, 'HEAD'), 'ref: refs/review/x\n');
      expect(symbolicRefsIntoReview(dir, review)).toEqual(['HEAD', 'refs/heads/queue']);
      expect(isSymbolicRef(dir, 'refs/review/link')).toBe(true);
      expect(isSymbolicRef(dir, 'refs/heads/main')).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
