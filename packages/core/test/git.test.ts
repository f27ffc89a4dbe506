import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  cleanGitEnv,
  makeTempDir,
  makeTempRepo,
  removeDir,
  type TempRepo,
} from '../../../test/support/git-repo.js';
import {
  CatFileBatch,
  git,
  gitRecords,
  gitText,
  gitTry,
  parseTreeObject,
  repositoryLayout,
  WaitingGit,
  writeBlob,
} from '../src/git.js';

const env = cleanGitEnv();
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function repo(opts: { bare?: boolean } = {}): TempRepo {
  const created = makeTempRepo(opts);
  cleanups.push(created.cleanup);
  return created;
}

function tempDir(): string {
  const dir = makeTempDir();
  cleanups.push(() => removeDir(dir));
  return dir;
}

describe('git / gitText / gitTry', () => {
  it('returns stdout, and gitText drops only the final newline', async () => {
    const r = repo();
    r.commit({ 'a.txt': 'hello\n' });
    const head = r.gitText(['rev-parse', 'HEAD']);
    expect((await git(['rev-parse', 'HEAD'], { cwd: r.dir, env })).toString()).toBe(`${head}\n`);
    expect(await gitText(['rev-parse', 'HEAD'], { cwd: r.dir, env })).toBe(head);
    expect(await gitText(['cat-file', 'blob', 'HEAD:a.txt'], { cwd: r.dir, env })).toBe('hello');
  });

  it('feeds input to stdin', async () => {
    const r = repo();
    const out = await gitText(['hash-object', '--stdin'], { cwd: r.dir, env, input: 'some bytes\n' });
    expect(out).toBe(r.gitText(['hash-object', '--stdin'], 'some bytes\n'));
  });

  it('throws GIT with the command and git’s message on a non-zero exit; gitTry reports it instead', async () => {
    const r = repo();
    const failure = git(['rev-parse', '--verify', 'no-such-branch'], { cwd: r.dir, env });
    await expect(failure).rejects.toMatchObject({ code: 'GIT' });
    await expect(failure).rejects.toThrow(
      /git rev-parse --verify no-such-branch failed: fatal: Needed a single revision/,
    );
    const tried = await gitTry(['rev-parse', '--verify', 'no-such-branch'], { cwd: r.dir, env });
    expect(tried.code).toBe(128);
    expect(tried.stderr).toMatch(/Needed a single revision/);
    expect(tried.stdout.length).toBe(0);
  });

  it('reports a missing git as NOT_A_REPOSITORY with an install hint (control: found on the normal PATH)', async () => {
    const r = repo();
    const emptyBin = tempDir();
    const noGit = git(['--version'], { cwd: r.dir, env: { ...env, PATH: emptyBin } });
    await expect(noGit).rejects.toMatchObject({ code: 'NOT_A_REPOSITORY' });
    await expect(noGit).rejects.toThrow(/git is not installed or not on PATH.*Install git/);
    await expect(gitText(['--version'], { cwd: r.dir, env })).resolves.toMatch(/^git version /);
  });

  it('reports a working directory that does not exist as NOT_A_REPOSITORY, not as a missing git', async () => {
    const missing = path.join(tempDir(), 'gone');
    const failure = git(['status'], { cwd: missing, env });
    await expect(failure).rejects.toMatchObject({ code: 'NOT_A_REPOSITORY' });
    await expect(failure).rejects.toThrow(/does not exist/);
  });
});

describe('a partial clone whose remote is gone', () => {
  it('a read of an object it left out says what happened and what to do; control: a fetch that fails is said as git says it', async () => {
    const source = repo();
    source.commit({ 'a.txt': 'left out of the partial clone\n' });
    source.git(['config', 'uploadpack.allowFilter', 'true']);
    const root = tempDir();
    const partial = path.join(root, 'partial');
    execFileSync(
      'git',
      ['clone', '-q', '--no-checkout', '--filter=blob:none', `file://${source.dir}`, partial],
      {
        env,
      },
    );
    fs.renameSync(source.dir, `${source.dir}-gone`); // still beside it, removed with its temporary directory

    const read = await git(['cat-file', 'blob', 'HEAD:a.txt'], { cwd: partial, env }).catch((e: Error) => e);
    expect((read as Error).message).toContain('partial clone (git clone --filter)');
    const fetched = await git(['fetch', 'origin'], { cwd: partial, env }).catch((e: Error) => e);
    expect((fetched as Error).message).toContain('Could not read from remote repository');
    expect((fetched as Error).message).not.toContain('partial clone');
  });
});

