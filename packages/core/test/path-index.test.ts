import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, removeDir, runGit } from '../../../test/support/git-repo.js';
import { subjectOf, testKey, verdictLine } from '../../../test/support/records.js';
import { NotesLedger } from '../src/notes-ledger.js';
import { loadPathIndex, loadRecordedPaths } from '../src/path-index.js';

const alice = testKey({ name: 'alice', roles: ['delegator'] });

describe('the path index cache', () => {
  let dir: string;
  let cache: string;
  let ledger: NotesLedger;

  const record = async (file: string, content: string) => {
    const subject = subjectOf(file, content);
    runGit(dir, ['hash-object', '-w', '--stdin'], content);
    await ledger.append([{ blob: subject.gitBlob, lines: [verdictLine(alice, [subject])] }]);
    return (await ledger.tip())!;
  };

  beforeAll(() => {
    dir = makeTempDir();
    runGit(dir, ['init', '-q']);
    cache = path.join(dir, '.git', 'delegate-git', 'cache');
    ledger = new NotesLedger({ cwd: dir });
  });
  afterAll(() => removeDir(dir));

  it('indexes every path the ledger recorded, and caches it under the notes commit it was built from', async () => {
    const tip = await record('src/a.ts', 'a\n');
    const index = await loadPathIndex(ledger, tip, cache);
    expect(index.has('src/a.ts')).toBe(true);
    expect(index.has('src/b.ts')).toBe(false);
    expect(fs.readdirSync(cache).sort()).toEqual([`path-index-${tip}.json`, `recorded-paths-${tip}`]);
    // The small file a commit touching nothing governed reads instead of the full index.
    expect([...(await loadRecordedPaths(ledger, tip, cache))]).toEqual(['src/a.ts']);
  });

  it('extends the latest cache with only what the ledger added since, and keeps just the newest cache', async () => {
    const older = fs.readdirSync(cache).find((n) => n.startsWith('path-index-'));
    // A marker only the cached file knows: if it survives, the new index was extended, not rebuilt.
    const file = path.join(cache, older!);
    const data = JSON.parse(fs.readFileSync(file, 'utf8'));
    data.paths['marker/from-cache.ts'] = [['v', 'UNIT_PASSED', 'x', 'y', 0]];
    fs.writeFileSync(file, JSON.stringify(data));

    const tip = await record('src/b.ts', 'b\n');
    const index = await loadPathIndex(ledger, tip, cache);
    expect(index.has('src/b.ts')).toBe(true);
    expect(index.has('src/a.ts')).toBe(true);
    expect(index.has('marker/from-cache.ts')).toBe(true);
    expect(fs.readdirSync(cache).sort()).toEqual([`path-index-${tip}.json`, `recorded-paths-${tip}`]);
    expect([...(await loadRecordedPaths(ledger, tip, cache))].sort()).toContain('src/b.ts');
  });

  it('control: without a cache it rebuilds from the ledger alone (no marker)', async () => {
    fs.rmSync(cache, { recursive: true, force: true });
    const index = await loadPathIndex(ledger, await ledger.tip(), cache);
    expect(index.paths()).toEqual(['src/a.ts', 'src/b.ts']);
  });

  it('a corrupt cache is rebuilt, never trusted', async () => {
    const tip = (await ledger.tip())!;
    fs.writeFileSync(path.join(cache, `path-index-${tip}.json`), '{not json');
    const index = await loadPathIndex(ledger, tip, cache);
    expect(index.paths()).toEqual(['src/a.ts', 'src/b.ts']);
  });
});
