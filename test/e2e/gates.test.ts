/**
 * The pre-commit gate end to end: `delegate-git init` installs the hook, `git commit` runs it, and the exit code and
 * the reason the user reads are asserted. Each refusal is paired with a control that passes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  adopt,
  cli,
  cliOk,
  commit,
  copyWorkTree,
  gitOk,
  gitRun,
  makeStory,
  makeWorkTree,
  OPERATOR,
  operatorEnv,
  recordVerdict,
  refTip,
  resetWorkTree,
  type Story,
  stageFiles,
  writeFiles,
} from '../support/cli-story.js';

const POLICY = '.delegate-git/policy.json';

let story: Story;
/** An adopted repository (protect src/**, init's policy and key committed): each describe works on a copy. */
let template: string;

beforeAll(() => {
  story = makeStory();
  template = makeWorkTree(story, 'template');
  adopt(story, template, ['src/**']);
});

afterAll(() => story.cleanup());

const stage = (dir: string, files: Record<string, string>) => stageFiles(story, dir, files);

function editPolicy(dir: string, edit: (policy: Record<string, unknown>) => void): void {
  const file = path.join(dir, POLICY);
  const policy = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  edit(policy);
  fs.writeFileSync(file, `${JSON.stringify(policy, null, 2)}\n`);
}

describe('pre-commit: the adopting commit', () => {
  it('passes because init approved its own policy and key file; without that approval it is refused', () => {
    const dir = makeWorkTree(story, 'adopting');
    cliOk(story, dir, ['init', '--protect', 'src/**']);
    gitOk(story, dir, ['add', '.delegate-git']);

    // Control first: the trust anchor's approval is what lets it through, so take the ledger away and see it fail.
    const ledger = refTip(story, dir, 'refs/notes/delegations');
    expect(ledger).not.toBeNull();
    gitOk(story, dir, ['update-ref', '-d', 'refs/notes/delegations']);
    const refused = commit(story, dir, 'Adopt delegate-git');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(POLICY);
    expect(refused.stderr).toContain(`.delegate-git/keys/${OPERATOR}.json`);
    expect(refused.stderr).toContain('commit refused');

    gitOk(story, dir, ['update-ref', 'refs/notes/delegations', ledger!]);
    const adopted = commit(story, dir, 'Adopt delegate-git');
    expect(adopted.code, adopted.stderr).toBe(0);
    expect(gitOk(story, dir, ['ls-tree', '-r', '--name-only', 'HEAD'])).toContain(POLICY);
  });
});

describe('pre-commit: a branch without a policy in an adopted repository', () => {
  it('commits on a branch from before the adoption and on an orphan, saying nothing was judged; a forgotten `git add` of the policy is still refused', () => {
    const dir = makeWorkTree(story, 'no-policy-branches');
    stage(dir, { 'README.md': 'before\n' });
    expect(commit(story, dir, 'before the adoption').code).toBe(0);
    adopt(story, dir, ['src/**']);

    gitOk(story, dir, ['checkout', '-q', '-b', 'maint', 'HEAD~1']);
    stage(dir, { 'README.md': 'a fix on the old line\n', 'src/a.ts': 'export const a = 1;\n' });
    const maint = commit(story, dir, 'a fix');
    expect(maint.code, maint.stderr).toBe(0);
    expect(maint.stderr).toContain("this commit's branch has no .delegate-git/policy.json");
    gitOk(story, dir, ['checkout', '-q', '--orphan', 'gh-pages']);
    gitOk(story, dir, ['rm', '-rqf', '--cached', '.']);
    fs.rmSync(path.join(dir, 'src'), { recursive: true, force: true });
    stage(dir, { 'index.html': '<p>hi</p>\n' });
    const orphan = commit(story, dir, 'pages');
    expect(orphan.code, orphan.stderr).toBe(0);
    expect(orphan.stderr).toContain('nothing was judged');

    // Control: a clone that ran init but did not stage the policy it wrote is told so, not waved through.
    const fresh = makeWorkTree(story, 'policy-not-staged');
    cliOk(story, fresh, ['init', '--protect', 'src/**']);
    stage(fresh, { 'README.md': 'first\n' });
    const unstaged = commit(story, fresh, 'first, without the policy');
    expect(unstaged.code).not.toBe(0);
    expect(unstaged.stderr).toContain(`${POLICY} is in the work tree but not staged`);
  });
});

