/**
 * A merge that keeps one side's version of the policy replaces the other side's version with it, and is dated as
 * that change. Before, it kept the stale side's old date, so going back twice passed at every gate: the policy S, then
 * T, then S again through a merge of a stale branch (approved again), then T again (approved anew), and then S once
 * more on the approval it had before T came back. The same date let a pusher re-date the policy with a merge of an old
 * commit and a commit back, with no approval at all. Controls: each step a reviewer approves passes everywhere.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POLICY_PATH } from '../../packages/core/src/index.js';
import {
  cli,
  cliOk,
  commit,
  gitOk,
  gitRun,
  LEDGER,
  makeStory,
  OPERATOR,
  recordApproval,
  type Story,
} from '../support/cli-story.js';
import { acceptedByEveryGate, adoptedClone, refusedByEveryGate } from '../support/every-gate.js';
import { addKeys, approveBy, attestOk, editPolicy, keyFileOf, registerKeys } from '../support/reviewers.js';

const GOING_BACK = 'only before the version it replaces was approved';

describe('a merge keeping a stale side’s policy is dated as a change from the other side’s', () => {
  let story: Story;
  let work: string;
  let loose: string; // S: the adopted policy
  let tight: string; // T: S protecting lib/** too

  /** Approvals made milliseconds apart at least, so each is later than the one before. */
  const approvePolicy = async () => {
    await new Promise((resolve) => setTimeout(resolve, 20));
    attestOk(story, work, 'approve', [POLICY_PATH]);
  };
  const writePolicy = (text: string) => {
    fs.writeFileSync(path.join(work, POLICY_PATH), text);
    gitOk(story, work, ['add', POLICY_PATH]);
  };

  beforeAll(async () => {
    story = makeStory();
    work = adoptedClone(story, ['src/**']); // S, approved at adoption
    loose = fs.readFileSync(path.join(work, POLICY_PATH), 'utf8');
    gitOk(story, work, ['branch', 'side']);
    editPolicy(work, (p) => {
      p.protect = ['src/**', 'lib/**'];
    });
    tight = fs.readFileSync(path.join(work, POLICY_PATH), 'utf8');
    await approvePolicy();
    gitOk(story, work, ['add', POLICY_PATH]);
    acceptedByEveryGate(story, work, 'T');
  });

  afterAll(() => story.cleanup());

  it('going back twice through a merge is refused at every gate; approved again, it passes', async () => {
    // The stale branch still holds S; main takes it back through the merge, approved again for that.
    gitOk(story, work, ['checkout', '-q', 'side']);
    fs.writeFileSync(path.join(work, 'notes.txt'), 'side work\n');
    gitOk(story, work, ['add', 'notes.txt']);
    expect(commit(story, work, 'side work').code).toBe(0);
    gitOk(story, work, ['checkout', '-q', 'main']);
    expect(gitRun(story, work, ['merge', '-q', '--no-ff', '--no-commit', 'side']).code).toBe(0);
    gitOk(story, work, ['checkout', 'side', '--', POLICY_PATH]);
    await approvePolicy();
    acceptedByEveryGate(story, work, 'merge side, back to S');

    // T again, approved anew: S cannot come back on the approval it had for the merge.
    writePolicy(tight);
    await approvePolicy();
    acceptedByEveryGate(story, work, 'T again');
    writePolicy(loose);
    refusedByEveryGate(story, work, POLICY_PATH, GOING_BACK);

    // Control: approved again now, S passes everywhere.
    writePolicy(loose);
    await approvePolicy();
    acceptedByEveryGate(story, work, 'S again, approved again');
  });

  it('a merge of an old commit and a commit back cannot re-date the policy in force without an approval', async () => {
    writePolicy(tight);
    await approvePolicy();
    acceptedByEveryGate(story, work, 'T once more');
    const verified = gitOk(story, work, ['rev-parse', 'HEAD']);
    // One push, no approval: a merge of the adoption commit taking S from it, then a commit back to T. The tip is
    // unchanged, and the server accepts it.
    const adoption = gitOk(story, work, ['rev-list', '--max-parents=0', 'HEAD']);
    gitOk(story, work, ['checkout', adoption, '--', POLICY_PATH]);
    const merge = gitOk(story, work, [
      'commit-tree',
      '-p',
      'HEAD',
      '-p',
      adoption,
      '-m',
      'merge an old commit',
      gitOk(story, work, ['write-tree']),
    ]);
    const back = gitOk(story, work, ['commit-tree', '-p', merge, '-m', 'back to T', `${verified}^{tree}`]);
    gitOk(story, work, ['reset', '-q', '--hard', back]);
    const accepted = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(accepted.code, accepted.stderr).toBe(0);

    // S, on approvals all older than T's latest, stays refused at every gate, and by verify --since either push.
    writePolicy(loose);
    expect(commit(story, work, 'S', ['--no-verify']).code).toBe(0);
    for (const since of [back, verified]) {
      const inCi = cli(story, work, ['verify', '--since', since]);
      expect.soft(inCi.code, `--since ${since}: ${inCi.stdout}`).toBe(1);
      expect.soft(inCi.stdout).toContain(GOING_BACK);
    }
    gitOk(story, work, ['reset', '-q', '--hard', 'HEAD~1']);
    writePolicy(loose);
    refusedByEveryGate(story, work, POLICY_PATH, GOING_BACK);

    // Control: approved now, it passes the hook, the server and verify --since (as the action runs it). verify over
    // the whole history judges every policy change by its parent's rules and still refuses the unapproved push: the
    // merge took S without an approval, so it is dated by the next approval of S (this one), and the commit back to
    // T has none as new as that.
    writePolicy(loose);
    await approvePolicy();
    expect(commit(story, work, 'S, approved now').code).toBe(0);
    const pushed = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(pushed.code, pushed.stderr).toBe(0);
    const inCi = cli(story, work, ['verify', '--since', back]);
    expect(inCi.code, inCi.stdout).toBe(0);
    const whole = cli(story, work, ['verify']);
    expect(whole.code).toBe(1);
    expect(whole.stdout).toContain(`changed in commit ${back.slice(0, 12)} without the approval`);
  });
});

