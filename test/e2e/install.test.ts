/**
 * Hook installation by `delegate-git init`, end to end: an existing hook is chained (and still runs, and still
 * blocks), init is idempotent, core.hooksPath and husky are honoured, and linked worktrees are guarded too.
 * Every check is made by running `git commit` and seeing the hook act.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adopt,
  cliOk,
  commit,
  gitOk,
  gitRun,
  makeStory,
  makeWorkTree,
  recordVerdict,
  refTip,
  type Story,
  writeFiles,
} from '../support/cli-story.js';

const MARKER = '# delegate-git hook';

let story: Story;
beforeAll(() => {
  story = makeStory();
});
afterAll(() => story.cleanup());

function stage(dir: string, files: Record<string, string>): void {
  writeFiles(dir, files);
  gitOk(story, dir, ['add', '--', ...Object.keys(files)]);
}

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
});

describe('init: where git runs hooks', () => {
  it('installs into core.hooksPath (made absolute) when it is set', () => {
    const dir = makeWorkTree(story, 'hookspath');
    gitOk(story, dir, ['config', 'core.hooksPath', '.githooks']);
    const init = cliOk(story, dir, ['init', '--protect', 'src/**']);
    const installed = path.join(dir, '.githooks', 'pre-commit');
    expect(init.stdout).toContain(`installed the pre-commit hook: ${installed}`);
    expect(init.stdout).toContain(
      `installed the pre-merge-commit hook: ${installed.replace(/pre-commit$/, 'pre-merge-commit')}`,
    );
    expect(fs.readFileSync(installed, 'utf8')).toContain(MARKER);
    expect(fs.readFileSync(path.join(dir, '.githooks', 'pre-merge-commit'), 'utf8')).toContain(MARKER);
    expect(fs.existsSync(path.join(dir, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(gitOk(story, dir, ['config', 'core.hooksPath'])).toBe(path.join(dir, '.githooks'));

    gitOk(story, dir, ['add', '.delegate-git']);
    expect(commit(story, dir, 'adopt').code).toBe(0);
    stage(dir, { 'src/a.ts': 'export const a = 1;\n' });
    const refused = commit(story, dir, 'unpromoted');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/a.ts');
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
 * A repository set up as husky 9 sets one up, reduced to its core: `.husky/_/<hook>` (generated, ignored) runs the
 * committed `.husky/<hook>` with `sh -e`, for husky's own list of hooks, which has no pre-merge-commit.
 */
function huskyRepository(name: string, preCommit: string): string {
  const dir = makeWorkTree(story, name);
  writeFiles(dir, { '.husky/pre-commit': preCommit, '.husky/_/.gitignore': '*\n' });
  executable(
    path.join(dir, '.husky', '_', 'pre-commit'),
    '#!/usr/bin/env sh\ns="$(dirname "$(dirname "$0")")/$(basename "$0")"\n[ -f "$s" ] || exit 0\nsh -e "$s" "$@"\n',
  );
  gitOk(story, dir, ['config', 'core.hooksPath', '.husky/_']);
  return dir;
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
    expect(added[0]).toContain('delegate-git hook pre-commit');
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
  });

  it('guards the commit of a merge too: a line in .husky/pre-merge-commit, run through a hook in .husky/_', async () => {
    const dir = huskyRepository('husky-merge', '');
    const init = cliOk(story, dir, ['init', '--protect', 'src/**']);
    expect(init.stdout).toContain('installed the pre-merge-commit hook: .husky/pre-merge-commit (husky;');
    const added = lines(path.join(dir, '.husky', 'pre-merge-commit'));
    expect(added.filter((l) => l.includes('delegate-git hook pre-merge-commit'))).toHaveLength(1);
    expect(fs.readFileSync(path.join(dir, '.husky', '_', 'pre-merge-commit'), 'utf8')).toContain(MARKER);
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
