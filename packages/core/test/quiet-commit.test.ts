import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanGitEnv, makeTempRepo, type TempRepo } from '../../../test/support/git-repo.js';
import {
  subjectOf,
  testKey,
  testPolicy,
  verdictLine,
  writeGovernance,
} from '../../../test/support/records.js';
import { checkStaged, stagedChanges } from '../src/checks.js';
import { stagesNothingGoverned } from '../src/quiet-commit.js';
import { Repository } from '../src/repository.js';

const alice = testKey({ name: 'alice', roles: ['delegator'] });

/**
 * The hook's quick path may only ever say "nothing governed is staged" when that is true; every "not sure" sends
 * the commit to the full check. Each pass below is paired with a refusal to answer.
 */
describe('stagesNothingGoverned', () => {
  let repo: TempRepo;
  let cacheDir: string;
  const env = cleanGitEnv();

  const quick = async () => (await stagesNothingGoverned(repo.dir, env)).nothingGoverned;
  const fullCheck = async () => {
    const opened = await Repository.open(repo.dir, env);
    try {
      return await checkStaged(opened);
    } finally {
      await opened.close();
    }
  };
  const stage = (file: string, content: string) => {
    fs.mkdirSync(path.dirname(path.join(repo.dir, file)), { recursive: true });
    fs.writeFileSync(path.join(repo.dir, file), content);
    repo.git(['add', '--', file]);
  };
  const unstageAll = () => repo.git(['reset', '-q']);

  beforeAll(() => {
    repo = makeTempRepo();
    cacheDir = path.join(repo.dir, '.git', 'delegate-git', 'cache');
  });
  afterAll(() => repo.cleanup());

  it('cannot answer before the first commit (no HEAD to compare the index with)', async () => {
    writeGovernance(repo.dir, testPolicy({ protect: ['src/**'] }), [alice]);
    repo.git(['add', '.']);
    expect(await quick()).toBe(false);
    repo.git(['commit', '-q', '-m', 'adopt']);
  });

  it('passes a commit that stages nothing, once the full check has validated the policy', async () => {
    expect(await quick()).toBe(false);
    expect((await fullCheck()).results).toEqual([]);
    expect(await quick()).toBe(true);
  });

  it('passes an ungoverned change, and answers nothing once the validated policy is forgotten', async () => {
    stage('README.md', 'hello\n');
    expect(await quick()).toBe(true);
    for (const n of fs.readdirSync(cacheDir).filter((f) => f.startsWith('policy-')))
      fs.rmSync(path.join(cacheDir, n));
    expect(await quick()).toBe(false);
    expect((await fullCheck()).results).toEqual([]);
    expect(await quick()).toBe(true);
  });

  it('never passes a protected path, nor a governance file', async () => {
    stage('src/a.ts', 'export {};\n');
    const answer = await stagesNothingGoverned(repo.dir, env);
    expect(answer.nothingGoverned).toBe(false);
    // What it read is what the full check would read itself.
    const opened = await Repository.open(repo.dir, env);
    const own = await stagedChanges(opened);
    await opened.close();
    expect(answer.nothingGoverned === false && answer.staged).toEqual(own);
    unstageAll();
    stage('.delegate-git/keys/extra.json', '{}\n');
    expect(await quick()).toBe(false);
    unstageAll();
    fs.rmSync(path.join(repo.dir, '.delegate-git/keys/extra.json'));
    stage('README.md', 'control\n');
    expect(await quick()).toBe(true);
  });

  it('never passes a path the ledger has recorded, once it knows the recorded paths for the ledger tip', async () => {
    const recorded = subjectOf('docs/guide.md', 'guide\n');
    repo.blob('guide\n');
    const opened = await Repository.open(repo.dir, env);
    await opened.ledger.append([{ blob: recorded.gitBlob, lines: [verdictLine(alice, [recorded])] }]);
    await opened.close();
    // A new ledger tip: its recorded paths are not cached yet, so an unprotected path cannot be answered.
    expect(await quick()).toBe(false);
    await fullCheck();
    expect(await quick()).toBe(true); // README.md: control
    stage('docs/guide.md', 'guide, edited\n');
    expect(await quick()).toBe(false);
    unstageAll();
  });

  it('validates an edited policy again before trusting it, and ignores a damaged policy cache', async () => {
    stage('README.md', 'again\n');
    expect(await quick()).toBe(true);
    writeGovernance(repo.dir, testPolicy({ protect: ['src/**', 'README.md'] }), [alice]);
    repo.git(['add', '.delegate-git/policy.json']);
    expect(await quick()).toBe(false); // and the policy file itself is governed anyway
    repo.git(['reset', '-q', '--', '.delegate-git/policy.json']);
    repo.git(['checkout', '--', '.delegate-git/policy.json']);
    expect(await quick()).toBe(true);
    for (const n of fs.readdirSync(cacheDir).filter((f) => f.startsWith('policy-')))
      fs.writeFileSync(path.join(cacheDir, n), '{"protect": [');
    expect(await quick()).toBe(false);
    for (const n of fs.readdirSync(cacheDir).filter((f) => f.startsWith('policy-')))
      fs.writeFileSync(path.join(cacheDir, n), '{"protect": "src/**"}');
    expect(await quick()).toBe(false);
  });
});
