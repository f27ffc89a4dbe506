// A remote that never answers is given up, with what it started; one that answers is listed as git lists it.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanGitEnv, makeTempRepo, type TempRepo } from '../../../test/support/git-repo.js';
import { listRemote } from '../src/remote-listing.js';

const repos: TempRepo[] = [];
afterEach(() => {
  for (const repo of repos.splice(0)) repo.cleanup();
});

/** Running (a zombie waiting for its parent to be reaped counts as ended). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('listRemote', () => {
  it('gives up a remote that does not answer, and ends the processes it started', async () => {
    const repo = makeTempRepo();
    repos.push(repo);
    const pidFile = path.join(repo.dir, 'remote.pid');
    // git's ext transport runs a command as the remote: this one never speaks.
    repo.git(['config', 'protocol.ext.allow', 'always']);
    repo.git(['remote', 'add', 'silent', `ext::sh -c echo% $$% >${pidFile};% exec% sleep% 60`]);

    const started = Date.now();
    const listed = await listRemote(
      'silent',
      ['--symref'],
      ['HEAD'],
      { cwd: repo.dir, env: cleanGitEnv() },
      500,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(listed.code).toBe(-1);
    expect(listed.stderr).toBe('no answer within 0.5 s');
    const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
    expect(pid).toBeGreaterThan(0);
    await expect.poll(() => alive(pid), { timeout: 5000 }).toBe(false);
  });

  it('lists a remote that answers', async () => {
    const bare = makeTempRepo({ bare: true });
    const repo = makeTempRepo();
    repos.push(bare, repo);
    const commit = repo.commit({ 'a.txt': 'a\n' });
    repo.git(['remote', 'add', 'origin', bare.dir]);
    repo.git(['push', '-q', 'origin', 'HEAD:refs/heads/main']);

    const listed = await listRemote('origin', ['--heads'], [], { cwd: repo.dir, env: cleanGitEnv() }, 500);
    expect(listed.code).toBe(0);
    expect(listed.stdout.toString()).toBe(`${commit}\trefs/heads/main\n`);
  });
});
