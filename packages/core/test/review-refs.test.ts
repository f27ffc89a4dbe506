import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  holdsNothingJudged,
  isReviewRef,
  judgedRefsArgs,
  notPlain,
  reviewRefsIn,
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

  it('finds what makes a repository not plain: any symbolic ref or link under refs/, HEAD not naming a branch, a linked worktree (rt59 f03, f04; rt60); control: a plain one', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dg-review-'));
    const write = (name: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      fs.writeFileSync(path.join(dir, name), text);
    };
    try {
      write('HEAD', 'ref: refs/heads/main\n');
      write('refs/heads/main', `${'a'.repeat(40)}\n`);
      write('refs/review/a', `${'b'.repeat(40)}\n`);
      expect(notPlain(dir)).toBeNull();

      write('refs/heads/queue', 'ref:refs/review/a\n');
      expect(notPlain(dir)).toBe('refs/heads/queue is a symbolic ref');
      fs.rmSync(path.join(dir, 'refs/heads/queue'));
      fs.symlinkSync('../review/a', path.join(dir, 'refs/heads/link'));
      expect(notPlain(dir)).toBe('refs/heads/link is a symbolic link');
      fs.rmSync(path.join(dir, 'refs/heads/link'));
      write('HEAD', 'ref:\trefs/review/a\n');
      expect(notPlain(dir)).toBe('its HEAD does not name a branch (refs/heads/...)');
      write('HEAD', `${'c'.repeat(40)}\n`);
      expect(notPlain(dir)).toBe('its HEAD does not name a branch (refs/heads/...)');
      write('HEAD', 'ref: refs/heads/main\n');
      write('worktrees/look/HEAD', `${'b'.repeat(40)}\n`);
      expect(notPlain(dir)).toMatch(/^it has linked worktrees/);
      fs.rmSync(path.join(dir, 'worktrees'), { recursive: true });
      expect(notPlain(dir)).toBeNull();
      fs.mkdirSync(path.join(dir, 'reftable'));
      expect(notPlain(dir)).toBe('it keeps its refs in a reftable, not in files');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
