/**
 * A repository in git's SHA-256 object format (`git init --object-format=sha256`): every object id is 64 hex digits,
 * and the empty tree a first commit is compared with has another id than in SHA-1. The gates, the server hook and
 * verify behave there as in a SHA-1 repository. Each refusal is paired with a control that passes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  cliOk,
  cloneInto,
  commit,
  gitOk,
  gitRun,
  makeServer,
  makeStory,
  makeWorkTree,
  recordVerdict,
  type Story,
  writeFiles,
} from '../support/cli-story.js';

let story: Story;
let remote: string;
let dir: string;

beforeAll(() => {
  story = makeStory();
  // `git init` (work trees and the bare remote) makes SHA-256 repositories; a clone takes its remote's format.
  story.env = { ...story.env, GIT_DEFAULT_HASH: 'sha256' };
  remote = makeServer(story);
  dir = makeWorkTree(story, 'work');
  gitOk(story, dir, ['remote', 'add', 'origin', remote]);
});

afterAll(() => story.cleanup());

describe('a SHA-256 repository', () => {
  it('is one: 64-digit object ids in the work tree and on the server', () => {
    expect(gitOk(story, dir, ['rev-parse', '--show-object-format']).trim()).toBe('sha256');
    expect(gitOk(story, remote, ['rev-parse', '--show-object-format']).trim()).toBe('sha256');
  });

  it('judges the first commit (no HEAD yet): a governed file nothing promotes is refused, the adoption alone passes', () => {
    cliOk(story, dir, ['init', '--protect', 'src/**']);
    writeFiles(dir, { 'src/hand.ts': 'export const hand = 1;\n' });
    gitOk(story, dir, ['add', '.delegate-git', 'src/hand.ts']);
    const refused = commit(story, dir, 'Adopt delegate-git, with a hand-written file');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('src/hand.ts');
    expect(refused.stderr).toContain('commit refused');

    gitOk(story, dir, ['rm', '-q', '--cached', 'src/hand.ts']);
    const adopted = commit(story, dir, 'Adopt delegate-git');
    expect(adopted.code, adopted.stderr).toBe(0);
    expect(gitOk(story, dir, ['rev-parse', 'HEAD']).trim()).toMatch(/^[0-9a-f]{64}$/);
  });

  it('commits what is not governed, and a file its verdict promotes; refuses an edit made after the verdict', async () => {
    for (const round of [1, 2]) {
      writeFiles(dir, { 'README.md': `# notes, round ${round}\n` });
      gitOk(story, dir, ['add', 'README.md']);
      const quiet = commit(story, dir, `notes ${round}`); // the second one, right after a commit, is answered quickly
      expect(quiet.code, quiet.stderr).toBe(0);
    }
    writeFiles(dir, { 'src/add.ts': 'export const add = (a: number, b: number) => a + b;\n' });
    const blob = await recordVerdict(story, dir, 'src/add.ts');
    expect(blob).toMatch(/^[0-9a-f]{64}$/);
    gitOk(story, dir, ['add', 'src/add.ts']);
    const promoted = commit(story, dir, 'add, as delegated');
    expect(promoted.code, promoted.stderr).toBe(0);

    writeFiles(dir, { 'src/add.ts': 'export const add = (a: number, b: number) => a - b;\n' });
    gitOk(story, dir, ['add', 'src/add.ts']);
    const edited = commit(story, dir, 'a hand edit');
    expect(edited.code).not.toBe(0);
    expect(edited.stderr).toContain('src/add.ts');
  });

  it('the server accepts the branch with its ledger, and refuses a hand edit committed with --no-verify', () => {
    gitOk(story, dir, ['reset', '-q', '--hard']);
    const accepted = gitRun(story, dir, ['push', '--atomic', 'origin', 'main', 'refs/notes/delegations']);
    expect(accepted.code, accepted.stderr).toBe(0);

    writeFiles(dir, { 'src/add.ts': 'export const add = (a: number, b: number) => a * b;\n' });
    gitOk(story, dir, ['commit', '-q', '--no-verify', '-am', 'a hand edit, hook skipped']);
    const refused = gitRun(story, dir, ['push', 'origin', 'main']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('src/add.ts');
    gitOk(story, dir, ['reset', '-q', '--hard', 'HEAD~1']);
  });

  it('verify passes on what the server accepted, in a clone, and fails on the unpromoted edit', () => {
    const clone = cloneInto(story, remote, 'clone');
    gitOk(story, clone, ['fetch', '-q', 'origin', 'refs/notes/delegations:refs/notes/delegations']);
    expect(gitOk(story, clone, ['rev-parse', '--show-object-format']).trim()).toBe('sha256');
    const ok = cli(story, clone, ['verify']);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);

    writeFiles(clone, { 'src/add.ts': 'export const add = 0;\n' });
    gitOk(story, clone, ['commit', '-q', '--no-verify', '-am', 'unpromoted']);
    const failed = cli(story, clone, ['verify']);
    expect(failed.code).toBe(1);
    expect(failed.stdout + failed.stderr).toContain('src/add.ts');
  });

  it('sync merges approvals recorded in two clones into their union', () => {
    const clones = [cloneInto(story, remote, 'first'), cloneInto(story, remote, 'second')];
    writeFiles(clones[0]!, { 'src/shared.ts': 'export const shared = 1;\n' });
    writeFiles(clones[1]!, { 'src/shared.ts': 'export const shared = 1;\n' });
    clones.forEach((clone, i) => {
      expect(cli(story, clone, ['sync']).code).toBe(0); // fetches the ledger into a fresh clone
      cliOk(story, clone, ['attest', '--approve', 'src/shared.ts', '-m', `clone ${i}`, '--yes']);
    });
    for (const clone of [...clones, clones[0]!]) {
      const synced = cli(story, clone, ['sync']);
      expect(synced.code, synced.stderr).toBe(0);
    }
    const blob = gitOk(story, clones[0]!, ['hash-object', 'src/shared.ts']).trim();
    for (const clone of clones) {
      const lines = gitOk(story, clone, ['notes', '--ref=delegations', 'show', blob]).trim().split('\n');
      expect(lines).toHaveLength(2);
    }
  });
});
