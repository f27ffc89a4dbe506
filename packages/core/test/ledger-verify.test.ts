/**
 * `verify`'s single pass (ledger-pass.ts, note-batch.ts, revision-judge.ts) against the slow path it replaces: every
 * line checked on its own with checkLedgerLine, the revision's files judged by checkRevision, the path index built by
 * buildPathIndex. Same answers, refusals included, with and without the cache of verified lines, and with a cache
 * that is damaged or was made under another trust root.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempRepo, type TempRepo } from '../../../test/support/git-repo.js';
import {
  keyFilesOf,
  reviewLine,
  subjectOf,
  testKey,
  testPolicy,
  verdictLine,
  writeGovernance,
} from '../../../test/support/records.js';
import { checkRevision } from '../src/checks.js';
import { loadGovernance } from '../src/governance.js';
import { type LedgerVerification, verifyLedger } from '../src/ledger-verify.js';
import { checkLedgerLine } from '../src/line-check.js';
import { LEDGER_REF } from '../src/notes-ledger.js';
import { buildPathIndex } from '../src/path-index.js';
import { POLICY_PATH, policyText } from '../src/policy.js';
import { decodeRecord } from '../src/record.js';
import { Repository } from '../src/repository.js';
import { gitSnapshot } from '../src/snapshot.js';

const alice = testKey({ name: 'alice', roles: ['delegator'] });
const rita = testKey({ name: 'rita', roles: ['reviewer'] });
const olga = testKey({ name: 'olga', roles: ['delegator'], revoked: '2026-02-01T00:00:00.000Z' });
const mallory = testKey({ name: 'mallory', roles: ['delegator'] }); // in no trust root
const bob = testKey({ name: 'bob', roles: ['delegator'] });

const LATER = '2026-03-02T12:00:00.000Z';

/** The answer of the code this replaces: each note's lines checked one by one, then the revision's files. */
async function slowVerification(repo: Repository, rev: string) {
  const commit = (await repo.objects.read(`${rev}^{commit}`))!.oid;
  const governance = await loadGovernance(gitSnapshot(repo.cwd, repo.objects, commit, repo.env));
  const { trustRoot, policy } = governance;
  const tip = (await repo.ledger.tip())!;
  const out = {
    records: 0,
    lines: 0,
    notes: 0,
    byVerdict: {} as Record<string, number>,
    bySigner: {} as Record<string, number>,
    invalid: [] as LedgerVerification['invalid'],
    revoked: [] as LedgerVerification['revoked'],
  };
  const seen = new Set<string>();
  for await (const note of repo.ledger.entries(tip)) {
    out.notes++;
    note.lines.forEach((line, i) => {
      out.lines++;
      const o = checkLedgerLine(line, note.annotated, trustRoot, policy.repositoryId);
      const sha256 = createHash('sha256').update(line).digest('hex');
      if (o.status !== 'valid') {
        // What the line counted for: the paths its record names on this blob, where it decodes.
        const decoded = decodeRecord(line);
        const paths = decoded.ok
          ? decoded.record.subjects.filter((s) => s.gitBlob === note.annotated).map((s) => s.path)
          : [];
        (o.status === 'revoked' ? out.revoked : out.invalid).push({
          blob: note.annotated,
          line: i + 1,
          sha256,
          reason: o.reason,
          ...(paths.length > 0 ? { paths } : {}),
        });
        return;
      }
      if (seen.has(sha256)) return;
      seen.add(sha256);
      out.records++;
      out.byVerdict[o.outcome] = (out.byVerdict[o.outcome] ?? 0) + 1;
      out.bySigner[o.signer] = (out.bySigner[o.signer] ?? 0) + 1;
    });
  }
  const order = (a: { blob: string; line: number }, b: { blob: string; line: number }) =>
    a.blob === b.blob ? a.line - b.line : a.blob < b.blob ? -1 : 1;
  out.invalid.sort(order);
  out.revoked.sort(order);
  const files = (await checkRevision(repo, commit)).results;
  const index = await buildPathIndex(repo.ledger, tip);
  return { ...out, files, index };
}

/** A path index as comparable data: each path's entries in a fixed order. */
function indexData(paths: Record<string, unknown[]>): Record<string, string[]> {
  return Object.fromEntries(
    Object.entries(paths)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([p, entries]) => [p, entries.map((e) => JSON.stringify(e)).sort()]),
  );
}

