/**
 * A record dated ahead of the clock that judges it: createdAt is the signer's word, and an approval dated ahead would
 * count as made after versions admitted before it was made (so a version it approved could come back on it later,
 * and one it admitted could not be replaced until that date). Such a record counts for nothing until the clock
 * reaches it: the hook refuses what only it promotes, `log` shows it invalid, the server refuses the line and verify
 * reports it and the file; a clock a few minutes ahead is within the skew allowed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  commit,
  gitOk,
  gitRun,
  LEDGER,
  makeStory,
  recordVerdict,
  type Story,
} from '../support/cli-story.js';
import { adoptedClone } from '../support/every-gate.js';

const AHEAD = 'created in the future';

describe('a record dated ahead of the clock', () => {
  let story: Story;
  let work: string;
  beforeAll(() => {
    story = makeStory();
    work = adoptedClone(story, ['src/**']);
  });
  afterAll(() => story.cleanup());

  const withVerdict = async (file: string, createdAt: Date) => {
    fs.mkdirSync(path.join(work, 'src'), { recursive: true });
    fs.writeFileSync(path.join(work, file), `export const at = ${createdAt.getTime()};\n`);
    await recordVerdict(story, work, file, { createdAt: createdAt.toISOString() });
    gitOk(story, work, ['add', file]);
  };

  it('control: minutes ahead (a drifting clock) counts at the hook, the server and verify', async () => {
    await withVerdict('src/minutes.ts', new Date(Date.now() + 5 * 60 * 1000));
    expect(commit(story, work, 'minutes').code).toBe(0);
    expect(cli(story, work, ['log', 'src/minutes.ts']).stdout).toMatch(/UNIT_PASSED .* valid\n$/);
    const pushed = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(pushed.code, pushed.stderr).toBe(0);
    const verified = cli(story, work, ['verify']);
    expect(verified.code, verified.stdout).toBe(0);
  });

  it('days ahead counts nowhere: the hook refuses the file, log shows the line invalid, the server and verify refuse both', async () => {
    await withVerdict('src/days.ts', new Date(Date.now() + 2 * 24 * 3600 * 1000));
    const refused = commit(story, work, 'days');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('src/days.ts');
    expect(refused.stderr).toContain(`the record on it does not count: ${AHEAD}`);
    const log = cli(story, work, ['log', 'src/days.ts']);
    expect(log.stdout).toContain(`INVALID(${AHEAD}`);

    expect(gitRun(story, work, ['commit', '-q', '--no-verify', '-m', 'days']).code).toBe(0);
    const pushed = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toContain(AHEAD);
    const verified = cli(story, work, ['verify']);
    expect(verified.code).toBe(1);
    expect(verified.stdout).toContain("more than an hour ahead of this machine's clock");
    expect(verified.stdout).toMatch(/src\/days\.ts.*the record on it does not count: created in the future/);
  });

  it('a file refused for a record dated ahead is judged again once the clock reaches it, not remembered as refused', async () => {
    await withVerdict('src/soon.ts', new Date(Date.now() + 90 * 60 * 1000));
    const refused = commit(story, work, 'soon');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(AHEAD);
    // The same ledger tip, three hours later by this machine's clock (a Date.now shifted in every node the hook runs).
    const clock = path.join(story.root, 'later.cjs');
    fs.writeFileSync(clock, 'const now = Date.now; Date.now = () => now() + 3 * 3600 * 1000;\n');
    const later = { ...story.env, NODE_OPTIONS: `--require ${clock}` };
    const committed = gitRun(story, work, ['commit', '-q', '-m', 'soon'], later);
    expect(committed.code, committed.stderr).toBe(0);
  });
});