describe('WaitingGit', () => {
  it('answers as gitTry does, given its input long after it started', async () => {
    const r = repo();
    fs.writeFileSync(path.join(r.dir, 'a.txt'), 'a\n');
    fs.writeFileSync(path.join(r.dir, 'b.txt'), 'b\n');
    const waiting = new WaitingGit(['hash-object', '--stdin-paths'], { cwd: r.dir, env });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const answered = await waiting.run(`${path.join(r.dir, 'a.txt')}\nb.txt\n`);
    expect(answered).toEqual(await gitTry(['hash-object', '--', 'a.txt', 'b.txt'], { cwd: r.dir, env }));
    expect(() => waiting.run('a.txt\n')).toThrow(/already given its input/);
  });

  it('dismissed, it ends having read nothing; a missing git is reported when it is given work', async () => {
    const r = repo();
    const dismissed = new WaitingGit(['hash-object', '--stdin-paths'], { cwd: r.dir, env });
    dismissed.dismiss();
    expect(await dismissed.dismiss()).toEqual({ code: 0, stdout: Buffer.alloc(0), stderr: '' }); // twice is harmless
    expect(() => dismissed.run('x\n')).toThrow(/already given its input/);
    const noGit = new WaitingGit(['--version'], { cwd: r.dir, env: { ...env, PATH: tempDir() } });
    await expect(noGit.run('')).rejects.toMatchObject({ code: 'NOT_A_REPOSITORY' });
  });
});

describe('gitRecords', () => {
  it('streams NUL-separated records and fails after them on a non-zero exit', async () => {
    const r = repo();
    r.commit({ 'a.txt': 'a', 'dir/b.txt': 'b', 'c d.txt': 'c' });
    const names: string[] = [];
    for await (const record of gitRecords(['ls-files', '-z'], { cwd: r.dir, env }, '\0')) names.push(record);
    expect(names).toEqual(['a.txt', 'c d.txt', 'dir/b.txt']);
    const failing = async () => {
      for await (const _ of gitRecords(['rev-list', 'no-such-rev'], { cwd: r.dir, env })) {
        // nothing is printed before the failure
      }
    };
    await expect(failing()).rejects.toMatchObject({ code: 'GIT' });
  });

  it('streams its input while it reads the output; an input that fails ends git instead of leaving it waiting', async () => {
    const r = repo();
    r.commit({ 'a.txt': 'a' });
    const head = r.gitText(['rev-parse', 'HEAD']);
    const lines = async function* () {
      for (let i = 0; i < 3000; i++) yield `${head}\n`; // more than a pipe buffer holds
    };
    let count = 0;
    for await (const _ of gitRecords(['cat-file', '--batch-check'], { cwd: r.dir, env, input: lines() }))
      count++;
    expect(count).toBe(3000);
    const broken = async function* () {
      yield `${head}\n`;
      throw new Error('the input broke');
    };
    const reading = async () => {
      for await (const _ of gitRecords(['cat-file', '--batch-check'], { cwd: r.dir, env, input: broken() })) {
        // the first answer may come before the failure
      }
    };
    await expect(reading()).rejects.toThrow('the input broke');
  });
});

