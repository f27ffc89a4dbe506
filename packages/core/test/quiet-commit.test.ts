import { execFileSync } from 'node:child_process';
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
  keyFilesOf,
  subjectOf,
  testKey,
  testPolicy,
  verdictLine,
  writeGovernance,
} from '../../../test/support/records.js';
import { checkStagedIn as checkStagedInRepo } from '../../../test/support/staged-check.js';
import { quickPreCommit } from '../src/quiet-commit.js';
import { Repository } from '../src/repository.js';

const alice = testKey({ name: 'alice', roles: ['delegator'] });

const env = cleanGitEnv();

const checkStagedIn = (dir: string) => checkStagedInRepo(dir, env);

function stageIn(repo: TempRepo, file: string, content: string): void {
  fs.mkdirSync(path.dirname(path.join(repo.dir, file)), { recursive: true });
  fs.writeFileSync(path.join(repo.dir, file), content);
  repo.git(['add', '--', file]);
}

/**
 * The hook's quick path may only ever say "nothing governed is staged" when that is true; every "not sure" sends
 * the commit to the full check. Each pass below is paired with a refusal to answer.
 */
describe('quickPreCommit', () => {
  let repo: TempRepo;
  let cacheDir: string;

  const quick = async () => (await quickPreCommit(repo.dir, env)).passes;
  const fullCheck = () => checkStagedIn(repo.dir);
  const stage = (file: string, content: string) => stageIn(repo, file, content);
  const unstageAll = () => repo.git(['reset', '-q']);

  beforeAll(() => {
    repo = makeTempRepo();
    cacheDir = path.join(repo.dir, '.git', 'delegate-git', 'cache');
  });
  afterAll(() => repo.cleanup());

  it('cannot answer before the first commit (no HEAD to compare the index with)', async () => {
    writeGovernance(repo.dir, testPolicy({ protect: ['src/**'] }), [alice]);
    repo.git(['add', '.']);
    expect(await quick()).toBe(false);
    repo.git(['commit', '-q', '-m', 'adopt']);
  });

  it('passes a commit that stages nothing, once the full check has validated the policy', async () => {
    expect(await quick()).toBe(false);
    expect((await fullCheck()).results).toEqual([]);
    expect(await quick()).toBe(true);
  });

  it('passes an ungoverned change, and answers nothing once the validated policy is forgotten', async () => {
    stage('README.md', 'hello\n');
    expect(await quick()).toBe(true);
    for (const n of fs.readdirSync(cacheDir).filter((f) => f.startsWith('policy-')))
      fs.rmSync(path.join(cacheDir, n));
    expect(await quick()).toBe(false);
    expect((await fullCheck()).results).toEqual([]);
    expect(await quick()).toBe(true);
  });

  it('passes at a path holding a newline; a path holding U+FFFD, which may be a decoding of another name, is left to the full check', async () => {
    stage('README.md', 'hello again\n');
    expect(await quick()).toBe(true);
    const root = makeTempDir();
    try {
      const newline = path.join(root, 'new\nline');
      fs.cpSync(repo.dir, newline, { recursive: true });
      expect((await quickPreCommit(newline, env)).passes).toBe(true);
      // Bytes that are not UTF-8 decode to U+FFFD: the string may name this copy while the hook runs elsewhere.
      const replaced = path.join(root, 'latin1-\uFFFD');
      fs.cpSync(repo.dir, replaced, { recursive: true });
      expect((await quickPreCommit(replaced, env)).passes).toBe(false);
      const decodedGitDir = { ...env, GIT_DIR: path.join(replaced, '.git') };
      expect((await quickPreCommit(newline, decodedGitDir)).passes).toBe(false);
    } finally {
      removeDir(root);
      unstageAll();
    }
  });

  it('finds the caches of the common git dir from a linked worktree, with or without GIT_DIR set', async () => {
    const worktree = path.join(repo.dir, '..', `${path.basename(repo.dir)}-wt`);
    repo.git(['worktree', 'add', '-q', '--detach', worktree]);
    try {
      fs.writeFileSync(path.join(worktree, 'README.md'), 'from the worktree\n');
      execFileSync('git', ['add', 'README.md'], { cwd: worktree, env });
      expect((await quickPreCommit(worktree, env)).passes).toBe(true);
      const gitDir = execFileSync('git', ['rev-parse', '--absolute-git-dir'], { cwd: worktree, env })
        .toString()
        .trim();
      expect((await quickPreCommit(worktree, { ...env, GIT_DIR: gitDir })).passes).toBe(true);
      // Control: without the validated policy in the common dir, neither can answer.
      const saved = fs.readdirSync(cacheDir).filter((f) => f.startsWith('policy-'));
      for (const n of saved) fs.renameSync(path.join(cacheDir, n), path.join(cacheDir, `${n}.away`));
      expect((await quickPreCommit(worktree, env)).passes).toBe(false);
      expect((await quickPreCommit(worktree, { ...env, GIT_DIR: gitDir })).passes).toBe(false);
      for (const n of saved) fs.renameSync(path.join(cacheDir, `${n}.away`), path.join(cacheDir, n));
    } finally {
      repo.git(['worktree', 'remove', '--force', worktree]);
    }
  });

  it('never passes a protected path, nor a governance file', async () => {
    stage('src/a.ts', 'export {};\n');
    expect(await quick()).toBe(false);
    unstageAll();
    stage('.delegate-git/keys/extra.json', '{}\n');
    expect(await quick()).toBe(false);
    unstageAll();
    fs.rmSync(path.join(repo.dir, '.delegate-git/keys/extra.json'));
    stage('README.md', 'control\n');
    expect(await quick()).toBe(true);
  });

  it('never passes a path the ledger has recorded, once it knows the recorded paths for the ledger tip', async () => {
    const recorded = subjectOf('docs/guide.md', 'guide\n');
    repo.blob('guide\n');
    const opened = await Repository.open(repo.dir, env);
    await opened.ledger.append([{ blob: recorded.gitBlob, lines: [verdictLine(alice, [recorded])] }]);
    await opened.close();
    // A new ledger tip: its recorded paths are not cached yet, so an unprotected path cannot be answered.
    expect(await quick()).toBe(false);
    await fullCheck();
    expect(await quick()).toBe(true); // README.md: control
    stage('docs/guide.md', 'guide, edited\n');
    expect(await quick()).toBe(false);
    unstageAll();
    // A path is matched whole: neither a longer nor a shorter path around the recorded one is taken for it.
    stage('docs/guide.md.bak', 'x\n');
    stage('guide.md', 'x\n');
    expect(await quick()).toBe(true);
    // Many unprotected paths at once (looked up in a set rather than in the file's text): the same answers.
    for (let i = 0; i < 12; i++) stage(`notes/n${i}.md`, `${i}\n`);
    expect(await quick()).toBe(true);
    stage('docs/guide.md', 'guide, edited\n');
    expect(await quick()).toBe(false);
    unstageAll();
  });

  it('validates an edited policy again before trusting it, and ignores a damaged policy cache', async () => {
    stage('README.md', 'again\n');
    expect(await quick()).toBe(true);
    writeGovernance(repo.dir, testPolicy({ protect: ['src/**', 'README.md'] }), [alice]);
    repo.git(['add', '.delegate-git/policy.json']);
    expect(await quick()).toBe(false); // and the policy file itself is governed anyway
    repo.git(['reset', '-q', '--', '.delegate-git/policy.json']);
    repo.git(['checkout', '--', '.delegate-git/policy.json']);
    expect(await quick()).toBe(true);
    for (const n of fs.readdirSync(cacheDir).filter((f) => f.startsWith('policy-')))
      fs.writeFileSync(path.join(cacheDir, n), '{"protect": [');
    expect(await quick()).toBe(false);
    for (const n of fs.readdirSync(cacheDir).filter((f) => f.startsWith('policy-')))
      fs.writeFileSync(path.join(cacheDir, n), '{"protect": "src/**"}');
    expect(await quick()).toBe(false);
  });
});

