/**
 * What many refs of one push bring, asked together (newChangesOfMany, changesBetweenMany): the same answers as
 * asking each ref alone (newChanges, changesBetween), on a history where refs share commits, one moves onto another's
 * commits, one is rewound, one merges a new side branch, one starts an unrelated history and one does not move.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanGitEnv, makeTempRepo, type TempRepo } from '../../../test/support/git-repo.js';
import {
  changesBetween,
  changesBetweenMany,
  type NewChanges,
  newChanges,
  newChangesOfMany,
} from '../src/pushed-changes.js';
import { Repository } from '../src/repository.js';

let repo: TempRepo;
let git: Repository;
const c: Record<string, string> = {};
/** Each ref's old and new tip (as a push would move it), and the default branch's tip. */
let refs: Array<{ name: string; own: string; tip: string }>;

function commitOn(parent: string, files: Record<string, string>, message: string): string {
  repo.git(['checkout', '-q', '--detach', parent]);
  return repo.commit(files, message);
}

beforeAll(async () => {
  repo = makeTempRepo();
  c.m1 = repo.commit({ 'src/a.ts': 'a1\n', 'src/b.ts': 'b1\n' }, 'm1');
  c.m2 = repo.commit({ 'src/a.ts': 'a2\n' }, 'm2');
  c.a1 = commitOn(c.m1, { 'src/f1.ts': 'f1\n' }, 'a1');
  c.a2 = commitOn(c.a1, { 'src/f2.ts': 'f2\n' }, 'a2');
  c.a3 = commitOn(c.a2, { 'src/f2.ts': 'f2 again\n', 'src/b.ts': 'b from a3\n' }, 'a3');
  c.b1 = commitOn(c.m2, { 'src/g.ts': 'g\n' }, 'b1');
  c.c1 = commitOn(c.m2, { 'src/h.ts': 'h\n' }, 'c1');
  c.c2 = commitOn(c.a1, { 'src/h.ts': 'h on a1\n' }, "c2 (on a's old tip)");
  c.d1 = commitOn(c.m1, { 'src/d.ts': 'd\n' }, 'd1');
  c.x1 = commitOn(c.m1, { 'src/x.ts': 'x\n' }, 'x1 (a new side branch)');
  repo.git(['checkout', '-q', '--detach', c.d1]);
  repo.git(['merge', '-q', '--no-ff', '-m', 'merge x1', c.x1]);
  c.d2 = repo.gitText(['rev-parse', 'HEAD']);
  c.f1 = commitOn(c.m1, { 'src/f.ts': '1\n' }, 'f1');
  c.f2 = commitOn(c.f1, { 'src/f.ts': '2\n' }, 'f2');
  c.f3 = commitOn(c.f2, { 'src/f.ts': '3\n' }, 'f3');
  c.f4 = commitOn(c.f3, { 'src/f.ts': '4\n' }, 'f4');
  repo.git(['checkout', '-q', '--orphan', 'unrelated']);
  repo.git(['rm', '-q', '-r', '--cached', '.']);
  c.o1 = repo.commit({ 'other.txt': 'o\n' }, 'o1 (a root)');
  c.o2 = repo.commit({ 'src/a.ts': 'a from o2\n' }, 'o2');
  refs = [
    { name: 'fast-forward, two new commits', own: c.a1, tip: c.a3 },
    { name: 'rewound to a commit main holds', own: c.b1, tip: c.m1 },
    { name: "moved onto a's old tip", own: c.c1, tip: c.c2 },
    { name: 'a merge of a new side branch', own: c.d1, tip: c.d2 },
    { name: 'one commit on a longer branch', own: c.f3, tip: c.f4 },
    { name: 'an unrelated history', own: c.f2, tip: c.o2 },
    { name: 'not moved', own: c.a1, tip: c.a1 },
    { name: 'rewound within its branch', own: c.f4, tip: c.f2 },
  ];
  git = await Repository.open(repo.dir, cleanGitEnv());
});

afterAll(async () => {
  await git?.close();
  repo.cleanup();
});

/** A change's identity, in the order listed. */
const shape = (n: Pick<NewChanges, 'introduced' | 'deleted'>) => ({
  introduced: n.introduced.map((f) => `${f.commit.slice(0, 7)} ${f.path} ${f.blob.slice(0, 7)}`),
  deleted: n.deleted.map((f) => `${f.commit.slice(0, 7)} ${f.path}`),
});
/**
 * The same, sorted: a walk lists commits newest first, and commits of the same date (all of them here: the tests fix
 * git's clock) may come in another order from a walk of more commits. The order only decides which of several
 * commits bringing the same content a refusal names.
 */
const walked = (n: NewChanges) => {
  const { introduced, deleted } = shape(n);
  return { introduced: introduced.sort(), deleted: deleted.sort(), commits: n.commits };
};

describe('newChangesOfMany', () => {
  it('answers each ref as its own walk does, held by its old tip and the default branch', async () => {
    const together = await newChangesOfMany(git, refs, [c.m2!]);
    const alone = await Promise.all(refs.map((r) => newChanges(git, r.tip, [r.own, c.m2!])));
    for (const [i, r] of refs.entries())
      expect({ ref: r.name, ...walked(together[i]!) }).toEqual({ ref: r.name, ...walked(alone[i]!) });
    // The walks are not empty by accident: what each ref brings, named.
    const brought = (i: number) => together[i]!.introduced.map((f) => f.path).sort();
    expect(brought(0)).toEqual(['src/b.ts', 'src/f2.ts', 'src/f2.ts']);
    expect(together[1]!.commits).toBe(0);
    // a1 is held by another ref's old tip, not by this one's: it is brought here.
    expect(brought(2)).toEqual(['src/f1.ts', 'src/h.ts']);
    expect(together[2]!.commits).toBe(2);
    // x1 is new too: it brings x.ts, and so does the merge's first-parent diff.
    expect(brought(3)).toEqual(['src/x.ts', 'src/x.ts']);
    expect(together[3]!.commits).toBe(2);
    expect(brought(4)).toEqual(['src/f.ts']);
    expect(together[5]!.commits).toBe(2);
    expect(together[6]!.commits).toBe(0);
    expect(together[7]!.commits).toBe(0);
  });

  it('with no default branch, only each old tip holds anything', async () => {
    const together = await newChangesOfMany(git, refs, []);
    const alone = await Promise.all(refs.map((r) => newChanges(git, r.tip, [r.own])));
    expect(together.map(walked)).toEqual(alone.map(walked));
    expect(together[1]!.commits).toBe(0); // m1 is behind b1
  });
});

describe('changesBetweenMany', () => {
  it('answers each pair of tips as changesBetween does, in order, an unmoved ref with nothing', async () => {
    const pairs = refs.map((r) => ({ from: r.own, to: r.tip }));
    const together = await changesBetweenMany(git, pairs);
    const alone = await Promise.all(pairs.map((p) => changesBetween(git, p.from, p.to)));
    expect(together.map(shape)).toEqual(alone.map(shape));
    expect(together[6]).toEqual({ introduced: [], deleted: [] });
    // The rewind brings main's older src/a.ts back and removes what b1 added.
    expect(shape(together[1]!)).toEqual({
      introduced: [`${c.m1!.slice(0, 7)} src/a.ts ${repo.blob('a1\n').slice(0, 7)}`],
      deleted: [`${c.m1!.slice(0, 7)} src/g.ts`],
    });
    expect(together[1]!.introduced[0]!.replacedAt).toBe(c.b1);
  });

  it('asks nothing of git for no pairs', async () => {
    expect(await changesBetweenMany(git, [])).toEqual([]);
  });
});
