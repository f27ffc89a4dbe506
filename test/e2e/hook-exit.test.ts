/**
 * A gate that fails on the staged rules exits, every time. The staged trust root failing to load made the rules
 * committed still being read lose their reader to close(), and the next read started a git cat-file nobody closed:
 * about half such commits hung after printing the error.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gitOk, makeStory, type Story, storyCli } from '../support/cli-story.js';
import { adoptedClone } from '../support/every-gate.js';
import { editPolicy } from '../support/reviewers.js';

let story: Story;
let dir: string;
beforeAll(() => {
  story = makeStory();
  dir = adoptedClone(story, ['src/**']); // with a remote, as the hang needed
});
afterAll(() => story.cleanup());

/** The hook as git runs it, killed after 10 s: status null then. */
function hook(): { status: number | null; stderr: string } {
  const run = spawnSync(process.execPath, [storyCli, 'hook', 'pre-commit'], {
    cwd: dir,
    env: story.env,
    encoding: 'utf8',
    timeout: 10_000,
  });
  return { status: run.status, stderr: run.stderr };
}

describe('the pre-commit hook on staged rules that do not load', () => {
  it('exits 2 with the error, every time; control: the same key file intact passes', () => {
    const keyFile = path.join(dir, '.delegate-git/keys/alice.json');
    const intact = fs.readFileSync(keyFile, 'utf8');
    fs.writeFileSync(keyFile, intact.replace('"name"', 'name'));
    gitOk(story, dir, ['add', '.delegate-git']);
    for (let i = 0; i < 8; i++) {
      const run = hook();
      expect(run.status, `run ${i + 1}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toContain('.delegate-git/keys/alice.json');
    }
    fs.writeFileSync(keyFile, intact);
    gitOk(story, dir, ['add', '.delegate-git']);
    expect(hook().status).toBe(0);
  });

  it('exits 2 every time for a policy naming a keys directory with no key; control: the policy as committed passes', () => {
    const policy = path.join(dir, '.delegate-git/policy.json');
    const committed = fs.readFileSync(policy, 'utf8');
    editPolicy(dir, (p) => {
      p.keysDir = 'trust';
    });
    gitOk(story, dir, ['add', '.delegate-git']);
    for (let i = 0; i < 8; i++) expect(hook().status, `run ${i + 1}`).toBe(2);
    fs.writeFileSync(policy, committed);
    gitOk(story, dir, ['add', '.delegate-git']);
    expect(hook().status).toBe(0);
  });
});