/**
 * The quick path also passes a commit whose every governed file the full check already found promoted, under the
 * same committed governance and the same ledger tip. Each pass is paired with the change that must send the commit
 * back to the full check.
 */
describe('quickPreCommit with decisions already made', () => {
  let repo: TempRepo;
  let cacheDir: string;
  const bob = testKey({ name: 'bob', roles: ['delegator'] });
  const quick = async () => (await quickPreCommit(repo.dir, env)).passes;
  const fullCheck = () => checkStagedIn(repo.dir);
  const stage = (file: string, content: string) => stageIn(repo, file, content);
  const record = async (
    file: string,
    content: string,
    verdict: 'UNIT_PASSED' | 'UNIT_FAILED' = 'UNIT_PASSED',
  ) => {
    const subject = subjectOf(file, content);
    repo.blob(content);
    const opened = await Repository.open(repo.dir, env);
    await opened.ledger.append([
      { blob: subject.gitBlob, lines: [verdictLine(alice, [subject], { verdict })] },
    ]);
    await opened.close();
  };
  const promotedPaths = async () => (await fullCheck()).results.filter((r) => r.promoted).map((r) => r.path);

  beforeAll(async () => {
    repo = makeTempRepo();
    cacheDir = path.join(repo.dir, '.git', 'delegate-git', 'cache');
    writeGovernance(repo.dir, testPolicy({ protect: ['src/**'] }), [alice]);
    repo.git(['add', '.']);
    repo.git(['commit', '-q', '-m', 'adopt']);
    await record('src/a.ts', 'export const a = 1;\n');
    await record('src/b.ts', 'export const b = 1;\n');
  });
  afterAll(() => repo.cleanup());

  it('passes once the full check has found every staged governed file promoted', async () => {
    stage('src/a.ts', 'export const a = 1;\n');
    stage('src/b.ts', 'export const b = 1;\n');
    expect(await quick()).toBe(false); // nothing decided yet
    expect(await promotedPaths()).toEqual(['src/a.ts', 'src/b.ts']);
    expect(await quick()).toBe(true);
  });

  it('does not pass a governed file decided as refused, nor one never decided', async () => {
    stage('src/c.ts', 'export const c = 1;\n');
    expect(await quick()).toBe(false);
    expect(await promotedPaths()).toEqual(['src/a.ts', 'src/b.ts']); // c refused: no verdict
    expect(await quick()).toBe(false); // its refusal is cached, and a refusal is never a pass
    repo.git(['rm', '-q', '--cached', '--', 'src/c.ts']);
    expect(await quick()).toBe(true);
  });

  it('does not pass other content of a promoted path', async () => {
    stage('src/a.ts', 'export const a = 2;\n');
    expect(await quick()).toBe(false);
    expect(await promotedPaths()).toEqual(['src/b.ts']);
    expect(await quick()).toBe(false);
    stage('src/a.ts', 'export const a = 1;\n');
    expect(await quick()).toBe(true);
  });

  it('asks the full check again when the ledger moves, and passes after it', async () => {
    await record('src/a.ts', 'export const a = 1;\n', 'UNIT_FAILED'); // a failed verdict beside the passed one
    expect(await quick()).toBe(false);
    expect(await promotedPaths()).toEqual(['src/a.ts', 'src/b.ts']);
    expect(await quick()).toBe(true);
  });

  it('leaves to the full check a commit that also stages a governance file or deletes a governed one', async () => {
    const [bobFile] = keyFilesOf([bob]);
    stage(bobFile!.path, bobFile!.text);
    expect(await quick()).toBe(false);
    repo.git(['rm', '-q', '--cached', '--', bobFile!.path]);
    fs.rmSync(path.join(repo.dir, bobFile!.path));
    expect(await quick()).toBe(true);

    repo.git(['commit', '-q', '-m', 'a and b']); // no hook in this repository: committed as staged
    repo.git(['rm', '-q', '--cached', '--', 'src/b.ts']);
    expect(await quick()).toBe(false); // the full check reports the deletion
    expect((await fullCheck()).deletions.map((d) => d.path)).toEqual(['src/b.ts']);
    repo.git(['reset', '-q']);
  });

  it('does not use decisions made under other committed governance (a key added in HEAD)', async () => {
    stage('src/d.ts', 'export const d = 1;\n');
    await record('src/d.ts', 'export const d = 1;\n');
    expect(await promotedPaths()).toEqual(['src/d.ts']);
    expect(await quick()).toBe(true);
    repo.git(['reset', '-q']);
    const [bobFile] = keyFilesOf([bob]);
    repo.commit({ [bobFile!.path]: bobFile!.text }, 'bob joins');
    stage('src/d.ts', 'export const d = 1;\n'); // the same blob, decided under the old keys
    expect(await quick()).toBe(false);
    expect(await promotedPaths()).toEqual(['src/d.ts']);
    expect(await quick()).toBe(true);
  });

  it('ignores a damaged or missing promotions file or governance alias', async () => {
    expect(await quick()).toBe(true);
    for (const n of fs.readdirSync(cacheDir).filter((f) => f.startsWith('governance-')))
      fs.writeFileSync(path.join(cacheDir, n), '{"digest": 7}');
    expect(await quick()).toBe(false);
    await fullCheck();
    expect(await quick()).toBe(true);
    // One file per governance at this tip (the test above judged under two).
    const promotions = fs.readdirSync(cacheDir).filter((f) => f.startsWith('promoted-'));
    const kept = promotions.map((n) => fs.readFileSync(path.join(cacheDir, n)));
    const each = (write: (file: string, i: number) => void) => {
      for (const [i, n] of promotions.entries()) write(path.join(cacheDir, n), i);
    };
    each((file, i) => fs.writeFileSync(file, kept[i]!.subarray(0, kept[i]!.length - 2)));
    expect(await quick()).toBe(false);
    each((file, i) => fs.writeFileSync(file, kept[i]!));
    expect(await quick()).toBe(true);
    each((file) => fs.rmSync(file));
    expect(await quick()).toBe(false);
  });

  // Last: it commits.
  it('learns the tree of an index it passed from decisions: the commit after it is answered without git', async () => {
    const scratch = makeTempDir();
    try {
      const noGit = { ...env, PATH: scratch };
      await record('src/d.ts', 'export const d = 1;\n');
      stage('src/d.ts', 'export const d = 1;\n');
      stage('README.md', 'an ungoverned path: the full check reads the recorded paths for it\n');
      expect(await promotedPaths()).toEqual(['src/d.ts']);
      repo.git(['reset', '-q', '--', 'README.md']);
      expect(await quick()).toBe(true); // from the decisions, as the hook of the commit below
      repo.git(['commit', '-q', '--no-verify', '-m', 'promoted d']);
      stage('README.md', 'after a promoted commit\n');
      expect((await quickPreCommit(repo.dir, noGit)).passes).toBe(true);
      stage('src/e.ts', 'export const e = 1;\n');
      expect((await quickPreCommit(repo.dir, noGit)).passes).toBe(false); // governed: git (absent) must answer
    } finally {
      repo.git(['reset', '-q', '--hard']);
      removeDir(scratch);
    }
  });
});

