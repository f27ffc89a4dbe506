/**
 * The staged check over enough governed files that the built CLI checks their records on worker threads: its
 * answer must be exactly the one core gives in-process on the main thread, file by file, refusals included.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toJson } from '../../packages/cli/src/commands/check.js';
import { checkStaged, Repository, reviewStatement, verdictStatement } from '../../packages/core/src/index.js';
import {
  adopt,
  cli,
  gitOk,
  makeStory,
  makeWorkTree,
  operatorSigner,
  type Story,
  writeFiles,
} from '../support/cli-story.js';
import { subjectOf as subject } from '../support/records.js';

const FILES = 300;

describe('the staged check on worker threads', () => {
  let story: Story;
  let work: string;

  beforeAll(async () => {
    story = makeStory();
    work = makeWorkTree(story, 'work');
    adopt(story, work, ['src/**']);
    const { repository, sign } = operatorSigner(story, work);
    const files: Record<string, string> = {};
    const additions: Array<{ blob: string; lines: string[] }> = [];
    for (let b = 0; b < FILES; b++) {
      const p = `src/f${b}.ts`;
      const content = `export const f${b} = ${b};\n`;
      const s = subject(p, content);
      const at = (day: number) => `2026-11-0${day}T00:00:00.000Z`;
      const verdict = (v: 'UNIT_PASSED' | 'UNIT_FAILED', day = 1) =>
        sign(verdictStatement([s], { verdict: v, repository, createdAt: at(day) }));
      let lines: string[];
      if (b % 10 === 3) lines = [verdict('UNIT_FAILED')];
      else if (b % 10 === 5) {
        // Recorded for other content of the path only: refused, worded from the path's history.
        const earlier = subject(p, `${content}// before\n`);
        additions.push({
          blob: earlier.gitBlob,
          lines: [
            sign(verdictStatement([earlier], { verdict: 'UNIT_PASSED', repository, createdAt: at(1) })),
          ],
        });
        lines = [];
      } else if (b % 10 === 7) {
        const good = verdict('UNIT_PASSED');
        const i = good.indexOf('"payload":"') + 40;
        lines = [good, good.slice(0, i) + (good[i] === 'A' ? 'B' : 'A') + good.slice(i + 1)];
      } else if (b % 10 === 9) {
        lines = [
          verdict('UNIT_PASSED'),
          sign(
            reviewStatement([s], {
              decision: 'reject',
              reviewer: { name: 'alice', email: '' },
              repository,
              createdAt: at(2),
            }),
          ),
        ];
      } else lines = [verdict('UNIT_PASSED')];
      files[p] = content;
      if (lines.length > 0) additions.push({ blob: s.gitBlob, lines });
    }
    // One content under two paths, one record naming both.
    const shared = 'export const shared = true;\n';
    const a = subject('src/shared-a.ts', shared);
    const b = subject('src/shared-b.ts', shared);
    additions.push({
      blob: a.gitBlob,
      lines: [
        sign(
          verdictStatement([a, b], {
            verdict: 'UNIT_PASSED',
            repository,
            createdAt: '2026-11-01T00:00:00.000Z',
          }),
        ),
      ],
    });
    files['src/shared-a.ts'] = shared;
    files['src/shared-b.ts'] = shared;
    const repo = await Repository.open(work, story.env);
    try {
      await repo.ledger.append(additions);
    } finally {
      await repo.close();
    }
    writeFiles(work, files);
    gitOk(story, work, ['add', 'src']);
  }, 120_000);

  afterAll(() => story.cleanup());

  it('gives, file by file, the answer of the main thread', async () => {
    const cacheDir = path.join(work, '.git', 'delegate-git', 'cache');
    fs.rmSync(cacheDir, { recursive: true, force: true });
    const run = cli(story, work, ['check', '--staged', '--json']);
    const threaded = JSON.parse(run.stdout);
    expect(run.code).toBe(1);

    fs.rmSync(cacheDir, { recursive: true, force: true });
    const repo = await Repository.open(work, story.env);
    let inProcess: Awaited<ReturnType<typeof checkStaged>>;
    try {
      inProcess = await checkStaged(repo);
    } finally {
      await repo.close();
    }
    const byPath = (results: Array<{ path: string }>) =>
      Object.fromEntries([...results].sort((x, y) => x.path.localeCompare(y.path)).map((r) => [r.path, r]));
    const mine = byPath(threaded.results);
    const theirs = byPath(JSON.parse(JSON.stringify(toJson(inProcess, 1).results)));
    expect(Object.keys(mine)).toHaveLength(FILES + 2);
    expect(mine).toEqual(theirs);
    // The mix is what it should be, so the equality above compares every kind of answer.
    const reasons = Object.values(mine).map((r) => (r as unknown as { reason: string }).reason);
    expect(reasons.filter((r) => r === 'a unit passed it and its content is unchanged').length).toBe(
      FILES - 3 * (FILES / 10) + 2,
    );
    expect(reasons.filter((r) => r.startsWith('verdict was UNIT_FAILED'))).toHaveLength(FILES / 10);
    expect(reasons.filter((r) => r.startsWith('rejected by'))).toHaveLength(FILES / 10);
    expect(reasons.filter((r) => r.startsWith('its content changed after the verdict'))).toHaveLength(
      FILES / 10,
    );
  });
});