describe('writeBlob and CatFileBatch', () => {
  it('writes a blob whose id git agrees with, and reads it back by id and by <rev>:<path>', async () => {
    const r = repo();
    r.commit({ 'file.txt': 'committed\n' });
    const id = await writeBlob(r.dir, 'written by writeBlob\n', env);
    expect(id).toBe(r.gitText(['hash-object', '--stdin'], 'written by writeBlob\n'));
    expect(r.gitText(['cat-file', '-t', id])).toBe('blob');
    const batch = new CatFileBatch({ cwd: r.dir, env });
    try {
      const byId = await batch.read(id);
      expect(byId).toEqual({ oid: id, type: 'blob', content: Buffer.from('written by writeBlob\n') });
      const byPath = await batch.read('HEAD:file.txt');
      expect(byPath?.content.toString()).toBe('committed\n');
      expect(byPath?.oid).toBe(r.gitText(['rev-parse', 'HEAD:file.txt']));
      expect(await batch.read('HEAD:no-such-file')).toBeNull();
      expect(await batch.read('0'.repeat(40))).toBeNull();
    } finally {
      await batch.close();
    }
  });

  it('headersOnly names each object and its type, without its content; control: the same reads with content', async () => {
    const r = repo();
    r.commit({ 'file.txt': 'committed\n', 'dir/b.txt': 'b\n' });
    const requests = ['HEAD:file.txt', 'HEAD:no-such-file', 'HEAD:dir', 'HEAD', 'HEAD:dir/b.txt'];
    const headers = new CatFileBatch({ cwd: r.dir, env, headersOnly: true });
    const full = new CatFileBatch({ cwd: r.dir, env });
    try {
      const [checked, read] = await Promise.all([headers.readMany(requests), full.readMany(requests)]);
      expect(checked.map((o) => o && { oid: o.oid, type: o.type })).toEqual(
        read.map((o) => o && { oid: o.oid, type: o.type }),
      );
      expect(checked.map((o) => o?.type ?? null)).toEqual(['blob', null, 'tree', 'commit', 'blob']);
      expect(checked.every((o) => o === null || o.content.length === 0)).toBe(true);
      expect(read[0]?.content.toString()).toBe('committed\n');
    } finally {
      await Promise.all([headers.close(), full.close()]);
    }
  });

  it('pipelines many reads, large objects and missing ones included, answering each in order', async () => {
    const r = repo();
    const big = Buffer.alloc(3 * 1024 * 1024 + 7, 'x');
    big.write('\n<newlines inside>\n', 1000);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await writeBlob(r.dir, `small ${i}\n`, env));
    const bigId = await writeBlob(r.dir, big, env);
    const requests = [
      ids[0]!,
      bigId,
      'f'.repeat(40),
      ...Array.from({ length: 400 }, (_, i) => ids[i % 3]!),
      bigId,
    ];
    const batch = new CatFileBatch({ cwd: r.dir, env });
    try {
      const answers = await batch.readMany(requests);
      expect(answers).toHaveLength(requests.length);
      expect(answers[0]?.content.toString()).toBe('small 0\n');
      expect(answers[1]?.content.equals(big)).toBe(true);
      expect(answers[2]).toBeNull();
      for (let i = 0; i < 400; i++) expect(answers[3 + i]?.content.toString()).toBe(`small ${i % 3}\n`);
      expect(answers.at(-1)?.content.equals(big)).toBe(true);
    } finally {
      await batch.close();
    }
    await expect(batch.read(ids[0]!)).rejects.toMatchObject({ code: 'GIT' });
  });

  it('rejects pending reads with GIT when cat-file cannot run (control: a repository answers)', async () => {
    const outside = tempDir();
    const batch = new CatFileBatch({
      cwd: outside,
      env: { ...env, GIT_CEILING_DIRECTORIES: path.dirname(outside) },
    });
    await expect(batch.read('HEAD')).rejects.toMatchObject({ code: 'GIT' });
    await batch.close();
  });

  it('parses raw tree objects the way ls-tree lists them', async () => {
    const r = repo();
    r.commit({ 'a.txt': 'a', 'sub/b.txt': 'b', 'ü.txt': 'u' });
    fs.chmodSync(path.join(r.dir, 'a.txt'), 0o755);
    r.commit({ 'a.txt': 'a2' });
    const batch = new CatFileBatch({ cwd: r.dir, env });
    try {
      const tree = await batch.read('HEAD^{tree}');
      expect(tree?.type).toBe('tree');
      const parsed = parseTreeObject(tree!.content, tree!.oid.length / 2);
      const listed = r
        .git(['-c', 'core.quotePath=false', 'ls-tree', 'HEAD'])
        .trim()
        .split('\n')
        .map((line) => {
          const [meta, name] = line.split('\t');
          const [mode, , oid] = meta!.split(' ');
          return { mode: mode!.replace(/^0/, ''), name, oid };
        });
      expect(parsed).toEqual(listed);
      expect(parsed.find((entry) => entry.name === 'a.txt')?.mode).toBe('100755');
    } finally {
      await batch.close();
    }
  });

  it('reads the modes an old or hand-made tree stores as git reads them, as ls-tree lists them; refuses a mode that is no number', async () => {
    const r = repo();
    const blob = r.blob('x\n');
    const stored = ['100664', '100744', '100600', '0100644', '040000', '120777', '170000'];
    const entries = stored.map((mode, i) => `${mode} ${mode === '040000' ? 'tree' : 'blob'} ${blob}\tf${i}`);
    // mktree keeps a mode as written; a directory entry needs a tree.
    const emptyTree = r.gitText(['mktree'], '');
    const tree = r.gitText(
      ['mktree'],
      `${entries.map((e) => (e.startsWith('040000') ? e.replace(blob, emptyTree) : e)).join('\n')}\n`,
    );
    const batch = new CatFileBatch({ cwd: r.dir, env });
    try {
      const object = await batch.read(tree);
      expect(object!.content.toString('latin1')).toContain('100664 f0');
      const parsed = parseTreeObject(object!.content, object!.oid.length / 2);
      const listed = r
        .git(['ls-tree', tree])
        .trim()
        .split('\n')
        .map((line) => line.split(' ')[0]!.replace(/^0/, ''));
      expect(parsed.map((e) => e.mode)).toEqual(listed);
      expect(parsed.map((e) => e.mode)).toEqual([
        '100644',
        '100755',
        '100644',
        '100644',
        '40000',
        '120000',
        '160000',
      ]);
    } finally {
      await batch.close();
    }
    const malformed = Buffer.concat([Buffer.from('10x644 name\0'), Buffer.alloc(20)]);
    expect(() => parseTreeObject(malformed, 20)).toThrow(/tree object is malformed/);
  });
});