describe('pre-commit: governed content', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'content');
  });
  afterEach(() => resetWorkTree(story, dir));

  it('refuses an unpromoted governed file, naming it, the reason and what to do; a UNIT_PASSED verdict lets it through', async () => {
    stage(dir, { 'src/new.ts': 'export const a = 1;\n' });
    const refused = commit(story, dir, 'unpromoted');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/new.ts');
    expect(refused.stderr).toContain('no verdict: no delegated unit is recorded as writing it');
    expect(refused.stderr).toContain('delegate-git attest --approve --staged');
    expect(refused.stderr).toContain('commit refused');
    const head = refTip(story, dir, 'HEAD');
    // `check` (the index, as the hook) advises the same; `check --path` judges the work tree's content.
    expect(cli(story, dir, ['check', '--staged']).stdout).toContain('delegate-git attest --approve --staged');
    const byPath = cli(story, dir, ['check', '--path', 'src/new.ts']).stdout;
    expect(byPath).toContain('`delegate-git attest --approve <path>`');
    expect(byPath).not.toContain('--staged');

    await recordVerdict(story, dir, 'src/new.ts');
    const passed = commit(story, dir, 'promoted');
    expect(passed.code, passed.stderr).toBe(0);
    expect(refTip(story, dir, 'HEAD')).not.toBe(head);
  });

  it('`git commit -a` and `git commit <path>` run on a temporary index: the advice approves the work-tree content they take, and following it lets the same command through', async () => {
    stage(dir, { 'src/temp.ts': 'export const t = 1;\n' });
    await recordVerdict(story, dir, 'src/temp.ts');
    expect(commit(story, dir, 'first').code).toBe(0);
    const byPath =
      '`delegate-git attest --approve <path>` (the work-tree content a commit with paths or -a takes; what it takes from the index, `--staged`; for the hunks `git commit -p` picks, neither: stage them with `git add -p`, approve with `--staged`, then `git commit`)';

    writeFiles(dir, { 'src/temp.ts': 'export const t = 2;\n' });
    const all = commit(story, dir, 'all', ['-a']);
    expect(all.code).not.toBe(0);
    expect(all.stderr).toContain(byPath);
    cliOk(story, dir, ['attest', '--approve', 'src/temp.ts', '--key', OPERATOR, '--yes']);
    const allAgain = commit(story, dir, 'all', ['-a']);
    expect(allAgain.code, allAgain.stderr).toBe(0);

    // Other content staged than the work tree's: `git commit <path>` takes the work tree's, which the advice approves.
    stage(dir, { 'src/temp.ts': 'export const t = 3;\n' });
    writeFiles(dir, { 'src/temp.ts': 'export const t = 4;\n' });
    const named = commit(story, dir, 'named', ['--', 'src/temp.ts']);
    expect(named.code).not.toBe(0);
    expect(named.stderr).toContain(byPath);
    cliOk(story, dir, ['attest', '--approve', 'src/temp.ts', '--key', OPERATOR, '--yes']);
    const namedAgain = commit(story, dir, 'named', ['--', 'src/temp.ts']);
    expect(namedAgain.code, namedAgain.stderr).toBe(0);
    expect(gitOk(story, dir, ['show', 'HEAD:src/temp.ts'])).toBe('export const t = 4;');
  });

  it('names a file whose name holds a line break on one line, C-quoted as git quotes it; its verdict lets it through', async () => {
    const name = 'src/new\nNOT PROMOTED  src/spoof.ts';
    stage(dir, { [name]: 'export const b = 2;\n', 'src/plain name.ts': 'export const c = 3;\n' });
    const refused = commit(story, dir, 'a strange name');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  "src/new\\nNOT PROMOTED  src/spoof.ts"\n');
    expect(refused.stderr).toContain('NOT PROMOTED  src/plain name.ts\n'); // control: an ordinary name as it is
    expect(refused.stderr).not.toMatch(/^delegate-git: NOT PROMOTED {2}src\/spoof\.ts$/m);

    await recordVerdict(story, dir, name);
    await recordVerdict(story, dir, 'src/plain name.ts');
    const passed = commit(story, dir, 'promoted');
    expect(passed.code, passed.stderr).toBe(0);
  });

  it('governs a case variant of a protected directory (checked out into src/ where case is ignored); promoted, it commits', async () => {
    stage(dir, { 'SRC/evil.ts': 'export const evil = 1;\n' });
    const refused = commit(story, dir, 'a case variant');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  SRC/evil.ts');
    await recordVerdict(story, dir, 'SRC/evil.ts');
    const passed = commit(story, dir, 'a case variant, promoted');
    expect(passed.code, passed.stderr).toBe(0);
  });

  it('refuses content whose verdict was UNIT_FAILED; the passing redo commits', async () => {
    stage(dir, { 'src/failed.ts': 'export const broken = ;\n' });
    await recordVerdict(story, dir, 'src/failed.ts', { verdict: 'UNIT_FAILED' });
    const refused = commit(story, dir, 'failed');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('src/failed.ts');
    expect(refused.stderr).toContain('verdict was UNIT_FAILED');

    stage(dir, { 'src/failed.ts': 'export const fixed = 1;\n' });
    await recordVerdict(story, dir, 'src/failed.ts');
    expect(commit(story, dir, 'fixed').code).toBe(0);
  });

  it('judges the staged blob: promoted content staged with an edited work tree passes; the reverse is refused', async () => {
    const promoted = 'export const staged = 1;\n';
    const edited = 'export const staged = 2; // not verified\n';
    writeFiles(dir, { 'src/partial.ts': promoted });
    await recordVerdict(story, dir, 'src/partial.ts');

    // Edited content staged, promoted content back in the work tree: the index is what would be committed.
    stage(dir, { 'src/partial.ts': edited });
    writeFiles(dir, { 'src/partial.ts': promoted });
    const refused = commit(story, dir, 'edited content staged');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('src/partial.ts');
    expect(refused.stderr).toContain('its content changed after the verdict');

    // Promoted content staged, the work tree edited afterwards without re-staging.
    stage(dir, { 'src/partial.ts': promoted });
    writeFiles(dir, { 'src/partial.ts': edited });
    const passed = commit(story, dir, 'promoted content staged');
    expect(passed.code, passed.stderr).toBe(0);
    expect(gitOk(story, dir, ['show', 'HEAD:src/partial.ts'])).toBe(promoted.trim());
    expect(fs.readFileSync(path.join(dir, 'src/partial.ts'), 'utf8')).toBe(edited);
  });

  it('refuses an edit made after the verdict; the verified version commits', async () => {
    stage(dir, { 'src/edited.ts': 'export const v = 1;\n' });
    await recordVerdict(story, dir, 'src/edited.ts');
    expect(commit(story, dir, 'verified version').code).toBe(0);

    stage(dir, { 'src/edited.ts': 'export const v = 2;\n' });
    const refused = commit(story, dir, 'edit after the verdict');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/edited.ts');
    expect(refused.stderr).toContain('its content changed after the verdict');
  });

  it('lets a file outside protect that was never recorded commit freely; once recorded, the path is governed', async () => {
    stage(dir, { 'docs/notes.md': '# notes\n' });
    const free = commit(story, dir, 'docs');
    expect(free.code, free.stderr).toBe(0);
    expect(free.stderr).toBe('');

    // A verdict ever recorded for a path governs it from then on, protect glob or not.
    stage(dir, { 'lib/util.ts': 'export const u = 1;\n' });
    await recordVerdict(story, dir, 'lib/util.ts');
    expect(commit(story, dir, 'recorded lib file').code).toBe(0);
    stage(dir, { 'lib/util.ts': 'export const u = 2;\n' });
    const refused = commit(story, dir, 'unverified lib edit');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('lib/util.ts');
    expect(refused.stderr).toContain('its content changed after the verdict');
  });

  it('judges a renamed or copied file at its new path (DESIGN 4.1: the record names the path); approval of the new path lets it through', async () => {
    stage(dir, { 'src/moved.ts': 'export const moved = 1;\n' });
    await recordVerdict(story, dir, 'src/moved.ts');
    expect(commit(story, dir, 'promoted').code).toBe(0);

    gitOk(story, dir, ['mv', 'src/moved.ts', 'src/renamed.ts']);
    const renamed = commit(story, dir, 'rename');
    expect(renamed.code).not.toBe(0);
    expect(renamed.stderr).toContain('NOT PROMOTED  src/renamed.ts');
    expect(renamed.stderr).toContain('the same content is recorded as src/moved.ts');

    resetWorkTree(story, dir);
    fs.copyFileSync(path.join(dir, 'src/moved.ts'), path.join(dir, 'src/copied.ts'));
    gitOk(story, dir, ['add', 'src/copied.ts']);
    const copied = commit(story, dir, 'copy');
    expect(copied.code).not.toBe(0);
    expect(copied.stderr).toContain('NOT PROMOTED  src/copied.ts');
    expect(copied.stderr).toContain('the same content is recorded as src/moved.ts');

    // A reviewer approves the same blob at its new path: its records now cover both paths.
    resetWorkTree(story, dir);
    gitOk(story, dir, ['mv', 'src/moved.ts', 'src/renamed.ts']);
    cliOk(story, dir, ['attest', '--approve', 'src/renamed.ts', '--yes']);
    const approved = commit(story, dir, 'rename, approved');
    expect(approved.code, approved.stderr).toBe(0);
    // The rename left the old path: git saw a rename of one unchanged blob.
    expect(gitOk(story, dir, ['show', '--format=', '-M', '--name-status', 'HEAD'])).toMatch(
      /^R100\tsrc\/moved\.ts\tsrc\/renamed\.ts$/m,
    );
  });
});