describe('quickPreCommit with a keys directory of its own', () => {
  it('reads that directory, not the default one, to name the governance', async () => {
    const repo = makeTempRepo();
    try {
      writeGovernance(repo.dir, testPolicy({ protect: ['src/**'], keysDir: 'trust' }), [alice]);
      repo.git(['add', '.']);
      repo.git(['commit', '-q', '-m', 'adopt']);
      const content = 'export const x = 1;\n';
      const subject = subjectOf('src/x.ts', content);
      stageIn(repo, 'src/x.ts', content);
      const opened = await Repository.open(repo.dir, env);
      await opened.ledger.append([{ blob: subject.gitBlob, lines: [verdictLine(alice, [subject])] }]);
      await opened.close();
      const promoted = async () => (await checkStagedIn(repo.dir)).results.map((r) => r.promoted);
      const quick = async () => (await quickPreCommit(repo.dir, env)).passes;
      expect(await promoted()).toEqual([true]);
      expect(await quick()).toBe(true);

      const [bobFile] = keyFilesOf([testKey({ name: 'bob', roles: ['delegator'] })], 'trust');
      repo.git(['reset', '-q']);
      repo.commit({ [bobFile!.path]: bobFile!.text }, 'bob joins');
      repo.git(['add', 'src/x.ts']);
      expect(await quick()).toBe(false);
      expect(await promoted()).toEqual([true]);
      expect(await quick()).toBe(true);
    } finally {
      repo.cleanup();
    }
  });
});

