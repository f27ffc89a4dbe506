import { execFileSync, spawnSync } from 'node:child_process';
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
import { type CacheTreeNode, type GitIndex, parseGitIndex } from '../src/index-file.js';
import { indexTree } from '../src/index-trees.js';

/**
 * The index as git itself lists it (`ls-files -s`) and the tree git itself would write (`write-tree`), against the
 * parser and the tree hashing. Each layout the parser declines is paired with one it reads.
 */
let repos: TempRepo[] = [];
afterEach(() => {
  for (const r of repos) r.cleanup();
  repos = [];
});

function repoWith(files: Record<string, string>, init: string[] = []): TempRepo {
  const repo = makeTempRepo();
  repos.push(repo);
  for (const args of init) repo.git(args.split(' '));
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(repo.dir, file)), { recursive: true });
    fs.writeFileSync(path.join(repo.dir, file), content);
  }
  if (Object.keys(files).length > 0) repo.git(['add', '--', ...Object.keys(files)]);
  return repo;
}

function indexOf(repo: TempRepo, oidBytes = 20): GitIndex | null {
  return parseGitIndex(fs.readFileSync(path.join(repo.dir, '.git', 'index')), oidBytes);
}

/** `git ls-files -s` in the parser's terms. */
function listedByGit(repo: TempRepo): string[] {
  return repo
    .git(['ls-files', '-s', '-z'])
    .split('\0')
    .filter(Boolean)
    .map((line) => {
      const [meta, file] = line.split('\t');
      const [mode, oid] = meta!.split(' ');
      return `${mode} ${oid} ${file}`;
    });
}

function listed(index: GitIndex): string[] {
  return Array.from(
    { length: index.count },
    (_, i) => `${index.modeOf(i).toString(8)} ${index.oidOf(i).toString('hex')} ${index.pathOf(i)}`,
  );
}

/** The cache tree's node for a directory ('' for the root). */
function nodeAt(index: GitIndex, dir: string): CacheTreeNode | undefined {
  let node = index.cacheTree ?? undefined;
  for (const name of dir === '' ? [] : dir.split('/')) node = node?.children.get(name);
  return node;
}

const treeIdOf = (index: GitIndex, algorithm: 'sha1' | 'sha256') => indexTree(index, algorithm).tree!;

function expectSameAsGit(repo: TempRepo, algorithm: 'sha1' | 'sha256' = 'sha1'): GitIndex {
  const index = indexOf(repo, algorithm === 'sha1' ? 20 : 32);
  expect(index).not.toBeNull();
  expect(listed(index!)).toEqual(listedByGit(repo));
  expect(treeIdOf(index!, algorithm)).toBe(repo.gitText(['write-tree']));
  return index!;
}

const files = {
  'README.md': 'readme\n',
  'a.txt': 'a\n',
  'a/b.txt': 'b\n',
  'a-b/c.txt': 'c\n',
  'a0/d.txt': 'd\n',
  'src/deep/er/e.ts': 'e\n',
  'src/f.ts': 'f\n',
  'src/ü/ñ.ts': 'unicode\n',
};

