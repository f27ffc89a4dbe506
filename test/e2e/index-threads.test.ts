/**
 * The first build of the path index over a large ledger: the built CLI reads the notes' lines on worker threads
 * (from 4,096 notes), and what it writes must be, byte for byte, the index core builds on the main thread.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildPathIndex,
  Repository,
  reviewStatement,
  THREADED_NOTES,
  verdictStatement,
} from '../../packages/core/src/index.js';
import {
  adopt,
  cli,
  gitOk,
  makeStory,
  makeWorkTree,
  operatorSigner,
  type Story,
} from '../support/cli-story.js';
import { subjectOf as subject } from '../support/records.js';

const NOTES = 4200;

describe('the path index built on worker threads', () => {
  let story: Story;
  let work: string;
  let tip: string;

  beforeAll(async () => {
    story = makeStory();
    work = makeWorkTree(story, 'work');
    adopt(story, work, ['src/**']);
    const { repository, sign } = operatorSigner(story, work);
    const at = (n: number) => new Date(Date.UTC(2026, 10, 1) + n * 1000).toISOString();
    const additions: Array<{ blob: string; lines: string[] }> = [];
    for (let n = 0; n < NOTES; n++) {
      // A few hundred paths with many contents each, so paths gather more records than the index keeps of them.
      const s = subject(`lib/p${n % 300}.ts`, `export const v = ${n};\n`);
      const lines = [sign(verdictStatement([s], { verdict: 'UNIT_PASSED', repository, createdAt: at(n) }))];
      if (n % 7 === 0)
        lines.push(
          sign(
            reviewStatement([s], {
              decision: n % 2 ? 'approve' : 'reject',
              reviewer: { name: 'alice', email: '' },
              repository,
              createdAt: at(n + 1),
            }),
          ),
        );
      if (n % 11 === 0) lines.push('not a record at all');
      if (n % 13 === 0) {
        // One record about this content under two paths: indexed on this blob for both.
        const other = subject(`docs/d${n}.md`, `export const v = ${n};\n`);
        lines.push(
          sign(verdictStatement([s, other], { verdict: 'UNIT_FAILED', repository, createdAt: at(n) })),
        );
      }
      additions.push({ blob: s.gitBlob, lines });
    }
    const repo = await Repository.open(work, story.env);
    try {
      tip = (await repo.ledger.append(additions)).commit!;
    } finally {
      await repo.close();
    }
    // A commit that touches a path outside `protect`: the hook must know every path the ledger ever recorded.
    fs.writeFileSync(path.join(work, 'README.md'), 'changed\n');
    gitOk(story, work, ['add', 'README.md']);
  }, 120_000);

  afterAll(() => story.cleanup());

  it('is the index the main thread builds, and the hook answers from it', async () => {
    expect(NOTES).toBeGreaterThanOrEqual(THREADED_NOTES); // so the CLI reads them on threads
    const cacheDir = path.join(work, '.git', 'delegate-git', 'cache');
    fs.rmSync(cacheDir, { recursive: true, force: true });
    const hook = cli(story, work, ['hook', 'pre-commit']);
    expect(hook.stderr).toBe('');
    expect(hook.code).toBe(0);
    const written = fs.readFileSync(path.join(cacheDir, `path-index-${tip}.json`), 'utf8');

    const repo = await Repository.open(work, story.env);
    let inProcess: string;
    try {
      inProcess = [...(await buildPathIndex(repo.ledger, tip)).serialized()].join('');
    } finally {
      await repo.close();
    }
    expect(written).toBe(inProcess);
    // What is compared holds every kind of line: verdicts, reviews, a record on two paths, and paths whose history
    // was cut to what the index keeps.
    const paths = JSON.parse(written).paths as Record<string, unknown[][]>;
    const ours = Object.keys(paths).filter((p) => p.startsWith('lib/') || p.startsWith('docs/'));
    expect(ours).toHaveLength(300 + Math.ceil(NOTES / 13));
    expect(paths['docs/d13.md']).toEqual([
      ['v', 'UNIT_FAILED', expect.any(String), expect.any(String), expect.any(Number)],
    ]);
    expect(paths['lib/p0.ts']!.length).toBeLessThan(NOTES / 300);
    expect(
      Object.values(paths).some((entries) => entries.some((e) => e[0] === 'r' && e[1] === 'approve')),
    ).toBe(true);
  }, 60_000);
});
