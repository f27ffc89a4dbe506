/**
 * judgePush on a bare server as git runs the hook: the pushed objects are in the repository, reachable from no ref,
 * and the `<old> <new> <ref>` updates name them. What the e2e stories do not reach: a path outside `protect` that is
 * governed only because the ledger recorded it, the server's cache (grown from the lines the push adds, and the same
 * answers without it), a line added to an existing note, and the refs and objects left untouched.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTempDir,
  makeTempRepo,
  removeDir,
  runGit,
  runGitText,
  type TempRepo,
} from '../../../test/support/git-repo.js';
import {
  subjectOf,
  testKey,
  testPolicy,
  verdictLine,
  writeGovernance,
} from '../../../test/support/records.js';
import { LEDGER_REF, NotesLedger } from '../src/notes-ledger.js';
import { loadPathIndex } from '../src/path-index.js';
import { judgePush } from '../src/pre-receive.js';
import type { RefUpdate } from '../src/push-judgement.js';
import { Repository } from '../src/repository.js';

const alice = testKey({ name: 'alice', roles: ['delegator'] });
const mallory = testKey({ name: 'mallory', roles: ['delegator'] }); // not in the trust root

describe('judgePush', () => {
  let work: TempRepo;
  let root: string;
  let ledger: NotesLedger;
  let base: { main: string; notes: string };

  /** Records UNIT_PASSED by `key` on the content of each path, in one notes commit. */
  const record = async (files: Record<string, string>, key = alice) => {
    await ledger.append(
      Object.entries(files).map(([p, content]) => {
        const s = subjectOf(p, content);
        return { blob: s.gitBlob, lines: [verdictLine(key, [s])] };
      }),
    );
  };

  /** A server holding `base` and its cache, with `main` and the ledger of the work repository pushed as objects only. */
  const stage = async (name: string, opts: { cache: boolean }) => {
    const dir = path.join(root, name);
    runGit(root, ['clone', '-q', '--bare', work.dir, dir]);
    runGit(dir, ['update-ref', 'refs/heads/main', base.main]);
    runGit(dir, ['update-ref', LEDGER_REF, base.notes]);
    for (const ref of runGitText(dir, ['for-each-ref', '--format=%(refname)']).split('\n'))
      if (ref !== 'refs/heads/main' && ref !== LEDGER_REF) runGit(dir, ['update-ref', '-d', ref]);
    runGit(dir, ['symbolic-ref', 'HEAD', 'refs/heads/main']);
    const repo = await Repository.open(dir);
    if (opts.cache) await loadPathIndex(repo.ledger, base.notes, repo.cacheDir); // a server that took pushes before
    const updates: RefUpdate[] = [
      { oldId: base.main, newId: work.gitText(['rev-parse', 'main']), ref: 'refs/heads/main' },
      { oldId: base.notes, newId: work.gitText(['rev-parse', LEDGER_REF]), ref: LEDGER_REF },
    ];
    return { dir, repo, updates };
  };

  const judgeOn = async (name: string, opts: { cache: boolean }) => {
    const { dir, repo, updates } = await stage(name, opts);
    try {
      const refsBefore = runGitText(dir, ['for-each-ref']);
      const judged = await judgePush(repo, updates);
      expect(runGitText(dir, ['for-each-ref'])).toBe(refsBefore); // the hook never moves a ref
      return { judged, cache: fs.existsSync(repo.cacheDir) ? fs.readdirSync(repo.cacheDir).sort() : [] };
    } finally {
      await repo.close();
    }
  };

  beforeAll(async () => {
    root = makeTempDir();
    work = makeTempRepo();
    ledger = new NotesLedger({ cwd: work.dir });
    writeGovernance(work.dir, testPolicy({ protect: ['src/**'] }), [alice]);
    work.git(['add', '.delegate-git']);
    const files = { 'src/a.ts': 'a 1\n', 'lib/recorded.ts': 'r 1\n', 'lib/free.ts': 'f 1\n' };
    work.commit(files, 'adopt');
    // lib/recorded.ts is outside protect, but the ledger spoke about it: it is governed from then on.
    await record({ 'src/a.ts': 'a 1\n', 'lib/recorded.ts': 'r 1\n' });
    base = { main: work.gitText(['rev-parse', 'main']), notes: work.gitText(['rev-parse', LEDGER_REF]) };
  });
  afterAll(() => {
    work.cleanup();
    removeDir(root);
  });

  it('accepts a push whose governed files are promoted by the ledger it carries; the free file is not judged', async () => {
    const files = { 'src/a.ts': 'a 2\n', 'lib/recorded.ts': 'r 2\n', 'lib/free.ts': 'f 2\n' };
    work.commit(files, 'change all three');
    await record({ 'src/a.ts': 'a 2\n' });
    await record({ 'lib/recorded.ts': 'r 2\n' });
    const { judged, cache } = await judgeOn('accepted.git', { cache: true });
    expect(judged).toEqual({
      refusals: [],
      bootstrap: false,
      changingRules: [],
      commits: 1,
      files: 2,
      noteLines: 2,
    });
    // The recorded paths were grown from the server's cache for the new ledger tip; the full index is only read to
    // word a refusal, so none was built.
    const newTip = work.gitText(['rev-parse', LEDGER_REF]);
    expect(cache).toEqual(
      [`path-index-${base.notes}.json`, `recorded-paths-${base.notes}`, `recorded-paths-${newTip}`].sort(),
    );
    expect((await judgeOn('accepted-no-cache.git', { cache: false })).judged).toEqual(judged);
  });

  it('refuses a recorded path outside protect pushed without a record, with its history, cache or not', async () => {
    work.commit({ 'lib/recorded.ts': 'r 3\n', 'src/a.ts': 'a 3\n' }, 'recorded path unpromoted');
    await record({ 'src/a.ts': 'a 3\n' });
    const withCache = await judgeOn('refused.git', { cache: true });
    const head = work.gitText(['rev-parse', 'main']);
    expect(withCache.judged.refusals).toEqual([
      {
        ref: 'refs/heads/main',
        commit: head,
        path: 'lib/recorded.ts',
        reason: 'its content changed after the verdict, so it is not the version anything verified',
      },
    ]);
    expect(withCache.judged.files).toBe(4); // the previous test's commit is pushed again: two contents each
    // The refusal's wording read the full index for the pushed ledger; the server's cache stays for its own tip.
    const newTip = work.gitText(['rev-parse', LEDGER_REF]);
    expect(withCache.cache).toEqual(
      [base.notes, newTip].flatMap((t) => [`path-index-${t}.json`, `recorded-paths-${t}`]).sort(),
    );
    expect((await judgeOn('refused-no-cache.git', { cache: false })).judged).toEqual(withCache.judged);
  });

  it('refuses a line added to an existing note when its signer is not trusted; the trusted line beside it passes', async () => {
    base = { main: work.gitText(['rev-parse', 'main']), notes: work.gitText(['rev-parse', LEDGER_REF]) };
    work.commit({ 'lib/recorded.ts': 'r 3b\n' }, 'promote lib again');
    await record({ 'lib/recorded.ts': 'r 3b\n' });
    // A second line on the note of src/a.ts's current content: the note is modified, not added.
    await record({ 'src/a.ts': 'a 3\n' }, mallory);
    const { judged } = await judgeOn('forged.git', { cache: true });
    const blob = subjectOf('src/a.ts', 'a 3\n').gitBlob;
    expect(judged.refusals).toEqual([
      {
        ref: LEDGER_REF,
        reason: `note on blob ${blob.slice(0, 12)}: signed by a key that is not in the trust root (keyid ${mallory.keyFile.keyid.slice(0, 12)})`,
        kind: 'ledger line',
      },
    ]);
    expect(judged.noteLines).toBe(2);
    expect(judged.files).toBe(1);
    expect((await judgeOn('forged-no-cache.git', { cache: false })).judged).toEqual(judged);
  });

  it('refuses a commit that moves the policy file away (a rename deletes its old path); moving a free file passes', async () => {
    base = { main: work.gitText(['rev-parse', 'main']), notes: work.gitText(['rev-parse', LEDGER_REF]) };
    fs.mkdirSync(path.join(work.dir, 'docs'), { recursive: true });
    work.git(['mv', '.delegate-git/policy.json', 'docs/policy.json']);
    work.git(['commit', '-q', '-m', 'move the policy away']);
    const moved = await judgeOn('moved-policy.git', { cache: true });
    expect(moved.judged.refusals).toEqual([
      expect.objectContaining({
        path: '.delegate-git/policy.json',
        reason: expect.stringContaining('cannot be deleted'),
      }),
    ]);
    work.git(['reset', '-q', '--hard', base.main]);
    work.git(['mv', 'lib/free.ts', 'lib/free-renamed.ts']);
    work.git(['commit', '-q', '-m', 'move a free file']);
    expect((await judgeOn('moved-free.git', { cache: true })).judged.refusals).toEqual([]);
  });
});