describe('parseGitIndex and treeIdOf', () => {
  it('read a version 2 index as git lists it, and hash it to the tree git writes (no cache tree yet)', () => {
    const repo = repoWith(files);
    const index = expectSameAsGit(repo);
    expect(index.cacheTree).toBeNull();
  });

  it('use the cache tree git keeps after a commit, and hash again only the directories a change invalidated', () => {
    const repo = repoWith(files);
    repo.git(['commit', '-q', '-m', 'one']);
    const committed = expectSameAsGit(repo);
    expect(nodeAt(committed, '')?.oid?.toString('hex')).toBe(repo.gitText(['rev-parse', 'HEAD^{tree}']));
    fs.writeFileSync(path.join(repo.dir, 'src', 'deep', 'er', 'e.ts'), 'changed\n');
    fs.writeFileSync(path.join(repo.dir, 'README.md'), 'changed\n');
    repo.git(['add', 'README.md', 'src/deep/er/e.ts']); // (`git add .` invalidates every directory)
    const staged = expectSameAsGit(repo);
    expect(nodeAt(staged, '')?.oid).toBeNull();
    expect(nodeAt(staged, 'src/deep')?.oid).toBeNull();
    expect(nodeAt(staged, 'a')?.oid).toBeTruthy(); // untouched: its id is taken, not computed
  });

  it('a stale cached id is what the tree takes (as git write-tree does), so the cache tree is trusted, not checked', () => {
    const repo = repoWith(files);
    repo.git(['commit', '-q', '-m', 'one']);
    const index = indexOf(repo)!;
    nodeAt(index, '')!.oid = null;
    nodeAt(index, 'a')!.oid = Buffer.alloc(20, 7);
    expect(treeIdOf(index, 'sha1')).not.toBe(repo.gitText(['rev-parse', 'HEAD^{tree}']));
  });

  it("compare an entry's object id with one given in lowercase hex exactly (control: each entry's own id)", () => {
    const index = expectSameAsGit(repoWith(files));
    const ids = Array.from({ length: index.count }, (_, i) => index.oidOf(i).toString('hex'));
    for (let i = 0; i < index.count; i++) {
      expect(index.hasOid(i, ids[i]!)).toBe(true);
      expect(index.hasOid(i, ids[(i + 1) % index.count]!)).toBe(false);
      expect(index.hasOid(i, ids[i]!.toUpperCase())).toBe(/^[0-9]*$/.test(ids[i]!));
      expect(index.hasOid(i, ids[i]!.slice(0, 38))).toBe(false);
      expect(index.hasOid(i, `${ids[i]!}00`)).toBe(false);
      expect(index.hasOid(i, `${ids[i]!.slice(0, 38)}zz`)).toBe(false);
    }
  });

  it('keep executable, symlink and submodule modes', () => {
    const repo = repoWith({ 'run.sh': '#!/bin/sh\n', 'lib/x.ts': 'x\n' });
    fs.chmodSync(path.join(repo.dir, 'run.sh'), 0o755);
    fs.symlinkSync('lib/x.ts', path.join(repo.dir, 'link'));
    repo.git(['add', '.']);
    const commit = repo.gitText(['commit-tree', repo.gitText(['write-tree']), '-m', 'sub']);
    repo.git(['update-index', '--add', '--cacheinfo', `160000,${commit},vendor/sub`]);
    const index = expectSameAsGit(repo);
    expect(
      listed(index)
        .map((l) => l.split(' ')[0])
        .sort(),
    ).toEqual(['100644', '100755', '120000', '160000']);
  });

  it('read version 3 (an extended flag: skip-worktree) and version 4 (paths prefix-compressed)', () => {
    const repo = repoWith(files);
    repo.git(['update-index', '--skip-worktree', 'a.txt']);
    expect(indexOf(repo)).not.toBeNull();
    expect(fs.readFileSync(path.join(repo.dir, '.git', 'index')).readUInt32BE(4)).toBe(3);
    expectSameAsGit(repo);
    repo.git(['update-index', '--index-version', '4']);
    expect(fs.readFileSync(path.join(repo.dir, '.git', 'index')).readUInt32BE(4)).toBe(4);
    expectSameAsGit(repo);
    repo.git(['commit', '-q', '-m', 'v4']);
    expectSameAsGit(repo);
  });

  it('read a path longer than the 12-bit name length field', () => {
    const long = `${Array.from({ length: 24 }, (_, i) => `dir${i}`.padEnd(200, 'x')).join('/')}/leaf.txt`;
    expect(Buffer.byteLength(long)).toBeGreaterThan(0xfff);
    const repo = repoWith({ 'short.txt': 's\n' });
    const blob = repo.blob('long\n');
    repo.git(['update-index', '--add', '--cacheinfo', `100644,${blob},${long}`]);
    const index = expectSameAsGit(repo);
    expect(listed(index).some((l) => l.endsWith(` ${long}`))).toBe(true);
  });

  it('read a SHA-256 repository', () => {
    const dir = makeTempDir();
    try {
      // The object format is chosen when a repository is created.
      const git = (args: string[]) =>
        execFileSync('git', args, { cwd: dir, env: cleanGitEnv() }).toString('utf8').trim();
      git(['init', '-q', '--object-format=sha256', '.']);
      for (const [file, content] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
        fs.writeFileSync(path.join(dir, file), content);
      }
      git(['add', '.']);
      const index = parseGitIndex(fs.readFileSync(path.join(dir, '.git', 'index')), 32)!;
      expect(listed(index).map((l) => l.split(' ')[1])).toEqual(
        git(['ls-files', '-s'])
          .split('\n')
          .map((l) => l.split(' ')[1]),
      );
      const tree = git(['write-tree']);
      expect(tree).toHaveLength(64);
      expect(treeIdOf(index, 'sha256')).toBe(tree);
    } finally {
      removeDir(dir);
    }
  });

  it('decline an unmerged index, and read it again once the conflict is resolved', () => {
    const repo = repoWith({ 'f.txt': 'base\n' });
    repo.git(['commit', '-q', '-m', 'base']);
    repo.git(['checkout', '-q', '-b', 'other']);
    repo.commit({ 'f.txt': 'other\n' });
    repo.git(['checkout', '-q', 'main']);
    repo.commit({ 'f.txt': 'main\n' });
    spawnSync('git', ['merge', '-q', 'other'], { cwd: repo.dir, env: cleanGitEnv() });
    expect(repo.git(['ls-files', '-u'])).not.toBe('');
    expect(indexOf(repo)).toBeNull();
    repo.git(['add', 'f.txt']);
    expectSameAsGit(repo);
  });

  it('decline an intent-to-add entry (not part of the commit), and read the index once it is added', () => {
    const repo = repoWith(files);
    fs.writeFileSync(path.join(repo.dir, 'later.txt'), 'later\n');
    repo.git(['add', '-N', 'later.txt']);
    expect(indexOf(repo)).toBeNull();
    repo.git(['add', 'later.txt']);
    expectSameAsGit(repo);
  });

  it('decline a split index, and read it again once it is unsplit', () => {
    const repo = repoWith(files);
    repo.git(['update-index', '--split-index']);
    expect(indexOf(repo)).toBeNull();
    repo.git(['update-index', '--no-split-index']);
    expectSameAsGit(repo);
  });

  it('decline a sparse index, and read it again once it is full', () => {
    const repo = repoWith(files);
    repo.git(['commit', '-q', '-m', 'one']);
    repo.git(['sparse-checkout', 'set', '--cone', '--sparse-index', 'src']);
    expect(indexOf(repo)).toBeNull();
    repo.git(['sparse-checkout', 'disable']);
    expectSameAsGit(repo);
  });

  it('decline what is not an index: another signature, a version it does not know, a cut file', () => {
    const repo = repoWith(files);
    const data = fs.readFileSync(path.join(repo.dir, '.git', 'index'));
    expect(parseGitIndex(data, 20)).not.toBeNull();
    const other = Buffer.from(data);
    other.write('DIRX', 0, 'latin1');
    expect(parseGitIndex(other, 20)).toBeNull();
    const version = Buffer.from(data);
    version.writeUInt32BE(5, 4);
    expect(parseGitIndex(version, 20)).toBeNull();
    expect(parseGitIndex(data.subarray(0, 100), 20)).toBeNull();
    const required = Buffer.concat([
      data.subarray(0, data.length - 20),
      Buffer.from('abcd\0\0\0\0'),
      data.subarray(-20),
    ]);
    expect(parseGitIndex(required, 20)).toBeNull();
    const optional = Buffer.concat([
      data.subarray(0, data.length - 20),
      Buffer.from('ABCD\0\0\0\0'),
      data.subarray(-20),
    ]);
    expect(parseGitIndex(optional, 20)).not.toBeNull();
  });
});

