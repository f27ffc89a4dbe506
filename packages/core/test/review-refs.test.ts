import { describe, expect, it } from 'vitest';
import { isReviewRef, judgedRefsArgs, reviewRefsIn } from '../src/review-refs.js';

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

  it('leaves notes and review refs out of --all', () => {
    expect(judgedRefsArgs(review)).toEqual(['--exclude=refs/notes/*', '--exclude=refs/review/*', '--all']);
    expect(judgedRefsArgs({ prefixes: [] })).toEqual(['--exclude=refs/notes/*', '--all']);
  });
});