describe('pre-commit: the commits git makes itself, and what git leaves out', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'merges');
  });
  afterEach(() => {
    gitRun(story, dir, ['merge', '--abort']);
    gitOk(story, dir, ['checkout', '-q', '-f', 'main']);
    resetWorkTree(story, dir);
  });

  /** Two branches from main, each with its own promoted edit of one governed file (top and bottom lines). */
  async function divergedEdits(name: string): Promise<string> {
    const file = `src/${name}.ts`;
    stage(dir, { [file]: 'export const a = 1;\nexport const b = 2;\n' });
    await recordVerdict(story, dir, file);
    expect(commit(story, dir, `${name}: base`).code).toBe(0);
    gitOk(story, dir, ['checkout', '-q', '-b', `${name}-top`]);
    stage(dir, { [file]: '// top\nexport const a = 1;\nexport const b = 2;\n' });
    await recordVerdict(story, dir, file);
    expect(commit(story, dir, `${name}: top`).code).toBe(0);
    gitOk(story, dir, ['checkout', '-q', '-b', `${name}-bottom`, 'main']);
    stage(dir, { [file]: 'export const a = 1;\nexport const b = 2;\n// bottom\n' });
    await recordVerdict(story, dir, file);
    expect(commit(story, dir, `${name}: bottom`).code).toBe(0);
    return file;
  }

  it('refuses a merge that combines two promoted versions into content nobody judged; approved, `git commit` concludes it', async () => {
    const file = await divergedEdits('merged');
    gitOk(story, dir, ['checkout', '-q', 'merged-top']);
    const head = refTip(story, dir, 'HEAD');
    const refused = gitRun(story, dir, ['merge', '--no-edit', 'merged-bottom']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`NOT PROMOTED  ${file}`);
    expect(refused.stderr).toContain('merge commit refused');
    expect(refTip(story, dir, 'HEAD')).toBe(head);
    // git keeps the merge staged; the merged content approved, the merge concludes (through pre-commit).
    expect(fs.readFileSync(path.join(dir, file), 'utf8')).toBe(
      '// top\nexport const a = 1;\nexport const b = 2;\n// bottom\n',
    );
    cliOk(story, dir, ['attest', '--approve', file, '--yes']);
    const concluded = commit(story, dir, 'merge, approved', ['--no-edit']);
    expect(concluded.code, concluded.stderr).toBe(0);
    expect(gitOk(story, dir, ['rev-list', '--parents', '-n', '1', 'HEAD']).split(' ')).toHaveLength(3);
  });

  it('says which governed files are in conflict instead of judging them (exit 2); resolved and approved, the merge commits', async () => {
    const file = await divergedEdits('conflicted');
    gitOk(story, dir, ['checkout', '-q', 'conflicted-top']);
    stage(dir, { [file]: '// top, again\nexport const a = 1;\nexport const b = 2;\n' });
    await recordVerdict(story, dir, file);
    expect(commit(story, dir, 'conflicted: top again').code).toBe(0);
    gitOk(story, dir, ['checkout', '-q', 'conflicted-bottom']);
    stage(dir, { [file]: '// bottom, first\nexport const a = 1;\nexport const b = 2;\n// bottom\n' });
    await recordVerdict(story, dir, file);
    expect(commit(story, dir, 'conflicted: bottom first').code).toBe(0);
    expect(gitRun(story, dir, ['merge', '--no-edit', 'conflicted-top']).code).not.toBe(0);

    const inConflict = cli(story, dir, ['check', '--staged']);
    expect(inConflict.code).toBe(2);
    expect(inConflict.stderr).toContain(`Governed files are in conflict (${file})`);

    stage(dir, { [file]: '// resolved\nexport const a = 1;\nexport const b = 2;\n' });
    expect(cli(story, dir, ['check', '--staged']).code).toBe(1);
    cliOk(story, dir, ['attest', '--approve', file, '--yes']);
    const concluded = commit(story, dir, 'conflict resolved', ['--no-edit']);
    expect(concluded.code, concluded.stderr).toBe(0);
  });

  it('lets a merge through whose every governed file is promoted (control: a merge that only brings promoted content)', async () => {
    const file = await divergedEdits('brought');
    gitOk(story, dir, ['checkout', '-q', 'main']);
    const merged = gitRun(story, dir, ['merge', '--no-ff', '--no-edit', 'brought-top']);
    expect(merged.code, merged.stderr).toBe(0);
    expect(gitOk(story, dir, ['rev-list', '--parents', '-n', '1', 'HEAD']).split(' ')).toHaveLength(3);
    expect(gitOk(story, dir, ['show', `HEAD:${file}`])).toContain('// top');
  });

  it('judges what the commit holds: an intent-to-add governed file is left out by git and passes; staged, it is refused', () => {
    writeFiles(dir, { 'src/later.ts': 'export const later = 1;\n' });
    gitOk(story, dir, ['add', '--intent-to-add', 'src/later.ts']);
    stage(dir, { 'README.md': 'free\n' });
    const passed = commit(story, dir, 'readme, with an intent-to-add file');
    expect(passed.code, passed.stderr).toBe(0);
    expect(gitOk(story, dir, ['ls-tree', '--name-only', '-r', 'HEAD'])).not.toContain('src/later.ts');

    gitOk(story, dir, ['add', 'src/later.ts']);
    const refused = commit(story, dir, 'the file staged');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/later.ts');
  });
});

