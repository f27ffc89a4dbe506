import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanGitEnv, makeTempRepo, type TempRepo } from '../../../test/support/git-repo.js';
import { type GitDirs, gitDirsOf, looseCommitTree, refTarget } from '../src/git-files.js';

/** What git-files reads from the file system, against what git itself says about the same repository. */
const env = cleanGitEnv();
let repo: TempRepo;
let dirs: GitDirs;

beforeAll(() => {
  repo = makeTempRepo();
  repo.commit({ 'a.txt': 'a\n' }, 'one');
  dirs = gitDirsOf(repo.dir, env)!;
});
afterAll(() => repo.cleanup());

describe('gitDirsOf', () => {
  it('finds .git at the top of the work tree, and the index in it', () => {
    const gitDir = path.join(repo.dir, '.git');
    expect(dirs).toEqual({ gitDir, commonDir: gitDir, indexFile: path.join(gitDir, 'index') });
  });

  it('follows a linked worktree to its own git dir and the common one, from its .git file or GIT_DIR', () => {
    const worktree = `${repo.dir}-wt`;
    repo.git(['worktree', 'add', '-q', '--detach', worktree]);
    try {
      const gitDir = path.join(repo.dir, '.git', 'worktrees', path.basename(worktree));
      const expected = {
        gitDir,
        commonDir: path.join(repo.dir, '.git'),
        indexFile: path.join(gitDir, 'index'),
      };
      expect(gitDirsOf(worktree, env)).toEqual(expected);
      expect(gitDirsOf(worktree, { ...env, GIT_DIR: gitDir })).toEqual(expected);
      expect(gitDirsOf(worktree, { ...env, GIT_INDEX_FILE: 'x.lock' })?.indexFile).toBe(
        path.join(worktree, 'x.lock'),
      );
    } finally {
      repo.git(['worktree', 'remove', '--force', worktree]);
    }
  });

  it('leaves to git another object directory and a directory without .git', () => {
    expect(gitDirsOf(repo.dir, { ...env, GIT_OBJECT_DIRECTORY: '/elsewhere' })).toBeNull();
    expect(gitDirsOf(path.join(repo.dir, '..'), env)).toBeNull();
  });

  it('leaves to git refs kept in a reftable', () => {
    const other = makeTempRepo();
    try {
      expect(gitDirsOf(other.dir, env)).not.toBeNull();
      fs.mkdirSync(path.join(other.dir, '.git', 'reftable'));
      expect(gitDirsOf(other.dir, env)).toBeNull();
    } finally {
      other.cleanup();
    }
  });
});

describe('refTarget', () => {
  it('reads HEAD through its branch, loose and then packed, as git does', () => {
    const head = repo.gitText(['rev-parse', 'HEAD']);
    expect(refTarget(dirs, 'HEAD')).toBe(head);
    repo.git(['pack-refs', '--all']);
    expect(fs.existsSync(path.join(repo.dir, '.git', 'refs', 'heads', 'main'))).toBe(false);
    expect(refTarget(dirs, 'HEAD')).toBe(head);
    expect(refTarget(dirs, 'refs/heads/main')).toBe(head);
  });

  it('prefers a loose ref to its packed copy, and reads a detached HEAD', () => {
    repo.git(['pack-refs', '--all']);
    const second = repo.commit({ 'b.txt': 'b\n' }, 'two'); // a loose ref newer than the packed one
    expect(refTarget(dirs, 'HEAD')).toBe(second);
    repo.git(['checkout', '-q', '--detach', 'HEAD~1']);
    expect(refTarget(dirs, 'HEAD')).toBe(repo.gitText(['rev-parse', 'HEAD']));
    repo.git(['checkout', '-q', 'main']);
  });

  it('says null for a ref that does not exist (an unborn branch, no ledger yet), undefined for what it cannot read', () => {
    expect(refTarget(dirs, 'refs/notes/delegations')).toBeNull();
    const unborn = makeTempRepo();
    try {
      expect(refTarget(gitDirsOf(unborn.dir, env)!, 'HEAD')).toBeNull();
      fs.writeFileSync(path.join(unborn.dir, '.git', 'HEAD'), 'something else\n');
      expect(refTarget(gitDirsOf(unborn.dir, env)!, 'HEAD')).toBeUndefined();
    } finally {
      unborn.cleanup();
    }
  });

  it('does not take a longer ref name in packed-refs for the one asked', () => {
    repo.git(['update-ref', 'refs/notes/delegations-old', 'HEAD']);
    repo.git(['pack-refs', '--all']);
    expect(refTarget(dirs, 'refs/notes/delegations')).toBeNull();
    repo.git(['update-ref', 'refs/notes/delegations', 'HEAD~1']);
    repo.git(['pack-refs', '--all']);
    expect(refTarget(dirs, 'refs/notes/delegations')).toBe(repo.gitText(['rev-parse', 'HEAD~1']));
  });
});

describe('looseCommitTree', () => {
  it('reads the tree of a loose commit, and nothing once git packed it', async () => {
    const commit = repo.commit({ 'c.txt': 'c\n' }, 'three');
    expect(looseCommitTree(dirs, commit)).toBe(repo.gitText(['rev-parse', `${commit}^{tree}`]));
    repo.git(['gc', '-q']);
    expect(looseCommitTree(dirs, commit)).toBeNull();
  });

  it('refuses a loose object that is not what its name says', async () => {
    const commit = repo.commit({ 'd.txt': 'd\n' }, 'four');
    const file = path.join(repo.dir, '.git', 'objects', commit.slice(0, 2), commit.slice(2));
    const other = repo.commit({ 'e.txt': 'e\n' }, 'five');
    const otherFile = path.join(repo.dir, '.git', 'objects', other.slice(0, 2), other.slice(2));
    fs.chmodSync(file, 0o644);
    fs.copyFileSync(otherFile, file);
    expect(looseCommitTree(dirs, commit)).toBeNull();
    expect(looseCommitTree(dirs, other)).toBe(repo.gitText(['rev-parse', `${other}^{tree}`]));
    fs.writeFileSync(file, 'not zlib');
    expect(looseCommitTree(dirs, commit)).toBeNull();
  });
});