/**
 * Past a few dozen changes the quick path looks each staged file up among the promotions before matching it against
 * the policy, and takes the staged blobs from the index file, not from git. Each pass is paired with a refusal to
 * answer.
 */
describe('quickPreCommit with many staged changes', () => {
  let repo: TempRepo;
  const quick = async () => (await quickPreCommit(repo.dir, env)).passes;
  // More than the quick path's few changes; a name beyond ASCII, which git orders as bytes.
  const files = Array.from({ length: 40 }, (_, i) => `src/f${String(i).padStart(2, '0')}.ts`).concat(
    'src/é-accented.ts',
  );
  const contentOf = (file: string) => `export const at = ${JSON.stringify(file)};\n`;

  beforeAll(async () => {
    repo = makeTempRepo();
    writeGovernance(repo.dir, testPolicy({ protect: ['src/**'] }), [alice]);
    fs.mkdirSync(path.join(repo.dir, 'src'));
    fs.writeFileSync(path.join(repo.dir, 'src/old.ts'), 'committed before any record\n');
    repo.git(['add', '.']);
    repo.git(['commit', '-q', '-m', 'adopt']); // no hook in this repository: committed as staged
    const subjects = files.map((f) => subjectOf(f, contentOf(f)));
    for (const f of files) stageIn(repo, f, contentOf(f));
    // Ungoverned: the full check caches the ledger's recorded paths for it, which the quick path then reads.
    stageIn(repo, 'README.md', 'ungoverned\n');
    const opened = await Repository.open(repo.dir, env);
    await opened.ledger.append(subjects.map((s) => ({ blob: s.gitBlob, lines: [verdictLine(alice, [s])] })));
    await opened.close();
    expect(await quick()).toBe(false); // nothing decided yet
    const report = await checkStagedIn(repo.dir);
    expect(report.results.filter((r) => r.promoted).map((r) => r.path)).toEqual([...files].sort());
  });
  afterAll(() => repo.cleanup());

  it('passes every staged file promoted, with an ungoverned change beside them or not', async () => {
    expect(await quick()).toBe(true);
    repo.git(['reset', '-q', '--', 'README.md']);
    expect(await quick()).toBe(true);
    stageIn(repo, 'README.md', 'ungoverned\n');
    expect(await quick()).toBe(true);
  });

  it('does not pass one more governed file never decided, nor other content of a promoted one', async () => {
    stageIn(repo, 'src/zz-new.ts', 'never recorded\n');
    expect(await quick()).toBe(false);
    repo.git(['rm', '-q', '--cached', '--', 'src/zz-new.ts']);
    expect(await quick()).toBe(true);
    stageIn(repo, 'src/f17.ts', 'other content\n');
    expect(await quick()).toBe(false);
    stageIn(repo, 'src/f17.ts', contentOf('src/f17.ts'));
    expect(await quick()).toBe(true);
  });

  it('does not pass a promoted file staged as a symbolic link or an executable, when never decided so', async () => {
    const link = path.join(repo.dir, 'src/f03.ts');
    fs.rmSync(link);
    fs.symlinkSync('f04.ts', link);
    repo.git(['add', '--', 'src/f03.ts']);
    expect(await quick()).toBe(false); // the link's text is another blob
    fs.rmSync(link);
    stageIn(repo, 'src/f03.ts', contentOf('src/f03.ts'));
    expect(await quick()).toBe(true);
  });

  it('leaves to the full check a deletion or a rename of a governed path among them', async () => {
    repo.git(['rm', '-q', '--cached', '--', 'src/old.ts']);
    expect(await quick()).toBe(false);
    repo.git(['reset', '-q', '--', 'src/old.ts']);
    expect(await quick()).toBe(true);
    repo.git(['mv', 'src/old.ts', 'src/f99-moved.ts']);
    expect(await quick()).toBe(false);
    repo.git(['mv', 'src/f99-moved.ts', 'src/old.ts']);
    expect(await quick()).toBe(true);
  });

  it('leaves governed changes to the full check when the index is one it does not read (split)', async () => {
    repo.git(['update-index', '--split-index']);
    expect(await quick()).toBe(false);
    repo.git(['update-index', '--no-split-index']);
    expect(await quick()).toBe(true);
  });
});
