/**
 * worktreeBlobs gives, for each path, the blob `git add` would stage: the test stages the same paths and compares.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeTempRepo, type TempRepo } from '../../../test/support/git-repo.js';
import { worktreeBlobs } from '../src/worktree-blobs.js';

const repos: TempRepo[] = [];
afterEach(() => {
  for (const r of repos.splice(0)) r.cleanup();
});

function repoWith(files: Record<string, string>, links: Record<string, string>): TempRepo {
  const r = makeTempRepo();
  repos.push(r);
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(r.dir, file)), { recursive: true });
    fs.writeFileSync(path.join(r.dir, file), content);
  }
  for (const [link, target] of Object.entries(links)) {
    fs.mkdirSync(path.dirname(path.join(r.dir, link)), { recursive: true });
    fs.symlinkSync(target, path.join(r.dir, link));
  }
  return r;
}

/** The blob `git add` stages for each path. */
function staged(r: TempRepo, paths: string[]): string[] {
  r.git(['add', '--', ...paths]);
  return paths.map((p) => r.gitText(['rev-parse', `:${p}`]));
}

describe('worktreeBlobs', () => {
  it('gives the blob git add stages: a file (filters applied), a symbolic link as its target text, a dangling link', async () => {
    const r = repoWith(
      { 'real.txt': 'real content\n', 'src/crlf.ts': 'a\r\nb\r\n', 'src/plain.ts': 'plain\n' },
      { 'src/link.ts': '../real.txt', 'src/dangling.ts': 'nowhere.txt' },
    );
    r.git(['config', 'core.autocrlf', 'true']);
    const paths = ['src/plain.ts', 'src/link.ts', 'src/crlf.ts', 'src/dangling.ts'];
    const ids = await worktreeBlobs(r.dir, paths, { write: false });
    expect(ids).toEqual(staged(r, paths));
    // The trap it avoids: hash-object of the path follows the link to the file it points to.
    expect(ids[1]).not.toBe(r.gitText(['hash-object', 'src/link.ts']));
  });

  it("stores what git add would stage for a file whose indexed blob has CRLF under core.autocrlf (git's safer autocrlf); hashing alone converts it", async () => {
    const r = repoWith({ 'src/crlf.ts': 'a\r\nb\r\n' }, {});
    r.git(['add', 'src/crlf.ts']);
    r.git(['config', 'core.autocrlf', 'true']);
    fs.writeFileSync(path.join(r.dir, 'src/crlf.ts'), 'a2\r\nb\r\n');
    const [written] = await worktreeBlobs(r.dir, ['src/crlf.ts'], { write: true });
    const [hashed] = await worktreeBlobs(r.dir, ['src/crlf.ts'], { write: false });
    expect(written).toEqual(staged(r, ['src/crlf.ts'])[0]);
    expect(hashed).not.toBe(written);
  });

  it('answers null for nothing at the path, and writes the blobs only when asked', async () => {
    const r = repoWith({ 'src/a.ts': 'a written\n' }, { 'src/l.ts': 'a.ts' });
    const paths = ['src/a.ts', 'src/missing.ts', 'src/a.ts/under-a-file', 'src/l.ts'];
    const read = await worktreeBlobs(r.dir, paths, { write: false });
    expect(read.map((id) => id !== null)).toEqual([true, false, false, true]);
    for (const id of [read[0]!, read[3]!]) expect(() => r.git(['cat-file', '-e', id])).toThrow(); // not stored yet
    const written = await worktreeBlobs(r.dir, paths, { write: true });
    expect(written).toEqual(read);
    for (const id of [written[0]!, written[3]!]) r.git(['cat-file', '-e', id]); // stored now
  });
});