describe('pre-commit: deleting governed paths', () => {
  let dir: string;
  beforeAll(async () => {
    dir = copyWorkTree(story, template, 'deletions');
    stage(dir, { 'src/keep.ts': 'export const keep = 1;\n', 'src/drop.ts': 'export const drop = 1;\n' });
    await recordVerdict(story, dir, 'src/keep.ts');
    await recordVerdict(story, dir, 'src/drop.ts');
    expect(commit(story, dir, 'two promoted files').code).toBe(0);
  });

  it('reports a deleted protected path and lets it through by default; blocks it with protectDeletes', () => {
    gitOk(story, dir, ['rm', '-q', 'src/drop.ts']);
    const reported = commit(story, dir, 'delete, default policy');
    expect(reported.code, reported.stderr).toBe(0);
    expect(reported.stderr).toContain('deleted (governed) src/drop.ts');

    // Governance files need a reviewer's approval: edit the policy, approve it, commit it.
    editPolicy(dir, (p) => {
      p.protectDeletes = true;
    });
    cliOk(story, dir, ['attest', '--approve', POLICY, '--yes']);
    gitOk(story, dir, ['add', POLICY]);
    const policy = commit(story, dir, 'protect deletions');
    expect(policy.code, policy.stderr).toBe(0);

    gitOk(story, dir, ['rm', '-q', 'src/keep.ts']);
    const blocked = commit(story, dir, 'delete, protectDeletes');
    expect(blocked.code).not.toBe(0);
    expect(blocked.stderr).toContain('DELETION REFUSED  src/keep.ts');
    expect(blocked.stderr).toContain('protectDeletes');
    expect(blocked.stderr).toContain('git restore --staged --worktree <path>');
    expect(blocked.stderr).not.toContain('To promote a refused file');

    // Control: a path outside protect is still deleted freely.
    gitOk(story, dir, ['reset', '-q', '--hard']);
    stage(dir, { 'notes.txt': 'scratch\n' });
    expect(commit(story, dir, 'scratch').code).toBe(0);
    gitOk(story, dir, ['rm', '-q', 'notes.txt']);
    const free = commit(story, dir, 'delete unprotected');
    expect(free.code, free.stderr).toBe(0);
  });

  it('never lets the policy file or a key file be deleted (control: deleting a file outside governance passes)', () => {
    gitOk(story, dir, ['reset', '-q', '--hard']);
    gitOk(story, dir, ['rm', '-q', POLICY]);
    const policy = commit(story, dir, 'delete the policy');
    expect(policy.code).not.toBe(0);
    expect(policy.stderr).toContain(`DELETION REFUSED  ${POLICY}`);
    expect(policy.stderr).toContain('cannot be deleted');

    gitOk(story, dir, ['reset', '-q', '--hard']);
    gitOk(story, dir, ['rm', '-q', '.delegate-git/keys/alice.json']);
    const key = commit(story, dir, 'delete a key');
    expect(key.code).not.toBe(0);
    expect(key.stderr).toContain('keys revoke');

    gitOk(story, dir, ['reset', '-q', '--hard']);
    stage(dir, { 'scratch.txt': 'scratch\n' });
    expect(commit(story, dir, 'scratch').code).toBe(0);
    gitOk(story, dir, ['rm', '-q', 'scratch.txt']);
    const free = commit(story, dir, 'delete outside governance');
    expect(free.code, free.stderr).toBe(0);
  });

  it('takes moving a governed file out of governance for deleting it there; a move outside governance passes', () => {
    gitOk(story, dir, ['reset', '-q', '--hard']);
    fs.mkdirSync(path.join(dir, 'docs'), { recursive: true });
    gitOk(story, dir, ['mv', POLICY, 'docs/policy.json']);
    const policy = commit(story, dir, 'move the policy away');
    expect(policy.code).not.toBe(0);
    expect(policy.stderr).toContain(`DELETION REFUSED  ${POLICY}`);

    gitOk(story, dir, ['reset', '-q', '--hard']);
    fs.mkdirSync(path.join(dir, 'docs'), { recursive: true });
    gitOk(story, dir, ['mv', 'src/keep.ts', 'docs/keep.ts']); // protectDeletes is on (first case)
    const moved = commit(story, dir, 'move a protected file out');
    expect(moved.code).not.toBe(0);
    expect(moved.stderr).toContain('DELETION REFUSED  src/keep.ts');

    gitOk(story, dir, ['reset', '-q', '--hard']);
    stage(dir, { 'docs/a.md': 'a\n' });
    expect(commit(story, dir, 'docs').code).toBe(0);
    gitOk(story, dir, ['mv', 'docs/a.md', 'docs/b.md']);
    const free = commit(story, dir, 'move outside governance');
    expect(free.code, free.stderr).toBe(0);
  });
});

