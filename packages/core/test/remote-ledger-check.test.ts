/**
 * What sync asks of the lines a remote's ledger adds (remoteLineProblems), judged at each of several commits: rules
 * met again (the same policy and keys at another commit) are not read again, and other rules always are.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempRepo, type TempRepo } from '../../../test/support/git-repo.js';
import {
  subjectOf,
  testKey,
  testPolicy,
  verdictLine,
  writeGovernance,
} from '../../../test/support/records.js';
import { LEDGER_REF } from '../src/notes-ledger.js';
import { remoteLineProblems } from '../src/remote-ledger-check.js';
import { Repository } from '../src/repository.js';

const alice = testKey({ name: 'alice', roles: ['delegator'] });
const rita = testKey({ name: 'rita', roles: ['reviewer'] });
const mallory = testKey({ name: 'mallory', roles: ['delegator'] }); // in no trust root here

describe('the lines a remote adds, judged at several commits', () => {
  let repo: TempRepo;
  const commits: Record<'adopted' | 'sameRules' | 'otherRules', string> = {
    adopted: '',
    sameRules: '',
    otherRules: '',
  };
  let theirs = '';
  let malloryBlob = '';

  beforeAll(async () => {
    repo = makeTempRepo();
    writeGovernance(repo.dir, testPolicy({ protect: ['src/**'] }), [alice]);
    repo.git(['add', '.']);
    commits.adopted = repo.commit({ 'src/a.ts': 'export const a = 1;\n' }, 'adopt');
    commits.sameRules = repo.commit({ 'src/b.ts': 'export const b = 1;\n' }, 'same rules, another commit');
    writeGovernance(repo.dir, testPolicy({ protect: ['src/**'] }), [alice, rita]);
    repo.git(['add', '.']);
    commits.otherRules = repo.commit({}, 'rita trusted too');
    const a = subjectOf('src/a.ts', 'export const a = 1;\n');
    const m = subjectOf('src/m.ts', 'export const m = 1;\n');
    malloryBlob = repo.blob('export const m = 1;\n');
    const r = await Repository.open(repo.dir);
    await r.ledger.append([
      { blob: a.gitBlob, lines: [verdictLine(alice, [a])] },
      { blob: m.gitBlob, lines: [verdictLine(mallory, [m])] },
    ]);
    await r.close();
    theirs = repo.gitText(['rev-parse', LEDGER_REF]);
  }, 60_000);
  afterAll(() => repo.cleanup());

  const problemsAt = async (commit: string, judgedBy: Set<string>) => {
    const r = await Repository.open(repo.dir);
    try {
      return (await remoteLineProblems(r, null, theirs, commit, judgedBy)).map((p) => p.blob);
    } finally {
      await r.close();
    }
  };

  it('rules met again at another commit are not judged again; other rules are', async () => {
    const judgedBy = new Set<string>();
    expect(await problemsAt(commits.adopted, judgedBy)).toEqual([malloryBlob]);
    // The same policy and keys judge alike, so nothing new is found and nothing is read.
    expect(await problemsAt(commits.sameRules, judgedBy)).toEqual([]);
    // Other rules (a key more) judge the lines again, and mallory is still trusted by none.
    expect(await problemsAt(commits.otherRules, judgedBy)).toEqual([malloryBlob]);
    expect(judgedBy.size).toBe(2);
  });

  it('control: the second commit alone, or with a set of its own, finds the same line', async () => {
    expect(await problemsAt(commits.sameRules, new Set())).toEqual([malloryBlob]);
  });
});