describe('repositoryLayout', () => {
  it('finds the top level from a subdirectory of a work tree', async () => {
    const r = repo();
    fs.mkdirSync(path.join(r.dir, 'deep', 'er'), { recursive: true });
    const layout = await repositoryLayout(path.join(r.dir, 'deep', 'er'), env);
    expect(layout).toEqual({
      topLevel: r.dir,
      gitDir: path.join(r.dir, '.git'),
      commonDir: path.join(r.dir, '.git'),
      isBare: false,
      objectFormat: 'sha1',
    });
  });

  it('refuses a directory outside any repository with NOT_A_REPOSITORY', async () => {
    const outside = tempDir();
    const failure = repositoryLayout(outside, { ...env, GIT_CEILING_DIRECTORIES: path.dirname(outside) });
    await expect(failure).rejects.toMatchObject({ code: 'NOT_A_REPOSITORY' });
    await expect(failure).rejects.toThrow(
      `${outside} is not inside a git repository. Run this in a git repository`,
    );
  });

  it('reports a bare repository with no top level', async () => {
    const r = repo({ bare: true });
    expect(await repositoryLayout(r.dir, env)).toEqual({
      topLevel: null,
      gitDir: r.dir,
      commonDir: r.dir,
      isBare: true,
      objectFormat: 'sha1',
    });
  });

  it('reports the object format of a SHA-256 repository (control: SHA-1 above)', async () => {
    const dir = tempDir();
    execFileSync('git', ['init', '-q', '--bare', '--object-format=sha256', dir], { env });
    expect(await repositoryLayout(dir, env)).toEqual({
      topLevel: null,
      gitDir: dir,
      commonDir: dir,
      isBare: true,
      objectFormat: 'sha256',
    });
  });

  it('tells a linked worktree’s git dir from the common dir', async () => {
    const r = repo();
    r.commit({ 'a.txt': 'a' });
    const worktree = path.join(path.dirname(r.dir), 'linked');
    r.git(['worktree', 'add', '-q', worktree]);
    const layout = await repositoryLayout(worktree, env);
    expect(layout.topLevel).toBe(worktree);
    expect(layout.commonDir).toBe(path.join(r.dir, '.git'));
    expect(layout.gitDir).toBe(path.join(r.dir, '.git', 'worktrees', 'linked'));
    expect(layout.isBare).toBe(false);
  });

  // git prints each path as it is, so a newline in one makes more lines of rev-parse's output (rt48 f01).
  describe('at a path that holds a newline', () => {
    /** A directory `a\nb` (and, as a control, `ab`) in a temporary directory. */
    function dirs(): { newline: string; plain: string } {
      const root = tempDir();
      return { newline: path.join(root, 'a\nb'), plain: path.join(root, 'ab') };
    }

    it('reads the layout of a work tree, from its top and from a subdirectory (control: the same without the newline)', async () => {
      for (const top of Object.values(dirs())) {
        execFileSync('git', ['init', '-q', top], { env });
        fs.mkdirSync(path.join(top, 'sub\ndir'));
        const expected = {
          topLevel: top,
          gitDir: path.join(top, '.git'),
          commonDir: path.join(top, '.git'),
          isBare: false,
          objectFormat: 'sha1',
        };
        expect(await repositoryLayout(top, env)).toEqual(expected);
        expect(await repositoryLayout(path.join(top, 'sub\ndir'), env)).toEqual(expected);
      }
    });

    it('reads the layout of a bare repository', async () => {
      for (const dir of Object.values(dirs())) {
        execFileSync('git', ['init', '-q', '--bare', dir], { env });
        expect(await repositoryLayout(dir, env)).toMatchObject({
          topLevel: null,
          gitDir: dir,
          commonDir: dir,
        });
      }
    });

    it('tells a linked worktree’s git dir from the common dir', async () => {
      const root = tempDir();
      const main = path.join(root, 'main\nrepo');
      execFileSync('git', ['init', '-q', main], { env });
      execFileSync('git', ['commit', '-q', '--allow-empty', '-m', 'first'], {
        cwd: main,
        env: {
          ...env,
          GIT_AUTHOR_NAME: 't',
          GIT_AUTHOR_EMAIL: 't@t',
          GIT_COMMITTER_NAME: 't',
          GIT_COMMITTER_EMAIL: 't@t',
        },
      });
      const worktree = path.join(root, 'linked\nwork tree');
      execFileSync('git', ['worktree', 'add', '-q', '--detach', worktree], { cwd: main, env });
      const layout = await repositoryLayout(worktree, env);
      expect(layout.topLevel).toBe(worktree);
      expect(layout.commonDir).toBe(path.join(main, '.git'));
      expect(path.dirname(layout.gitDir)).toBe(path.join(main, '.git', 'worktrees'));
      expect(fs.existsSync(path.join(layout.gitDir, 'HEAD'))).toBe(true);
    });
  });

  it('refuses a git dir whose path is not UTF-8, saying so; control: the same git dir under a UTF-8 name', async () => {
    const root = tempDir();
    const work = path.join(root, 'work');
    fs.mkdirSync(work);
    const plain = path.join(root, 'plain.git');
    execFileSync('git', ['init', '-q', '--bare', plain], { env });
    // A gitfile naming it, with the work tree set, as `git worktree` and `git clone --separate-git-dir` write it.
    execFileSync('git', ['config', 'core.bare', 'false'], { cwd: plain, env });
    execFileSync('git', ['config', 'core.worktree', work], { cwd: plain, env });
    fs.writeFileSync(path.join(work, '.git'), `gitdir: ${plain}\n`);
    expect(await repositoryLayout(work, env)).toMatchObject({ topLevel: work, gitDir: plain });

    // The same repository at latin1-<0xE9>.git: Latin-1 "é", which Node would decode as U+FFFD.
    const latin1 = Buffer.concat([
      Buffer.from(path.join(root, 'latin1-')),
      Buffer.from([0xe9, 0x2e, 0x67, 0x69, 0x74]),
    ]);
    fs.renameSync(plain, latin1);
    fs.writeFileSync(
      path.join(work, '.git'),
      Buffer.concat([Buffer.from('gitdir: '), latin1, Buffer.from('\n')]),
    );
    const failure = repositoryLayout(work, env);
    await expect(failure).rejects.toMatchObject({ code: 'NOT_A_REPOSITORY' });
    await expect(failure).rejects.toThrow(
      `The repository's path (${path.join(root, 'latin1-\uFFFD.git')}, with \uFFFD for each byte that is not UTF-8) is not valid UTF-8, which delegate-git cannot use`,
    );
  });
});