describe('pre-commit: policy mode "warn"', () => {
  it('an unapproved switch to warn is itself refused; approved, warn prints refusals and lets commits through', () => {
    const dir = copyWorkTree(story, template, 'warn');
    editPolicy(dir, (p) => {
      p.mode = 'warn';
    });
    gitOk(story, dir, ['add', POLICY]);
    const unapproved = commit(story, dir, 'warn, unapproved');
    expect(unapproved.code).not.toBe(0);
    expect(unapproved.stderr).toContain(`NOT PROMOTED  ${POLICY}`);
    expect(unapproved.stderr).toContain('commit refused');
    expect(unapproved.stderr).not.toContain('the commit goes through');

    cliOk(story, dir, ['attest', '--approve', POLICY, '--yes']);
    expect(commit(story, dir, 'warn, approved').code).toBe(0);

    stage(dir, { 'src/unverified.ts': 'export const x = 1;\n' });
    const warned = commit(story, dir, 'unpromoted under warn');
    expect(warned.code, warned.stderr).toBe(0);
    expect(warned.stderr).toContain('NOT PROMOTED  src/unverified.ts');
    expect(warned.stderr).toContain('policy mode is "warn": the commit goes through');
    expect(gitOk(story, dir, ['ls-tree', '--name-only', '-r', 'HEAD'])).toContain('src/unverified.ts');
  });
});

describe('pre-commit: governance changes', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'governance');
  });
  afterEach(() => resetWorkTree(story, dir));

  it('refuses an unapproved policy edit (a protect glob removed); the existing reviewer approving it lets it through', () => {
    editPolicy(dir, (p) => {
      p.protect = [];
    });
    gitOk(story, dir, ['add', POLICY]);
    const refused = commit(story, dir, 'drop protection');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`NOT PROMOTED  ${POLICY}`);
    expect(refused.stderr).toContain(`approved by ${OPERATOR} for another version`);

    cliOk(story, dir, ['attest', '--approve', POLICY, '--yes']);
    const approved = commit(story, dir, 'drop protection, approved');
    expect(approved.code, approved.stderr).toBe(0);
  });

  it('refuses when it cannot answer (a corrupt staged policy: exit 2 inside the hook), never passing silently', () => {
    writeFiles(dir, { [POLICY]: '{ "version": 1, ' });
    gitOk(story, dir, ['add', POLICY]);
    const refused = commit(story, dir, 'corrupt policy');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('delegate-git hook:');
    expect(refused.stderr).toContain(POLICY);
    expect(cli(story, dir, ['check', '--staged']).code).toBe(2);

    // Control: the committed policy staged again checks cleanly.
    gitOk(story, dir, ['reset', '-q', '--hard']);
    const check = cli(story, dir, ['check', '--staged']);
    expect(check.code, check.stdout + check.stderr).toBe(0);
  });

  it('a corrupt policy committed past the hook can be repaired: the rules before it judge the commit that restores it', () => {
    const repair = copyWorkTree(story, dir, 'repair-corrupt-policy');
    const good = fs.readFileSync(path.join(repair, POLICY), 'utf8');
    writeFiles(repair, { [POLICY]: '{ broken' });
    gitOk(story, repair, ['add', POLICY]);
    expect(commit(story, repair, 'corrupt', ['--no-verify']).code).toBe(0);

    // Control: meanwhile nothing else commits (the staged policy cannot be read: the hook cannot answer).
    stage(repair, { 'src/while-broken.ts': 'export const x = 1;\n' });
    const unanswered = commit(story, repair, 'while broken');
    expect(unanswered.code).not.toBe(0);
    expect(unanswered.stderr).toContain(POLICY);
    gitOk(story, repair, ['rm', '-q', '--cached', 'src/while-broken.ts']);

    writeFiles(repair, { [POLICY]: good });
    gitOk(story, repair, ['add', POLICY]);
    const restored = commit(story, repair, 'restore the policy');
    expect(restored.code, restored.stderr).toBe(0);
  });

  it('refuses a key added and self-approved by the new key; approved by the existing reviewer, it commits', () => {
    const bobEnv = operatorEnv(story, 'bob');
    const keygen = cliOk(story, dir, ['keygen', 'bob', '--json'], bobEnv);
    const publicKey = (JSON.parse(keygen.stdout) as { publicKey: string }).publicKey;
    cliOk(story, dir, [
      'keys',
      'add',
      'bob',
      '--public-key',
      publicKey,
      '--roles',
      'reviewer',
      '--email',
      'bob@example.com',
    ]);

    // Bob's approval counts in the work tree's trust root (which lists him), so attest signs; HEAD's does not.
    const self = cli(
      story,
      dir,
      ['attest', '--approve', '.delegate-git/keys/bob.json', '--key', 'bob', '--yes'],
      bobEnv,
    );
    expect(self.code, self.stderr).toBe(0);
    gitOk(story, dir, ['add', '.delegate-git/keys/bob.json']);
    const refused = commit(story, dir, 'add bob, self-approved');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  .delegate-git/keys/bob.json');
    expect(refused.stderr).toContain('not in the trust root');

    cliOk(story, dir, ['attest', '--approve', '.delegate-git/keys/bob.json', '--key', OPERATOR, '--yes']);
    const approved = commit(story, dir, 'add bob, approved by alice');
    expect(approved.code, approved.stderr).toBe(0);
    expect(gitOk(story, dir, ['ls-tree', '--name-only', '-r', 'HEAD'])).toContain(
      '.delegate-git/keys/bob.json',
    );
  });
});

