/**
 * bin/delegate-git.js runs the bundle through V8's code cache (one file per command in the user's cache directory).
 * The cache may only ever make a run faster: every case here checks the command's output against a run without it.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cliBin } from '../support/paths.js';

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dg-code-cache-'));
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

function cli(args: string[], env: NodeJS.ProcessEnv) {
  const run = spawnSync(process.execPath, [cliBin, ...args], {
    cwd: tmp,
    env: { PATH: process.env.PATH, ...env },
    encoding: 'utf8',
  });
  return { code: run.status, out: run.stdout, err: run.stderr };
}

const withoutCache = () => cli(['keys', '--help'], { DELEGATE_GIT_CODE_CACHE: 'off' });
const cacheFiles = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir).sort() : []);

describe('the code cache of the bundled CLI', () => {
  it('keeps one private file per command, and the next run of that command uses it as it is', () => {
    const dir = path.join(tmp, 'code');
    const expected = withoutCache();
    expect(expected.code).toBe(0);
    expect(expected.out).toContain('delegate-git keys');

    expect(cli(['keys', '--help'], { DELEGATE_GIT_CODE_CACHE: dir })).toEqual(expected);
    const [file] = cacheFiles(dir);
    expect(cacheFiles(dir)).toEqual([expect.stringMatching(new RegExp(`^${process.version}-.*-keys\\.v8$`))]);
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(dir, file!)).mode & 0o777).toBe(0o600);
    const first = fs.statSync(path.join(dir, file!));

    // Accepted by V8, it is not made again: the same file (a rewrite renames a new one over it).
    expect(cli(['keys', '--help'], { DELEGATE_GIT_CODE_CACHE: dir })).toEqual(expected);
    expect(fs.statSync(path.join(dir, file!)).ino).toBe(first.ino);

    // Another command gets its own file; the first one stays.
    expect(cli(['log', '--help'], { DELEGATE_GIT_CODE_CACHE: dir }).code).toBe(0);
    expect(cacheFiles(dir)).toHaveLength(2);
    expect(cacheFiles(dir)).toContain(file);
  });

  it('the server hook, run with its own V8 flags, reuses its cache too (V8 refuses a cache made under other flags)', () => {
    const dir = path.join(tmp, 'code');
    const expected = cli(['hook', 'pre-receive', '--help'], { DELEGATE_GIT_CODE_CACHE: 'off' });
    expect(expected.code).toBe(0);
    expect(cli(['hook', 'pre-receive', '--help'], { DELEGATE_GIT_CODE_CACHE: dir })).toEqual(expected);
    const [file] = cacheFiles(dir);
    expect(file).toMatch(/-hook-pre-receive\.v8$/);
    const first = fs.statSync(path.join(dir, file!)).ino;
    expect(cli(['hook', 'pre-receive', '--help'], { DELEGATE_GIT_CODE_CACHE: dir })).toEqual(expected);
    expect(fs.statSync(path.join(dir, file!)).ino).toBe(first);
  });

  it('replaces a damaged cache and still answers correctly', () => {
    const dir = path.join(tmp, 'code');
    const expected = withoutCache();
    cli(['keys', '--help'], { DELEGATE_GIT_CODE_CACHE: dir });
    const [file] = cacheFiles(dir);
    fs.writeFileSync(path.join(dir, file!), Buffer.alloc(4096, 7), { mode: 0o600 });

    expect(cli(['keys', '--help'], { DELEGATE_GIT_CODE_CACHE: dir })).toEqual(expected);
    const replaced = fs.readFileSync(path.join(dir, file!));
    expect(replaced.equals(Buffer.alloc(4096, 7))).toBe(false);
  });

  it('drops a cache that a run using it never finished with (a crash, an endless loop interrupted), and makes it again', () => {
    const dir = path.join(tmp, 'code');
    const expected = withoutCache();
    cli(['keys', '--help'], { DELEGATE_GIT_CODE_CACHE: dir });
    const [file] = cacheFiles(dir);
    const first = fs.statSync(path.join(dir, file!)).ino;
    // A run that finishes leaves no mark, and the next run keeps the cache as it is.
    expect(cli(['keys', '--help'], { DELEGATE_GIT_CODE_CACHE: dir })).toEqual(expected);
    expect(cacheFiles(dir)).toEqual([file]);
    expect(fs.statSync(path.join(dir, file!)).ino).toBe(first);

    // The mark a run leaves when it never reaches its exit (V8 does not check cached code: damaged, it can crash).
    fs.writeFileSync(path.join(dir, `${file}.running`), '');
    const past = new Date('2001-01-01T00:00:00Z');
    fs.utimesSync(path.join(dir, file!), past, past);
    expect(cli(['keys', '--help'], { DELEGATE_GIT_CODE_CACHE: dir })).toEqual(expected);
    expect(cacheFiles(dir)).toEqual([file]);
    // Made again by that run (a file's inode may be reused, its time is new).
    expect(fs.statSync(path.join(dir, file!)).mtimeMs).toBeGreaterThan(past.getTime() + 1000);
  });

  it('removes the caches an older build left for the same command, and only those', () => {
    const dir = path.join(tmp, 'code');
    fs.mkdirSync(dir, { mode: 0o700 });
    const olderBuild = `${process.version}-${process.arch}-1-2-3-keys.v8`;
    const otherCommand = `${process.version}-${process.arch}-1-2-3-hook-pre-commit.v8`;
    for (const name of [olderBuild, otherCommand])
      fs.writeFileSync(path.join(dir, name), 'x', { mode: 0o600 });

    expect(cli(['keys', '--help'], { DELEGATE_GIT_CODE_CACHE: dir }).code).toBe(0);
    const names = cacheFiles(dir);
    expect(names).not.toContain(olderBuild);
    expect(names).toContain(otherCommand);
    expect(names.filter((n) => n.endsWith('-keys.v8'))).toHaveLength(1);
  });

  it('neither reads nor writes a cache in a directory others may write to (a private one is used: above)', () => {
    const dir = path.join(tmp, 'shared');
    fs.mkdirSync(dir);
    fs.chmodSync(dir, 0o777);
    const expected = withoutCache();
    expect(cli(['keys', '--help'], { DELEGATE_GIT_CODE_CACHE: dir })).toEqual(expected);
    expect(cacheFiles(dir)).toEqual([]);
  });

  it('is kept under XDG_CACHE_HOME, else ~/.cache; off or a relative path keeps none; nowhere to write is no error', () => {
    const expected = withoutCache();
    const xdg = path.join(tmp, 'xdg');
    const home = path.join(tmp, 'home');
    expect(cli(['keys', '--help'], { XDG_CACHE_HOME: xdg, HOME: home })).toEqual(expected);
    expect(cacheFiles(path.join(xdg, 'delegate-git', 'code'))).toHaveLength(1);
    expect(cli(['keys', '--help'], { HOME: home })).toEqual(expected);
    expect(cacheFiles(path.join(home, '.cache', 'delegate-git', 'code'))).toHaveLength(1);

    const quiet = path.join(tmp, 'quiet');
    expect(cli(['keys', '--help'], { DELEGATE_GIT_CODE_CACHE: 'off', HOME: quiet })).toEqual(expected);
    expect(fs.existsSync(quiet)).toBe(false);
    // A relative directory is refused (where would it be?), not replaced by the default one.
    expect(cli(['keys', '--help'], { DELEGATE_GIT_CODE_CACHE: 'rel/code', HOME: quiet })).toEqual(expected);
    expect(fs.existsSync(quiet) || fs.existsSync(path.join(tmp, 'rel'))).toBe(false);

    const blocked = path.join(tmp, 'a-file');
    fs.writeFileSync(blocked, '');
    expect(cli(['keys', '--help'], { DELEGATE_GIT_CODE_CACHE: path.join(blocked, 'code') })).toEqual(
      expected,
    );
  });
});