describe('indexTree with governed digests', () => {
  /** Facts kept in a map, as quiet-trees.ts keeps them in a file. */
  const memory = (isGoverned: (p: string) => boolean | null) => {
    const facts = new Map<string, string>();
    let computed = 0;
    return {
      facts,
      computed: () => computed,
      digests: {
        isGoverned: (p: string) => {
          computed++;
          return isGoverned(p);
        },
        known: (tree: string, dir: string) => facts.get(`${tree} ${dir}`),
        learn: (tree: string, dir: string, digest: string) => void facts.set(`${tree} ${dir}`, digest),
      },
    };
  };
  const underSrc = (p: string) => p.startsWith('src/');
  const many = Object.fromEntries(
    Array.from({ length: 150 }, (_, i) => [`src/many/f${String(i).padStart(3, '0')}.ts`, `${i}\n`]),
  );

  it('gives the same digest from remembered directories as from every entry, and reads fewer entries', () => {
    const repo = repoWith({ ...files, ...many, 'docs/many.md': 'm\n' });
    repo.git(['commit', '-q', '-m', 'one']);
    const first = memory(underSrc);
    const before = indexTree(indexOf(repo)!, 'sha1', first.digests);
    expect(before.tree).toBe(repo.gitText(['write-tree']));
    fs.writeFileSync(path.join(repo.dir, 'README.md'), 'ungoverned change\n');
    repo.git(['add', 'README.md']);
    const remembered = memory(underSrc);
    for (const [k, v] of first.facts) remembered.facts.set(k, v);
    const fresh = memory(underSrc);
    const withFacts = indexTree(indexOf(repo)!, 'sha1', remembered.digests);
    const fromEntries = indexTree(indexOf(repo)!, 'sha1', fresh.digests);
    expect(withFacts).toEqual(fromEntries);
    expect(withFacts.digest).toBe(before.digest); // nothing governed changed
    expect(remembered.computed()).toBeLessThan(fresh.computed() / 10);
  });

  it('changes the digest with any governed path, mode or content, and not with an ungoverned one', () => {
    const repo = repoWith({ ...files, ...many });
    const digest = () => indexTree(indexOf(repo)!, 'sha1', memory(underSrc).digests).digest;
    const base = digest();
    const seen = new Set([base]);
    fs.writeFileSync(path.join(repo.dir, 'docs.txt'), 'ungoverned\n');
    repo.git(['add', 'docs.txt']);
    expect(digest()).toBe(base);
    repo.git(['update-index', '--chmod=+x', 'src/f.ts']);
    seen.add(digest());
    repo.git(['update-index', '--chmod=-x', 'src/f.ts']);
    expect(digest()).toBe(base);
    fs.writeFileSync(path.join(repo.dir, 'src/many/f007.ts'), 'changed\n');
    repo.git(['add', 'src/many/f007.ts']);
    seen.add(digest());
    repo.git(['mv', 'src/many/f007.ts', 'src/many/g007.ts']);
    seen.add(digest());
    repo.git(['rm', '-q', '--cached', 'src/many/g007.ts']);
    seen.add(digest());
    expect(seen.size).toBe(5);
  });

  it('counts the names nameCounts asks for, not their content', () => {
    const repo = repoWith({ ...files, 'gen/a.ts': 'a\n' });
    const isGen = (p: string) => p.startsWith('gen/');
    const digest = () =>
      indexTree(indexOf(repo)!, 'sha1', { ...memory(underSrc).digests, nameCounts: isGen }).digest;
    const plain = () => indexTree(indexOf(repo)!, 'sha1', memory(underSrc).digests).digest;
    const base = digest();
    const plainBase = plain();
    fs.writeFileSync(path.join(repo.dir, 'gen/a.ts'), 'regenerated\n');
    repo.git(['add', 'gen/a.ts']);
    expect(digest()).toBe(base);
    fs.writeFileSync(path.join(repo.dir, 'gen/b.ts'), 'b\n');
    repo.git(['add', 'gen/b.ts']);
    expect(digest()).not.toBe(base);
    expect(plain()).toBe(plainBase); // without nameCounts, an ungoverned name is not seen
    repo.git(['rm', '-q', '--cached', 'gen/b.ts']);
    expect(digest()).toBe(base);
  });

  it('gives no digest when governedness cannot be told (control: the same walk with it told)', () => {
    const repo = repoWith(files);
    expect(indexTree(indexOf(repo)!, 'sha1', memory(() => null).digests)).toEqual({
      tree: null,
      digest: null,
    });
    expect(indexTree(indexOf(repo)!, 'sha1', memory(underSrc).digests)).toEqual({
      tree: repo.gitText(['write-tree']),
      digest: expect.stringMatching(/^[0-9a-f]{40}$/),
    });
  });
});
