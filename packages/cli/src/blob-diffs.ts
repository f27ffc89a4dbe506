/**
 * The diffs a reviewer reads before signing, for many files in one git: each earlier version and each new one is put
 * into a tree of its own (through scratch indexes, the repository's index untouched) and the two trees are diffed
 * once. One `git diff` per file cost a process each: 1,500 files took most of a minute.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { git, gitTry, NO_HOOKS } from '@delegate-git/core';
import { pathOutput } from '@delegate-git/core/path-text';

export interface BlobPair {
  path: string;
  from: string;
  to: string;
}

type GitOptions = { cwd: string; env?: NodeJS.ProcessEnv };

/** Per pair, in order: the patch from `from` to `to`, shown at `path`. */
export async function blobDiffs(pairs: readonly BlobPair[], opts: GitOptions): Promise<string[]> {
  const changed = pairs.filter((p) => p.from !== p.to);
  if (changed.length <= 1) return Promise.all(pairs.map((p) => diffOne(p, opts)));
  // git's recursive diff lists paths in byte order: the patch's sections follow the pairs sorted so.
  const sorted = [...new Map(changed.map((p) => [p.path, p])).values()].sort((a, b) =>
    Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)),
  );
  const sections = await diffTrees(sorted, opts).catch(() => null);
  if (sections === null || sections.length !== sorted.length)
    return Promise.all(pairs.map((p) => diffOne(p, opts)));
  const byPath = new Map(sorted.map((p, i) => [p.path, sections[i]!]));
  return pairs.map((p) => (p.from === p.to ? '' : byPath.get(p.path)!));
}

async function diffTrees(pairs: readonly BlobPair[], opts: GitOptions): Promise<string[]> {
  const dir = await mkdtemp(path.join(tmpdir(), 'delegate-git-diff-'));
  try {
    const gitDir = pathOutput(await git(['rev-parse', '--absolute-git-dir'], opts));
    // An empty work tree and scratch indexes: no .gitattributes of the work tree (a branch under review may bring one
    // saying `*.ts -diff`) decides what the reviewer sees, which `git diff <blob> <blob>` for one file never reads.
    const scratch = (index: string) => ({
      cwd: dir,
      env: {
        ...(opts.env ?? process.env),
        GIT_DIR: gitDir,
        GIT_WORK_TREE: dir,
        GIT_INDEX_FILE: path.join(dir, index),
      },
    });
    const tree = async (side: 'from' | 'to') => {
      const entries = pairs.map((p) => `100644 ${p[side]}\t${p.path}\0`).join('');
      await git([...NO_HOOKS, 'update-index', '-z', '--index-info'], { ...scratch(side), input: entries });
      return (await git([...NO_HOOKS, 'write-tree'], scratch(side))).toString('utf8').trim();
    };
    const [from, to] = [await tree('from'), await tree('to')];
    const patch = await git(
      ['diff-tree', '-r', '-p', '--no-color', '--no-ext-diff', '--no-textconv', '--no-renames', from, to],
      scratch('to'),
    );
    // Every section starts with its "diff --git" line; no line of content does (each has its +, - or space first).
    return patch
      .toString('utf8')
      .split(/^(?=diff --git )/m)
      .filter((section) => section.startsWith('diff --git '));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function diffOne(pair: BlobPair, opts: GitOptions): Promise<string> {
  if (pair.from === pair.to) return '';
  return (await gitTry(['diff', '--no-color', pair.from, pair.to], opts)).stdout.toString('utf8');
}
