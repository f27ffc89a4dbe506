/**
 * One change asked of every gate in turn, as the end-to-end stories do: the pre-commit hook, the server's pre-receive
 * (a bare remote with the hook), and `verify` at the commit.
 */
import { expect } from 'vitest';
import { adopt, cli, cloneInto, commit, gitOk, gitRun, LEDGER, makeServer, type Story } from './cli-story.js';

/** A clone of a server that runs the pre-receive hook, adopted with `protect` and pushed. */
export function adoptedClone(story: Story, protect: string[]): string {
  const server = makeServer(story);
  const work = cloneInto(story, server, 'work');
  adopt(story, work, protect);
  expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
  return work;
}

/**
 * The staged change is refused by `check --path` and at commit; committed past the hook, by the server; and by verify
 * at that commit.
 * Each gate is asserted on its own (soft), so a run without a fix shows every gate that lets the change through.
 * The work tree is then put back as the server has it.
 */
export function refusedByEveryGate(
  story: Story,
  work: string,
  at: string,
  why?: string,
  { byContent = true }: { byContent?: boolean } = {},
): void {
  // check --path asks the commit hook's question of the work tree's content (the same as the staged content here);
  // not of what is refused for the tree's shape (names one file on another checkout, a submodule).
  if (byContent) {
    const asked = cli(story, work, ['check', '--path', at]);
    expect.soft(asked.code, `check --path: ${asked.stdout}${asked.stderr}`).toBe(1);
    expect.soft(asked.stdout).toContain(`NOT PROMOTED  ${at}`);
  }
  const refused = commit(story, work, `${at}, refused`);
  expect.soft(refused.code, `commit: ${refused.stderr}`).not.toBe(0);
  expect.soft(refused.stderr).toContain(`NOT PROMOTED  ${at}`);
  if (why) expect.soft(refused.stderr).toContain(why);
  if (refused.code !== 0) expect(commit(story, work, 'past the hook', ['--no-verify']).code).toBe(0);

  const pushed = gitRun(story, work, ['push', 'origin', 'main']);
  expect.soft(pushed.code, `push: ${pushed.stderr}`).not.toBe(0);
  expect.soft(pushed.stderr).toMatch(new RegExp(`refused refs/heads/main [0-9a-f]{12} ${at}: `));
  if (why) expect.soft(pushed.stderr).toContain(why);

  const verified = cli(story, work, ['verify']);
  expect.soft(verified.code, `verify: ${verified.stdout}${verified.stderr}`).toBe(1);
  expect.soft(verified.stdout).toContain(`NOT PROMOTED  ${at}`);
  if (why) expect.soft(verified.stdout).toContain(why);
  // check --rev asks verify's question of the revision's files, and answers it the same.
  const checked = cli(story, work, ['check', '--rev', 'HEAD']);
  expect.soft(checked.code, `check --rev: ${checked.stdout}${checked.stderr}`).toBe(1);
  expect.soft(checked.stdout).toContain(`NOT PROMOTED  ${at}`);
  gitOk(story, work, ['reset', '-q', '--hard', 'origin/main']);
  gitOk(story, work, ['clean', '-q', '-fdx']);
}

/** Committed through the hook, pushed (with the ledger) to the server, and passed by verify. */
export function acceptedByEveryGate(story: Story, work: string, message: string): void {
  const committed = commit(story, work, message);
  if (committed.code !== 0) throw new Error(`commit "${message}" was refused:\n${committed.stderr}`);
  const pushed = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
  expect(pushed.code, pushed.stderr).toBe(0);
  const verified = cli(story, work, ['verify']);
  expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  const checked = cli(story, work, ['check', '--rev', 'HEAD']);
  expect(checked.code, `check --rev: ${checked.stdout}${checked.stderr}`).toBe(0);
}