describe('a merge is dated by the highest review threshold of its parents', () => {
  let story: Story;
  let work: string;
  afterAll(() => story.cleanup());

  // The revocation of carol, made as a merge whose first parent is the adoption (threshold 1) and whose second is main
  // (threshold 2): dated by one approval, alice's back-dated to bob's old approval of carol's key, it let carol's
  // key come back later on bob's and dave's old approvals, with no new approval at all.
  it('one back-dated approval cannot date a revocation merged over an older first parent; approved anew, the key comes back', async () => {
    story = makeStory();
    work = adoptedClone(story, ['src/**']);
    const adoption = gitOk(story, work, ['rev-parse', 'HEAD']);
    addKeys(story, work, [{ name: 'bob' }, { name: 'dave' }]);
    gitOk(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]);
    editPolicy(work, (p) => {
      p.reviewThreshold = 2;
    });
    approveBy(story, work, [POLICY_PATH], [OPERATOR, 'bob']);
    gitOk(story, work, ['add', POLICY_PATH]);
    acceptedByEveryGate(story, work, 'threshold 2');

    const carol = keyFileOf('carol');
    registerKeys(story, work, [{ name: 'carol' }]);
    const start = Date.now() - 3 * 3600 * 1000;
    const minute = (m: number) => new Date(start + m * 60 * 1000).toISOString();
    for (const [key, m] of [
      [OPERATOR, 10],
      ['bob', 20],
      ['dave', 30],
    ] as const)
      await recordApproval(story, work, carol, { key, createdAt: minute(m) });
    gitOk(story, work, ['add', carol]);
    acceptedByEveryGate(story, work, 'trust carol');
    const trusted = fs.readFileSync(path.join(work, carol), 'utf8');
    const main = gitOk(story, work, ['rev-parse', 'HEAD']);

    cliOk(story, work, ['keys', 'revoke', 'carol']);
    approveBy(story, work, [carol], ['bob']);
    await recordApproval(story, work, carol, { key: OPERATOR, createdAt: minute(20) });
    gitOk(story, work, ['add', carol]);
    const tree = gitOk(story, work, ['write-tree']);
    const merge = gitOk(story, work, ['commit-tree', '-p', adoption, '-p', main, '-m', 'revoke carol', tree]);
    gitOk(story, work, ['reset', '-q', '--hard', merge]);
    const revoked = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(revoked.code, revoked.stderr).toBe(0); // a revocation two reviewers approved

    fs.writeFileSync(path.join(work, carol), trusted);
    gitOk(story, work, ['add', carol]);
    refusedByEveryGate(story, work, carol, GOING_BACK);

    // Control: two reviewers approve carol's key again, now; it comes back through every gate.
    fs.writeFileSync(path.join(work, carol), trusted);
    approveBy(story, work, [carol], ['bob', 'dave']);
    gitOk(story, work, ['add', carol]);
    acceptedByEveryGate(story, work, 'trust carol again');
  });
});
