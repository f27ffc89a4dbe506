import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempRepo, type TempRepo } from '../../../test/support/git-repo.js';
import {
  reviewLine,
  subjectOf,
  testKey,
  testPolicy,
  trustRootOf,
  verdictLine,
  writeGovernance,
} from '../../../test/support/records.js';
import { type CheckReport, checkStaged } from '../src/checks.js';
import { DecisionCache } from '../src/decision-cache.js';
import { readStore, storeText } from '../src/decision-store.js';
import { Repository } from '../src/repository.js';

const alice = testKey({ name: 'alice', roles: ['delegator'] });
const rita = testKey({ name: 'rita', roles: ['reviewer'] });

/** The gate's decisions cache: answers at the same ledger tip, carries promotions over when the tip moves. */
describe('the decision cache of the staged check', () => {
  let repo: TempRepo;
  let cacheDir: string;

  const cacheFiles = () =>
    fs.existsSync(cacheDir) ? fs.readdirSync(cacheDir).filter((n) => n.startsWith('decisions-')) : [];
  const check = async (): Promise<Record<string, { promoted: boolean; reason: string }>> => {
    const opened = await Repository.open(repo.dir);
    try {
      const report: CheckReport = await checkStaged(opened);
      return Object.fromEntries(
        report.results.map((r) => [r.path, { promoted: r.promoted, reason: r.reason }]),
      );
    } finally {
      await opened.close();
    }
  };
  const stage = (file: string, content: string) => {
    fs.mkdirSync(path.dirname(path.join(repo.dir, file)), { recursive: true });
    fs.writeFileSync(path.join(repo.dir, file), content);
    repo.git(['add', '--', file]);
    return subjectOf(file, content);
  };
  const record = async (blob: string, line: string) => {
    const opened = await Repository.open(repo.dir);
    await opened.ledger.append([{ blob, lines: [line] }]);
    await opened.close();
  };
  /** Rewrites the reason of one cached decision, to see whether a later check answered from the cache. */
  const mark = (file: string, marker: string) => {
    const [name] = cacheFiles();
    const full = path.join(cacheDir, name!);
    const stored = readStore(full)!;
    const [, entry] = [...stored.entries].find(([k]) => k.endsWith(`\0${file}`))!;
    entry.reason = stored.texts.push(marker) - 1;
    fs.writeFileSync(full, storeText(stored));
  };

  beforeAll(() => {
    repo = makeTempRepo();
    cacheDir = path.join(repo.dir, '.git', 'delegate-git', 'cache');
    writeGovernance(repo.dir, testPolicy({ protect: ['src/**'] }), [alice, rita]);
    repo.git(['add', '.']);
    repo.git(['commit', '-q', '-m', 'adopt']);
  });
  afterAll(() => repo.cleanup());

  it('remembers the decisions of a check under the ledger tip, and answers the next check from them', async () => {
    const a = stage('src/a.ts', 'export const a = 1;\n');
    const b = stage('src/b.ts', 'export const b = 1;\n');
    await record(a.gitBlob, verdictLine(alice, [a]));
    await record(b.gitBlob, verdictLine(alice, [b]));
    expect(await check()).toEqual({
      'src/a.ts': { promoted: true, reason: 'a unit passed it and its content is unchanged' },
      'src/b.ts': { promoted: true, reason: 'a unit passed it and its content is unchanged' },
    });
    expect(cacheFiles()).toHaveLength(1);
    mark('src/a.ts', 'answered from the cache');
    expect((await check())['src/a.ts']!.reason).toBe('answered from the cache');
  });

  it('when the ledger moves on, carries over promotions whose blob got no new record and judges the rest again', async () => {
    mark('src/b.ts', 'carried over');
    const a = subjectOf('src/a.ts', 'export const a = 1;\n');
    await record(
      a.gitBlob,
      reviewLine(rita, [a], { decision: 'reject', createdAt: '2026-03-02T00:00:00.000Z' }),
    );
    const after = await check();
    expect(after['src/a.ts']).toEqual({ promoted: false, reason: 'rejected by rita' });
    expect(after['src/b.ts']!.reason).toBe('carried over');
    expect(cacheFiles()).toHaveLength(1); // the file of the old tip is gone
  });

  it('judges a refusal again at a new tip, since its wording depends on the path history', async () => {
    const first = subjectOf('src/c.ts', 'export const c = 1;\n');
    stage('src/c.ts', 'export const c = 2;\n');
    expect((await check())['src/c.ts']!.reason).toMatch(/^no verdict/);
    repo.blob('export const c = 1;\n');
    await record(first.gitBlob, verdictLine(alice, [first]));
    expect((await check())['src/c.ts']).toEqual({
      promoted: false,
      reason: 'its content changed after the verdict, so it is not the version anything verified',
    });
  });

  it('ignores a corrupt cache file and writes a good one', async () => {
    const [name] = cacheFiles();
    const good = fs.readFileSync(path.join(cacheDir, name!), 'utf8');
    fs.writeFileSync(path.join(cacheDir, name!), good.slice(0, good.length - 20)); // cut short
    const answer = await check();
    expect(answer['src/b.ts']).toEqual({
      promoted: true,
      reason: 'a unit passed it and its content is unchanged',
    });
    expect(readStore(path.join(cacheDir, name!))?.entries.size).toBeGreaterThan(0);
  });

  it('keeps decisions per governance: a new trust root judges everything again', async () => {
    mark('src/b.ts', 'under the old keys');
    // Staging a key change changes the governance the staged files are judged by (the staged trust root).
    const carol = testKey({ name: 'carol', roles: ['delegator'] });
    writeGovernance(repo.dir, testPolicy({ protect: ['src/**'] }), [alice, rita, carol]);
    repo.git(['add', '.']);
    const answer = await check();
    expect(answer['src/b.ts']).toEqual({
      promoted: true,
      reason: 'a unit passed it and its content is unchanged',
    });
  });
});

describe('the decision files kept', () => {
  it("keeps the files of other rules at the same ledger tip (one check may judge under two), and drops other tips'", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'decisions-'));
    try {
      const tip = (c: string) => c.repeat(40);
      const rules = (keys: (typeof alice)[]) => ({
        policy: testPolicy({ protect: ['src/**'] }),
        trustRoot: trustRootOf(keys),
        source: 'test',
      });
      const decide = async (at: string, governance: ReturnType<typeof rules>) => {
        const cache = await DecisionCache.open(dir, at, governance, undefined, { cwd: dir });
        cache.set({
          path: 'src/a.ts',
          blob: 'b'.repeat(40),
          sha256: 'c'.repeat(64),
          promoted: true,
          reason: 'r',
          by: [],
        });
        await cache.save();
      };
      const files = () =>
        fs
          .readdirSync(dir)
          .filter((n) => n.startsWith('decisions-'))
          .sort();
      await decide(tip('1'), rules([alice]));
      await decide(tip('1'), rules([alice, rita]));
      expect(files()).toHaveLength(2);
      expect(files().every((n) => n.endsWith(tip('1')))).toBe(true);
      await decide(tip('2'), rules([alice]));
      expect(files()).toEqual([expect.stringMatching(new RegExp(`${tip('2')}$`))]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
