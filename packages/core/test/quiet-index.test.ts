import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cleanGitEnv,
  makeTempDir,
  makeTempRepo,
  removeDir,
  type TempRepo,
} from '../../../test/support/git-repo.js';
import {
  subjectOf,
  testKey,
  testPolicy,
  verdictLine,
  writeGovernance,
} from '../../../test/support/records.js';
import { checkStagedIn } from '../../../test/support/staged-check.js';
import { quickPreCommit } from '../src/quiet-commit.js';
import { Repository } from '../src/repository.js';

/**
 * The quick answer from the index file alone (no git process): it may say "nothing governed is staged" only when
 * that is true. With no git on PATH, the quick path's git half cannot run, so `passes` here is the index's answer.
 * Each decline is paired with a control that passes, and a randomized run holds every pass to the full check.
 */
const alice = testKey({ name: 'alice', roles: ['delegator'] });
const env = cleanGitEnv();
let noGitDir: string;
let noGit: NodeJS.ProcessEnv;

beforeAll(() => {
  noGitDir = makeTempDir();
  noGit = { ...env, PATH: noGitDir };
});
afterAll(() => removeDir(noGitDir));

const fullCheckIn = (dir: string) => checkStagedIn(dir, env);

/** Whether the full check finds anything governed in what is staged (a result, or a governed deletion). */
async function fullCheckSeesGoverned(dir: string): Promise<boolean> {
  const report = await fullCheckIn(dir);
  return report.results.length > 0 || report.deletions.length > 0;
}

function write(repo: TempRepo, file: string, content: string): void {
  fs.mkdirSync(path.dirname(path.join(repo.dir, file)), { recursive: true });
  fs.writeFileSync(path.join(repo.dir, file), content);
}

function adoptedRepo(): TempRepo {
  const repo = makeTempRepo();
  writeGovernance(repo.dir, testPolicy({ protect: ['src/**'] }), [alice]);
  write(repo, 'src/a.ts', 'export const a = 1;\n');
  write(repo, 'src/lib/b.ts', 'export const b = 1;\n');
  write(repo, 'docs/guide.md', 'guide\n');
  write(repo, 'README.md', 'readme\n');
  repo.git(['add', '.']);
  repo.git(['commit', '-q', '-m', 'adopt']);
  return repo;
}

