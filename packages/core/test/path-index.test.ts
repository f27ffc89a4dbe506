import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, removeDir, runGit } from '../../../test/support/git-repo.js';
import { subjectOf, testKey, trustRootOf, verdictLine } from '../../../test/support/records.js';
import { NotesLedger } from '../src/notes-ledger.js';
import { loadPathIndex, loadRecordedPaths, PathIndex, recordOnPath } from '../src/path-index.js';
import { promotionOf } from '../src/promotion.js';

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

  it('reads a recorded paths file emptied or cut short as no file, never as fewer paths recorded', async () => {
    const tip = (await ledger.tip())!;
    await loadRecordedPaths(ledger, tip, cache);
    const file = path.join(cache, `recorded-paths-${tip}`);
    const whole = fs.readFileSync(file, 'utf8');
    const expected = [...(await loadRecordedPaths(ledger, tip, cache))].sort();
    expect(expected).toEqual(expect.arrayContaining(['src/a.ts', 'src/b.ts']));
    for (const damaged of ['', whole.slice(0, -3), whole.replace(/\0[^\0]*$/, ''), `${whole}\0extra.ts`]) {
      fs.writeFileSync(file, damaged);
      expect([...(await loadRecordedPaths(ledger, tip, cache))].sort(), JSON.stringify(damaged)).toEqual(
        expected,
      );
      // Written whole again from the cached index, for the quick path of the next commit (an older format too).
      expect(fs.readFileSync(file, 'utf8')).toBe(whole);
    }
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

describe('the index as the cache file holds it', () => {
  it('is written in pieces that make the one JSON document the index reads back from', () => {
    const many = Array.from({ length: 3000 }, (_, i) => `src/dir ${i % 7}/file-${i}.ts`);
    const odd = ['say "hi"\\there.md', 'ünïcode/✓.md', '__proto__', '123', 'constructor'];
    const byPath = new Map(
      [...many, ...odd].map((p, i) => [
        p,
        [['v', 'UNIT_PASSED', 'k'.repeat(64), `${i}`.padStart(40, '0'), i]],
      ]),
    ) as ConstructorParameters<typeof PathIndex>[0];
    const index = new PathIndex(byPath);
    const pieces = [...index.serialized()];
    expect(pieces.length).toBeGreaterThan(1); // written in pieces, not as one string
    const back = PathIndex.fromJSON(JSON.parse(pieces.join('')));
    expect(back).not.toBeNull();
    expect(back!.paths()).toEqual(index.paths());
    for (const p of odd) expect(back!.entries.get(p)).toEqual(byPath.get(p));
    expect(PathIndex.fromJSON(JSON.parse([...PathIndex.empty().serialized()].join('')))!.size).toBe(0);
  });
});

describe("verify's bounded history of a path", () => {
  // A small deterministic generator: the property is checked over many histories, the same ones every run.
  let seed = 42;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const reviewers = [
    testKey({ name: 'rita', roles: ['reviewer'] }),
    testKey({ name: 'sam', roles: ['reviewer'] }),
  ];
  const trustRoot = trustRootOf([alice, reviewers[0]!]); // sam is not trusted: named 'a reviewer'
  const keyids = [alice, ...reviewers].map((k) => k.signer.publicKey.keyid);
  const outcomes: Array<['v' | 'r', string]> = [
    ['v', 'UNIT_PASSED'],
    ['v', 'UNIT_FAILED'],
    ['v', 'UNIT_FLAKY'],
    ['v', 'CONTRACT_MODIFIED'],
    ['r', 'approve'],
    ['r', 'reject'],
  ];
  type Entry = ConstructorParameters<typeof PathIndex>[0] extends Map<string, Array<infer E>> ? E : never;
  const reasonOf = (index: PathIndex, blob: string) =>
    promotionOf(
      { path: 'p', sha256: 's', gitBlob: blob },
      [],
      { requireReview: false, reviewThreshold: 1 },
      index.earlier('p', blob, trustRoot),
    ).reason;

  it('tells every content the same refusal as the whole history does, and stays bounded', () => {
    let compared = 0;
    for (let history = 0; history < 300; history++) {
      const blobs = Array.from({ length: 1 + random(6) }, (_, i) => `blob${i}`.padEnd(40, '0'));
      const entries: Entry[] = Array.from({ length: random(40) }, () => {
        const [kind, outcome] = outcomes[random(outcomes.length)]!;
        // Few distinct times, so that ties (broken by the order the records came in) are common.
        return [kind, outcome, keyids[random(3)]!, blobs[random(blobs.length)]!, random(8)];
      });
      const bounded = new Map<string, Entry[]>();
      for (const e of entries) recordOnPath(bounded, 'p', e);
      const whole = new PathIndex(new Map(entries.length ? [['p', entries]] : []));
      const pruned = new PathIndex(bounded);
      expect(pruned.has('p')).toBe(whole.has('p'));
      expect(bounded.get('p')?.length ?? 0).toBeLessThanOrEqual(12);
      for (const blob of [...blobs, 'other'.padEnd(40, '0')]) {
        expect(reasonOf(pruned, blob)).toBe(reasonOf(whole, blob));
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(1000);
  });

  it('keeps what is needed: the newest approval of another content, when the newest approval is on this one', () => {
    const [a, b] = ['a'.repeat(40), 'b'.repeat(40)];
    const bounded = new Map<string, Entry[]>();
    const rita = keyids[1]!;
    recordOnPath(bounded, 'p', ['r', 'approve', rita, a, 1]);
    for (let t = 2; t < 40; t++) recordOnPath(bounded, 'p', ['r', 'approve', keyids[2]!, b, t]);
    const index = new PathIndex(bounded);
    expect(reasonOf(index, b)).toBe('approved by rita for another version');
    expect(reasonOf(index, a)).toBe('approved by a reviewer for another version');
    expect(bounded.get('p')!.length).toBeLessThanOrEqual(12);
  });
});