describe('pre-commit: the quick answer after a commit', () => {
  it('the hook git ran for a commit learns its tree: the next ungoverned commit is answered without git', () => {
    const dir = copyWorkTree(story, template, 'quick-after-commit');
    // No git on PATH: the hook can only pass from the index file and what it learned; otherwise it must ask git.
    // Its own code cache shows which bundle ran: the quick answer's alone, or the whole CLI's after it.
    const codeCache = path.join(story.root, 'quick-after-commit-code');
    const noGit = {
      ...story.env,
      PATH: path.join(story.root, 'no-git-here'),
      DELEGATE_GIT_CODE_CACHE: codeCache,
    };
    const hook = () => cli(story, dir, ['hook', 'pre-commit'], noGit);
    const bundlesRun = () =>
      (fs.existsSync(codeCache) ? fs.readdirSync(codeCache) : [])
        .map((f) => f.replace(/^.*-(hook-.*)\.v8$/, '$1'))
        .sort();
    // git runs the hook on the index itself, on a temporary one for `commit -a`, and on another for `commit <path>`.
    const ways: Array<[string, string[]]> = [
      ['plain', []],
      ['-a', ['-a']],
      ['<path>', ['--', 'README.md']],
    ];
    for (const [i, [way, args]] of ways.entries()) {
      stage(dir, { 'README.md': `commit ${i}\n` });
      if (way !== 'plain') writeFiles(dir, { 'README.md': `commit ${i}, not staged: ${way} takes it\n` });
      const made = commit(story, dir, `readme ${i}`, args);
      expect(made.code, made.stderr).toBe(0);
      stage(dir, { 'docs/notes.md': `after commit ${i}\n` });
      const quick = hook();
      expect(quick.code, `${way}: ${quick.stderr}`).toBe(0);
      gitOk(story, dir, ['reset', '-q']);
    }
    expect(bundlesRun()).toEqual(['hook-pre-commit-quick']); // the whole CLI was never loaded
    // Control: something governed staged needs the full check, which cannot run without git: it refuses (exit 2).
    stage(dir, { 'src/quick.ts': 'export {};\n' });
    const governed = hook();
    expect(governed.code).toBe(2);
    expect(governed.stderr).toContain('git');
    expect(bundlesRun()).toEqual(['hook-pre-commit', 'hook-pre-commit-quick']);
    gitOk(story, dir, ['reset', '-q']);
  });
});

describe('pre-commit: the CLI cannot be found', () => {
  it('refuses the commit with "cannot run delegate-git", running nothing PATH offers in its place', () => {
    const dir = copyWorkTree(story, template, 'missing-cli');
    const hook = path.join(dir, '.git', 'hooks', 'pre-commit');
    const installed = fs.readFileSync(hook, 'utf8');
    expect(installed).toMatch(/^DELEGATE_GIT_CLI='[^']+'$/m);

    // What husky puts first on PATH: the work tree's node_modules/.bin, which a branch can fill.
    const bin = path.join(dir, 'node_modules', '.bin');
    const ran = path.join(story.root, 'missing-cli-ran');
    fs.mkdirSync(bin, { recursive: true });
    for (const name of ['delegate-git', 'node'])
      fs.writeFileSync(path.join(bin, name), `#!/bin/sh\necho ${name} >> '${ran}'\nexit 0\n`, {
        mode: 0o755,
      });
    const gitDir = path.dirname(whichGit(story.env.PATH ?? ''));
    const env = { ...story.env, PATH: [...new Set([bin, gitDir, '/usr/bin', '/bin'])].join(':') };
    for (const [name, gone, why] of [
      ['DELEGATE_GIT_CLI', path.join(story.root, 'gone', 'delegate-git.js'), 'delegate-git ('],
      ['DELEGATE_GIT_NODE', path.join(story.root, 'gone', 'node'), 'the Node init ran under ('],
    ] as const) {
      fs.writeFileSync(hook, installed.replace(new RegExp(`^${name}='[^']+'$`, 'm'), `${name}='${gone}'`));
      stage(dir, { 'README.md': `not even governed: ${name}\n` });
      const refused = gitRun(story, dir, ['commit', '-q', '-m', 'no cli'], env);
      expect(refused.code, name).not.toBe(0);
      expect(refused.stderr).toContain(`cannot run delegate-git: ${why}${gone}) is gone`);
      expect(refused.stderr).toContain('Commit refused');
      expect(fs.existsSync(ran), name).toBe(false);
    }

    // Control: the hook as init wrote it runs the CLI, and the same commit passes.
    fs.writeFileSync(hook, installed);
    const passed = gitRun(story, dir, ['commit', '-q', '-m', 'cli back'], env);
    expect(passed.code, passed.stderr).toBe(0);
    expect(fs.existsSync(ran)).toBe(false);
  });
});

function whichGit(pathVar: string): string {
  for (const dir of pathVar.split(':')) {
    const candidate = path.join(dir, 'git');
    if (dir && fs.existsSync(candidate)) return candidate;
  }
  throw new Error('git is not on PATH');
}