describe('the quick answer from the index alone', () => {
  let repo: TempRepo;
  const fromIndex = async (extra: NodeJS.ProcessEnv = {}) =>
    (await quickPreCommit(repo.dir, { ...noGit, ...extra })).passes;
  /** The quick path with git: it learns HEAD's tree when git finds nothing governed staged. */
  const withGit = async () => (await quickPreCommit(repo.dir, env)).passes;
  const reset = () => repo.git(['reset', '-q']);
  const stage = (file: string, content: string) => {
    write(repo, file, content);
    repo.git(['add', file]);
  };

  beforeAll(async () => {
    repo = adoptedRepo();
    await fullCheckIn(repo.dir); // validates the policy, as the first hook run does
  });
  afterAll(() => repo.cleanup());

  it('cannot answer before it knows what HEAD governs, and can once git has answered', async () => {
    write(repo, 'README.md', 'edited\n');
    repo.git(['add', 'README.md']);
    expect(await fromIndex()).toBe(false);
    expect(await withGit()).toBe(true);
    expect(await fromIndex()).toBe(true);
    reset();
  });

  it('knows a commit made from an index it read: the next commit is answered without git', async () => {
    write(repo, 'README.md', 'first commit\n');
    repo.git(['add', 'README.md']);
    await fromIndex(); // as the hook of that commit reads the index it commits
    repo.git(['commit', '-q', '--no-verify', '-m', 'readme']);
    write(repo, 'docs/guide.md', 'guide, edited\n');
    repo.git(['add', 'docs/guide.md']);
    expect(await fromIndex()).toBe(true);
    // Control: a commit made from an index never read is not known.
    write(repo, 'docs/guide.md', 'guide, edited again\n');
    repo.git(['add', 'docs/guide.md']);
    repo.git(['commit', '-q', '--no-verify', '-m', 'guide']);
    write(repo, 'README.md', 'second\n');
    repo.git(['add', 'README.md']);
    expect(await fromIndex()).toBe(false);
    expect(await withGit()).toBe(true);
    reset();
  });

  const governedChanges: Array<[string, () => void]> = [
    ['a modified governed file', () => stage('src/a.ts', 'changed\n')],
    ['an added governed file', () => stage('src/new.ts', 'new\n')],
    ['a deleted governed file', () => repo.git(['rm', '-q', '--cached', 'src/a.ts'])],
    ['a governed file moved out', () => repo.git(['mv', 'src/lib/b.ts', 'docs/b.ts'])],
    ['a file moved in', () => repo.git(['mv', 'docs/guide.md', 'src/guide.md'])],
    ['a governed file made executable', () => repo.git(['update-index', '--chmod=+x', 'src/a.ts'])],
    [
      'a governed symlink',
      () => {
        fs.symlinkSync('a.ts', path.join(repo.dir, 'src/link'));
        repo.git(['add', 'src/link']);
      },
    ],
    [
      'a submodule at a governed path',
      () =>
        repo.git([
          'update-index',
          '--add',
          '--cacheinfo',
          `160000,${repo.gitText(['rev-parse', 'HEAD'])},src/sub`,
        ]),
    ],
    ['an edited policy', () => stage('.delegate-git/policy.json', '{}\n')],
    ['a new key file', () => stage('.delegate-git/keys/x.json', '{}\n')],
  ];

  it.each(governedChanges)('declines %s, and passes the same index without it', async (_, change) => {
    write(repo, 'README.md', `control ${Math.random()}\n`);
    repo.git(['add', 'README.md']);
    await withGit();
    expect(await fromIndex()).toBe(true);
    change();
    expect(await fromIndex()).toBe(false);
    repo.git(['reset', '-q', '--hard']);
    fs.rmSync(path.join(repo.dir, 'src/link'), { force: true });
  });

  it('reads the index git names in GIT_INDEX_FILE (as for `commit -a` and `commit <paths>`)', async () => {
    write(repo, 'README.md', 'in the main index\n');
    repo.git(['add', 'README.md']);
    await withGit();
    expect(await fromIndex()).toBe(true);
    const other = path.join(repo.dir, '.git', 'other-index');
    fs.copyFileSync(path.join(repo.dir, '.git', 'index'), other);
    write(repo, 'src/a.ts', 'only in the other index\n');
    spawnSync('git', ['add', 'src/a.ts'], { cwd: repo.dir, env: { ...env, GIT_INDEX_FILE: other } });
    expect(await fromIndex({ GIT_INDEX_FILE: other })).toBe(false);
    expect(await fromIndex({ GIT_INDEX_FILE: '.git/other-index' })).toBe(false); // relative, as git sets it
    expect(await fromIndex()).toBe(true);
    repo.git(['reset', '-q', '--hard']);
  });

  it('declines a path the ledger has recorded once the ledger moves, and answers again once it knows the tip', async () => {
    write(repo, 'README.md', 'before the ledger moves\n');
    repo.git(['add', 'README.md']);
    await withGit();
    expect(await fromIndex()).toBe(true);
    const guide = subjectOf('docs/guide.md', 'recorded guide\n');
    repo.blob('recorded guide\n');
    const opened = await Repository.open(repo.dir, env);
    await opened.ledger.append([{ blob: guide.gitBlob, lines: [verdictLine(alice, [guide])] }]);
    await opened.close();
    expect(await fromIndex()).toBe(false); // a new tip: nothing known under it
    await fullCheckIn(repo.dir);
    await withGit();
    expect(await fromIndex()).toBe(true);
    write(repo, 'docs/guide.md', 'recorded path, edited\n');
    repo.git(['add', 'docs/guide.md']);
    expect(await fromIndex()).toBe(false);
    expect(await fullCheckSeesGoverned(repo.dir)).toBe(true);
    repo.git(['reset', '-q', '--hard']);
  });

  it('reads a version 4 index with an untracked cache (as feature.manyFiles sets) and paths that are not ASCII', async () => {
    repo.git(['update-index', '--index-version', '4']);
    repo.git(['config', 'core.untrackedCache', 'true']);
    try {
      stage('docs/ü-guide.md', 'not ASCII, not governed\n');
      repo.git(['status', '--porcelain']); // writes the UNTR extension
      expect(fs.readFileSync(path.join(repo.dir, '.git', 'index')).includes('UNTR')).toBe(true);
      await withGit();
      expect(await fromIndex()).toBe(true);
      stage('src/ñ.ts', 'not ASCII, governed\n');
      expect(await fromIndex()).toBe(false);
      expect(await fullCheckSeesGoverned(repo.dir)).toBe(true);
    } finally {
      repo.git(['reset', '-q', '--hard']);
      fs.rmSync(path.join(repo.dir, 'docs/ü-guide.md'), { force: true });
      fs.rmSync(path.join(repo.dir, 'src/ñ.ts'), { force: true });
      repo.git(['update-index', '--index-version', '2']);
      repo.git(['config', '--unset', 'core.untrackedCache']);
    }
  });

  it('finds a linked worktree from GIT_DIR, as git sets it there', async () => {
    const worktree = `${repo.dir}-wt`;
    repo.git(['worktree', 'add', '-q', '--detach', worktree]);
    try {
      const gitDir = repo.gitText(['rev-parse', '--path-format=absolute', '--git-common-dir']);
      const wtGitDir = path.join(gitDir, 'worktrees', path.basename(worktree));
      fs.writeFileSync(path.join(worktree, 'README.md'), 'from the worktree\n');
      spawnSync('git', ['add', 'README.md'], { cwd: worktree, env });
      await quickPreCommit(worktree, env);
      expect((await quickPreCommit(worktree, { ...noGit, GIT_DIR: wtGitDir })).passes).toBe(true);
      fs.writeFileSync(path.join(worktree, 'src', 'a.ts'), 'from the worktree\n');
      spawnSync('git', ['add', 'src/a.ts'], { cwd: worktree, env });
      expect((await quickPreCommit(worktree, { ...noGit, GIT_DIR: wtGitDir })).passes).toBe(false);
    } finally {
      repo.git(['worktree', 'remove', '--force', worktree]);
    }
  });
});

