/**
 * Two names a checkout that ignores case makes one file (macOS, Windows). `protect`, recorded paths and the governance
 * files are matched ignoring case, `exclude` as written: so an excluded `src/gen/core.ts` beside a protected
 * `src/Gen/core.ts` is not governed, and git writes whichever comes last over the other. Each gate refuses the
 * ungoverned name of such a pair; controls: an excluded file with no governed twin, and two spellings both governed
 * (each promoted), pass every gate.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collisionReason, foldCollisions } from '../../packages/core/src/fold-collisions.js';
import { POLICY_PATH } from '../../packages/core/src/index.js';
import {
  cli,
  cliOk,
  commit,
  gitOk,
  gitRun,
  makeStory,
  recordVerdict,
  type Story,
  writeFiles,
} from '../support/cli-story.js';
import { acceptedByEveryGate, adoptedClone, refusedByEveryGate } from '../support/every-gate.js';
import { editPolicy } from '../support/reviewers.js';

const WHY = 'on a checkout that ignores case';

describe('foldCollisions', () => {
  const governed = (f: { path: string }) => !f.path.startsWith('src/gen/');
  it('names the ungoverned spelling of a name a governed file also has, and nothing else', () => {
    const files = ['src/Gen/core.ts', 'src/gen/core.ts', 'src/gen/other.ts', 'src/a.ts'].map((path) => ({
      path,
    }));
    expect(foldCollisions(files, governed)).toEqual([
      { file: { path: 'src/gen/core.ts' }, governed: 'src/Gen/core.ts' },
    ]);
  });
  it('folds as the gates fold: Unicode case (ſ is s) and composition (NFD is NFC)', () => {
    const files = [
      { path: 'src/Gen/ſ.ts' },
      { path: 'src/gen/S.ts' },
      { path: 'src/Gen/é.ts' },
      { path: 'src/gen/e\u0301.ts' },
    ];
    expect(foldCollisions(files, governed).map((c) => c.file.path)).toEqual([
      'src/gen/S.ts',
      'src/gen/e\u0301.ts',
    ]);
  });
  it('names the characters beyond ASCII when the two names print alike (NFC and NFD)', () => {
    expect(collisionReason('src/gen/e\u0301.ts', 'src/Gen/\u00e9.ts')).toContain(
      'the governed src/Gen/\u00e9.ts,',
    );
    expect(collisionReason('src/gen/e\u0301.ts', 'src/gen/\u00e9.ts')).toContain(
      'the governed src/gen/\u00e9.ts (beyond ASCII it holds U+00E9, this name U+0301)',
    );
  });

  it('leaves pairs that are both governed or both not', () => {
    const both = [{ path: 'src/A.ts' }, { path: 'src/a.ts' }];
    expect(foldCollisions(both, governed)).toEqual([]);
    expect(foldCollisions(both, () => false)).toEqual([]);
  });
});

describe('an excluded name that is one file with a governed one on a checkout that ignores case', () => {
  let story: Story;
  let work: string;

  beforeAll(async () => {
    story = makeStory('delegate-git-fold-');
    work = adoptedClone(story, ['src/**']);
    editPolicy(work, (p) => {
      p.exclude = ['src/gen/**'];
    });
    cliOk(story, work, ['attest', '--approve', POLICY_PATH, '--yes']);
    writeFiles(work, { 'src/Gen/core.ts': 'export const core = "judged";\n' });
    await recordVerdict(story, work, 'src/Gen/core.ts');
    gitOk(story, work, ['add', '.']);
    acceptedByEveryGate(story, work, 'exclude src/gen, a promoted src/Gen/core.ts');
  });

  afterAll(() => story.cleanup());

  it('control: an excluded file with no governed twin passes every gate', () => {
    writeFiles(work, { 'src/gen/other.ts': 'export const other = "generated";\n' });
    gitOk(story, work, ['add', '.']);
    acceptedByEveryGate(story, work, 'a generated file');
  });

  it('is refused at commit, at push and by verify', () => {
    writeFiles(work, { 'src/gen/core.ts': 'export const core = "not judged";\n' });
    gitOk(story, work, ['add', '.']);
    refusedByEveryGate(
      story,
      work,
      'src/gen/core.ts',
      `${WHY} or Unicode normalization (macOS, Windows) this is one file with the governed src/Gen/core.ts`,
      { byContent: false },
    );
  });

  it('is refused when the governed name comes second, beside an excluded one already there', async () => {
    writeFiles(work, { 'src/gen/late.ts': 'export const late = "not judged";\n' });
    gitOk(story, work, ['add', '.']);
    acceptedByEveryGate(story, work, 'excluded first');
    writeFiles(work, { 'src/GEN/late.ts': 'export const late = "judged";\n' });
    await recordVerdict(story, work, 'src/GEN/late.ts');
    gitOk(story, work, ['add', '.']);
    refusedByEveryGate(story, work, 'src/gen/late.ts', WHY, { byContent: false });
  });

  it('check --staged refuses it before the commit, and check --rev names the pair after it', () => {
    writeFiles(work, { 'src/gen/core.ts': 'export const core = "not judged";\n' });
    gitOk(story, work, ['add', '.']);
    const staged = cli(story, work, ['check', '--staged']);
    expect(staged.code, staged.stdout + staged.stderr).toBe(1);
    expect(staged.stdout + staged.stderr).toContain('src/gen/core.ts');
    expect(commit(story, work, 'past the hook', ['--no-verify']).code).toBe(0);
    const rev = cli(story, work, ['check', '--rev', 'HEAD']);
    expect(rev.code).toBe(1);
    expect(rev.stdout).toContain(`NOT PROMOTED  src/gen/core.ts`);
    expect(rev.stdout).toContain('src/Gen/core.ts');
    gitOk(story, work, ['reset', '-q', '--hard', 'origin/main']);
  });

  it('is refused on a branch that takes the governed name from main as it is (what merging main brings)', () => {
    gitOk(story, work, ['checkout', '-q', '-b', 'feat', 'origin/main']);
    try {
      gitOk(story, work, ['rm', '-q', 'src/Gen/core.ts']);
      writeFiles(work, { 'src/gen/core.ts': 'export const core = "not judged";\n' });
      gitOk(story, work, ['add', '.']);
      expect(commit(story, work, 'only the excluded name').code).toBe(0);
      const alone = gitRun(story, work, ['push', 'origin', 'feat']);
      expect(alone.code, alone.stderr).toBe(0); // control: no pair at this tip
      gitOk(story, work, ['checkout', 'origin/main', '--', 'src/Gen/core.ts']);
      expect(commit(story, work, "main's promoted file beside it", ['--no-verify']).code).toBe(0);
      const paired = gitRun(story, work, ['push', 'origin', 'feat']);
      expect(paired.code).not.toBe(0);
      expect(paired.stderr).toMatch(
        /refused refs\/heads\/feat [0-9a-f]{12} src\/gen\/core\.ts: on a checkout that ignores case/,
      );
    } finally {
      gitOk(story, work, ['checkout', '-q', '-f', 'main']);
      gitOk(story, work, ['branch', '-q', '-D', 'feat']);
    }
  });

  it('control: two spellings both governed, each promoted, pass every gate', async () => {
    writeFiles(work, { 'src/Util.ts': 'export const u = 1;\n', 'src/util.ts': 'export const u = 2;\n' });
    await recordVerdict(story, work, 'src/Util.ts');
    await recordVerdict(story, work, 'src/util.ts');
    gitOk(story, work, ['add', '.']);
    acceptedByEveryGate(story, work, 'both spellings promoted');
    expect(gitRun(story, work, ['status', '--porcelain']).stdout).toBe('');
  });
});
