/**
 * CommitAncestry: whether commits lie behind others, read from the commit objects (real git, a temporary repository),
 * within its limits; "not found" is never taken for "behind".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanGitEnv, makeTempRepo, type TempRepo } from '../../../test/support/git-repo.js';
import { CommitAncestry, parentsIn } from '../src/commit-ancestry.js';
import { CatFileBatch } from '../src/git.js';

let repo: TempRepo;
let objects: CatFileBatch;
const line: string[] = [];
let side: string;
let merge: string;

beforeAll(() => {
  repo = makeTempRepo();
  for (let i = 0; i < 8; i++) line.push(repo.commit({ 'a.txt': `${i}\n` }, `line ${i}`));
  repo.git(['checkout', '-q', '-b', 'side', line[2]!]);
  side = repo.commit({ 'b.txt': 'side\n' }, 'side');
  repo.git(['checkout', '-q', 'main']);
  repo.git(['merge', '-q', '--no-ff', '-m', 'merge side', 'side']);
  merge = repo.gitText(['rev-parse', 'HEAD']);
  objects = new CatFileBatch({ cwd: repo.dir, env: cleanGitEnv() });
});

afterAll(async () => {
  await objects.close();
  repo.cleanup();
});

describe('CommitAncestry', () => {
  it('finds commits behind a tip, through a merge to its second parent; one not behind is not found', async () => {
    const ancestry = new CommitAncestry(objects, 1000);
    expect(await ancestry.allBehind([merge], new Set([line[6]!, side, line[0]!]), 100)).toBe(true);
    expect(await ancestry.allBehind([line[7]!], new Set([side]), 100)).toBe(false);
    expect(await ancestry.allBehind([side, line[7]!], new Set([side, line[1]!]), 100)).toBe(true);
  });

  it('says not found past its limit or its budget; control: the same question within them', async () => {
    const targets = new Set([line[0]!]);
    expect(await new CommitAncestry(objects, 1000).allBehind([line[7]!], targets, 3)).toBe(false);
    expect(await new CommitAncestry(objects, 3).allBehind([line[7]!], targets, 100)).toBe(false);
    expect(await new CommitAncestry(objects, 1000).allBehind([line[7]!], targets, 100)).toBe(true);
  });

  it('a name that is no commit here is not behind anything', async () => {
    const ancestry = new CommitAncestry(objects, 1000);
    expect(await ancestry.allBehind(['f'.repeat(40)], new Set([line[0]!]), 100)).toBe(false);
    const blob = repo.gitText(['rev-parse', `${line[0]}:a.txt`]);
    expect(await ancestry.allBehind([blob], new Set([line[0]!]), 100)).toBe(false);
  });

  it('parentsIn reads parents as git does: right after tree, full lower-case ids; any other header is unknown (rt56 f01, f03)', () => {
    const [tree, p1, p2, p3] = ['1', '2', '3', '4'].map((d) => d.repeat(40)) as [
      string,
      string,
      string,
      string,
    ];
    const header = (lines: string[]) => Buffer.from(`${lines.join('\n')}\n\nparent ${p3}\n`);
    const who = 'author a <a@b> 1 +0000';
    expect(parentsIn(header([`tree ${tree}`, `parent ${p1}`, `parent ${p2}`, who]))).toEqual([p1, p2]);
    expect(parentsIn(header([`tree ${tree}`, who]))).toEqual([]);
    // A parent line git ignores (after the author), or one in upper case git reads: not taken on trust.
    expect(parentsIn(header([`tree ${tree}`, `parent ${p1}`, who, `parent ${p2}`]))).toBeNull();
    expect(
      parentsIn(
        header([`tree ${tree}`, `parent ${p1}`, `parent ${p2.toUpperCase().replace(/3/g, 'A')}`, who]),
      ),
    ).toBeNull();
    expect(parentsIn(header([`tree ${tree}`, `parent ${p1.slice(0, 39)}`, who]))).toBeNull();
    expect(parentsIn(header([`parent ${p1}`, `tree ${tree}`, who]))).toBeNull();
  });
});
