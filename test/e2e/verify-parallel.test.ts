/**
 * `verify` over a ledger large enough to be checked on worker threads: the answer (counts, and each problem with
 * its blob and line) must be exactly what a line-by-line check gives.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  loadSigningKey,
  POLICY_PATH,
  parsePolicy,
  Repository,
  signStatement,
  verdictStatement,
} from '../../packages/core/src/index.js';
import { adopt, cli, makeStory, makeWorkTree, type Story } from '../support/cli-story.js';

const RECORDS = 2400;

describe('verify on worker threads', () => {
  let story: Story;
  let work: string;
  let forgedBlob: string;
  let forgedLine: number;

  beforeAll(async () => {
    story = makeStory();
    work = makeWorkTree(story, 'work');
    adopt(story, work, []);
    const policy = parsePolicy(fs.readFileSync(path.join(work, POLICY_PATH), 'utf8'));
    const { key } = loadSigningKey('alice', story.env);
    const repo = await Repository.open(work, story.env);
    try {
      // 800 blobs with 3 records each, written in one notes commit (blobs need not exist for verify).
      const additions: Array<{ blob: string; lines: string[] }> = [];
      for (let b = 0; b < RECORDS / 3; b++) {
        const blob = createHash('sha1').update(`blob ${b}`).digest('hex');
        const lines = [0, 1, 2].map((r) => {
          const sha256 = createHash('sha256').update(`${b}/${r}`).digest('hex');
          const statement = verdictStatement([{ path: `src/f${b}.ts`, sha256, gitBlob: blob }], {
            verdict: r === 2 ? 'UNIT_FAILED' : 'UNIT_PASSED',
            repository: { id: policy.repositoryId },
            createdAt: `2026-11-0${1 + r}T00:00:00.000Z`,
          });
          return signStatement(statement, key).line;
        });
        additions.push({ blob, lines });
      }
      // One forged line in the middle: a valid line with one payload character changed.
      const target = additions[400]!;
      const line = target.lines[1]!;
      const i = line.indexOf('"payload":"') + 40;
      target.lines[1] = line.slice(0, i) + (line[i] === 'A' ? 'B' : 'A') + line.slice(i + 1);
      forgedBlob = target.blob;
      forgedLine = [...target.lines].sort().indexOf(target.lines[1]!) + 1;
      await repo.ledger.append(additions);
    } finally {
      await repo.close();
    }
  }, 120_000);

  afterAll(() => story.cleanup());

  it('counts every line once and names the one forged line by blob and line', () => {
    const run = cli(story, work, ['verify', '--json']);
    const result = JSON.parse(run.stdout);
    // Lines: every record, + init's anchor approval on the policy and on the key file. Records: distinct valid ones.
    expect(result.lines).toBe(RECORDS + 2);
    expect(result.records).toBe(RECORDS - 1 + 1);
    expect(result.byVerdict.UNIT_PASSED).toBe((RECORDS / 3) * 2 - 1);
    expect(result.byVerdict.UNIT_FAILED).toBe(RECORDS / 3);
    expect(result.invalid).toHaveLength(1);
    expect(result.invalid[0]).toMatchObject({ blob: forgedBlob, line: forgedLine });
    expect(result.invalid[0].reason).toMatch(/does not verify|not a valid record/);
    expect(run.code).toBe(1);
  });
});
