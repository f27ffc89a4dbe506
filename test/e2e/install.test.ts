/**
 * Hook installation by `delegate-git init`, end to end: an existing hook is chained (and still runs, and still
 * blocks), init is idempotent, core.hooksPath and husky are honoured, and linked worktrees are guarded too.
 * Every check is made by running `git commit` and seeing the hook act.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adopt,
  cli,
  cliAsync,
  cliOk,
  cloneInto,
  commit,
  commitBeforeAdoption,
  gitOk,
  gitRun,
  makeServer,
  makeStory,
  makeWorkTree,
  noteLines,
  OPERATOR,
  operatorEnv,
  type Run,
  recordVerdict,
  refTip,
  type Story,
  stageFiles,
  statementOf,
  storyCli,
  writeFiles,
} from '../support/cli-story.js';

const MARKER = '# delegate-git hook';

let story: Story;
beforeAll(() => {
  story = makeStory();
});
afterAll(() => story.cleanup());

const stage = (dir: string, files: Record<string, string>) => stageFiles(story, dir, files);

function lines(file: string): string[] {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

function executable(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text, { mode: 0o755 });
  fs.chmodSync(file, 0o755);
}

/** Everything init writes or configures, to compare two runs. */
function installedState(dir: string): Record<string, string> {
  const state: Record<string, string> = {};
  const walk = (base: string, rel: string) => {
    const abs = path.join(base, rel);
    if (!fs.existsSync(abs)) return;
    for (const entry of fs.readdirSync(abs, { withFileTypes: true })) {
      const child = path.join(rel, entry.name);
      if (entry.isDirectory()) walk(base, child);
      else
        state[`${path.basename(base)}/${child}`] =
          `${fs.statSync(path.join(base, child)).mode.toString(8)} ${fs.readFileSync(path.join(base, child), 'utf8')}`;
    }
  };
  walk(path.join(dir, '.delegate-git'), '');
  walk(path.join(dir, '.git', 'hooks'), '');
  walk(path.join(story.env.XDG_CONFIG_HOME!, 'delegate-git'), '');
  state['git config'] = gitOk(story, dir, ['config', '--local', '--list']);
  state.ledger = refTip(story, dir, 'refs/notes/delegations') ?? '';
  return state;
}

describe('init: an existing pre-commit hook', () => {
  it('is chained: it still runs, a failing one still blocks, and a second init changes nothing', () => {
    const dir = makeWorkTree(story, 'chained');
    const marker = path.join(story.root, 'foreign-ran.txt');
    const block = path.join(story.root, 'foreign-says-no');
    const foreign = `#!/bin/sh\necho ran >> '${marker}'\nif [ -e '${block}' ]; then echo 'foreign hook: no' >&2; exit 3; fi\n`;
    const hooks = path.join(dir, '.git', 'hooks');
    executable(path.join(hooks, 'pre-commit'), foreign);

    adopt(story, dir, ['src/**']);
    expect(fs.readFileSync(path.join(hooks, 'pre-commit'), 'utf8')).toContain(MARKER);
    expect(fs.readFileSync(path.join(hooks, 'pre-merge-commit'), 'utf8')).toContain(MARKER);
    expect(fs.readFileSync(path.join(hooks, 'pre-commit.chained'), 'utf8')).toBe(foreign);
    expect(lines(marker)).toHaveLength(1); // the adopting commit ran it

    // Both hooks run: the foreign one first, then the gate refuses the unpromoted file.
    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    const refused = commit(story, dir, 'unpromoted');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/a.ts');
    expect(lines(marker)).toHaveLength(2);

    // A failing foreign hook blocks a commit the gate itself would pass.
    gitOk(story, dir, ['reset', '-q', '--hard']);
    stage(dir, { 'README.md': 'free\n' });
    fs.writeFileSync(block, '');
    const head = refTip(story, dir, 'HEAD');
    const blocked = commit(story, dir, 'foreign hook says no');
    expect(blocked.code).not.toBe(0);
    expect(blocked.stderr).toContain('foreign hook: no');
    expect(refTip(story, dir, 'HEAD')).toBe(head);
    fs.rmSync(block);
    expect(commit(story, dir, 'foreign hook says yes').code).toBe(0);
    expect(lines(marker)).toHaveLength(4);

    // Idempotent: the second run keeps everything as it is and chains nothing twice.
    const before = installedState(dir);
    const again = cliOk(story, dir, ['init']);
    expect(again.stdout).toContain('kept the existing .delegate-git/policy.json');
    expect(again.stdout).toContain('your key is already in .delegate-git/keys/alice.json');
    expect(installedState(dir)).toEqual(before);
    expect(fs.existsSync(path.join(hooks, 'pre-commit.chained.chained'))).toBe(false);
    stage(dir, { 'README.md': 'free again\n' });
    expect(commit(story, dir, 'after the second init').code).toBe(0);
    expect(lines(marker)).toHaveLength(5); // the foreign hook ran once, not twice
  });

  it('init stopped while chaining leaves the hook in place with its copy (never no hook: fc audit f02); the next init finishes; control: a different .chained is refused', () => {
    const dir = makeWorkTree(story, 'chain-stopped');
    const hooks = path.join(dir, '.git', 'hooks');
    const foreign = '#!/bin/sh\necho foreign >&2\n';
    // What a run killed between copying the hook aside and renaming its own over it leaves, and its temporary.
    executable(path.join(hooks, 'pre-commit'), foreign);
    executable(path.join(hooks, 'pre-commit.chained'), foreign);
    fs.writeFileSync(path.join(hooks, 'pre-commit.delegate-git-999999999'), '#!/bin/sh\n');
    adopt(story, dir, ['src/**']);
    expect(fs.readFileSync(path.join(hooks, 'pre-commit'), 'utf8')).toContain(MARKER);
    expect(fs.readFileSync(path.join(hooks, 'pre-commit.chained'), 'utf8')).toBe(foreign);
    expect(fs.existsSync(path.join(hooks, 'pre-commit.delegate-git-999999999'))).toBe(false);
    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    const refused = commit(story, dir, 'unpromoted');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('foreign');

    const other = makeWorkTree(story, 'chain-other');
    const otherHooks = path.join(other, '.git', 'hooks');
    executable(path.join(otherHooks, 'pre-commit'), foreign);
    executable(path.join(otherHooks, 'pre-commit.chained'), '#!/bin/sh\necho another >&2\n');
    const clash = cli(story, other, ['init', '--protect', 'src/**']);
    expect(clash.code).toBe(2);
    expect(clash.stderr).toContain('cannot be chained safely');
  });
});

