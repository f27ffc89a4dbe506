/**
 * A policy or key file's history as the dating of replaced versions reads it (path-history.ts): every commit that
 * changed the path and every merge, with all their parents, so a merge whose first parent is an orphan still leads
 * to the line that admitted its version; and the shortcut that answers many commits from one read.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanGitEnv, makeTempRepo, type TempRepo } from '../../../test/support/git-repo.js';
import { PathHistories, pathHistory } from '../src/path-history.js';

const P = 'policy.json';
let repo: TempRepo;
let ctx: { cwd: string; env: NodeJS.ProcessEnv };
const at: Record<string, string> = {};

beforeAll(() => {
  repo = makeTempRepo();
  ctx = { cwd: repo.dir, env: cleanGitEnv() };
  at.s = repo.commit({ [P]: 'S\n' }, 'S');
  at.t = repo.commit({ [P]: 'T\n' }, 'T');
  at.other = repo.commit({ 'README.md': 'x\n' }, 'not the policy');
  at.back = repo.commit({ [P]: 'S\n' }, 'S again');
  at.after = repo.commit({ 'README.md': 'y\n' }, 'not the policy either');
  // An orphan holding S, merged with main as its first parent: the merge holds main's tree.
  const orphan = repo.gitText(['commit-tree', '-m', 'orphan', repo.gitText(['rev-parse', `${at.s}^{tree}`])]);
  at.orphan = orphan;
  at.merge = repo.gitText(['commit-tree', '-p', orphan, '-p', at.after, '-m', 'merge', `${at.after}^{tree}`]);
});

afterAll(() => repo.cleanup());

describe('pathHistory', () => {
  it('lists the commits that changed the path, with their blobs and parents, and a merge with every parent', async () => {
    const blob = (text: string) => repo.gitText(['hash-object', '--stdin'], text);
    const history = await pathHistory(ctx, at.merge!, P);
    expect(history.tip).toBe(at.merge);
    expect(history.commits.get(at.merge!)).toEqual({ blob: blob('S\n'), parents: [at.orphan, at.back] });
    expect(history.commits.get(at.orphan!)).toEqual({ blob: blob('S\n'), parents: [] });
    expect(history.commits.get(at.back!)).toEqual({ blob: blob('S\n'), parents: [at.t] });
    expect(history.commits.get(at.t!)).toEqual({ blob: blob('T\n'), parents: [at.s] });
    expect(history.commits.has(at.other!)).toBe(false); // changed nothing here, no merge
  });

  it('a commit that does not change the path stands on the nearest that did', async () => {
    const history = await pathHistory(ctx, at.after!, P);
    expect(history.commits.get(at.after!)?.parents).toEqual([at.back]);
  });
});

describe('PathHistories', () => {
  it('answers a commit the history does not list by the nearest listed one along its first parents', async () => {
    const histories = new PathHistories(ctx, at.merge!);
    const after = await histories.historyOf(at.after!, P);
    expect(after.tip).toBe(at.back);
    const other = await histories.historyOf(at.other!, P);
    expect(other.tip).toBe(at.t);
    // Each is the history behind its own tip, nothing newer: the version at t is not dated by what came after it.
    expect(other.commits.has(at.back!)).toBe(false);
    expect(after.commits.has(at.back!)).toBe(true);
    expect([...other.commits.keys()].every((id) => after.commits.has(id))).toBe(true);
    // A commit not behind the top is read on its own.
    const beside = repo.gitText(['commit-tree', '-p', at.t!, '-m', 'beside', `${at.t}^{tree}`]);
    const alone = await histories.historyOf(beside, P);
    expect(alone.tip).toBe(beside);
    expect(alone.commits.get(beside)?.parents).toEqual([at.t]);
  });
});