describe("verify's single pass gives the slow path's answer", () => {
  let repo: TempRepo;
  let cacheDir: string;
  const open = () => Repository.open(repo.dir);
  const verify = async (opts: { rev?: string; cache?: boolean } = {}) => {
    const r = await open();
    let reused = -1;
    try {
      const result = await verifyLedger(r, { ...opts, onPass: (s) => (reused = s.reused) });
      return { result, reused };
    } finally {
      await r.close();
    }
  };
  const cacheFile = () => {
    const names = fs.existsSync(cacheDir)
      ? fs.readdirSync(cacheDir).filter((n) => n.startsWith('verified-'))
      : [];
    return names.length === 1 ? path.join(cacheDir, names[0]!) : null;
  };
  const clearCache = () => fs.rmSync(cacheDir, { recursive: true, force: true });

  beforeAll(async () => {
    repo = makeTempRepo();
    cacheDir = path.join(repo.dir, '.git', 'delegate-git', 'cache');
    writeGovernance(repo.dir, testPolicy({ protect: ['src/**'] }), [alice, rita, olga]);
    repo.git(['add', '.']);
    const oldC = 'export const c = 0;\n';
    repo.commit({ 'src/c.ts': oldC }, 'adopt');
    const content: Record<string, string> = {
      'src/a.ts': 'export const a = 1;\n',
      'src/b.ts': 'export const b = 1;\n',
      'src/c.ts': 'export const c = 1;\n',
      'src/d.ts': 'export const d = 1;\n',
      'src/e.ts': 'export const e = 1;\n',
      'src/f.ts': 'export const f = 1;\n',
      'src/g.ts': 'export const g = 1;\n',
      'src/h.ts': 'export const h = 1;\n',
      'src/r.ts': 'export const r = 1;\n',
      'src/w.ts': 'export const w = 1;\n',
      'src/same1.ts': 'export const same = 1;\n',
      'src/same2.ts': 'export const same = 1;\n',
      'docs/x.md': '# recorded, so governed\n',
      'docs/y.md': '# never recorded\n',
    };
    repo.commit(content, 'the revision verified');
    const s = Object.fromEntries(Object.entries(content).map(([p, c]) => [p, subjectOf(p, c)]));
    const policy = subjectOf(POLICY_PATH, fs.readFileSync(path.join(repo.dir, POLICY_PATH)));
    const a = s['src/a.ts']!;
    const goodG = verdictLine(alice, [s['src/g.ts']!]);
    const sigAt = goodG.indexOf('"sig":"') + 10;
    const forgedSig = goodG.slice(0, sigAt) + (goodG[sigAt] === 'A' ? 'B' : 'A') + goodG.slice(sigAt + 1);
    const additions = [
      { blob: a.gitBlob, lines: [verdictLine(alice, [a])] },
      {
        blob: s['src/b.ts']!.gitBlob,
        // Refused, and a genuine line about src/a.ts put on b's blob, where it names nothing.
        lines: [verdictLine(alice, [s['src/b.ts']!], { verdict: 'UNIT_FAILED' }), verdictLine(alice, [a])],
      },
      {
        blob: subjectOf('src/c.ts', oldC).gitBlob,
        lines: [verdictLine(alice, [subjectOf('src/c.ts', oldC)])],
      },
      // One record about two files sits on both blobs and counts once.
      ...['src/d.ts', 'src/e.ts'].map((p) => ({
        blob: s[p]!.gitBlob,
        lines: [verdictLine(alice, [s['src/d.ts']!, s['src/e.ts']!])],
      })),
      { blob: s['src/f.ts']!.gitBlob, lines: [verdictLine(olga, [s['src/f.ts']!])] },
      { blob: s['src/g.ts']!.gitBlob, lines: [forgedSig, 'not a record at all', '{"payload":1}'] },
      { blob: s['src/h.ts']!.gitBlob, lines: [verdictLine(mallory, [s['src/h.ts']!])] },
      {
        blob: s['src/r.ts']!.gitBlob,
        lines: [
          verdictLine(alice, [s['src/r.ts']!]),
          reviewLine(rita, [s['src/r.ts']!], { decision: 'reject', createdAt: LATER }),
        ],
      },
      {
        blob: s['src/w.ts']!.gitBlob,
        lines: [verdictLine(alice, [s['src/w.ts']!], { repositoryId: 'another-repository' })],
      },
      { blob: s['src/same1.ts']!.gitBlob, lines: [verdictLine(alice, [s['src/same1.ts']!])] },
      { blob: s['docs/x.md']!.gitBlob, lines: [verdictLine(alice, [s['docs/x.md']!])] },
      { blob: policy.gitBlob, lines: [reviewLine(rita, [policy])] },
    ];
    const r = await open();
    await r.ledger.append(additions);
    await r.close();
    // A foreign tool's flat-beside-fanned duplicate: git shows both notes of src/a.ts's blob as one.
    const tree = repo.gitText(['ls-tree', LEDGER_REF]);
    const extra = repo.blob(`${reviewLine(rita, [a], { createdAt: LATER })}\n`);
    const sub = repo.gitText(['mktree'], `100644 blob ${extra}\t${a.gitBlob.slice(2)}\n`);
    const root = repo.gitText(['mktree'], `${tree}\n040000 tree ${sub}\t${a.gitBlob.slice(0, 2)}\n`);
    const tip = repo.gitText(['rev-parse', LEDGER_REF]);
    repo.git(['update-ref', LEDGER_REF, repo.gitText(['commit-tree', root, '-p', tip, '-m', 'duplicate'])]);
  }, 60_000);
  afterAll(() => repo.cleanup());

  it('counts, lists and judges exactly as line-by-line checks and checkRevision do (refusals included)', async () => {
    clearCache();
    const r = await open();
    const slow = await slowVerification(r, 'HEAD');
    await r.close();
    clearCache();
    const { result } = await verify({ cache: false });
    expect(result).toMatchObject({
      records: slow.records,
      lines: slow.lines,
      notes: slow.notes,
      byVerdict: slow.byVerdict,
      bySigner: slow.bySigner,
      invalid: slow.invalid,
      revoked: slow.revoked,
    });
    // verify also marks the refused files the ledger holds no note on at all, which checkRevision does not.
    expect(result.files.filter((f) => f.unrecorded).every((f) => !f.promoted)).toBe(true);
    expect(withoutUnrecorded(result.files)).toEqual(slow.files);
    // The scenario does reach every branch it is meant to.
    expect(slow.invalid.map((p) => p.reason)).toEqual(
      expect.arrayContaining([
        'the record does not name the blob it is attached to',
        expect.stringMatching(/^not a valid record: /),
        expect.stringMatching(/does not verify/),
        expect.stringMatching(/not in the trust root/),
        'the record belongs to another repository',
      ]),
    );
    expect(slow.revoked).toHaveLength(1);
    const byPath = Object.fromEntries(result.files.map((f) => [f.path, f]));
    expect(byPath['src/a.ts']!.promoted).toBe(true);
    expect(byPath['docs/x.md']!.promoted).toBe(true);
    expect(byPath['docs/y.md']).toBeUndefined();
    expect(byPath['src/c.ts']!.reason).toMatch(/changed after the verdict/);
    expect(byPath['src/same2.ts']!.reason).toMatch(/recorded as src\/same1\.ts/);
    expect(byPath['src/r.ts']!.reason).toBe('rejected by rita');
    expect(byPath['src/g.ts']!.promoted).toBe(false);
    expect(result.files.filter((f) => f.promoted).length).toBeGreaterThan(3);
    expect(result.files.filter((f) => !f.promoted).length).toBeGreaterThan(6);
    // The index verify saved is the one buildPathIndex builds.
    const tip = repo.gitText(['rev-parse', LEDGER_REF]);
    const saved = JSON.parse(fs.readFileSync(path.join(cacheDir, `path-index-${tip}.json`), 'utf8'));
    expect(indexData(saved.paths)).toEqual(indexData(Object.fromEntries(slow.index.entries)));
  });

  it('remembers what it verified: a second run reads no note again and answers the same', async () => {
    clearCache();
    const cold = await verify();
    expect(cold.reused).toBe(0);
    expect(cacheFile()).not.toBeNull();
    const warm = await verify();
    expect(warm.reused).toBe(cold.result.notes);
    expect(warm.result).toEqual(cold.result);
    const uncached = await verify({ cache: false });
    expect(uncached.result).toEqual(cold.result);
  });

  it('after the ledger grew, only the notes that changed are read and checked again', async () => {
    clearCache();
    const before = await verify();
    const fresh = subjectOf('src/new.ts', 'export const fresh = 1;\n');
    const a = subjectOf('src/a.ts', 'export const a = 1;\n');
    const r = await open();
    await r.ledger.append([
      { blob: fresh.gitBlob, lines: [verdictLine(alice, [fresh])] },
      { blob: a.gitBlob, lines: [verdictLine(alice, [a], { createdAt: LATER })] },
    ]);
    await r.close();
    const grown = await verify();
    expect(grown.reused).toBe(before.result.notes - 1); // src/a.ts's note changed, and one note is new
    expect(grown.result.notes).toBe(before.result.notes + 1);
    expect(grown.result).toEqual((await verify({ cache: false })).result);
  });

  it('a damaged cache is read up to the damage, then rebuilt; the answer does not change', async () => {
    clearCache();
    const cold = await verify();
    const file = cacheFile()!;
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    lines[Math.floor(lines.length / 2)] = '{"not": "an entry"';
    fs.writeFileSync(file, lines.join('\n'));
    const damaged = await verify();
    expect(damaged.reused).toBeGreaterThan(0);
    expect(damaged.reused).toBeLessThan(cold.result.notes);
    expect(damaged.result).toEqual(cold.result);
    const rebuilt = await verify();
    expect(rebuilt.reused).toBe(cold.result.notes);
    fs.writeFileSync(file, 'garbage\n');
    expect((await verify()).result).toEqual(cold.result);
  });

  it('where no cache can be kept (its directory is a file), verify answers the same without one', async () => {
    clearCache();
    const expected = (await verify({ cache: false })).result;
    clearCache();
    fs.mkdirSync(path.dirname(cacheDir), { recursive: true });
    fs.writeFileSync(cacheDir, 'not a directory');
    try {
      const run = await verify();
      expect(run.reused).toBe(0);
      expect(run.result).toEqual(expected);
    } finally {
      fs.rmSync(cacheDir, { force: true });
    }
  });

  it('a remembered promotion answers only for the same path, content and rules', async () => {
    clearCache();
    const cold = await verify();
    const a = cold.result.files.find((f) => f.path === 'src/a.ts')!;
    expect(a.promoted).toBe(true);
    // Control: the remembered promotion is what a warm run reports (its note is not even read).
    const file = cacheFile()!;
    const text = fs.readFileSync(file, 'utf8');
    expect(text).toContain(JSON.stringify(a.reason));
    fs.writeFileSync(
      file,
      text.replace(
        `"src/a.ts","${a.sha256}",0,1,${JSON.stringify(a.reason)}`,
        `"src/a.ts","${a.sha256}",0,1,"remembered"`,
      ),
    );
    const warm = await verify();
    expect(warm.result.files.find((f) => f.path === 'src/a.ts')!.reason).toBe('remembered');
    // The policy now requires a review: same trust root, so the facts are reused, but not that promotion.
    fs.writeFileSync(
      path.join(repo.dir, POLICY_PATH),
      policyText(testPolicy({ protect: ['src/**'], requireReview: true })),
    );
    repo.commit(
      { [POLICY_PATH]: fs.readFileSync(path.join(repo.dir, POLICY_PATH), 'utf8') },
      'require reviews',
    );
    const r = await open();
    const slow = await slowVerification(r, 'HEAD');
    await r.close();
    const strict = await verify();
    expect(strict.reused).toBe(cold.result.notes);
    // (The policy file itself is also refused for its unapproved change, which checkRevision does not look at.)
    const notPolicy = (f: { path: string }) => f.path !== POLICY_PATH;
    expect(withoutUnrecorded(strict.result.files).filter(notPolicy)).toEqual(slow.files.filter(notPolicy));
    expect(strict.result.files.find((f) => f.path === 'src/a.ts')!.reason).not.toBe('remembered');
    expect(strict.result.files.find((f) => f.path === 'src/d.ts')).toMatchObject({ promoted: false });
  });

  it('an entry is believed only under the trust root it was made with', async () => {
    clearCache();
    const honest = await verify();
    const forged = honest.result.invalid.find((p) => /does not verify/.test(p.reason))!;
    // Rewrite the remembered facts of the forged line: "verified, signed by alice".
    const file = cacheFile()!;
    const lied = fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .map((line) => {
        if (!line.startsWith(`["${forged.blob}"`)) return line;
        const entry = JSON.parse(line);
        for (const f of entry[2]) if (f[7] === forged.sha256) Object.assign(f, { 2: 1, 3: '' });
        return JSON.stringify(entry);
      })
      .join('\n');
    fs.writeFileSync(file, lied);
    // Control: under the same trust root the cache is believed (which is why it lives in the git dir only).
    const believed = await verify();
    expect(believed.result.invalid.map((p) => p.sha256)).not.toContain(forged.sha256);
    // A new key at the next revision: another trust root, so the entry is not read.
    const [bobFile] = keyFilesOf([bob]);
    repo.commit({ [bobFile!.path]: bobFile!.text }, 'add bob');
    const r = await open();
    const slow = await slowVerification(r, 'HEAD');
    await r.close();
    const afterChange = await verify();
    expect(afterChange.reused).toBe(0);
    expect(afterChange.result.invalid).toEqual(slow.invalid);
    expect(afterChange.result.invalid.map((p) => p.sha256)).toContain(forged.sha256);
  });
});

function withoutUnrecorded<T extends { unrecorded?: true }>(
  files: readonly T[],
): Array<Omit<T, 'unrecorded'>> {
  return files.map(({ unrecorded: _, ...file }) => file);
}
