import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanGitEnv, makeTempDir, removeDir, runGit, runGitText } from '../../../test/support/git-repo.js';
import { splitZ } from '../src/snapshot.js';
import { parseRawDiff, removedPaths } from '../src/staged-changes.js';

/** parseRawDiff on what git itself prints, in both object formats. */
describe('parseRawDiff', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) removeDir(d);
  });

  for (const format of ['sha1', 'sha256']) {
    it(`reads additions, modifications, deletions, renames and type changes (${format})`, () => {
      const dir = makeTempDir();
      dirs.push(dir);
      execFileSync('git', ['init', '-q', `--object-format=${format}`, dir], { env: cleanGitEnv() });
      runGit(dir, ['config', 'user.name', 'T']);
      runGit(dir, ['config', 'user.email', 't@example.com']);
      const write = (f: string, text: string) => {
        fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
        fs.writeFileSync(path.join(dir, f), text);
      };
      const long = (seed: string) => Array.from({ length: 40 }, (_, i) => `${seed} line ${i}\n`).join('');
      write('keep.txt', 'keep\n');
      write('gone.txt', 'gone\n');
      write('old name.txt', long('moved'));
      write('link', 'target\n');
      runGit(dir, ['add', '.']);
      runGit(dir, ['commit', '-q', '-m', 'base']);
      write('keep.txt', 'changed\n');
      write('new/file.ts', 'new\n');
      fs.rmSync(path.join(dir, 'gone.txt'));
      fs.renameSync(path.join(dir, 'old name.txt'), path.join(dir, 'new name.txt'));
      fs.rmSync(path.join(dir, 'link'));
      fs.symlinkSync('keep.txt', path.join(dir, 'link'));
      runGit(dir, ['add', '-A']);
      const out = execFileSync('git', ['diff-index', '--cached', '--raw', '-z', '-M', '-C', 'HEAD'], {
        cwd: dir,
        env: cleanGitEnv(),
      });
      const blob = (spec: string) => runGitText(dir, ['rev-parse', `:${spec}`]);
      const changes = parseRawDiff(splitZ(out)).sort((a, b) => a.path.localeCompare(b.path));
      expect(changes).toEqual([
        {
          status: 'D',
          path: 'gone.txt',
          blob: '0'.repeat(format === 'sha1' ? 40 : 64),
          replaces: runGitText(dir, ['rev-parse', 'HEAD:gone.txt']),
        },
        {
          status: 'M',
          path: 'keep.txt',
          blob: blob('keep.txt'),
          replaces: runGitText(dir, ['rev-parse', 'HEAD:keep.txt']),
        },
        {
          status: 'T',
          path: 'link',
          blob: blob('link'),
          replaces: runGitText(dir, ['rev-parse', 'HEAD:link']),
          // A file that became a symbolic link: governed also by what it could bring beneath its path.
          symlink: true,
        },
        { status: 'R', path: 'new name.txt', blob: blob('new name.txt'), from: 'old name.txt' },
        { status: 'A', path: 'new/file.ts', blob: blob('new/file.ts') },
      ]);
    });
  }

  it('marks submodules: added, moved to another commit, replacing a file (which is deleted); removed ones are deletions', () => {
    const dir = makeTempDir();
    dirs.push(dir);
    execFileSync('git', ['init', '-q', dir], { env: cleanGitEnv() });
    runGit(dir, ['config', 'user.name', 'T']);
    runGit(dir, ['config', 'user.email', 't@example.com']);
    fs.writeFileSync(path.join(dir, 'file.ts'), 'a file\n');
    runGit(dir, ['add', 'file.ts']);
    runGit(dir, ['commit', '-q', '-m', 'one']);
    const one = runGitText(dir, ['rev-parse', 'HEAD']);
    const gitlink = (p: string, commit: string) =>
      runGit(dir, ['update-index', '--add', '--cacheinfo', `160000,${commit},${p}`]);
    gitlink('moved', one);
    gitlink('removed', one);
    gitlink('to-file', one);
    runGit(dir, ['commit', '-q', '-m', 'two']);
    const two = runGitText(dir, ['rev-parse', 'HEAD']);
    gitlink('added', two);
    gitlink('moved', two);
    runGit(dir, ['update-index', '--force-remove', 'removed', 'file.ts', 'to-file']);
    gitlink('file.ts', two);
    runGit(dir, [
      'update-index',
      '--add',
      '--cacheinfo',
      `100644,${runGitText(dir, ['hash-object', '-w', '--stdin'], 'x\n')},to-file`,
    ]);
    const out = execFileSync('git', ['diff-index', '--cached', '--raw', '-z', 'HEAD'], {
      cwd: dir,
      env: cleanGitEnv(),
    });
    const changes = parseRawDiff(splitZ(out)).sort(
      (a, b) => a.path.localeCompare(b.path) || a.status.localeCompare(b.status),
    );
    expect(changes).toEqual([
      { status: 'A', path: 'added', blob: two, submodule: true },
      { status: 'A', path: 'file.ts', blob: two, submodule: true },
      { status: 'D', path: 'file.ts', blob: two },
      { status: 'M', path: 'moved', blob: two, submodule: true, replaces: one },
      { status: 'D', path: 'removed', blob: '0'.repeat(40), replaces: one, removesLink: true }, // a link: deleting it is judged beneath too
      // A submodule turned into a file removes what it governed beneath its path, as deleting it does.
      {
        status: 'T',
        path: 'to-file',
        blob: runGitText(dir, ['rev-parse', ':to-file']),
        replaces: one,
        removesLink: true,
      },
    ]);
  });

  it('a symbolic link turned into a file removes the link (rt55 f03), as deleting it does; a file turned into a link removes none', () => {
    const dir = makeTempDir();
    dirs.push(dir);
    execFileSync('git', ['init', '-q', dir], { env: cleanGitEnv() });
    runGit(dir, ['config', 'user.name', 'T']);
    runGit(dir, ['config', 'user.email', 't@example.com']);
    fs.symlinkSync('lib', path.join(dir, 'src'));
    fs.writeFileSync(path.join(dir, 'plain'), 'a file\n');
    runGit(dir, ['add', '-A']);
    runGit(dir, ['commit', '-q', '-m', 'a link and a file']);
    fs.rmSync(path.join(dir, 'src'));
    fs.writeFileSync(path.join(dir, 'src'), 'a file now\n');
    fs.rmSync(path.join(dir, 'plain'));
    fs.symlinkSync('src', path.join(dir, 'plain'));
    runGit(dir, ['add', '-A']);
    const out = execFileSync('git', ['diff-index', '--cached', '--raw', '-z', 'HEAD'], {
      cwd: dir,
      env: cleanGitEnv(),
    });
    const changes = parseRawDiff(splitZ(out)).sort((a, b) => a.path.localeCompare(b.path));
    expect(changes.map((c) => [c.path, c.status, c.removesLink === true, c.symlink === true])).toEqual([
      ['plain', 'T', false, true],
      ['src', 'T', true, false],
    ]);
    expect(removedPaths(changes)).toEqual([{ path: 'src', link: true }]);
  });
});