describe('init: where git runs hooks', () => {
  it('installs into core.hooksPath (made absolute) when it is set', () => {
    const dir = makeWorkTree(story, 'hookspath');
    // Inside the git directory, where no checkout writes (one in the work tree is refused, below).
    gitOk(story, dir, ['config', 'core.hooksPath', '.git/own-hooks']);
    const init = cliOk(story, dir, ['init', '--protect', 'src/**']);
    const hooks = path.join(dir, '.git', 'own-hooks');
    const installed = path.join(hooks, 'pre-commit');
    expect(init.stdout).toContain(`installed the pre-commit hook: ${installed}`);
    expect(init.stdout).toContain(
      `installed the pre-merge-commit hook: ${installed.replace(/pre-commit$/, 'pre-merge-commit')}`,
    );
    expect(fs.readFileSync(installed, 'utf8')).toContain(MARKER);
    expect(fs.readFileSync(path.join(hooks, 'pre-merge-commit'), 'utf8')).toContain(MARKER);
    // The hooks after a pull, which take in the records it fetched, go to the same place.
    for (const name of ['post-merge', 'post-rewrite']) {
      expect(init.stdout).toContain(`installed the ${name} hook: ${path.join(hooks, name)}`);
      expect(fs.readFileSync(path.join(hooks, name), 'utf8')).toContain(`hook ${name}`);
    }
    expect(fs.existsSync(path.join(dir, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(gitOk(story, dir, ['config', 'core.hooksPath'])).toBe(hooks);

    gitOk(story, dir, ['add', '.delegate-git']);
    expect(commit(story, dir, 'adopt').code).toBe(0);
    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    const refused = commit(story, dir, 'unpromoted');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/a.ts');

    // init run again in a linked worktree: the absolute path leads into the main work tree, this repository too.
    gitOk(story, dir, ['reset', '-q', '--hard']);
    const linked = path.join(story.root, 'hookspath-linked');
    gitOk(story, dir, ['worktree', 'add', '-q', '-b', 'linked', linked]);
    const again = cli(story, linked, ['init']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`installed the pre-commit hook: ${installed}`);
  });

  it('refuses a second adoption in a linked worktree while the first is not committed in another (rt46); control: committed and merged, init there keeps it', () => {
    const dir = makeWorkTree(story, 'two-worktrees');
    commitBeforeAdoption(story, dir);
    const linked = path.join(story.root, 'two-worktrees-linked');
    gitOk(story, dir, ['worktree', 'add', '-q', '-b', 'linked', linked]);
    cliOk(story, dir, ['init', '--protect', 'src/**', '--no-hook']);
    const first = JSON.parse(fs.readFileSync(path.join(dir, '.delegate-git', 'policy.json'), 'utf8'));

    const second = cli(story, linked, ['init', '--protect', 'src/**', '--no-hook']);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain('An adoption is in progress in another worktree of this repository');
    expect(second.stderr).toContain(dir);
    expect(fs.existsSync(path.join(linked, '.delegate-git', 'policy.json'))).toBe(false);

    gitOk(story, dir, ['add', '.delegate-git']);
    expect(commit(story, dir, 'adopt').code).toBe(0);
    gitOk(story, linked, ['merge', '-q', 'main']);
    const rerun = cli(story, linked, ['init', '--no-hook']);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stdout).toContain('kept the existing');
    const kept = JSON.parse(fs.readFileSync(path.join(linked, '.delegate-git', 'policy.json'), 'utf8'));
    expect(kept.repositoryId).toBe(first.repositoryId);
  });

  it('between init and the adopting commit, a commit is refused saying to commit the adoption (not to run init again); control: adopted, the same commit passes', () => {
    const dir = makeWorkTree(story, 'adoption-not-staged');
    commitBeforeAdoption(story, dir);
    cliOk(story, dir, ['init', '--protect', 'src/**']);
    writeFiles(dir, { 'README.md': 'an unrelated change\n' });
    gitOk(story, dir, ['add', 'README.md']);
    const refused = commit(story, dir, 'before the adoption is committed');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('.delegate-git/policy.json is in the work tree but not staged');
    expect(refused.stderr).toContain('git add .delegate-git && git commit -m "Adopt delegate-git"');
    expect(refused.stderr).not.toContain('Run `delegate-git init`');
    gitOk(story, dir, ['add', '.delegate-git']);
    expect(commit(story, dir, 'adopt, with the change').code).toBe(0);
  });

  it('guards a linked worktree: an unpromoted commit there is refused, a promoted one passes', async () => {
    const dir = makeWorkTree(story, 'worktrees');
    adopt(story, dir, ['src/**']);
    const linked = path.join(story.root, 'worktrees-linked');
    gitOk(story, dir, ['worktree', 'add', '-q', '-b', 'linked', linked]);

    stage(linked, { 'src/wt.ts': 'export const wt = 1;\n' });
    const refused = commit(story, linked, 'unpromoted in a worktree');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/wt.ts');

    await recordVerdict(story, linked, 'src/wt.ts');
    const passed = commit(story, linked, 'promoted in a worktree');
    expect(passed.code, passed.stderr).toBe(0);
    expect(gitOk(story, dir, ['ls-tree', '--name-only', '-r', 'linked'])).toContain('src/wt.ts');
  });
});

/**
 * A repository set up as `husky <folder>/.husky` (husky 9) sets one up, reduced to its core: `<folder>/.husky/_/h`
 * (generated, ignored) runs the committed `<folder>/.husky/<hook>` with `sh -e` and `node_modules/.bin` first on
 * PATH, reached through a generated file per hook of husky's own list, which has no pre-merge-commit.
 */
function huskyRepository(name: string, preCommit: string, folder = '.'): string {
  const dir = makeWorkTree(story, name);
  writeFiles(dir, { [`${folder}/.husky/pre-commit`]: preCommit });
  generateHusky(dir, folder);
  return dir;
}

/** What husky writes on every `npm install`: `.husky/_` again, and a relative core.hooksPath. */
function generateHusky(dir: string, folder = '.'): void {
  const generated = path.join(dir, folder, '.husky', '_');
  writeFiles(generated, { '.gitignore': '*\n' });
  executable(
    path.join(generated, 'h'),
    '#!/usr/bin/env sh\nn=$(basename "$0")\ns=$(dirname "$(dirname "$0")")/$n\n[ ! -f "$s" ] && exit 0\nexport PATH="node_modules/.bin:$PATH"\nsh -e "$s" "$@"\nc=$?\n[ $c != 0 ] && echo "husky - $n script failed (code $c)"\nexit $c\n',
  );
  for (const hook of ['pre-commit', 'post-merge', 'post-rewrite'])
    executable(path.join(generated, hook), '#!/usr/bin/env sh\n. "$(dirname "$0")/h"\n');
  gitOk(story, dir, ['config', 'core.hooksPath', path.posix.join(folder, '.husky', '_')]);
}

describe('init: husky', () => {
  it('appends one line to .husky/pre-commit, makes core.hooksPath absolute, and guards worktrees too', async () => {
    const marker = path.join(story.root, 'husky-ran.txt');
    const existing = `echo husky-step >> '${marker}'\n`;
    const dir = huskyRepository('husky', existing);

    const init = cliOk(story, dir, ['init', '--protect', 'src/**']);
    expect(init.stdout).toContain('.husky/pre-commit (husky;');
    const huskyHook = fs.readFileSync(path.join(dir, '.husky', 'pre-commit'), 'utf8');
    expect(huskyHook.startsWith(existing)).toBe(true);
    const added = huskyHook.slice(existing.length).split('\n').filter(Boolean);
    expect(added).toHaveLength(1);
    expect(added[0]).toContain('/delegate-git/hooks/pre-commit"');
    expect(gitOk(story, dir, ['config', 'core.hooksPath'])).toBe(path.join(dir, '.husky', '_'));
    expect(fs.existsSync(path.join(dir, '.git', 'hooks', 'pre-commit'))).toBe(false);

    cliOk(story, dir, ['init']);
    expect(fs.readFileSync(path.join(dir, '.husky', 'pre-commit'), 'utf8')).toBe(huskyHook);

    gitOk(story, dir, ['add', '.delegate-git', '.husky/pre-commit']);
    const adopted = commit(story, dir, 'adopt');
    expect(adopted.code, adopted.stderr).toBe(0);
    expect(lines(marker)).toHaveLength(1);

    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    const refused = commit(story, dir, 'unpromoted');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/a.ts');
    expect(lines(marker)).toHaveLength(2);
    gitOk(story, dir, ['reset', '-q', '--hard']);
    // git runs the gate through husky's files: attest does not warn that it does not (rt48 f08).
    writeFiles(dir, { 'src/approved.ts': 'export const ok = 1;\n' });
    const attested = cliOk(story, dir, [
      'attest',
      '--approve',
      'src/approved.ts',
      '--key',
      OPERATOR,
      '--yes',
    ]);
    expect(attested.stderr).not.toContain('does not run delegate-git');
    fs.rmSync(path.join(dir, 'src/approved.ts'));

    // A linked worktree has no .husky/_ of its own (it is generated, not committed): the absolute path reaches it.
    const linked = path.join(story.root, 'husky-linked');
    gitOk(story, dir, ['worktree', 'add', '-q', '-b', 'linked', linked]);
    expect(fs.existsSync(path.join(linked, '.husky', '_'))).toBe(false);
    stage(linked, { 'src/wt.ts': 'export const wt = 1;\n' });
    const refusedThere = commit(story, linked, 'unpromoted in a worktree');
    expect(refusedThere.code).not.toBe(0);
    expect(refusedThere.stderr).toContain('NOT PROMOTED  src/wt.ts');
    await recordVerdict(story, linked, 'src/wt.ts');
    const passedThere = commit(story, linked, 'promoted in a worktree');
    expect(passedThere.code, passedThere.stderr).toBe(0);
    expect(lines(marker)).toHaveLength(4);
    writeFiles(linked, { 'src/approved-there.ts': 'export const ok = 2;\n' });
    const attestedThere = cliOk(story, linked, [
      'attest',
      '--approve',
      'src/approved-there.ts',
      '--key',
      OPERATOR,
      '--yes',
    ]);
    expect(attestedThere.stderr).not.toContain('does not run delegate-git');
    fs.rmSync(path.join(linked, 'src/approved-there.ts'));
    // init run again there: the absolute hooks path leads into the main work tree, which is this repository too.
    const again = cli(story, linked, ['init']);
    expect(again.code, again.stderr).toBe(0);
    expect(fs.readFileSync(path.join(linked, '.husky', 'pre-commit'), 'utf8')).toBe(huskyHook);
  });

  it('guards the commit of a merge too: a line in .husky/pre-merge-commit, run through a hook in .husky/_', async () => {
    const dir = huskyRepository('husky-merge', '');
    const init = cliOk(story, dir, ['init', '--protect', 'src/**']);
    expect(init.stdout).toContain('installed the pre-merge-commit hook: .husky/pre-merge-commit (husky;');
    const added = lines(path.join(dir, '.husky', 'pre-merge-commit'));
    expect(added.filter((l) => l.includes('/delegate-git/hooks/pre-merge-commit"'))).toHaveLength(1);
    expect(fs.readFileSync(path.join(dir, '.husky', '_', 'pre-merge-commit'), 'utf8')).toContain(MARKER);
    // The hooks after a pull: husky generates them in .husky/_, so a line in the committed file is enough.
    for (const name of ['post-merge', 'post-rewrite']) {
      expect(init.stdout).toContain(`installed the ${name} hook: .husky/${name} (husky;`);
      const line = lines(path.join(dir, '.husky', name)).filter((l) =>
        l.includes(`/delegate-git/hooks/${name}"`),
      );
      expect(line).toHaveLength(1);
      expect(fs.readFileSync(path.join(dir, '.husky', '_', name), 'utf8')).not.toContain(MARKER);
    }
    cliOk(story, dir, ['init']);
    expect(lines(path.join(dir, '.husky', 'pre-merge-commit'))).toEqual(added);
    gitOk(story, dir, ['add', '.delegate-git', '.husky']);
    expect(commit(story, dir, 'adopt').code).toBe(0);

    // The other side brings a governed file committed without the hook: the merge's own commit is refused.
    gitOk(story, dir, ['checkout', '-q', '-b', 'side']);
    stage(dir, { 'src/side.ts': 'export const side = 1;\n' });
    expect(commit(story, dir, 'unpromoted, hook skipped', ['--no-verify']).code).toBe(0);
    gitOk(story, dir, ['checkout', '-q', 'main']);
    stage(dir, { 'README.md': 'main moves on\n' });
    expect(commit(story, dir, 'main moves on').code).toBe(0);
    const refused = gitRun(story, dir, ['merge', '--no-edit', 'side']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/side.ts');
    gitOk(story, dir, ['merge', '--abort']);

    // Control: once the file is promoted, the same merge commits.
    await recordVerdict(story, dir, 'src/side.ts', { content: 'export const side = 1;\n' });
    const merged = gitRun(story, dir, ['merge', '--no-edit', 'side']);
    expect(merged.code, merged.stderr).toBe(0);
  });
});

describe('init: husky files it adds its line to', () => {
  it('puts the line before a closing exec or exit, where it runs; a commented-out line is not taken for it; the mode stays', async () => {
    for (const [name, closing] of [
      ['husky-exec', 'exec true\n'],
      ['husky-exit', 'exit 0\n'],
      ['husky-commented', '# npx --no-install delegate-git hook pre-commit\n'],
    ] as const) {
      const dir = huskyRepository(name, `echo checks\n${closing}`);
      fs.chmodSync(path.join(dir, '.husky', 'pre-commit'), 0o644);
      cliOk(story, dir, ['init', '--protect', 'src/**']);
      const hook = lines(path.join(dir, '.husky', 'pre-commit'));
      const live = hook.findIndex((l) => !l.startsWith('#') && l.includes('/delegate-git/hooks/pre-commit"'));
      expect(live, `${name}: ${hook.join('\n')}`).toBeGreaterThan(0);
      if (!closing.startsWith('#')) expect(hook[live + 1]).toBe(closing.trim());
      expect(fs.statSync(path.join(dir, '.husky', 'pre-commit')).mode & 0o777).toBe(0o644);

      gitOk(story, dir, ['add', '.delegate-git', '.husky']);
      expect(commit(story, dir, 'adopt').code).toBe(0);
      stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
      const refused = commit(story, dir, 'unpromoted');
      expect(refused.code, name).not.toBe(0);
      expect(refused.stderr).toContain('NOT PROMOTED  src/a.ts');
      await recordVerdict(story, dir, 'src/a.ts');
      const passed = commit(story, dir, 'promoted'); // control
      expect(passed.code, passed.stderr).toBe(0);
    }
  });

  it('puts the line first where an exit at the start of a line ends a branch, not the script: the gate runs in both', async () => {
    const skip = 'if [ -n "$SKIP_LINT" ]; then\nexit 0\nfi\necho lint-ok\n';
    const dir = huskyRepository('husky-branch-exit', skip);
    cliOk(story, dir, ['init', '--protect', 'src/**']);
    const hook = lines(path.join(dir, '.husky', 'pre-commit'));
    expect(hook[0]).toContain('/delegate-git/hooks/pre-commit"');
    expect(hook.slice(1).join('\n')).toBe(skip.trim());
    gitOk(story, dir, ['add', '.delegate-git', '.husky']);
    expect(commit(story, dir, 'adopt').code).toBe(0);
    const skipping = { ...story.env, SKIP_LINT: '1' };
    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    const refused = commitWith(dir, 'unpromoted, lint skipped', skipping);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/a.ts');
    await recordVerdict(story, dir, 'src/a.ts');
    const passed = commitWith(dir, 'promoted, lint skipped', skipping); // control
    expect(passed.code, passed.stderr).toBe(0);
  });

  it('names the husky files to commit, which hold the gate: committed, init has nothing more to say', () => {
    const dir = huskyRepository('husky-commit', 'echo lint-ok\n');
    const files = ['pre-commit', 'pre-merge-commit', 'post-merge', 'post-rewrite', 'pre-push'].map(
      (h) => `.husky/${h}`,
    );
    const init = cliOk(story, dir, ['init', '--protect', 'src/**']);
    expect(init.stdout).toContain(
      `Next: commit them: git add .delegate-git/policy.json .delegate-git/keys ${files.join(' ')} && git commit`,
    );
    gitOk(story, dir, ['add', '.delegate-git', '.husky/pre-commit']);
    expect(commit(story, dir, 'adopt').code).toBe(0);
    const again = cliOk(story, dir, ['init']);
    expect(again.stdout).toContain(`git add ${files.slice(1).join(' ')} && git commit`);
    expect(again.stdout).not.toContain('Nothing to commit');
    gitOk(story, dir, ['add', '.husky']);
    expect(commit(story, dir, 'husky hooks').code).toBe(0);
    expect(cliOk(story, dir, ['init']).stdout).toContain('Nothing to commit');
  });

  it("finds husky in a folder of the repository (husky frontend/.husky): the team's hook still runs, and the gate survives husky's next install", async () => {
    const marker = path.join(story.root, 'husky-folder-ran.txt');
    const dir = huskyRepository('husky-folder', `echo team >> '${marker}'\n`, 'frontend');
    const init = cliOk(story, dir, ['init', '--protect', 'src/**']);
    expect(init.stdout).toContain('installed the pre-commit hook: frontend/.husky/pre-commit (husky;');
    expect(fs.existsSync(path.join(dir, 'frontend', '.husky', '_', 'pre-commit.chained'))).toBe(false);
    expect(fs.readFileSync(path.join(dir, 'frontend', '.husky', '_', 'pre-commit'), 'utf8')).not.toContain(
      MARKER,
    );
    expect(fs.existsSync(path.join(dir, '.husky'))).toBe(false);
    gitOk(story, dir, ['add', '.delegate-git', 'frontend/.husky']);
    expect(commit(story, dir, 'adopt').code).toBe(0);
    expect(lines(marker)).toHaveLength(1);

    generateHusky(dir, 'frontend'); // `npm install` runs husky again
    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    const refused = commit(story, dir, 'unpromoted');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/a.ts');
    await recordVerdict(story, dir, 'src/a.ts');
    const passed = commit(story, dir, 'promoted'); // control
    expect(passed.code, passed.stderr).toBe(0);
    expect(lines(marker)).toHaveLength(3);
  });

  it('in a clone that has not run init, runs a delegate-git on PATH; with none, refuses and says to run init', () => {
    const dir = huskyRepository('husky-origin', 'echo lint-ok\n');
    cliOk(story, dir, ['init', '--protect', 'src/**']);
    gitOk(story, dir, ['add', '.delegate-git', '.husky']);
    expect(commit(story, dir, 'adopt').code).toBe(0);
    const mate = cloneInto(story, dir, 'husky-mate');
    generateHusky(mate); // `npm install`, but no `npx delegate-git init`
    const bare = { ...story.env, PATH: '/usr/bin:/bin' };
    stage(mate, { 'README.md': 'not governed\n' });
    const refused = commitWith(mate, 'no delegate-git here', bare);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('has not run `npx delegate-git init`');
    expect(refused.stderr).toContain('the commit is refused');

    // Control: a delegate-git on PATH (or in node_modules/.bin) judges the commit as the installed hook would.
    const withCli = { ...bare, PATH: `${path.dirname(shimmedCli())}:${bare.PATH}` };
    const passed = commitWith(mate, 'ungoverned', withCli);
    expect(passed.code, passed.stderr).toBe(0);
    stage(mate, { 'src/b.ts': 'export const b = 1;\n' });
    const gated = commitWith(mate, 'unpromoted', withCli);
    expect(gated.code).not.toBe(0);
    expect(gated.stderr).toContain('NOT PROMOTED  src/b.ts');
  });

  it('refuses a husky folder that links outside the repository, writing nothing there; a tracked folder named _ with an h is no husky', () => {
    const shared = path.join(story.root, 'shared-husky');
    writeFiles(shared, { 'pre-commit': 'echo shared\n' });
    const dir = huskyRepository('husky-linked-out', 'echo lint\n');
    fs.cpSync(path.join(dir, '.husky', '_'), path.join(shared, '_'), { recursive: true });
    fs.rmSync(path.join(dir, '.husky'), { recursive: true });
    fs.symlinkSync(shared, path.join(dir, '.husky'));
    const sharedNow = tree(shared);
    const refused = cli(story, dir, ['init', '--protect', 'src/**']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('outside this repository');
    expect(tree(shared)).toEqual(sharedNow);
    expect(fs.existsSync(path.join(dir, '.delegate-git'))).toBe(false);

    // A team's tracked hooks folder that happens to be named _ and hold an h: the team's hooks, refused as such.
    const team = makeWorkTree(story, 'team-underscore');
    writeFiles(team, { 'tools/_/h': '# run the husky-like hooks\n', 'tools/_/pre-commit': 'exit 0\n' });
    gitOk(story, team, ['add', 'tools']);
    gitOk(story, team, ['commit', '-q', '-m', 'team hooks']);
    gitOk(story, team, ['config', 'core.hooksPath', 'tools/_']);
    const teamRefused = cli(story, team, ['init', '--protect', 'src/**']);
    expect(teamRefused.code).toBe(2);
    expect(teamRefused.stderr).toContain('core.hooksPath is tools/_, a directory this repository tracks');
  });

  it('refuses a .husky/pre-commit that is a symbolic link, writing nothing through it', () => {
    const secret = path.join(story.root, 'husky-secret.txt');
    fs.writeFileSync(secret, 'not for the repository\n');
    const dir = huskyRepository('husky-link', '');
    fs.rmSync(path.join(dir, '.husky', 'pre-commit'));
    fs.symlinkSync(secret, path.join(dir, '.husky', 'pre-commit'));
    const refused = cli(story, dir, ['init', '--protect', 'src/**']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('is a symbolic link');
    expect(fs.readFileSync(secret, 'utf8')).toBe('not for the repository\n');
    expect(fs.lstatSync(path.join(dir, '.husky', 'pre-commit')).isSymbolicLink()).toBe(true);
    expect(fs.existsSync(path.join(dir, '.delegate-git'))).toBe(false);
  });
});

describe('init: hooks it may not take for its own', () => {
  it('chains a hook that merely mentions "# delegate-git hook"; control: its own hook is rewritten in place', () => {
    const dir = makeWorkTree(story, 'mentions');
    const marker = path.join(story.root, 'mentions-ran.txt');
    const user = `#!/bin/sh\n# delegate-git hook pre-commit runs after this (added by hand)\necho lint >> '${marker}'\n`;
    executable(path.join(dir, '.git', 'hooks', 'pre-commit'), user);
    adopt(story, dir, ['src/**']);
    expect(fs.readFileSync(path.join(dir, '.git', 'hooks', 'pre-commit.chained'), 'utf8')).toBe(user);
    expect(lines(marker)).toHaveLength(1);
    cliOk(story, dir, ['init']);
    expect(fs.existsSync(path.join(dir, '.git', 'hooks', 'pre-commit.chained.chained'))).toBe(false);
    expect(fs.readFileSync(path.join(dir, '.git', 'hooks', 'pre-commit.chained'), 'utf8')).toBe(user);
  });

  it('refuses a .git/hooks that links to a directory others share, writing nothing there', () => {
    const shared = path.join(story.root, 'shared-hooks-dir');
    const other = path.join(shared, 'pre-commit');
    executable(other, '#!/bin/sh\nexit 0\n');
    const dir = makeWorkTree(story, 'linked-hooks');
    fs.rmSync(path.join(dir, '.git', 'hooks'), { recursive: true, force: true });
    fs.symlinkSync(shared, path.join(dir, '.git', 'hooks'));
    const refused = cli(story, dir, ['init', '--protect', 'src/**']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`is a link to ${fs.realpathSync(shared)}, outside this repository`);
    expect(fs.readdirSync(shared)).toEqual(['pre-commit']);
    expect(fs.existsSync(path.join(dir, '.delegate-git'))).toBe(false);
  });

  it('a hook manager running a saved older copy of ours from its own hook ends: the copy skips its chain', async () => {
    const dir = makeWorkTree(story, 'manager');
    adopt(story, dir, ['src/**']);
    const hooks = path.join(dir, '.git', 'hooks');
    // What python's pre-commit does on install: ours saved as .legacy, its own hook runs that first. An older
    // release's hook, without the re-entry guard, is what such a manager saved.
    const older = fs
      .readFileSync(path.join(hooks, 'pre-commit'), 'utf8')
      .replace('[ -z "$DELEGATE_GIT_IN_CHAIN" ]', 'true');
    fs.writeFileSync(path.join(hooks, 'pre-commit.legacy'), older, { mode: 0o755 });
    const depth = path.join(story.root, 'manager-depth.txt');
    executable(
      path.join(hooks, 'pre-commit'),
      `#!/bin/sh\necho x >> '${depth}'\n[ "$(wc -l < '${depth}')" -gt 10 ] && { echo 'manager: runaway' >&2; exit 9; }\n"$(dirname "$0")/pre-commit.legacy" "$@"\n`,
    );
    cliOk(story, dir, ['init']); // an upgrade: the manager's hook is chained, the saved copy refreshed
    await recordVerdict(story, dir, 'src/m.ts', { content: 'export const m = 1;\n' });
    stage(dir, { 'src/m.ts': 'export const m = 1;\n' });
    const passed = commit(story, dir, 'promoted, through the manager');
    expect(passed.code, passed.stderr).toBe(0);
    expect(passed.stderr).not.toContain('runaway');
    expect(lines(depth)).toHaveLength(1);
  });
});

describe('init: a CLI installed in the work tree', () => {
  it('runs a copy in the git directory: a checkout that replaces node_modules/delegate-git runs nothing of it', async () => {
    const dir = makeWorkTree(story, 'local-install');
    const built = path.dirname(path.dirname(storyCli));
    const local = path.join(dir, 'node_modules', 'delegate-git');
    for (const part of ['bin', 'dist', 'package.json'])
      fs.cpSync(path.join(built, part), path.join(local, part), { recursive: true });
    writeFiles(dir, { '.gitignore': 'node_modules/\n' });
    const run = spawnSync(
      process.execPath,
      [path.join(local, 'bin', 'delegate-git.js'), 'init', '--protect', 'src/**'],
      { cwd: dir, env: story.env, encoding: 'utf8' },
    );
    expect(run.status, run.stderr).toBe(0);
    const copy = path.join(dir, '.git', 'delegate-git', 'cli', 'bin', 'delegate-git.js');
    expect(fs.readFileSync(path.join(dir, '.git', 'hooks', 'pre-commit'), 'utf8')).toContain(
      `DELEGATE_GIT_CLI='${copy}'`,
    );
    gitOk(story, dir, ['add', '.gitignore', '.delegate-git']);
    expect(commit(story, dir, 'adopt').code).toBe(0);

    // What a branch that force-adds node_modules/delegate-git/... writes there on checkout.
    const ran = path.join(story.root, 'local-install-ran.txt');
    const evil = `require('node:fs').writeFileSync(${JSON.stringify(ran)}, 'ran'); process.exit(0);\n`;
    for (const file of ['bin/delegate-git.js', 'dist/delegate-git.cjs', 'dist/pre-commit-quick.cjs'])
      fs.writeFileSync(path.join(local, file), evil);
    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    const refused = commit(story, dir, 'unpromoted');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/a.ts');
    expect(fs.existsSync(ran)).toBe(false);

    // Control: a promoted file commits; a reinstall of the same version (a newer file, the same bytes) is no upgrade...
    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(path.join(local, 'package.json'), later, later);
    await recordVerdict(story, dir, 'src/a.ts');
    const passed = commit(story, dir, 'promoted');
    expect(passed.code, passed.stderr).toBe(0);
    expect(passed.stderr).not.toContain('changed since init copied it');
    expect(fs.existsSync(ran)).toBe(false);
    // ...and the hook says when the package beside it changed since its copy.
    fs.appendFileSync(path.join(local, 'package.json'), '\n');
    fs.utimesSync(path.join(local, 'package.json'), later, later);
    stage(dir, { 'notes.txt': 'not governed\n' });
    const noted = commit(story, dir, 'after an upgrade');
    expect(noted.code, noted.stderr).toBe(0);
    expect(noted.stderr).toContain('changed since init copied it');
  });
});

describe('init: a CLI in a work tree around this repository, or one git tracks', () => {
  it('copies a CLI from the node_modules of a repository around this one; refuses one the repository tracks', () => {
    const outer = makeWorkTree(story, 'outer-project');
    const built = path.dirname(path.dirname(storyCli));
    const local = path.join(outer, 'node_modules', 'delegate-git');
    for (const part of ['bin', 'dist', 'package.json'])
      fs.cpSync(path.join(built, part), path.join(local, part), { recursive: true });
    const inner = path.join(outer, 'vendor', 'inner');
    fs.mkdirSync(inner, { recursive: true });
    gitOk(story, inner, ['init', '-q']);
    const initFrom = (cwd: string) =>
      spawnSync(
        process.execPath,
        [path.join(local, 'bin', 'delegate-git.js'), 'init', '--protect', 'src/**'],
        {
          cwd,
          env: story.env,
          encoding: 'utf8',
        },
      );
    const run = initFrom(inner);
    expect(run.status, run.stderr).toBe(0);
    expect(fs.readFileSync(path.join(inner, '.git', 'hooks', 'pre-commit'), 'utf8')).toContain(
      `DELEGATE_GIT_CLI='${path.join(fs.realpathSync(inner), '.git', 'delegate-git', 'cli', 'bin', 'delegate-git.js')}'`,
    );

    // A branch of the outer repository that force-added the CLI: init will not make it the hook's program.
    gitOk(story, outer, ['add', '-f', 'node_modules/delegate-git/package.json']);
    const other = path.join(outer, 'vendor', 'other');
    fs.mkdirSync(other, { recursive: true });
    gitOk(story, other, ['init', '-q']);
    const refused = initFrom(other);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('holds files the repository at');
    expect(fs.existsSync(path.join(other, '.delegate-git'))).toBe(false);
    expect(fs.existsSync(path.join(other, '.git', 'hooks', 'pre-commit'))).toBe(false);
  });

  it("refuses a .git/hooks that links to a directory the repository tracks (the team's hooks)", () => {
    const dir = makeWorkTree(story, 'tracked-hooks-link');
    executable(path.join(dir, 'githooks', 'pre-commit'), '#!/bin/sh\nexit 0\n');
    gitOk(story, dir, ['add', 'githooks']);
    fs.rmSync(path.join(dir, '.git', 'hooks'), { recursive: true, force: true });
    fs.symlinkSync('../githooks', path.join(dir, '.git', 'hooks'));
    const refused = cli(story, dir, ['init', '--protect', 'src/**']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('.git/hooks links to githooks, a directory this repository tracks');
    expect(fs.readFileSync(path.join(dir, 'githooks', 'pre-commit'), 'utf8')).toBe('#!/bin/sh\nexit 0\n');
  });

  it('runs its chain though DELEGATE_GIT_IN_CHAIN names another hook (a commit made from some other hook)', () => {
    const dir = makeWorkTree(story, 'chain-guard');
    const marker = path.join(story.root, 'chain-guard-ran.txt');
    executable(path.join(dir, '.git', 'hooks', 'pre-commit'), `#!/bin/sh\necho ran >> '${marker}'\n`);
    adopt(story, dir, ['src/**']);
    stage(dir, { 'README.md': 'free\n' });
    const env = {
      ...story.env,
      DELEGATE_GIT_IN_CHAIN: path.join(story.root, 'elsewhere', 'pre-commit.chained'),
    };
    expect(commitWith(dir, 'from another hook', env).code).toBe(0);
    expect(lines(marker)).toHaveLength(2); // the adopting commit, and this one
  });
});

describe('init from the single-file build', () => {
  it('installs hooks that run that file, chaining the hook that was there; control: the old hook still refuses', () => {
    const alone = path.join(story.root, 'opt', 'delegate-git.mjs');
    fs.mkdirSync(path.dirname(alone), { recursive: true });
    fs.copyFileSync(
      path.join(path.dirname(path.dirname(storyCli)), 'dist', 'delegate-git-standalone.mjs'),
      alone,
    );
    const server = makeServer(story, 'standalone.git', { hook: false });
    executable(
      path.join(server, 'hooks', 'pre-receive'),
      '#!/bin/sh\nwhile read o n r; do case $r in refs/heads/blocked) echo "old hook: no" >&2; exit 1;; esac; done\n',
    );
    const init = spawnSync(process.execPath, [alone, 'init', '--server'], {
      cwd: server,
      env: story.env,
      encoding: 'utf8',
    });
    expect(init.status, init.stderr).toBe(0);
    expect(fs.readFileSync(path.join(server, 'hooks', 'pre-receive'), 'utf8')).toContain(
      `DELEGATE_GIT_CLI='${alone}'`,
    );
    expect(fs.readFileSync(path.join(server, 'hooks', 'pre-receive.chained'), 'utf8')).toContain('old hook');

    const work = cloneInto(story, server, 'standalone-work');
    adopt(story, work, ['src/**']);
    const adopting = gitRun(story, work, ['push', '--atomic', 'origin', 'main', 'refs/notes/delegations']);
    expect(adopting.code, adopting.stderr).toBe(0);
    const blocked = gitRun(story, work, ['push', 'origin', 'main:refs/heads/blocked']);
    expect(blocked.code).not.toBe(0);
    expect(blocked.stderr).toContain('old hook: no');
    stage(work, { 'src/a.ts': 'export const a = 1;\n' });
    expect(commit(story, work, 'unpromoted', ['--no-verify']).code).toBe(0);
    const refused = gitRun(story, work, ['push', 'origin', 'main']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('src/a.ts');
  });
});

/** `git commit` under another environment than the story's. */
function commitWith(dir: string, message: string, env: NodeJS.ProcessEnv): Run {
  return gitRun(story, dir, ['commit', '-q', '-m', message], env);
}

/** Files under `dir` (relative paths) with their mode and content, or {} when it does not exist. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!fs.existsSync(dir)) return out;
  for (const rel of fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const file = path.join(dir, rel);
    if (fs.statSync(file).isFile())
      out[rel] = `${fs.statSync(file).mode.toString(8)} ${fs.readFileSync(file, 'utf8')}`;
  }
  return out;
}

describe('init: where the CLI is installed', () => {
  it("writes the CLI's path into the hooks as a quoted word: a directory named x';exit 0;'y neither opens nor breaks the gates", async () => {
    // A copy of the built package, as npm would lay it out, under a directory whose name is shell syntax.
    const odd = path.join(story.root, "x';exit 0;'y", 'delegate-git');
    const built = path.dirname(path.dirname(storyCli));
    for (const part of ['bin', 'dist', 'package.json'])
      fs.cpSync(path.join(built, part), path.join(odd, part), { recursive: true });
    const oddCli = (cwd: string, args: string[]): Run => {
      const run = spawnSync(process.execPath, [path.join(odd, 'bin', 'delegate-git.js'), ...args], {
        cwd,
        env: story.env,
      });
      const result = {
        code: run.status ?? 128,
        stdout: run.stdout.toString(),
        stderr: run.stderr.toString(),
      };
      if (result.code !== 0) throw new Error(`delegate-git ${args.join(' ')}: ${result.stderr}`);
      return result;
    };

    const server = makeServer(story, 'odd.git', { hook: false });
    oddCli(server, ['init', '--server']);
    const dir = path.join(story.root, 'odd-clone');
    gitOk(story, story.root, ['clone', '-q', server, dir]);
    oddCli(dir, ['init', '--protect', 'src/**']);
    for (const hook of [
      path.join(dir, '.git', 'hooks', 'pre-commit'),
      path.join(server, 'hooks', 'pre-receive'),
    ])
      expect(fs.readFileSync(hook, 'utf8')).toContain(
        `DELEGATE_GIT_CLI='${story.root}/x'\\'';exit 0;'\\''y/`,
      );
    gitOk(story, dir, ['add', '.delegate-git']);
    const adopted = commit(story, dir, 'adopt');
    expect(adopted.code, adopted.stderr).toBe(0);
    const first = gitRun(story, dir, ['push', '--atomic', 'origin', 'main', 'refs/notes/delegations']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain('judged by its own policy (first push)'); // the server's CLI ran

    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    const refused = commit(story, dir, 'unpromoted');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/a.ts');
    expect(commit(story, dir, 'unpromoted, hook skipped', ['--no-verify']).code).toBe(0);
    const pushRefused = gitRun(story, dir, ['push', 'origin', 'main']);
    expect(pushRefused.code).not.toBe(0);
    expect(pushRefused.stderr).toMatch(/refused refs\/heads\/main [0-9a-f]{12} src\/a\.ts/);

    // Control: a promoted file commits.
    gitOk(story, dir, ['reset', '-q', '--hard', 'HEAD~1']);
    stage(dir, { 'src/b.ts': 'export const b = 1;\n' });
    await recordVerdict(story, dir, 'src/b.ts');
    const passed = commit(story, dir, 'promoted');
    expect(passed.code, passed.stderr).toBe(0);
  });
});

describe('init: core.hooksPath this clone does not own', () => {
  it.each(['global', 'system'])(
    'refuses one from the %s config before writing anything; a repository-local hooks path installs',
    (scope) => {
      const shared = path.join(story.root, `${scope}-hooks`);
      const sharedRan = path.join(story.root, `${scope}-hook-ran.txt`);
      executable(path.join(shared, 'pre-commit'), `#!/bin/sh\necho ran >> '${sharedRan}'\n`);
      const config = path.join(story.root, `${scope}-gitconfig`);
      fs.writeFileSync(config, `[core]\n\thooksPath = ${shared}\n`);
      const env: NodeJS.ProcessEnv = { ...story.env, XDG_CONFIG_HOME: path.join(story.root, `${scope}-xdg`) };
      if (scope === 'global') {
        // The story's identity stays; the hooks path comes on top of it.
        fs.appendFileSync(config, fs.readFileSync(story.env.GIT_CONFIG_GLOBAL!, 'utf8'));
        env.GIT_CONFIG_GLOBAL = config;
      } else {
        delete env.GIT_CONFIG_NOSYSTEM;
        env.GIT_CONFIG_SYSTEM = config;
      }
      const other = makeWorkTree(story, `${scope}-other`);
      const dir = makeWorkTree(story, `${scope}-hookspath`);
      const sharedBefore = tree(shared);

      const refused = cli(story, dir, ['init', '--protect', 'src/**'], env);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(
        `core.hooksPath is set to ${shared} in the ${scope} git configuration`,
      );
      expect(refused.stderr).toContain('git config core.hooksPath .git/hooks');
      expect(refused.stderr).toContain('delegate-git init --no-hook');
      // Nothing half set up: no policy, no key, no config, the shared hooks as they were.
      expect(fs.existsSync(path.join(dir, '.delegate-git'))).toBe(false);
      expect(fs.existsSync(env.XDG_CONFIG_HOME!)).toBe(false);
      expect(gitRun(story, dir, ['config', '--local', '--get-regexp', 'notes']).stdout).toBe('');
      expect(tree(shared)).toEqual(sharedBefore);
      stage(other, { 'README.md': 'other\n' });
      const otherCommit = commitWith(other, 'other repository', env);
      expect(otherCommit.code, otherCommit.stderr).toBe(0);
      expect(lines(sharedRan)).toHaveLength(1);

      // Control: with a hooks path of its own, this repository installs as before, and the others are untouched.
      gitOk(story, dir, ['config', 'core.hooksPath', '.git/hooks'], env);
      const init = cli(story, dir, ['init', '--protect', 'src/**'], env);
      expect(init.code, init.stderr).toBe(0);
      expect(init.stdout).toContain(
        `installed the pre-commit hook: ${path.join(dir, '.git', 'hooks', 'pre-commit')}`,
      );
      expect(tree(shared)).toEqual(sharedBefore);
      gitOk(story, dir, ['add', '.delegate-git'], env);
      expect(commitWith(dir, 'adopt', env).code).toBe(0);
      stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
      const gated = commitWith(dir, 'unpromoted', env);
      expect(gated.code).not.toBe(0);
      expect(gated.stderr).toContain('NOT PROMOTED  src/a.ts');
      stage(other, { 'README.md': 'other again\n' });
      expect(commitWith(other, 'other repository again', env).code).toBe(0);
      expect(lines(sharedRan)).toHaveLength(2); // only the other repository ran the shared hook
    },
  );

  it('refuses a hooks directory the repository tracks; the gate added to it by hand, with --no-hook, guards it', async () => {
    const dir = makeWorkTree(story, 'tracked-hooks');
    const teamRan = path.join(story.root, 'team-hook-ran.txt');
    const teamHook = `#!/bin/sh\necho ran >> '${teamRan}'\n`;
    executable(path.join(dir, '.githooks', 'pre-commit'), teamHook);
    gitOk(story, dir, ['add', '.githooks']);
    gitOk(story, dir, ['commit', '-q', '-m', 'team hooks']);
    gitOk(story, dir, ['config', 'core.hooksPath', '.githooks']);

    const refused = cli(story, dir, ['init', '--protect', 'src/**']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('core.hooksPath is .githooks, a directory this repository tracks');
    expect(refused.stderr).toContain('`delegate-git hook pre-commit` in .githooks/pre-commit');
    expect(refused.stderr).toContain('`delegate-git hook pre-merge-commit` in .githooks/pre-merge-commit');
    expect(refused.stderr).toContain('delegate-git init --no-hook');
    expect(gitOk(story, dir, ['status', '--porcelain', '--ignored'])).toBe('');
    expect(fs.readFileSync(path.join(dir, '.githooks', 'pre-commit'), 'utf8')).toBe(teamHook);
    expect(gitOk(story, dir, ['config', 'core.hooksPath'])).toBe('.githooks');

    // Control: the gate added to the team's hook by hand, as the refusal says, and init --no-hook.
    fs.appendFileSync(
      path.join(dir, '.githooks', 'pre-commit'),
      `'${process.execPath}' '${storyCli}' hook pre-commit || exit $?\n`,
    );
    const init = cliOk(story, dir, ['init', '--protect', 'src/**', '--no-hook']);
    expect(init.stdout).not.toContain('installed the pre-commit hook');
    gitOk(story, dir, ['add', '.delegate-git', '.githooks']);
    const adopted = commit(story, dir, 'adopt');
    expect(adopted.code, adopted.stderr).toBe(0);
    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    const gated = commit(story, dir, 'unpromoted');
    expect(gated.code).not.toBe(0);
    expect(gated.stderr).toContain('NOT PROMOTED  src/a.ts');
    await recordVerdict(story, dir, 'src/a.ts');
    expect(commit(story, dir, 'promoted').code).toBe(0);
    expect(lines(teamRan)).toHaveLength(3); // the team's hook ran first each time
  });

  it('a global core.hooksPath set after init makes attest warn that git no longer runs the gate (rt48 f08); control: no warning before, nor once the shared hook runs it', () => {
    const dir = makeWorkTree(story, 'hookspath-after-init');
    cliOk(story, dir, ['init', '--protect', 'src/**']);
    gitOk(story, dir, ['add', '.delegate-git']);
    expect(commit(story, dir, 'adopt').code).toBe(0);
    const approve = (file: string, env = story.env) => {
      writeFiles(dir, { [file]: `export const at = '${file}';\n` });
      const run = cli(story, dir, ['attest', '--approve', file, '--key', OPERATOR, '--yes'], env);
      expect(run.code, run.stderr).toBe(0);
      return run.stderr;
    };
    const warning = "warning: git does not run delegate-git's commit hook in this repository";
    expect(approve('src/before.ts')).not.toContain(warning);

    const shared = path.join(story.root, 'later-global-hooks');
    executable(path.join(shared, 'pre-commit'), '#!/bin/sh\nexit 0\n');
    const config = path.join(story.root, 'later-global-gitconfig');
    fs.writeFileSync(
      config,
      `[core]\n\thooksPath = ${shared}\n${fs.readFileSync(story.env.GIT_CONFIG_GLOBAL!, 'utf8')}`,
    );
    const env: NodeJS.ProcessEnv = { ...story.env, GIT_CONFIG_GLOBAL: config };
    const warned = approve('src/after.ts', env);
    expect(warned).toContain(
      `delegate-git attest: ${warning}: core.hooksPath is set to ${shared} in the global git configuration`,
    );
    expect(warned).toContain(`git config core.hooksPath ${path.join(dir, '.git', 'hooks')}`);
    // What it warns of: an unpromoted file commits with no word.
    stage(dir, { 'src/unpromoted.ts': 'export const u = 1;\n' });
    expect(commitWith(dir, 'unpromoted, ungated', env).code).toBe(0);

    // A comment naming delegate-git runs nothing (rt50 f02).
    executable(path.join(shared, 'pre-commit'), '#!/bin/sh\n# TODO: run delegate-git here\nexit 0\n');
    expect(approve('src/comment.ts', env)).toContain(warning);

    // Controls: the shared hook running the gate, or this repository's own hooks path, and the warning goes.
    executable(
      path.join(shared, 'pre-commit'),
      `#!/bin/sh\n'${process.execPath}' '${storyCli}' hook pre-commit\n`,
    );
    expect(approve('src/shared-runs-it.ts', env)).not.toContain(warning);
    executable(path.join(shared, 'pre-commit'), '#!/bin/sh\nexit 0\n');
    gitOk(story, dir, ['config', 'core.hooksPath', path.join(dir, '.git', 'hooks')]);
    expect(approve('src/own-path.ts', env)).not.toContain(warning);

    // init's own hook no longer executable: git skips it (rt50 f02).
    fs.chmodSync(path.join(dir, '.git', 'hooks', 'pre-commit'), 0o644);
    expect(approve('src/not-executable.ts', env)).toContain(
      `${warning}: ${path.join(dir, '.git', 'hooks', 'pre-commit')}, where init installed it, no longer runs delegate-git`,
    );
  });

  it('a repository moved since init: attest names the move, and init again points core.hooksPath where the hooks are now; control: before the move, no warning and the gate runs', () => {
    const before = makeWorkTree(story, 'hookspath-before-move');
    gitOk(story, before, ['config', 'core.hooksPath', '.git/own-hooks']);
    cliOk(story, before, ['init', '--protect', 'src/**']);
    gitOk(story, before, ['add', '.delegate-git']);
    expect(commit(story, before, 'adopt').code).toBe(0);
    const approve = (dir: string, file: string) => {
      writeFiles(dir, { [file]: `export const at = '${file}';\n` });
      return cliOk(story, dir, ['attest', '--approve', file, '--key', OPERATOR, '--yes']).stderr;
    };
    const warning = "warning: git does not run delegate-git's commit hook in this repository";
    expect(approve(before, 'src/before.ts')).not.toContain(warning);

    const dir = path.join(story.root, 'hookspath-after-move');
    fs.renameSync(before, dir);
    // git names the old place and runs no hook: the unpromoted commit goes through.
    stage(dir, { 'src/unpromoted.ts': 'export const u = 1;\n' });
    expect(commit(story, dir, 'unchecked').code).toBe(0);
    expect(approve(dir, 'src/after.ts')).toContain(
      `${warning}: core.hooksPath in the local git configuration names ${path.join(before, '.git', 'own-hooks')}, which no longer exists, so git runs no hooks here at all: the repository was moved or renamed since init set that path`,
    );
    const again = cli(story, dir, ['init']);
    expect(again.code, again.stderr).toBe(0);
    expect(gitOk(story, dir, ['config', 'core.hooksPath'])).toBe(path.join(dir, '.git', 'own-hooks'));
    expect(approve(dir, 'src/again.ts')).not.toContain(warning);
    stage(dir, { 'src/unpromoted2.ts': 'export const u = 2;\n' });
    const refused = commit(story, dir, 'checked again');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/unpromoted2.ts');
  });

  it('a core.hooksPath init installed into, changed afterwards, makes attest warn too (rt50 f02); control: changed back', () => {
    const dir = makeWorkTree(story, 'hookspath-moved');
    gitOk(story, dir, ['config', 'core.hooksPath', '.git/githooks']);
    cliOk(story, dir, ['init', '--protect', 'src/**']);
    gitOk(story, dir, ['add', '.delegate-git']);
    expect(commit(story, dir, 'adopt').code).toBe(0);
    const approve = (file: string) => {
      writeFiles(dir, { [file]: `export const at = '${file}';\n` });
      return cliOk(story, dir, ['attest', '--approve', file, '--key', OPERATOR, '--yes']).stderr;
    };
    const warning = "warning: git does not run delegate-git's commit hook in this repository";
    expect(approve('src/before.ts')).not.toContain(warning);
    gitOk(story, dir, ['config', 'core.hooksPath', '.git/other-hooks']);
    expect(approve('src/moved.ts')).toContain(
      `${warning}: core.hooksPath is set to .git/other-hooks in the local git configuration, so git runs the hooks in ${path.join(dir, '.git', 'other-hooks')}, not those init installed in ${path.join(dir, '.git', 'githooks')}`,
    );
    gitOk(story, dir, ['config', '--unset', 'core.hooksPath']);
    expect(approve('src/unset.ts')).toContain(`${warning}: core.hooksPath is no longer set`);
    gitOk(story, dir, ['config', 'core.hooksPath', path.join(dir, '.git', 'githooks')]);
    expect(approve('src/back.ts')).not.toContain(warning);
  });

  it('refuses a repository-local core.hooksPath outside the repository (~/githooks, shared by each that sets it); control: ~ inside its git directory installs', () => {
    const home = path.join(story.root, 'tilde-home');
    const sharedRan = path.join(story.root, 'tilde-shared-ran.txt');
    executable(path.join(home, 'githooks', 'pre-commit'), `#!/bin/sh\necho ran >> '${sharedRan}'\n`);
    const shared = tree(path.join(home, 'githooks'));
    const other = makeWorkTree(story, 'tilde-other');
    gitOk(story, other, ['config', 'core.hooksPath', '~/githooks']);
    const dir = makeWorkTree(story, 'tilde');
    gitOk(story, dir, ['config', 'core.hooksPath', '~/githooks']);
    const refused = cli(story, dir, ['init', '--protect', 'src/**'], { ...story.env, HOME: home });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `The hooks directory ${path.join(home, 'githooks')} is outside this repository`,
    );
    expect(refused.stderr).toContain('git config core.hooksPath .git/hooks');
    expect(tree(path.join(home, 'githooks'))).toEqual(shared);
    expect(fs.existsSync(path.join(dir, '.delegate-git'))).toBe(false);
    stage(other, { 'README.md': 'other\n' });
    expect(commitWith(other, 'other repository', { ...story.env, HOME: home }).code).toBe(0);
    expect(lines(sharedRan)).toHaveLength(1);

    // `~` expanded as git does, to a directory inside this repository's git directory: installed there.
    const env = { ...story.env, HOME: path.join(dir, '.git') };
    const init = cli(story, dir, ['init', '--protect', 'src/**'], env);
    expect(init.code, init.stderr).toBe(0);
    const installed = path.join(dir, '.git', 'githooks', 'pre-commit');
    expect(init.stdout).toContain(`installed the pre-commit hook: ${installed}`);
    expect(fs.readFileSync(installed, 'utf8')).toContain(MARKER);
    expect(fs.existsSync(path.join(dir, '~'))).toBe(false);
    gitOk(story, dir, ['add', '.delegate-git'], env);
    expect(commitWith(dir, 'adopt', env).code).toBe(0);
    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    const gated = commitWith(dir, 'unpromoted', env);
    expect(gated.code).not.toBe(0);
    expect(gated.stderr).toContain('NOT PROMOTED  src/a.ts');
  });
});

describe('init: a hooks directory in the work tree that git does not track (rt52 f01)', () => {
  /** A branch (a pull request under review) that tracks a script of its own at `.githooks/pre-commit`. */
  function branchWithHooks(dir: string, ran: string): void {
    gitOk(story, dir, ['checkout', '-q', '-b', 'pr']);
    executable(path.join(dir, '.githooks', 'pre-commit'), `#!/bin/sh\necho ran >> '${ran}'\nexit 0\n`);
    gitOk(story, dir, ['add', '-f', '.githooks/pre-commit']);
    gitOk(story, dir, [
      '-c',
      'core.hooksPath=/dev/null',
      'commit',
      '-q',
      '-m',
      'a branch that tracks a hook',
    ]);
    gitOk(story, dir, ['checkout', '-q', 'main']);
  }

  it.each([
    ['ignored', '.githooks/\n'],
    ['untracked', ''],
  ])(
    'refuses a core.hooksPath inside the work tree that is %s, writing nothing, also from a linked worktree',
    (kind, ignore) => {
      const dir = makeWorkTree(story, `in-work-tree-${kind}`);
      writeFiles(dir, { '.gitignore': ignore, 'README.md': 'hi\n' });
      gitOk(story, dir, ['add', '.']);
      gitOk(story, dir, ['commit', '-q', '-m', 'base']);
      const own = `#!/bin/sh\necho mine\n`;
      executable(path.join(dir, '.githooks', 'pre-commit'), own);
      gitOk(story, dir, ['config', 'core.hooksPath', '.githooks']);

      const refused = cli(story, dir, ['init', '--protect', 'src/**']);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(
        `core.hooksPath is .githooks, a directory inside the work tree ${dir} that git does not track`,
      );
      expect(refused.stderr).toContain('checking out a branch that tracks .githooks/pre-commit replaces');
      expect(refused.stderr).toContain('git config --unset core.hooksPath');
      expect(refused.stderr).toContain('Nothing was written.');
      expect(tree(path.join(dir, '.githooks'))).toEqual({ 'pre-commit': `100755 ${own}` });
      expect(fs.existsSync(path.join(dir, '.delegate-git'))).toBe(false);
      expect(gitOk(story, dir, ['config', 'core.hooksPath'])).toBe('.githooks');

      // Made absolute (as an older init did), and init run in a linked worktree: still the main work tree's.
      gitOk(story, dir, ['config', 'core.hooksPath', path.join(dir, '.githooks')]);
      const linked = path.join(story.root, `in-work-tree-${kind}-linked`);
      gitOk(story, dir, ['worktree', 'add', '-q', '-b', 'linked', linked]);
      const refusedThere = cli(story, linked, ['init', '--protect', 'src/**']);
      expect(refusedThere.code).toBe(2);
      expect(refusedThere.stderr).toContain(
        `a directory inside the work tree ${dir} that git does not track`,
      );
      expect(fs.existsSync(path.join(linked, '.delegate-git'))).toBe(false);
    },
  );

  it('control: with core.hooksPath unset as the refusal says, the gate survives checking out a branch that tracks .githooks/pre-commit', async () => {
    const dir = makeWorkTree(story, 'in-work-tree-way-out');
    writeFiles(dir, { '.gitignore': '.githooks/\n', 'README.md': 'hi\n' });
    gitOk(story, dir, ['add', '.']);
    gitOk(story, dir, ['commit', '-q', '-m', 'base']);
    const mine = path.join(story.root, 'way-out-mine-ran.txt');
    executable(path.join(dir, '.githooks', 'pre-commit'), `#!/bin/sh\necho ran >> '${mine}'\n`);
    gitOk(story, dir, ['config', 'core.hooksPath', '.githooks']);
    expect(cli(story, dir, ['init', '--protect', 'src/**']).code).toBe(2);

    // The way out: the hook of one's own moved into the git directory, core.hooksPath unset.
    fs.renameSync(path.join(dir, '.githooks', 'pre-commit'), path.join(dir, '.git', 'hooks', 'pre-commit'));
    gitOk(story, dir, ['config', '--unset', 'core.hooksPath']);
    adopt(story, dir, ['src/**']);
    expect(lines(mine)).toHaveLength(1); // chained, and run by the adopting commit

    const ran = path.join(story.root, 'way-out-branch-ran.txt');
    branchWithHooks(dir, ran);
    gitOk(story, dir, ['checkout', '-q', 'pr']);
    gitOk(story, dir, ['checkout', '-q', 'main']);
    stage(dir, { 'src/x.ts': 'export const x = 1;\n' });
    const refused = commit(story, dir, 'unpromoted');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/x.ts');
    await recordVerdict(story, dir, 'src/x.ts');
    expect(commit(story, dir, 'promoted').code).toBe(0);
    expect(lines(ran)).toHaveLength(0); // the branch's script never ran
    expect(lines(mine)).toHaveLength(3);
  });

  it('refuses a .git/hooks that links to an ignored directory in the work tree; control: a directory of its own installs', () => {
    const dir = makeWorkTree(story, 'hooks-link-in-work-tree');
    writeFiles(dir, { '.gitignore': 'githooks/\n' });
    executable(path.join(dir, 'githooks', 'pre-commit'), '#!/bin/sh\nexit 0\n');
    fs.rmSync(path.join(dir, '.git', 'hooks'), { recursive: true, force: true });
    fs.symlinkSync('../githooks', path.join(dir, '.git', 'hooks'));
    const refused = cli(story, dir, ['init', '--protect', 'src/**']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `.git/hooks links to githooks, a directory inside the work tree ${dir} that git does not track`,
    );
    expect(refused.stderr).toContain('Make .git/hooks a directory of its own');
    expect(fs.readdirSync(path.join(dir, 'githooks'))).toEqual(['pre-commit']);
    expect(fs.existsSync(path.join(dir, '.delegate-git'))).toBe(false);

    fs.rmSync(path.join(dir, '.git', 'hooks'));
    fs.mkdirSync(path.join(dir, '.git', 'hooks'));
    const init = cli(story, dir, ['init', '--protect', 'src/**']);
    expect(init.code, init.stderr).toBe(0);
    expect(fs.readFileSync(path.join(dir, '.git', 'hooks', 'pre-commit'), 'utf8')).toContain(MARKER);
  });

  it('a hook an earlier init put in such a directory makes attest warn, and once a checkout removed it, init refuses and says why; control: in the git directory, no warning', () => {
    const dir = makeWorkTree(story, 'in-work-tree-earlier');
    writeFiles(dir, { '.gitignore': '.githooks/\n' });
    gitOk(story, dir, ['add', '.gitignore']);
    gitOk(story, dir, ['commit', '-q', '-m', 'base']);
    gitOk(story, dir, ['config', 'core.hooksPath', '.git/githooks']);
    adopt(story, dir, ['src/**']);
    const approve = (file: string) => {
      writeFiles(dir, { [file]: `export const at = '${file}';\n` });
      return cliOk(story, dir, ['attest', '--approve', file, '--key', OPERATOR, '--yes']).stderr;
    };
    expect(approve('src/before.ts')).not.toContain('warning');

    // What an earlier init left: its hooks in .githooks, ignored, and recorded as where it installed them.
    const hooks = path.join(dir, '.githooks');
    fs.renameSync(path.join(dir, '.git', 'githooks'), hooks);
    gitOk(story, dir, ['config', 'core.hooksPath', hooks]);
    fs.writeFileSync(path.join(dir, '.git', 'delegate-git', 'hooks-dir'), `${hooks}\n`);
    expect(approve('src/earlier.ts')).toContain(
      `delegate-git attest: warning: delegate-git's commit hook is in ${hooks}, inside the work tree ${dir}: a checkout of a branch that tracks a file there replaces the hook`,
    );

    // What it warns of: the branch's script replaces the hook, then goes, and an unpromoted file commits.
    const ran = path.join(story.root, 'earlier-branch-ran.txt');
    branchWithHooks(dir, ran);
    gitOk(story, dir, ['checkout', '-q', 'pr']);
    gitOk(story, dir, ['checkout', '-q', 'main']);
    expect(fs.existsSync(path.join(hooks, 'pre-commit'))).toBe(false);
    stage(dir, { 'src/unchecked.ts': 'export const u = 1;\n' });
    expect(commit(story, dir, 'unpromoted, and no hook to say so').code).toBe(0);
    expect(approve('src/after-checkout.ts')).toContain(
      'where init installed it, no longer runs delegate-git',
    );
    const refused = cli(story, dir, ['init']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('a directory inside the work tree');

    // Control: the hooks in the git directory again, where no checkout writes.
    gitOk(story, dir, ['config', '--unset', 'core.hooksPath']);
    cliOk(story, dir, ['init']);
    expect(approve('src/in-git-dir.ts')).not.toContain('warning');
  });
});

describe('init run again: a hook of its own edited by hand (rt52 f04)', () => {
  const GATE_LINE = 'if [ -x "$DELEGATE_GIT_NODE" ] && [ -f "$DELEGATE_GIT_CLI" ]; then';
  /** The hook as it was after an upgrade moved the CLI init recorded. */
  const moved = (text: string) =>
    text.replace(/^DELEGATE_GIT_CLI=.*$/m, "DELEGATE_GIT_CLI='/nonexistent/old/delegate-git.js'");

  it('keeps an edited hook as pre-commit.kept and says so, never over an earlier copy; control: an unedited one from an older location, or an earlier release of the same wording, is replaced with no copy', async () => {
    const dir = makeWorkTree(story, 'edited-hook');
    adopt(story, dir, ['src/**']);
    const hook = path.join(dir, '.git', 'hooks', 'pre-commit');
    const fresh = fs.readFileSync(hook, 'utf8');
    expect(fresh.split('\n')[2]).toMatch(/^# fingerprint: [0-9a-f]{64} /);

    // Controls: the CLI moved (what the hook's own message says to run init for), and the same hook as a release
    // before fingerprints wrote it: replaced as it was, no copy, no word.
    for (const older of [moved(fresh), moved(fresh).replace(/^# fingerprint: .*\n/m, '')]) {
      fs.writeFileSync(hook, older);
      const init = cliOk(story, dir, ['init']);
      expect(init.stdout).toContain(`installed the pre-commit hook: ${hook}\n`);
      expect(fs.readFileSync(hook, 'utf8')).toBe(fresh);
      expect(fs.readdirSync(path.dirname(hook)).filter((f) => f.includes('.kept'))).toEqual([]);
    }

    // Lines of the user's, before the gate runs: kept beside the new hook, and init says where.
    const marker = path.join(story.root, 'edited-hook-ran.txt');
    const step = `echo user-step >> '${marker}' # my addition`;
    const edited = moved(fresh).replace(GATE_LINE, `${step}\n${GATE_LINE}`);
    fs.writeFileSync(hook, edited);
    const init = cliOk(story, dir, ['init']);
    expect(init.stdout).toContain(
      `installed the pre-commit hook: ${hook} (the hook there had lines changed since init wrote it: it is kept as ${hook}.kept, which git does not run; move lines of your own to ${hook}.chained, which the hook runs first)`,
    );
    expect(fs.readFileSync(`${hook}.kept`, 'utf8')).toBe(edited);
    expect(fs.readFileSync(hook, 'utf8')).toBe(fresh);
    // Run again, nothing more is kept; edited again, the first copy stays and the second goes beside it.
    expect(cliOk(story, dir, ['init']).stdout).not.toContain('kept as');
    fs.writeFileSync(hook, `${fresh}# another line\n`);
    expect(cliOk(story, dir, ['init']).stdout).toContain(`it is kept as ${hook}.kept-2,`);
    expect(fs.readFileSync(`${hook}.kept`, 'utf8')).toBe(edited);
    expect(fs.readFileSync(`${hook}.kept-2`, 'utf8')).toBe(`${fresh}# another line\n`);

    // A release before fingerprints, in other words than this one's: kept, and said so without claiming an edit.
    fs.writeFileSync(
      hook,
      moved(fresh)
        .replace(/^# fingerprint: .*\n/m, '')
        .replace('Refuses', 'Stops'),
    );
    expect(cliOk(story, dir, ['init']).stdout).toContain(
      `(the hook there had lines this release does not write (your own, or the wording of the release that wrote it): it is kept as ${hook}.kept-3,`,
    );

    // The gate runs as before; the step moved to .chained as init says runs first.
    executable(`${hook}.chained`, `#!/bin/sh\n${step}\n`);
    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    const refused = commit(story, dir, 'unpromoted');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/a.ts');
    await recordVerdict(story, dir, 'src/a.ts');
    expect(commit(story, dir, 'promoted').code).toBe(0);
    expect(lines(marker)).toHaveLength(2);
  });

  it('init --server keeps an edited pre-receive the same way; control: an unedited one is replaced with no copy', () => {
    const server = makeServer(story, 'edited-pre-receive.git');
    const hook = path.join(server, 'hooks', 'pre-receive');
    const fresh = fs.readFileSync(hook, 'utf8');
    fs.writeFileSync(hook, moved(fresh));
    const plain = JSON.parse(cliOk(story, server, ['init', '--server', '--json']).stdout);
    expect(plain.kept).toBeNull();
    expect(fs.readFileSync(hook, 'utf8')).toBe(fresh);

    const edited = fresh.replace('input=$(cat)', 'input=$(cat)\necho audit >&2');
    fs.writeFileSync(hook, edited);
    const init = cliOk(story, server, ['init', '--server']);
    expect(init.stdout).toContain(`installed ${hook} (the hook there had lines changed since init wrote it`);
    expect(fs.readFileSync(`${hook}.kept`, 'utf8')).toBe(edited);
    expect(fs.readFileSync(hook, 'utf8')).toBe(fresh);
  });
});

describe("init --server: where git runs the server's hooks", () => {
  it("refuses the options of a clone's init (--protect, --keys-dir, --key, --no-hook), writing nothing; control: alone it installs the hook", () => {
    const server = path.join(story.root, 'server-options.git');
    gitOk(story, story.root, ['init', '-q', '--bare', '-b', 'main', server]);
    const refused = cli(story, server, ['init', '--server', '--protect', 'src/**', '--no-hook']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--protect, --no-hook do not apply with --server');
    expect(fs.existsSync(path.join(server, 'hooks', 'pre-receive'))).toBe(false);
    cliOk(story, server, ['init', '--server']);
    expect(fs.existsSync(path.join(server, 'hooks', 'pre-receive'))).toBe(true);
  });

  it('installs pre-receive into a core.hooksPath the bare repository sets, where git runs it; refuses a global one', () => {
    const server = path.join(story.root, 'hookspath-server.git');
    gitOk(story, story.root, ['init', '-q', '--bare', '-b', 'main', server]);
    gitOk(story, server, ['config', 'core.hooksPath', 'custom-hooks']);
    cliOk(story, server, ['init', '--server']);
    expect(fs.existsSync(path.join(server, 'custom-hooks', 'pre-receive'))).toBe(true);
    // The hook runs: the adopting push is accepted, an unpromoted file is refused by it.
    const work = cloneInto(story, server, 'hookspath-work');
    adopt(story, work, ['src/**']);
    const adopting = gitRun(story, work, [
      'push',
      '-q',
      '--atomic',
      'origin',
      'main',
      'refs/notes/delegations',
    ]);
    expect(adopting.code, adopting.stderr).toBe(0);
    stage(work, { 'src/a.ts': 'export const a = 1;\n' });
    expect(gitRun(story, work, ['commit', '-q', '--no-verify', '-m', 'unpromoted']).code).toBe(0);
    const refused = gitRun(story, work, ['push', 'origin', 'main']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('src/a.ts');

    // A hooks path from the global configuration is every repository's: refused, nothing written.
    const shared = path.join(story.root, 'server-shared-hooks');
    const config = path.join(story.root, 'server-gitconfig');
    fs.writeFileSync(
      config,
      `[core]\n\thooksPath = ${shared}\n${fs.readFileSync(story.env.GIT_CONFIG_GLOBAL!, 'utf8')}`,
    );
    const other = path.join(story.root, 'shared-hooks-server.git');
    gitOk(story, story.root, ['init', '-q', '--bare', '-b', 'main', other]);
    const globally = cli(story, other, ['init', '--server'], { ...story.env, GIT_CONFIG_GLOBAL: config });
    expect(globally.code).toBe(2);
    expect(globally.stderr).toContain(`core.hooksPath is set to ${shared} in the global git configuration`);
    expect(fs.existsSync(shared)).toBe(false);
    expect(fs.existsSync(path.join(other, 'hooks', 'pre-receive'))).toBe(false);
  });
});

describe('init: a disabled pre-commit hook', () => {
  it('stays disabled when chained (its mode is kept); made executable, it runs and blocks', () => {
    const dir = makeWorkTree(story, 'disabled');
    const hooks = path.join(dir, '.git', 'hooks');
    const disabled = "#!/bin/sh\necho 'disabled hook ran' >&2\nexit 1\n";
    fs.mkdirSync(hooks, { recursive: true });
    fs.writeFileSync(path.join(hooks, 'pre-commit'), disabled, { mode: 0o644 });
    fs.chmodSync(path.join(hooks, 'pre-commit'), 0o644);

    adopt(story, dir, ['src/**']); // the adopting commit passes: the disabled hook did not run
    const chained = path.join(hooks, 'pre-commit.chained');
    expect(fs.readFileSync(chained, 'utf8')).toBe(disabled);
    expect(fs.statSync(chained).mode & 0o777).toBe(0o644);
    stage(dir, { 'README.md': 'free\n' });
    const passed = commit(story, dir, 'free');
    expect(passed.code, passed.stderr).toBe(0);

    // Control: the user enables it again, and the chain runs it first.
    fs.chmodSync(chained, 0o755);
    stage(dir, { 'README.md': 'free again\n' });
    const blocked = commit(story, dir, 'blocked by the enabled hook');
    expect(blocked.code).not.toBe(0);
    expect(blocked.stderr).toContain('disabled hook ran');
  });
});

describe('init: a newcomer to a repository that adopted delegate-git already', () => {
  it('writes no key file, and the commands it prints let a reviewer trust the key, after which it counts', () => {
    const server = makeServer(story, 'newcomer.git');
    const owner = cloneInto(story, server, 'newcomer-owner');
    adopt(story, owner, ['src/**']);
    gitOk(story, owner, ['push', '-q', '--atomic', 'origin', 'main', 'refs/notes/delegations']);

    const bobEnv = operatorEnv(story, 'bob');
    const bob = cloneInto(story, server, 'newcomer-bob');
    const init = cliOk(story, bob, ['init'], bobEnv);
    expect(init.stdout).toContain('your key is not in the trust root (.delegate-git/keys)');
    // Nothing untracked: a key file written here would stop the pull that brings the reviewer's copy of it.
    expect(gitOk(story, bob, ['status', '--porcelain'])).toBe('');
    const printed = init.stdout.split('\n').filter((l) => /^ {2}(delegate-git|git) /.test(l));
    expect(printed.map((l) => l.trim().split(' ').slice(1, 3).join(' '))).toEqual([
      'keys add',
      'attest --approve',
      'add .delegate-git/keys/bob.json',
      'push --atomic',
    ]);

    // Before the key is trusted, bob cannot approve (the refusal this onboarding is about)...
    stage(bob, { 'src/b.ts': 'export const b = 1;\n' });
    const untrusted = cli(story, bob, ['attest', '--approve', 'src/b.ts', '--yes'], bobEnv);
    expect(untrusted.code).toBe(2);
    expect(untrusted.stderr).toContain('is not in the trust root (.delegate-git/keys)');
    expect(gitRun(story, bob, ['commit', '-qm', 'b'], bobEnv).stderr).toContain('NOT PROMOTED  src/b.ts');

    // ...the owner, a trusted reviewer, runs the printed commands, and pushes. Without a terminal here, attest needs
    // --yes to sign (on a terminal it asks first).
    for (const line of printed) {
      const command = line.trim().replace(/^delegate-git attest /, 'delegate-git attest --yes ');
      const ran = spawnSync('sh', ['-c', command], {
        cwd: owner,
        env: { ...story.env, PATH: `${path.dirname(shimmedCli())}:${story.env.PATH}` },
        encoding: 'utf8',
      });
      expect(ran.status, `${line}\n${ran.stderr}`).toBe(0);
    }
    // The last of them pushed the key file with its approval.
    expect(refTip(story, server, 'refs/heads/main')).toBe(refTip(story, owner, 'HEAD'));

    // ...and bob's pull brings the key file (nothing untracked in its way), after which the same approval counts.
    gitOk(story, bob, ['pull', '-q', '--no-rebase', 'origin', 'main'], bobEnv);
    cliOk(story, bob, ['attest', '--approve', 'src/b.ts', '--yes'], bobEnv);
    const trusted = gitRun(story, bob, ['commit', '-qm', 'b'], bobEnv);
    expect(trusted.code, trusted.stderr).toBe(0);
    cliOk(story, bob, ['sync'], bobEnv);
    const pushed = gitRun(
      story,
      bob,
      ['push', '-q', '--atomic', 'origin', 'main', 'refs/notes/delegations'],
      bobEnv,
    );
    expect(pushed.code, pushed.stderr).toBe(0);
  });

  it('refuses to adopt again on a branch from before the adoption, writing nothing; control: on the adopted branch it sets up', () => {
    const dir = makeWorkTree(story, 'newcomer-old-branch');
    commitBeforeAdoption(story, dir);
    gitOk(story, dir, ['branch', 'old']);
    adopt(story, dir, ['src/**']);
    const ledger = refTip(story, dir, 'refs/notes/delegations');
    gitOk(story, dir, ['checkout', '-q', 'old']);
    const refused = cli(story, dir, ['init', '--protect', 'src/**'], operatorEnv(story, 'carol'));
    expect(refused.code).toBe(2);
    // It names whose keys the adoption trusts: merging it makes them this branch's trust anchor.
    expect(refused.stderr).toContain(
      'has adopted delegate-git already: main holds .delegate-git/policy.json, which trusts the keys .delegate-git/keys/alice.json',
    );
    expect(refused.stderr).toContain(
      'If you trust those keys, merge that branch into this one (git merge main)',
    );
    expect(gitOk(story, dir, ['status', '--porcelain'])).toBe('');
    expect(refTip(story, dir, 'refs/notes/delegations')).toBe(ledger); // no anchor records of another repository
    gitOk(story, dir, ['checkout', '-q', 'main']);
    expect(cli(story, dir, ['init'], operatorEnv(story, 'carol')).code).toBe(0);
  });

  it('in a clone that has not fetched a teammate’s adoption, refuses until it has; control: a first adoption with a remote', () => {
    const server = makeServer(story, 'unfetched.git', { hook: false });
    const first = cloneInto(story, server, 'unfetched-first');
    commitBeforeAdoption(story, first);
    gitOk(story, first, ['push', '-q', 'origin', 'main']);
    const stale = cloneInto(story, server, 'unfetched-stale');
    adopt(story, first, ['src/**']); // init asks the remote: it holds nothing adopted yet
    gitOk(story, first, ['push', '-q', '--atomic', 'origin', 'main', 'refs/notes/delegations']);

    const carol = operatorEnv(story, 'carol');
    const unfetched = cli(story, stale, ['init', '--protect', 'src/**'], carol);
    expect(unfetched.code).toBe(2);
    expect(unfetched.stderr).toContain('origin has commits this clone has not fetched (main)');
    expect(unfetched.stderr).toContain('Fetch them (git fetch origin main)');
    expect(gitOk(story, stale, ['status', '--porcelain'])).toBe('');
    gitOk(story, stale, ['fetch', '-q', 'origin']);
    const fetched = cli(story, stale, ['init', '--protect', 'src/**'], carol);
    expect(fetched.code).toBe(2);
    expect(fetched.stderr).toContain('origin/main holds .delegate-git/policy.json');
    expect(refTip(story, stale, 'refs/notes/delegations')).toBeNull();
  });

  it('asks a remote that wants a password nothing, and adopts with a warning; a remote tag is followed to its commit', async () => {
    const dir = makeWorkTree(story, 'asks-nobody');
    commitBeforeAdoption(story, dir);
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(401, { 'www-authenticate': 'Basic realm="x"' });
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    gitOk(story, dir, ['remote', 'add', 'origin', `http://127.0.0.1:${port}/repo.git`]);
    const asked = path.join(story.root, 'asked');
    const askpass = path.join(story.root, 'askpass.sh');
    executable(askpass, `#!/bin/sh\necho "$1" >> '${asked}'\necho secret\n`);
    try {
      const started = Date.now();
      const init = await cliAsync(story, dir, ['init', '--protect', 'src/**'], {
        ...story.env,
        GIT_ASKPASS: askpass,
      });
      expect(init.code, init.stderr).toBe(0);
      expect(init.stderr).toContain('could not reach origin to see whether it adopted delegate-git already');
      expect(fs.existsSync(asked)).toBe(false); // nobody was asked for a user name or password
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      server.close();
    }

    // A remote's annotated tag this clone holds the object of, but no ref to: what it tags is looked at too.
    const tagged = makeServer(story, 'tagged.git', { hook: false });
    const owner = cloneInto(story, tagged, 'tagged-owner');
    commitBeforeAdoption(story, owner);
    gitOk(story, owner, ['push', '-q', 'origin', 'main']);
    const clone = cloneInto(story, tagged, 'tagged-clone');
    gitOk(story, owner, ['checkout', '-q', '-b', 'adopting']);
    adopt(story, owner, ['src/**']);
    gitOk(story, owner, ['tag', '-a', '-m', 'adopted', 'v1']);
    gitOk(story, owner, ['push', '-q', 'origin', 'v1']);
    gitOk(story, clone, ['fetch', '-q', 'origin', 'tag', 'v1']);
    gitOk(story, clone, ['tag', '-d', 'v1']);
    const refused = cli(story, clone, ['init', '--protect', 'src/**'], operatorEnv(story, 'carol'));
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain('has adopted delegate-git already');
  });

  it('fails closed when a ref points at a missing object; control: with the ref repaired it adopts', () => {
    const dir = makeWorkTree(story, 'broken-ref');
    commitBeforeAdoption(story, dir);
    fs.writeFileSync(path.join(dir, '.git', 'refs', 'heads', 'gone'), `${'1'.repeat(40)}\n`);
    const refused = cli(story, dir, ['init', '--protect', 'src/**']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'Could not tell whether a branch holds .delegate-git/policy.json already',
    );
    expect(gitOk(story, dir, ['status', '--porcelain'])).toBe('');
    fs.rmSync(path.join(dir, '.git', 'refs', 'heads', 'gone'));
    expect(cli(story, dir, ['init', '--protect', 'src/**']).code).toBe(0);
  });

  it('in a sparse checkout that leaves the policy out, keeps the adopted policy (control: a sparse checkout showing it)', () => {
    const dir = makeWorkTree(story, 'sparse');
    adopt(story, dir, ['src/**']);
    gitOk(story, dir, ['sparse-checkout', 'set', '--no-cone', '/README*']);
    expect(fs.existsSync(path.join(dir, '.delegate-git'))).toBe(false);
    const kept = cli(story, dir, ['init'], operatorEnv(story, 'carol'));
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stdout).toContain('kept the existing .delegate-git/policy.json');
    expect(gitOk(story, dir, ['status', '--porcelain'])).toBe('');
    gitOk(story, dir, ['sparse-checkout', 'disable']);
    expect(cliOk(story, dir, ['init'], operatorEnv(story, 'carol')).stdout).toContain('kept the existing');
  });

  it('says there is nothing to commit when the key is in the trust root already', () => {
    const dir = makeWorkTree(story, 'newcomer-again');
    adopt(story, dir, ['src/**']);
    const again = cliOk(story, dir, ['init']);
    expect(again.stdout).toContain(
      'Nothing to commit: the hooks are set up and your key is in the trust root.',
    );
    expect(again.stdout).not.toContain('keys add');
  });
});

/** A `delegate-git` on PATH for the commands init prints, running the CLI under test. */
function shimmedCli(): string {
  const file = path.join(story.root, 'shim', 'delegate-git');
  if (!fs.existsSync(file)) executable(file, `#!/bin/sh\nexec '${process.execPath}' '${storyCli}' "$@"\n`);
  return file;
}

describe('init: two at once in one clone', () => {
  /** The repository id each record of `dir`'s ledger names. */
  function ledgerRepositoryIds(dir: string): string[] {
    const annotated = gitOk(story, dir, ['notes', '--ref=delegations', 'list'])
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(' ')[1]!);
    return annotated.flatMap((object) =>
      noteLines(story, dir, object).map(
        (line) => (statementOf(line).predicate.repository as { id: string }).id,
      ),
    );
  }

  // Each wrote a policy with a repository id of its own over the other's and signed an anchor approval under it: the
  // ledger then held approvals of "another repository" for good, and verify and the adopting push failed (rt46 f04).
  it('write one policy: each run either keeps what the first wrote, as a rerun does, or fails naming the lock', async () => {
    for (let round = 0; round < 2; round++) {
      const server = makeServer(story, `at-once-${round}.git`);
      const dir = cloneInto(story, server, `at-once-${round}`);
      const runs = await Promise.all(
        [1, 2, 3].map(() => cliAsync(story, dir, ['init', '--protect', 'src/**'])),
      );
      const lock = path.join(dir, '.git', 'delegate-git', 'init.lock');
      for (const run of runs)
        if (run.code !== 0) {
          expect(run.code, run.stderr).toBe(2);
          expect(run.stderr).toContain(`it holds the lock file ${lock}`);
        }
      expect(runs.filter((run) => run.code === 0).length).toBeGreaterThan(0);
      expect(runs.filter((run) => run.stdout.includes('wrote .delegate-git/policy.json')).length).toBe(1);
      expect(fs.existsSync(lock)).toBe(false);

      const policy = JSON.parse(fs.readFileSync(path.join(dir, '.delegate-git', 'policy.json'), 'utf8'));
      const ids = ledgerRepositoryIds(dir);
      expect(ids.length).toBeGreaterThan(0);
      expect(new Set(ids)).toEqual(new Set([policy.repositoryId]));
      gitOk(story, dir, ['add', '.delegate-git']);
      expect(commit(story, dir, 'Adopt delegate-git').code).toBe(0);
      const verify = cli(story, dir, ['verify']);
      expect(verify.code, verify.stdout + verify.stderr).toBe(0);
      const push = gitRun(story, dir, ['push', '--atomic', 'origin', 'main', 'refs/notes/delegations']);
      expect(push.code, push.stderr).toBe(0);
    }
  });

  it('an init killed while it held the lock blocks no later one: its lock is taken over (control: the lock is gone after)', () => {
    const dir = makeWorkTree(story, 'init-after-a-kill');
    const lock = path.join(dir, '.git', 'delegate-git', 'init.lock');
    fs.mkdirSync(path.dirname(lock), { recursive: true });
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    fs.writeFileSync(lock, `${dead} ${os.hostname()} 0123456789abcdef\n`);
    const init = cli(story, dir, ['init', '--protect', 'src/**']);
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain('wrote .delegate-git/policy.json');
    expect(fs.existsSync(lock)).toBe(false);
  });
});

describe('init: a directory where a hook goes', () => {
  it('is refused before anything is written (client and server), with what to do; moved away, init sets up', () => {
    const dir = makeWorkTree(story, 'hook-dir');
    const hook = path.join(dir, '.git', 'hooks', 'pre-commit');
    fs.mkdirSync(hook, { recursive: true });
    const refused = cli(story, dir, ['init', '--protect', 'src/**']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `${hook} is a directory, where git looks for a hook script. Nothing was written.`,
    );
    expect(refused.stderr).not.toContain('unexpected error');
    expect(fs.existsSync(path.join(dir, '.delegate-git'))).toBe(false);
    expect(refTip(story, dir, 'refs/notes/delegations')).toBeNull();

    fs.rmdirSync(hook);
    const done = cli(story, dir, ['init', '--protect', 'src/**']);
    expect(done.code, done.stderr).toBe(0);
    expect(fs.readFileSync(hook, 'utf8')).toContain(MARKER);

    const server = makeServer(story, 'hook-dir.git', { hook: false });
    const receive = path.join(server, 'hooks', 'pre-receive');
    fs.mkdirSync(receive, { recursive: true });
    const serverRefused = cli(story, server, ['init', '--server']);
    expect(serverRefused.code).toBe(2);
    expect(serverRefused.stderr).toContain(`${receive} is a directory`);
    fs.rmdirSync(receive);
    expect(cli(story, server, ['init', '--server']).code).toBe(0);
  });
});

/** attest's stderr for a new file in `dir`: where hooksNotRun's warnings are printed. */
function approveIn(dir: string, file: string): string {
  writeFiles(dir, { [file]: `export const at = '${file}';\n` });
  const run = cli(story, dir, ['attest', '--approve', file, '--key', OPERATOR, '--yes']);
  expect(run.code, run.stderr).toBe(0);
  return run.stderr;
}

const NOT_RUN = "warning: git does not run delegate-git's commit hook in this repository";

describe('init: core.hooksPath set to the empty string (rt54 f04)', () => {
  it('is refused, not taken for unset, on a client and a server; set so after init, attest warns; control: unset, the gate installs and runs', () => {
    const dir = makeWorkTree(story, 'empty-hookspath');
    commitBeforeAdoption(story, dir);
    gitOk(story, dir, ['config', 'core.hooksPath', '']);
    const refused = cli(story, dir, ['init', '--protect', 'src/**']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'core.hooksPath is set to the empty string in the local git configuration. That does not unset it: git then looks for each hook at /<hook>',
    );
    expect(refused.stderr).toContain('Unset it (`git config --unset core.hooksPath`)');
    expect(refused.stderr).toContain('Nothing was written.');
    expect(fs.existsSync(path.join(dir, '.delegate-git'))).toBe(false);
    expect(fs.existsSync(path.join(dir, '.git', 'hooks', 'pre-commit'))).toBe(false);

    const server = makeServer(story, 'empty-hookspath.git', { hook: false });
    gitOk(story, server, ['config', 'core.hooksPath', '']);
    const serverRefused = cli(story, server, ['init', '--server']);
    expect(serverRefused.code).toBe(2);
    expect(serverRefused.stderr).toContain('core.hooksPath is set to the empty string');
    expect(fs.readdirSync(server).filter((f) => f.startsWith('pre-receive'))).toEqual([]);

    // Control: unset as the refusal says, the gate installs, runs, and nothing is warned of.
    gitOk(story, dir, ['config', '--unset', 'core.hooksPath']);
    adopt(story, dir, ['src/**']);
    expect(approveIn(dir, 'src/before.ts')).not.toContain('warning');
    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    expect(commit(story, dir, 'unpromoted').stderr).toContain('NOT PROMOTED  src/a.ts');

    // Emptied after init: git runs no hook, and attest says so.
    gitOk(story, dir, ['config', 'core.hooksPath', '']);
    expect(approveIn(dir, 'src/after.ts')).toContain(
      `${NOT_RUN}: core.hooksPath is set to the empty string in the local git configuration, so git looks for each hook at /<hook> and runs none`,
    );
    expect(commit(story, dir, 'unpromoted, and no hook runs').code).toBe(0);
  });
});

describe('init: a husky folder git ignores (rt54 f08)', () => {
  it('refuses an ignored .husky, or husky-like _ in an ignored folder, as any ignored hooks directory, and an ignored husky hook file; control: not ignored, it installs, gates and names the files to commit', () => {
    const dir = makeWorkTree(story, 'husky-ignored');
    writeFiles(dir, { '.gitignore': '.husky/\n' });
    gitOk(story, dir, ['add', '.gitignore']);
    gitOk(story, dir, ['commit', '-q', '-m', 'base']);
    fs.mkdirSync(path.join(dir, '.husky'));
    gitOk(story, dir, ['config', 'core.hooksPath', '.husky']);
    const refused = cli(story, dir, ['init', '--protect', 'src/**']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `core.hooksPath is .husky, a directory inside the work tree ${dir} that git does not track`,
    );
    expect(refused.stderr).toContain('Nothing was written.');
    expect(tree(path.join(dir, '.husky'))).toEqual({});
    expect(fs.existsSync(path.join(dir, '.delegate-git'))).toBe(false);

    // husky 9's generated `_`, with a runner naming husky, in a folder git ignores.
    writeFiles(dir, { '.githooks/_/h': '# husky\n' });
    fs.appendFileSync(path.join(dir, '.git', 'info', 'exclude'), '.githooks/\n');
    gitOk(story, dir, ['config', 'core.hooksPath', '.githooks/_']);
    const generated = cli(story, dir, ['init', '--protect', 'src/**']);
    expect(generated.code).toBe(2);
    expect(generated.stderr).toContain('core.hooksPath is .githooks/_, a directory inside the work tree');

    // A husky folder of its own, one hook file of which git ignores.
    const one = huskyRepository('husky-ignored-file', 'echo lint\n');
    writeFiles(one, { '.gitignore': '.husky/pre-merge-commit\n' });
    const file = cli(story, one, ['init', '--protect', 'src/**']);
    expect(file.code).toBe(2);
    expect(file.stderr).toContain('git ignores .husky/pre-merge-commit (and does not track it)');
    expect(file.stderr).toContain('git check-ignore -v .husky/pre-merge-commit');
    expect(fs.existsSync(path.join(one, '.delegate-git'))).toBe(false);

    // Control: .husky no longer ignored, init writes the gate there, says to commit it, and it runs.
    writeFiles(dir, { '.gitignore': '' });
    gitOk(story, dir, ['config', 'core.hooksPath', '.husky']);
    const init = cliOk(story, dir, ['init', '--protect', 'src/**']);
    const files = ['pre-commit', 'pre-merge-commit', 'post-merge', 'post-rewrite', 'pre-push'].map(
      (h) => `.husky/${h}`,
    );
    expect(init.stdout).toContain(`git add .delegate-git/policy.json .delegate-git/keys ${files.join(' ')}`);
    gitOk(story, dir, ['add', '.gitignore', '.delegate-git', '.husky']);
    expect(commit(story, dir, 'adopt').code).toBe(0);
    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    expect(commit(story, dir, 'unpromoted').stderr).toContain('NOT PROMOTED  src/a.ts');
  });

  it('a hook that only mentions the gate, or may end before it runs it, makes attest warn; control: a line of its own running it', () => {
    const dir = makeWorkTree(story, 'mentions-gate');
    adopt(story, dir, ['src/**']);
    const hooks = path.join(dir, '.git', 'team-hooks');
    gitOk(story, dir, ['config', 'core.hooksPath', hooks]);
    const call = `'${process.execPath}' '${storyCli}' hook pre-commit`;
    const warned = [
      `exit 0 # ${call}`,
      `true || ${call}`,
      `exit 0\n# the gate:\n${call}`,
      `: ${call}; exit 0`,
    ];
    for (const [i, script] of warned.entries()) {
      executable(path.join(hooks, 'pre-commit'), `#!/bin/sh\n${script}\n`);
      expect(approveIn(dir, `src/mention-${i}.ts`), script).toContain(
        `${NOT_RUN}: core.hooksPath is set to ${hooks}`,
      );
    }
    for (const [i, script] of [`echo lint\n${call} || exit $?`, `exec ${call} "$@"`].entries()) {
      executable(path.join(hooks, 'pre-commit'), `#!/bin/sh\n${script}\n`);
      expect(approveIn(dir, `src/runs-${i}.ts`), script).not.toContain('warning');
    }
  });
});

describe('init: a git directory inside the work tree under another name (rt54 f03)', () => {
  it('refuses --separate-git-dir into the work tree, and .git a link to a directory there, writing nothing; control: the git directory outside the work tree installs and gates', () => {
    const top = path.join(story.root, 'gitdir-inside');
    const gd = path.join(top, 'gd');
    gitOk(story, story.root, ['init', '-q', '-b', 'main', `--separate-git-dir=${gd}`, top]);
    writeFiles(top, { '.gitignore': 'gd/\n' });
    for (const args of [['--protect', 'src/**'], ['--no-hook']]) {
      const refused = cli(story, top, ['init', ...args]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(
        `The git directory ${gd} lies inside the work tree ${top} under a name other than .git`,
      );
      expect(refused.stderr).toContain('a branch that tracks gd/hooks/pre-commit replaces');
      expect(refused.stderr).toContain('git init --separate-git-dir=');
      expect(refused.stderr).toContain('Nothing was written.');
    }
    expect(fs.existsSync(path.join(top, '.delegate-git'))).toBe(false);
    expect(fs.existsSync(path.join(gd, 'hooks', 'pre-commit'))).toBe(false);

    const linked = makeWorkTree(story, 'gitdir-link');
    fs.renameSync(path.join(linked, '.git'), path.join(linked, '.gs'));
    fs.symlinkSync('.gs', path.join(linked, '.git'));
    const refused = cli(story, linked, ['init', '--protect', 'src/**']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `The git directory ${path.join(linked, '.gs')} lies inside the work tree`,
    );

    // Controls: the same link to a git directory outside the work tree, and a separate one outside it.
    const outside = path.join(story.root, 'gitdir-link-outside.git');
    fs.renameSync(path.join(linked, '.gs'), outside);
    fs.rmSync(path.join(linked, '.git'));
    fs.symlinkSync(outside, path.join(linked, '.git'));
    expect(cli(story, linked, ['init', '--protect', 'src/**', '--no-hook']).code).toBe(0);
    const apart = path.join(story.root, 'gitdir-apart');
    const apartGit = path.join(story.root, 'gitdir-apart.git');
    gitOk(story, story.root, ['init', '-q', '-b', 'main', `--separate-git-dir=${apartGit}`, apart]);
    adopt(story, apart, ['src/**']);
    expect(fs.readFileSync(path.join(apartGit, 'hooks', 'pre-commit'), 'utf8')).toContain(MARKER);
    stage(apart, { 'src/a.ts': 'export const a = 1;\n' });
    expect(commit(story, apart, 'unpromoted').stderr).toContain('NOT PROMOTED  src/a.ts');
  });
});

describe('init: a hook that is a symbolic link (rt54 f01)', () => {
  it("chains a pre-merge-commit linked to the user's pre-commit, so merges still run the user's checks; control: commits run them, and init again changes nothing", () => {
    const dir = makeWorkTree(story, 'linked-merge-hook');
    commitBeforeAdoption(story, dir);
    const hooks = path.join(dir, '.git', 'hooks');
    const ran = path.join(story.root, 'linked-merge-hook-ran.txt');
    executable(path.join(hooks, 'pre-commit'), `#!/bin/sh\nbasename "$0" >> '${ran}'\n`);
    fs.symlinkSync('pre-commit', path.join(hooks, 'pre-merge-commit'));
    const init = adopt(story, dir, ['src/**']);
    const chained = path.join(hooks, 'pre-merge-commit.chained');
    expect(init.stdout).toContain(
      `installed the pre-merge-commit hook: ${path.join(hooks, 'pre-merge-commit')} (the hook there, not delegate-git's (a link to pre-commit.chained), is now ${chained}, which the hook runs first)`,
    );
    expect(fs.readlinkSync(chained)).toBe('pre-commit.chained');
    expect(fs.readFileSync(path.join(hooks, 'pre-merge-commit'), 'utf8')).toContain(MARKER);
    expect(lines(ran)).toEqual(['pre-commit.chained']);

    gitOk(story, dir, ['checkout', '-q', '-b', 'side']);
    stage(dir, { 'side.txt': 'side\n' });
    expect(commit(story, dir, 'side').code).toBe(0);
    gitOk(story, dir, ['checkout', '-q', 'main']);
    stage(dir, { 'main.txt': 'main\n' });
    expect(commit(story, dir, 'main').code).toBe(0);
    const merged = gitRun(story, dir, ['merge', '--no-ff', '--no-edit', 'side']);
    expect(merged.code, merged.stderr).toBe(0);
    expect(lines(ran).at(-1)).toBe('pre-merge-commit.chained');

    const before = installedState(dir);
    cliOk(story, dir, ['init']);
    expect(installedState(dir)).toEqual(before);
  });
});

describe('init: a hook of its own edited where its paths are (rt54 f02, f10)', () => {
  it('keeps one with a line added after the shebang as .kept, not chained: with the Node it recorded gone, init again lets commits through', () => {
    const dir = makeWorkTree(story, 'edited-after-shebang');
    adopt(story, dir, ['src/**']);
    const hook = path.join(dir, '.git', 'hooks', 'pre-commit');
    const fresh = fs.readFileSync(hook, 'utf8');
    const edited = fresh
      .replace('#!/bin/sh\n', '#!/bin/sh\nexport PATH="$HOME/bin:$PATH"  # my tools\n')
      .replace(/^DELEGATE_GIT_NODE=.*$/m, `DELEGATE_GIT_NODE='${path.join(story.root, 'gone', 'node')}'`);
    fs.writeFileSync(hook, edited);
    stage(dir, { 'README.md': 'free\n' });
    expect(commit(story, dir, 'with the Node gone').stderr).toContain('is gone');

    const init = cliOk(story, dir, ['init']);
    expect(init.stdout).toContain(
      `(the hook there had lines changed since init wrote it: it is kept as ${hook}.kept,`,
    );
    expect(fs.existsSync(`${hook}.chained`)).toBe(false);
    expect(fs.readFileSync(`${hook}.kept`, 'utf8')).toBe(edited);
    expect(fs.readFileSync(hook, 'utf8')).toBe(fresh);
    const passed = commit(story, dir, 'after init again');
    expect(passed.code, passed.stderr).toBe(0);
  });

  it('keeps one with a command added on the line of a recorded path; control: only the path changed, it is replaced with no copy', () => {
    const dir = makeWorkTree(story, 'edited-path-line');
    adopt(story, dir, ['src/**']);
    const hook = path.join(dir, '.git', 'hooks', 'pre-commit');
    const fresh = fs.readFileSync(hook, 'utf8');
    const line = /^DELEGATE_GIT_NODE=.*$/m.exec(fresh)![0];
    const edited = fresh.replace(line, `${line}; export NODE_OPTIONS=--max-old-space-size=8192`);
    fs.writeFileSync(hook, edited);
    expect(cliOk(story, dir, ['init']).stdout).toContain(`it is kept as ${hook}.kept,`);
    expect(fs.readFileSync(`${hook}.kept`, 'utf8')).toBe(edited);
    expect(fs.readFileSync(hook, 'utf8')).toBe(fresh);

    fs.writeFileSync(hook, fresh.replace(line, "DELEGATE_GIT_NODE='/elsewhere/bin/node'"));
    expect(cliOk(story, dir, ['init']).stdout).not.toContain('kept as');
    expect(fs.readFileSync(hook, 'utf8')).toBe(fresh);
    expect(fs.existsSync(`${hook}.kept-2`)).toBe(false);
  });
});

describe('init: git configuration from a file in the work tree (rt54 f09)', () => {
  it('refuses a core.hooksPath set in an included file of the work tree, and attest warns of one a branch set there after init; control: set in .git/config, it installs', () => {
    const dir = makeWorkTree(story, 'included-config');
    writeFiles(dir, { '.gitconfig': '[pull]\n\trebase = true\n' });
    gitOk(story, dir, ['add', '.gitconfig']);
    gitOk(story, dir, ['commit', '-q', '-m', 'team config']);
    gitOk(story, dir, ['config', 'include.path', '../.gitconfig']);
    const init = cliOk(story, dir, ['init', '--protect', 'src/**']);
    expect(init.stderr).toContain(
      'delegate-git init: warning: git reads configuration from .gitconfig, in the work tree: a branch that changes it',
    );
    gitOk(story, dir, ['add', '.delegate-git']);
    expect(commit(story, dir, 'adopt').code).toBe(0);
    expect(approveIn(dir, 'src/before.ts')).not.toContain('warning');

    // A branch's .gitconfig sends git to hooks of its own, even ones that run the gate.
    const config = path.join(dir, '.gitconfig');
    writeFiles(dir, { '.gitconfig': '[core]\n\thooksPath = tools/hooks\n' });
    executable(
      path.join(dir, 'tools', 'hooks', 'pre-commit'),
      `#!/bin/sh\n'${process.execPath}' '${storyCli}' hook pre-commit\n`,
    );
    expect(approveIn(dir, 'src/after.ts')).toContain(
      `warning: core.hooksPath is set to tools/hooks in ${config}, a file inside the work tree ${dir}: a branch that changes that file changes where git runs hooks from`,
    );
    const refused = cli(story, dir, ['init']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `core.hooksPath is set to tools/hooks in ${config}, a file inside the work tree ${dir} that the git configuration includes`,
    );
    expect(refused.stderr).toContain('Nothing was written.');

    // Control: the hooks path set in .git/config itself.
    writeFiles(dir, { '.gitconfig': '[pull]\n\trebase = true\n' });
    gitOk(story, dir, ['config', 'core.hooksPath', '.git/own-hooks']);
    const own = cli(story, dir, ['init']);
    expect(own.code, own.stderr).toBe(0);
    expect(own.stdout).toContain(
      `installed the pre-commit hook: ${path.join(dir, '.git', 'own-hooks', 'pre-commit')}`,
    );
  });
});