describe('pre-commit: what the refusal says to do', () => {
  it('offers only what promotes: a verdict or an approval of the staged content for code, reviewers alone for a governance file, and the rejector for a rejection', () => {
    const dir = copyWorkTree(story, template, 'advice');
    stage(dir, { 'src/code.ts': 'export const code = 1;\n' });
    const code = commit(story, dir, 'code');
    expect(code.code).not.toBe(0);
    expect(code.stderr).toContain('delegate it (`delegate-git delegate <unit.json>`)');
    expect(code.stderr).toContain(
      '`delegate-git attest --approve --staged` (the staged content, as it will be committed)',
    );
    expect(code.stderr).not.toContain('A rejection stands');
    gitOk(story, dir, ['reset', '-q', '--hard']);

    editPolicy(dir, (p) => {
      p.protectDeletes = true;
    });
    gitOk(story, dir, ['add', POLICY]);
    const governance = commit(story, dir, 'policy');
    expect(governance.code).not.toBe(0);
    expect(governance.stderr).toContain(
      'To promote a refused file: have a reviewer approve this exact content',
    );
    expect(governance.stderr).not.toContain('delegate it');
    gitOk(story, dir, ['reset', '-q', '--hard']);

    stage(dir, { 'src/rejected.ts': 'export const rejected = 1;\n' });
    cliOk(story, dir, ['attest', '--reject', 'src/rejected.ts', '--yes']);
    const rejected = commit(story, dir, 'rejected');
    expect(rejected.code).not.toBe(0);
    expect(rejected.stderr).toContain(
      'A rejection stands until the reviewer who made it approves the same content, whatever others approve',
    );
    // Control: the rejector's own approval of the same content lifts it.
    cliOk(story, dir, ['attest', '--approve', 'src/rejected.ts', '--yes']);
    const lifted = commit(story, dir, 'rejected, then approved');
    expect(lifted.code, lifted.stderr).toBe(0);

    // A threshold of 2 without requireReview counts for the governance files only: one approval promotes code.
    editPolicy(dir, (p) => {
      p.reviewThreshold = 2;
    });
    cliOk(story, dir, ['attest', '--approve', POLICY, '--yes']);
    gitOk(story, dir, ['add', POLICY]);
    expect(commit(story, dir, 'threshold 2').code).toBe(0);
    stage(dir, { 'src/more.ts': 'export const more = 1;\n' });
    const more = commit(story, dir, 'more');
    expect(more.stderr).toContain('or have a reviewer approve this exact content');
    gitOk(story, dir, ['reset', '-q', '--hard']);
    editPolicy(dir, (p) => {
      p.protectDeletes = true;
    });
    gitOk(story, dir, ['add', POLICY]);
    const again = commit(story, dir, 'policy again');
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('have 2 reviewers approve this exact content');
    // A policy raising the threshold is itself judged by the threshold in force: the advice asks for that many.
    gitOk(story, dir, ['reset', '-q', '--hard']);
    editPolicy(dir, (p) => {
      p.reviewThreshold = 3;
    });
    gitOk(story, dir, ['add', POLICY]);
    const raised = commit(story, dir, 'threshold 3');
    expect(raised.code).not.toBe(0);
    expect(raised.stderr).toContain('have 2 reviewers approve this exact content');
  });
});

