/**
 * Repositories at paths git prints byte for byte and Node reads as UTF-8 text (rt48 f01): a newline in a directory
 * name works at every gate; a byte that is not UTF-8 is refused, saying so, never as a directory that does not exist.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adopt,
  cli,
  cliOk,
  cloneInto,
  commit,
  gitOk,
  gitRun,
  LEDGER,
  makeServer,
  makeStory,
  makeWorkTree,
  type Run,
  type Story,
  stageFiles,
  storyCli,
} from '../support/cli-story.js';

let story: Story;
beforeAll(() => {
  story = makeStory();
});
afterAll(() => story.cleanup());

const stage = (dir: string, files: Record<string, string>) => stageFiles(story, dir, files);

describe('a repository whose path holds a newline', () => {
  it('the pre-commit hook and check --staged pass an ungoverned change (control) and refuse an unpromoted governed file', () => {
    const dir = makeWorkTree(story, 'work\nwith a newline');
    adopt(story, dir, ['src/**']);

    stage(dir, { 'README.md': 'hello\n' });
    expect(cli(story, dir, ['check', '--staged']).code).toBe(0);
    const ungoverned = commit(story, dir, 'ungoverned');
    expect(ungoverned.code, ungoverned.stderr).toBe(0);

    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    const check = cli(story, dir, ['check', '--staged']);
    expect(check.code, check.stderr).toBe(1);
    const refused = commit(story, dir, 'unpromoted');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('src/a.ts');
    expect(refused.stderr).toContain('commit refused');
    expect(refused.stderr).not.toContain('does not exist');

    cliOk(story, dir, ['attest', '--approve', 'src/a.ts', '--yes']);
    const promoted = commit(story, dir, 'promoted');
    expect(promoted.code, promoted.stderr).toBe(0);
  });

  it('a bare repository there takes init --server, and its pre-receive hook passes an ungoverned push (control) and refuses an unpromoted one', () => {
    const server = makeServer(story, 'server\nwith a newline.git');
    expect(fs.existsSync(path.join(server, 'hooks', 'pre-receive'))).toBe(true);
    const work = cloneInto(story, server, 'pusher');
    adopt(story, work, ['src/**']);
    const adoption = gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]);
    expect(adoption.code, adoption.stderr).toBe(0);

    stage(work, { 'README.md': 'hello\n' });
    gitOk(story, work, ['commit', '-q', '-m', 'ungoverned']);
    const ungoverned = gitRun(story, work, ['push', '-q', 'origin', 'main']);
    expect(ungoverned.code, ungoverned.stderr).toBe(0);

    stage(work, { 'src/a.ts': 'export const a = 1;\n' });
    gitOk(story, work, ['commit', '-q', '--no-verify', '-m', 'unpromoted']);
    const refused = gitRun(story, work, ['push', 'origin', 'main']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('refused refs/heads/main');
    expect(refused.stderr).toContain('src/a.ts');
    expect(refused.stderr).not.toContain('does not exist');
  });
});

describe('a repository whose path holds a byte that is not UTF-8', () => {
  /** `name` as printf(1) escapes. */
  const octal = (name: Buffer) => [...name].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('');

  /** `argv` run in `<root>/<name>`, named by its bytes: Node's cwd option and arguments are UTF-8 text. */
  function runIn(name: Buffer, argv: string[]): Run {
    const result = spawnSync('sh', ['-c', `cd "$(printf '${octal(name)}')" && exec "$@"`, 'sh', ...argv], {
      cwd: story.root,
      env: story.env,
    });
    return {
      code: result.status ?? 128,
      stdout: result.stdout.toString('utf8'),
      stderr: result.stderr.toString('utf8'),
    };
  }

  it('check and the pre-commit hook refuse it with exit 2, naming the problem; control: the same repository under a UTF-8 name', () => {
    const dir = makeWorkTree(story, 'latin1-e');
    adopt(story, dir, ['src/**']);
    stage(dir, { 'README.md': 'hello\n' });
    const check = [process.execPath, storyCli, 'check', '--staged'];
    const control = runIn(Buffer.from('latin1-e'), check);
    expect(control.code, control.stderr).toBe(0);

    // latin1-<0xE9>: Latin-1 "é", which Node decodes as latin1-\uFFFD.
    const name = Buffer.from([...Buffer.from('latin1-'), 0xe9]);
    // A copy: the hook init installed runs the delegate-git init put in the git dir, by the path it had then.
    const copy = spawnSync('sh', ['-c', `cp -a latin1-e "$(printf '${octal(name)}')"`], { cwd: story.root });
    expect(copy.status, copy.stderr.toString()).toBe(0);
    const message = `The repository's path (${path.join(story.root, 'latin1-\uFFFD')}, with \uFFFD for each byte that is not UTF-8) is not valid UTF-8, which delegate-git cannot use`;
    const refused = runIn(name, check);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(message);
    expect(refused.stderr).not.toContain('does not exist');

    const hook = runIn(name, ['git', 'commit', '-q', '-m', 'ungoverned']);
    expect(hook.code).not.toBe(0);
    expect(hook.stderr).toContain(message);
    const committed = runIn(Buffer.from('latin1-e'), ['git', 'commit', '-q', '-m', 'ungoverned']);
    expect(committed.code, committed.stderr).toBe(0);
    const direct = runIn(name, [process.execPath, storyCli, 'hook', 'pre-commit']);
    expect(direct.code).toBe(2);
    expect(direct.stderr).toContain(message);
  });
});
