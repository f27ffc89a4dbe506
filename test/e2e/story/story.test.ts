/**
 * The README's promise, checked on every run: the demo's story (init, a unit delegated and passed, the commit
 * accepted, a hand edit refused at commit, a --no-verify commit refused by the server, a reviewer's approval, the
 * push accepted, verify and report) runs with the real commands, and every step behaves as the demo says.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../support/paths.js';

interface Step {
  title: string;
  code: number;
  ok: boolean;
  problem: string | null;
  output: string;
}

describe('the story, end to end', () => {
  it('every step of the demo behaves as described', () => {
    const run = spawnSync(process.execPath, [path.join(repoRoot, 'scripts', 'demo.mjs'), '--json'], {
      cwd: repoRoot,
      encoding: 'utf8',
      env: { ...process.env, DELEGATE_GIT_SIGNING_KEY: '' },
    });
    const { steps, failed } = JSON.parse(run.stdout) as { steps: Step[]; failed: number };
    expect(steps.filter((s) => !s.ok).map((s) => `${s.title}: ${s.problem}\n${s.output}`)).toEqual([]);
    expect(failed).toBe(0);
    expect(run.status).toBe(0);

    const step = (fragment: string) => {
      const found = steps.find((s) => s.title.includes(fragment));
      expect(found, `a step titled "${fragment}"`).toBeDefined();
      return found!;
    };
    expect(step('Delegate a unit').output).toContain('Verdict: UNIT_PASSED');
    expect(step('Delegate a unit').output).toContain('3 run(s): PASS PASS PASS');
    const handEdit = step('A hand edit');
    expect(handEdit.code).toBe(1);
    expect(handEdit.output).toContain('its content changed after the verdict');
    const pushed = step('...and pushed');
    expect(pushed.code).not.toBe(0);
    expect(pushed.output).toMatch(/refused refs\/heads\/main \w+ src\/slugify\.js/);
    expect(step('Push the branch and the ledger together').code).toBe(0);
    expect(step('CI: `delegate-git verify`').output).toContain('0 refused');
    expect(step('The accounting').code).toBe(0);
  }, 120_000);
});