describe('pre-commit: a commit that changes the rules says what it does beyond its files', () => {
  /** Commits the staged policy edit with the operator's approval (threshold 1: theirs suffices). */
  function commitPolicy(dir: string, edit: (policy: Record<string, unknown>) => void, message: string) {
    editPolicy(dir, edit);
    cliOk(story, dir, ['attest', '--approve', POLICY, '--yes']);
    gitOk(story, dir, ['add', POLICY]);
    return commit(story, dir, message);
  }

  it('names unchanged files the new rules no longer promote; control: a rules change that leaves every file promoted', () => {
    const dir = copyWorkTree(story, template, 'rules-unpromote');
    stage(dir, { 'lib/m.ts': 'export const m = 1;\n' });
    expect(commit(story, dir, 'lib, ungoverned').code).toBe(0);
    const quiet = commitPolicy(dir, (p) => Object.assign(p, { protectDeletes: true }), 'protect deletes');
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(quiet.stderr).not.toContain('no longer promoted');

    const widened = commitPolicy(
      dir,
      (p) => Object.assign(p, { protect: ['src/**', 'lib/**'] }),
      'protect lib',
    );
    expect(widened.code, widened.stderr).toBe(0);
    expect(widened.stderr).toContain(
      'delegate-git: Under the rules this commit stages, 1 governed file(s) it leaves unchanged are no longer promoted:',
    );
    expect(widened.stderr).toContain('lib/m.ts: no verdict');
    // verify at the commit agrees: what was said is what CI refuses.
    const verified = cli(story, dir, ['check', '--rev', 'HEAD', '--json']);
    expect(verified.code).toBe(1);
    expect(
      JSON.parse(verified.stdout).results.filter((r: { promoted: boolean }) => !r.promoted),
    ).toMatchObject([{ path: 'lib/m.ts' }]);
  });

  it('a key revoked names only the files its records promote; control: a file another key promotes is not named', () => {
    const dir = copyWorkTree(story, template, 'rules-revoke');
    const ritaEnv = operatorEnv(story, 'rita');
    const rita = JSON.parse(cliOk(story, dir, ['keygen', 'rita', '--json'], ritaEnv).stdout) as {
      publicKey: string;
    };
    cliOk(story, dir, [
      'keys',
      'add',
      'rita',
      '--public-key',
      rita.publicKey,
      '--roles',
      'reviewer',
      '--email',
      'rita@example.com',
    ]);
    cliOk(story, dir, ['attest', '--approve', '.delegate-git/keys/rita.json', '--yes']);
    gitOk(story, dir, ['add', '.delegate-git']);
    expect(commit(story, dir, 'rita reviews').code).toBe(0);
    writeFiles(dir, {
      'src/by-rita.ts': 'export const r = 1;\n',
      'src/by-operator.ts': 'export const o = 1;\n',
    });
    cliOk(story, dir, ['attest', '--approve', 'src/by-rita.ts', '--yes'], ritaEnv);
    cliOk(story, dir, ['attest', '--approve', 'src/by-operator.ts', '--yes']);
    gitOk(story, dir, ['add', 'src']);
    expect(commit(story, dir, 'two files').code).toBe(0);

    cliOk(story, dir, ['keys', 'revoke', 'rita']);
    cliOk(story, dir, ['attest', '--approve', '.delegate-git/keys/rita.json', '--yes']);
    gitOk(story, dir, ['add', '.delegate-git']);
    const revoked = commit(story, dir, 'revoke rita');
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stderr).toContain('1 governed file(s) it leaves unchanged are no longer promoted');
    expect(revoked.stderr).toContain(
      "src/by-rita.ts: the record on it does not count: signer rita's key was revoked",
    );
    expect(revoked.stderr).not.toContain('src/by-operator.ts');
  });

  /** The paths `check --staged --json` says the staged rules change leaves unpromoted. */
  function saidUnpromoted(dir: string): string[] {
    const checked = cli(story, dir, ['check', '--staged', '--json']);
    const report = JSON.parse(checked.stdout) as { rulesChange?: { unpromoted: Array<{ path: string }> } };
    return (report.rulesChange?.unpromoted ?? []).map((u) => u.path).sort();
  }

  /** The paths `verify --json` refuses at HEAD. */
  function refusedByVerify(dir: string): string[] {
    const verified = JSON.parse(cli(story, dir, ['verify', '--json']).stdout) as {
      files: Array<{ path: string; promoted: boolean }>;
    };
    return verified.files
      .filter((f) => !f.promoted)
      .map((f) => f.path)
      .sort();
  }

  /** A second reviewer added by the operator's approval, staged; returns the reviewer's environment. (A name per
   * test: the story keeps one signing key per name.) */
  function addReviewer(dir: string, name: string): NodeJS.ProcessEnv {
    const env = operatorEnv(story, name);
    const reviewer = JSON.parse(cliOk(story, dir, ['keygen', name, '--json'], env).stdout) as {
      publicKey: string;
    };
    cliOk(story, dir, [
      'keys',
      'add',
      name,
      '--public-key',
      reviewer.publicKey,
      '--roles',
      'reviewer',
      '--email',
      `${name}@example.com`,
    ]);
    cliOk(story, dir, ['attest', '--approve', keyFile(name), '--yes']);
    gitOk(story, dir, ['add', '.delegate-git']);
    return env;
  }

  const keyFile = (name: string) => `.delegate-git/keys/${name}.json`;

  it('a revoked key names the policy and key files only its records approved, as verify refuses them after the commit (rt48 f07)', () => {
    const dir = copyWorkTree(story, template, 'rules-revoke-governance');
    stage(dir, { 'src/t.ts': 'export const t = 1;\n' });
    cliOk(story, dir, ['attest', '--approve', 'src/t.ts', '--yes']);
    expect(commit(story, dir, 't').code).toBe(0);
    const rosaEnv = addReviewer(dir, 'rosa');
    expect(commit(story, dir, 'rosa reviews').code).toBe(0);
    expect(refusedByVerify(dir)).toEqual([]);

    // The operator, whose approvals alone admitted the policy and rosa's key file, revoked by rosa's approval.
    cliOk(story, dir, ['keys', 'revoke', OPERATOR]);
    cliOk(story, dir, ['attest', '--approve', keyFile(OPERATOR), '--yes'], rosaEnv);
    gitOk(story, dir, ['add', '.delegate-git']);
    const said = saidUnpromoted(dir);
    expect(said).toEqual(expect.arrayContaining([POLICY, keyFile('rosa'), 'src/t.ts']));
    const revoked = commit(story, dir, 'revoke the operator');
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stderr).toContain(
      `${said.length} governed file(s) it leaves unchanged are no longer promoted`,
    );
    expect(revoked.stderr).toContain(
      `${POLICY}: the record on it does not count: signer ${OPERATOR}'s key was revoked`,
    );
    expect(revoked.stderr).toContain(`${keyFile('rosa')}: the record on it does not count`);
    // What was said is what verify refuses, no more and no less.
    expect(refusedByVerify(dir)).toEqual(said);
  });

  it('control: a key added, then a threshold raised, leave every policy and key file promoted, as verify agrees', () => {
    const dir = copyWorkTree(story, template, 'rules-keep-governance');
    addReviewer(dir, 'remy');
    expect(saidUnpromoted(dir)).toEqual([]);
    expect(commit(story, dir, 'remy reviews').code).toBe(0);
    expect(refusedByVerify(dir)).toEqual([]);

    // The kept key files were approved once: a revision asks one approval of each (its history holds how they came
    // in), not the threshold it raises to.
    editPolicy(dir, (p) => Object.assign(p, { reviewThreshold: 2 }));
    cliOk(story, dir, ['attest', '--approve', POLICY, '--yes']);
    gitOk(story, dir, ['add', POLICY]);
    const said = saidUnpromoted(dir);
    expect(said.filter((p) => p.startsWith('.delegate-git/'))).toEqual([]);
    const raised = commit(story, dir, 'threshold 2');
    expect(raised.code, raised.stderr).toBe(0);
    expect(raised.stderr).not.toContain(keyFile(OPERATOR));
    expect(raised.stderr).not.toContain(keyFile('remy'));
    expect(refusedByVerify(dir)).toEqual(said);
  });

  it('names its own changes that pass only under the new rules (a push judges by the old); control: the rules change on its own first', () => {
    const dir = copyWorkTree(story, template, 'rules-ahead');
    stage(dir, { 'src/keep.ts': 'export const keep = 1;\n' });
    cliOk(story, dir, ['attest', '--approve', 'src/keep.ts', '--yes']);
    expect(
      commitPolicy(dir, (p) => Object.assign(p, { protectDeletes: true }), 'keep and protect deletes').code,
    ).toBe(0);

    const both = copyWorkTree(story, dir, 'rules-ahead-both');
    editPolicy(both, (p) => Object.assign(p, { protectDeletes: false }));
    cliOk(story, both, ['attest', '--approve', POLICY, '--yes']);
    gitOk(story, both, ['add', POLICY]);
    gitOk(story, both, ['rm', '-q', 'src/keep.ts']);
    const together = commit(story, both, 'allow deletes and delete');
    expect(together.code, together.stderr).toBe(0);
    expect(together.stderr).toContain(
      'delegate-git: This commit changes the policy or the trust root, and 1 of its other change(s) pass only under the new rules:',
    );
    expect(together.stderr).toContain(
      'src/keep.ts: the policy protects deletions of this path (protectDeletes)',
    );
    expect(together.stderr).toContain('commit and push the rules change on its own first, then these.');

    const apart = commitPolicy(dir, (p) => Object.assign(p, { protectDeletes: false }), 'allow deletes');
    expect(apart.code, apart.stderr).toBe(0);
    gitOk(story, dir, ['rm', '-q', 'src/keep.ts']);
    const deleted = commit(story, dir, 'delete');
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(`${apart.stderr}${deleted.stderr}`).not.toContain('pass only under the new rules');
  });
});