/**
 * Random sequences of staging, unstaging and committing: whenever the index alone says "passes", the full check
 * must find nothing governed staged. And it must say so often enough to be worth having.
 */
describe('the quick answer for links no glob matches, under which globbed files would appear', () => {
  let repo: TempRepo;
  const fromIndex = async () => (await quickPreCommit(repo.dir, noGit)).passes;
  const withGit = async () => (await quickPreCommit(repo.dir, env)).passes;

  beforeAll(async () => {
    repo = makeTempRepo();
    writeGovernance(repo.dir, testPolicy({ protect: ['src/**/*.js'] }), [alice]);
    write(repo, 'lib/evil.js', 'steal()\n');
    write(repo, 'README.md', 'readme\n');
    repo.git(['add', '.']);
    repo.git(['commit', '-q', '-m', 'adopt']);
    await fullCheckIn(repo.dir);
  });
  afterAll(() => repo.cleanup());

  const links: Array<[string, () => void]> = [
    [
      'a symbolic link src/util -> ../lib',
      () => {
        fs.mkdirSync(path.join(repo.dir, 'src'), { recursive: true });
        fs.symlinkSync('../lib', path.join(repo.dir, 'src/util'));
        repo.git(['add', 'src/util']);
      },
    ],
    [
      'a submodule at src/vendor',
      () =>
        repo.git([
          'update-index',
          '--add',
          '--cacheinfo',
          `160000,${repo.gitText(['rev-parse', 'HEAD'])},src/vendor`,
        ]),
    ],
  ];

  it.each(links)('declines %s, from the index and with git; the full check sees it', async (_, change) => {
    write(repo, 'README.md', `control ${Math.random()}\n`);
    repo.git(['add', 'README.md']);
    await withGit();
    expect(await fromIndex()).toBe(true);
    change();
    expect(await fromIndex()).toBe(false);
    expect(await withGit()).toBe(false);
    expect(await fullCheckSeesGoverned(repo.dir)).toBe(true);
    repo.git(['reset', '-q', '--hard']);
    fs.rmSync(path.join(repo.dir, 'src'), { recursive: true, force: true });
  });

  it('passes a symbolic link no glob reaches beneath (docs/link -> ../README.md)', async () => {
    write(repo, 'README.md', `control ${Math.random()}\n`);
    repo.git(['add', 'README.md']);
    await withGit();
    fs.mkdirSync(path.join(repo.dir, 'docs'), { recursive: true });
    fs.symlinkSync('../README.md', path.join(repo.dir, 'docs/link'));
    repo.git(['add', 'docs/link']);
    expect(await fromIndex()).toBe(true);
    expect(await withGit()).toBe(true);
    expect(await fullCheckSeesGoverned(repo.dir)).toBe(false);
    repo.git(['reset', '-q', '--hard']);
    fs.rmSync(path.join(repo.dir, 'docs'), { recursive: true, force: true });
  });
});

describe('the quick answer from the index, against the full check', () => {
  it('never passes what the full check would judge, over random histories', async () => {
    const repo = adoptedRepo();
    try {
      await fullCheckIn(repo.dir);
      let seed = 20261130;
      const random = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed % n;
      };
      const paths = [
        'README.md',
        'docs/guide.md',
        'docs/new.md',
        'src/a.ts',
        'src/lib/b.ts',
        'src/lib/c.ts',
        'tools/x.sh',
      ];
      let passes = 0;
      for (let step = 0; step < 60; step++) {
        const file = paths[random(paths.length)]!;
        const op = random(10);
        if (op < 5) {
          write(repo, file, `${file} at step ${step}\n`);
          repo.git(['add', file]);
        } else if (op === 5 && fs.existsSync(path.join(repo.dir, file))) {
          repo.git(['rm', '-q', '--cached', '--ignore-unmatch', file]);
        } else if (op === 6) {
          repo.git(['reset', '-q']);
        } else if (op === 7) {
          await quickPreCommit(repo.dir, { ...cleanGitEnv(), PATH: noGitDir }); // the hook of the commit below
          repo.git(['commit', '-q', '--no-verify', '--allow-empty', '-m', `step ${step}`]);
        } else {
          await quickPreCommit(repo.dir, env); // the quick path with git: learns what it can
        }
        const fromIndex = (await quickPreCommit(repo.dir, noGit)).passes;
        if (fromIndex) {
          passes++;
          expect(await fullCheckSeesGoverned(repo.dir), `step ${step}`).toBe(false);
        }
      }
      expect(passes).toBeGreaterThan(5);
    } finally {
      repo.cleanup();
    }
  }, 60_000);
});
