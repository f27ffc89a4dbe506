/**
 * Listing a directory of the index or of a commit names only that directory, whatever characters its name holds: a
 * pathspec is also a glob, so a directory named `k[1]` listed through plain `git ls-files` also lists `k1`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempRepo, type TempRepo } from '../../../test/support/git-repo.js';
import { CatFileBatch } from '../src/git.js';
import { gitSnapshot, stagedFiles } from '../src/snapshot.js';

let repo: TempRepo;
beforeAll(() => {
  repo = makeTempRepo();
  for (const file of ['k[1]/a.json', 'k1/b.json', 'k[1]x/c.json', 'src/[id].ts', 'src/i.ts']) {
    fs.mkdirSync(path.dirname(path.join(repo.dir, file)), { recursive: true });
    fs.writeFileSync(path.join(repo.dir, file), `${file}\n`);
  }
  repo.git(['add', '.']);
  repo.git(['commit', '-q', '-m', 'names with glob characters']);
});
afterAll(() => repo.cleanup());

describe('listing a directory', () => {
  it('of the index and of a commit names exactly that directory (control: a plain name lists its own files)', async () => {
    const batch = new CatFileBatch({ cwd: repo.dir });
    try {
      for (const rev of [null, 'HEAD']) {
        const snapshot = gitSnapshot(repo.dir, batch, rev);
        expect(await snapshot.listFiles('k[1]')).toEqual(['k[1]/a.json']);
        expect(await snapshot.listFiles('k1')).toEqual(['k1/b.json']);
      }
    } finally {
      await batch.close();
    }
  });

  it('stagedFiles takes each path literally', async () => {
    expect((await stagedFiles(repo.dir, ['src/[id].ts'])).map((f) => f.path)).toEqual(['src/[id].ts']);
    expect((await stagedFiles(repo.dir, ['src/'])).map((f) => f.path)).toEqual(['src/[id].ts', 'src/i.ts']);
  });
});
