/**
 * A record dated ahead of the clock that judges it: createdAt is the signer's word, and an approval dated ahead would
 * count as made after versions admitted before it was made (so a version it approved could come back on it later,
 * and one it admitted could not be replaced until that date). The server refuses such a line and verify reports it;
 * a clock a few minutes ahead is within the skew allowed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, commit, gitOk, gitRun, makeStory, recordVerdict, type Story } from '../support/cli-story.js';
import { adoptedClone } from '../support/every-gate.js';

const LEDGER = 'refs/notes/delegations';
const AHEAD = 'created in the future';

describe('a record dated ahead of the clock', () => {
  let story: Story;
  let work: string;
  beforeAll(() => {
    story = makeStory();
    work = adoptedClone(story, ['src/**']);
  });
  afterAll(() => story.cleanup());

  const committedWithVerdict = async (file: string, createdAt: Date) => {
    fs.mkdirSync(path.join(work, 'src'), { recursive: true });
    fs.writeFileSync(path.join(work, file), `export const at = ${createdAt.getTime()};\n`);
    await recordVerdict(story, work, file, { createdAt: createdAt.toISOString() });
    gitOk(story, work, ['add', file]);
    expect(commit(story, work, file).code).toBe(0); // the local hook does not ask the clock
  };

  it('control: minutes ahead (a drifting clock) is accepted by the server and verify', async () => {
    await committedWithVerdict('src/minutes.ts', new Date(Date.now() + 5 * 60 * 1000));
    const pushed = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(pushed.code, pushed.stderr).toBe(0);
    const verified = cli(story, work, ['verify']);
    expect(verified.code, verified.stdout).toBe(0);
  });

  it('days ahead is refused by the server and reported by verify, naming the line', async () => {
    await committedWithVerdict('src/days.ts', new Date(Date.now() + 2 * 24 * 3600 * 1000));
    const pushed = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toContain(AHEAD);
    const verified = cli(story, work, ['verify']);
    expect(verified.code).toBe(1);
    expect(verified.stdout).toContain(AHEAD);
    expect(verified.stdout).toContain("more than an hour ahead of this machine's clock");
  });
});
