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

describe('growing the cache from lines the caller already read (the server gate)', () => {
  let dir: string;
  let cache: string;
  let ledger: NotesLedger;
  let older: string;
  let tip: string;
  let subject: ReturnType<typeof subjectOf>;

  beforeAll(async () => {
    dir = makeTempDir();
    runGit(dir, ['init', '-q']);
    cache = path.join(dir, '.git', 'delegate-git', 'cache');
    ledger = new NotesLedger({ cwd: dir });
    const a = subjectOf('src/a.ts', 'a\n');
    await ledger.append([{ blob: a.gitBlob, lines: [verdictLine(alice, [a])] }]);
    older = (await ledger.tip())!;
    subject = subjectOf('lib/b.ts', 'b\n');
    await ledger.append([{ blob: subject.gitBlob, lines: [verdictLine(alice, [subject])] }]);
    tip = (await ledger.tip())!;
  });
  afterAll(() => removeDir(dir));

  const addition = () => ledger.addedLines(older, tip);
  const fresh = async () => {
    fs.rmSync(cache, { recursive: true, force: true });
    await loadPathIndex(ledger, older, cache); // the server's cache at the ledger's current tip
  };

  it('grows the recorded paths of the earlier tip, without building the full index, and keeps both files', async () => {
    await fresh();
    const grown = await loadRecordedPaths(ledger, tip, cache, { since: older, added: addition() });
    expect([...grown].sort()).toEqual(['lib/b.ts', 'src/a.ts']);
    expect(fs.readdirSync(cache).sort()).toEqual(
      [`path-index-${older}.json`, `recorded-paths-${older}`, `recorded-paths-${tip}`].sort(),
    );
    // The saved file answers the next read exactly as the full index would.
    const full = await loadPathIndex(ledger, tip, null);
    expect([...(await loadRecordedPaths(ledger, tip, cache))].sort()).toEqual(full.paths());
  });

  it('control: without the earlier tip’s file, or when the lines cannot be had, it builds the full index', async () => {
    await fresh();
    fs.rmSync(path.join(cache, `recorded-paths-${older}`));
    const withoutFile = await loadRecordedPaths(ledger, tip, cache, { since: older, added: addition() });
    expect([...withoutFile].sort()).toEqual(['lib/b.ts', 'src/a.ts']);
    expect(fs.existsSync(path.join(cache, `path-index-${tip}.json`))).toBe(true);

    await fresh();
    const failed = Promise.reject(new Error('unreadable'));
    failed.catch(() => {}); // handled where it is awaited
    const withoutLines = await loadRecordedPaths(ledger, tip, cache, { since: older, added: failed });
    expect([...withoutLines].sort()).toEqual(['lib/b.ts', 'src/a.ts']);
  });

  it('extends the full index with the known lines when its cache is at `since`, and ignores them otherwise', async () => {
    // A marker only the given lines hold: present exactly when they were used instead of reading the ledger.
    const marker = subjectOf('marker/given.ts', 'm\n');
    const given = Promise.resolve([{ annotated: marker.gitBlob, lines: [verdictLine(alice, [marker])] }]);
    await fresh();
    const used = await loadPathIndex(ledger, tip, cache, { since: older, added: given });
    expect(used.paths()).toEqual(['marker/given.ts', 'src/a.ts']);

    await fresh();
    const ignored = await loadPathIndex(ledger, tip, cache, { since: tip, added: given });
    expect(ignored.paths()).toEqual(['lib/b.ts', 'src/a.ts']);
  });

  it('extends the cache of `since` rather than a newer one, and keeps it beside the new tip (a refused push stays there)', async () => {
    await fresh();
    const mark = (file: string, marker: string) => {
      const data = JSON.parse(fs.readFileSync(file, 'utf8'));
      data.paths[marker] = [['v', 'UNIT_PASSED', 'x', 'y', 0]];
      fs.writeFileSync(file, JSON.stringify(data));
    };
    const sinceFile = path.join(cache, `path-index-${older}.json`);
    mark(sinceFile, 'marker/since.ts');
    const decoy = path.join(cache, `path-index-${'f'.repeat(40)}.json`);
    fs.copyFileSync(sinceFile, decoy);
    mark(decoy, 'marker/decoy.ts');
    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(decoy, later, later); // the newest file, which a caller without `known` would extend

    const index = await loadPathIndex(ledger, tip, cache, { since: older, added: addition() });
    expect(index.paths()).toEqual(['lib/b.ts', 'marker/since.ts', 'src/a.ts']);
    expect(fs.readdirSync(cache).sort()).toEqual(
      [
        `path-index-${older}.json`,
        `recorded-paths-${older}`,
        `path-index-${tip}.json`,
        `recorded-paths-${tip}`,
      ].sort(),
    );
  });
});
