/**
 * The review side of the promotion rule end to end, with the built CLI: rejections (and how a reviewer lifts their
 * own), `requireReview` with `reviewThreshold` 2 counted over distinct reviewers (told apart by their key files' email), and the trust root protecting
 * itself: the policy file and the keys directory need reviewer approval under the policy in force, at commit
 * (pre-commit), at push (pre-receive on a bare remote set up by `init --server`) and in CI (`verify`). Each refusal is
 * paired with a control that passes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  adopt,
  adoptByHand,
  cli,
  cloneInto,
  commit,
  copyWorkTree,
  gitOk,
  gitRun,
  makeServer,
  makeStory,
  makeWorkTree,
  noteLines,
  OPERATOR,
  type Run,
  recordVerdict,
  refTip,
  resetWorkTree,
  type Story,
  statementOf,
  writeFiles,
} from '../support/cli-story.js';
import {
  addKeys,
  approveBy,
  attest,
  attestOk,
  commitApproved,
  editPolicy,
  keyFileOf,
  LEDGER_REF,
  ledgerTip,
  registerKeys,
} from '../support/reviewers.js';

const POLICY = '.delegate-git/policy.json';
const ATOMIC = ['push', '--atomic', 'origin', 'main', LEDGER_REF];

let story: Story;
/** Adopted (protect src/**) by alice, with bob committed as a second reviewer (approved by alice). */
let template: string;

beforeAll(() => {
  story = makeStory();
  template = makeWorkTree(story, 'template');
  adopt(story, template, ['src/**']);
  addKeys(story, template, [{ name: 'bob' }]);
});

afterAll(() => story.cleanup());

interface Verdict {
  code: number;
  promoted: boolean;
  reason: string;
  by: string[];
}

/** `check --path <file> --json` for one file: the exit code and the rule's answer. */
function checkPath(dir: string, file: string): Verdict {
  const run = cli(story, dir, ['check', '--path', file, '--json']);
  const out = JSON.parse(run.stdout) as { results: Array<Omit<Verdict, 'code'> & { path: string }> };
  const result = out.results.find((r) => r.path === file)!;
  return { code: run.code, promoted: result.promoted, reason: result.reason, by: result.by };
}

function stageAndCommit(dir: string, file: string, message: string): Run {
  gitOk(story, dir, ['add', '--', file]);
  return commit(story, dir, message);
}

function reviewDecisions(dir: string, file: string): string[] {
  const blob = gitOk(story, dir, ['hash-object', '--', file]);
  return noteLines(story, dir, blob)
    .map((l) => statementOf(l).predicate)
    .filter((p) => typeof p.decision === 'string')
    .map((p) => `${(p.reviewer as { name: string }).name}:${p.decision as string}`)
    .sort();
}

describe('rejections', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'rejections');
  });
  afterEach(() => resetWorkTree(story, dir));

  it('a rejection refuses content even with a UNIT_PASSED verdict on it', async () => {
    writeFiles(dir, { 'src/passed.ts': 'export const passed = 1;\n' });
    await recordVerdict(story, dir, 'src/passed.ts');
    expect(checkPath(dir, 'src/passed.ts')).toMatchObject({
      code: 0,
      reason: 'a unit passed it and its content is unchanged',
    });

    attestOk(story, dir, 'reject', ['src/passed.ts'], { key: 'bob', message: 'the test asserts nothing' });
    expect(checkPath(dir, 'src/passed.ts')).toMatchObject({
      code: 1,
      promoted: false,
      reason: 'rejected by bob',
      by: ['bob'],
    });
    const refused = stageAndCommit(dir, 'src/passed.ts', 'passed but rejected');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/passed.ts');
    expect(refused.stderr).toContain('rejected by bob');
  });

  it('a later approval by the same reviewer of the same content lifts their own rejection', () => {
    writeFiles(dir, { 'src/lifted.ts': 'export const lifted = 1;\n' });
    attestOk(story, dir, 'reject', ['src/lifted.ts'], { key: 'bob' });
    expect(checkPath(dir, 'src/lifted.ts')).toMatchObject({ code: 1, reason: 'rejected by bob' });

    attestOk(story, dir, 'approve', ['src/lifted.ts'], { key: 'bob', message: 'fixed upstream; fine now' });
    expect(reviewDecisions(dir, 'src/lifted.ts')).toEqual(['bob:approve', 'bob:reject']);
    expect(checkPath(dir, 'src/lifted.ts')).toMatchObject({
      code: 0,
      reason: 'approved by bob and unchanged since',
    });
    const committed = stageAndCommit(dir, 'src/lifted.ts', 'rejection lifted');
    expect(committed.code, committed.stderr).toBe(0);

    // And the other way round: the reviewer's latest decision is the one that counts.
    writeFiles(dir, { 'src/relapsed.ts': 'export const relapsed = 1;\n' });
    attestOk(story, dir, 'approve', ['src/relapsed.ts'], { key: 'bob' });
    expect(checkPath(dir, 'src/relapsed.ts').code).toBe(0);
    attestOk(story, dir, 'reject', ['src/relapsed.ts'], { key: 'bob' });
    expect(checkPath(dir, 'src/relapsed.ts')).toMatchObject({ code: 1, reason: 'rejected by bob' });
  });

  it("another reviewer's approval does not lift a rejection: refused as rejected by bob", () => {
    writeFiles(dir, { 'src/contested.ts': 'export const contested = 1;\n' });
    attestOk(story, dir, 'reject', ['src/contested.ts'], { key: 'bob' });
    attestOk(story, dir, 'approve', ['src/contested.ts'], { key: OPERATOR });
    expect(reviewDecisions(dir, 'src/contested.ts')).toEqual(['alice:approve', 'bob:reject']);
    expect(checkPath(dir, 'src/contested.ts')).toMatchObject({
      code: 1,
      reason: 'rejected by bob',
      by: ['bob'],
    });
    const refused = stageAndCommit(dir, 'src/contested.ts', 'contested');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('rejected by bob');

    // Control: bob changes his mind; both approvals now stand.
    attestOk(story, dir, 'approve', ['src/contested.ts'], { key: 'bob' });
    expect(checkPath(dir, 'src/contested.ts')).toMatchObject({
      code: 0,
      reason: 'approved by alice, bob and unchanged since',
    });
    const committed = commit(story, dir, 'contested, settled');
    expect(committed.code, committed.stderr).toBe(0);
  });
});

describe('requireReview with reviewThreshold 2', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'threshold');
    editPolicy(dir, (p) => {
      p.requireReview = true;
      p.reviewThreshold = 2;
    });
    // Judged by the policy in force (threshold 1), so alice's approval alone adopts it.
    commitApproved(story, dir, [POLICY], [OPERATOR], 'require two reviewers');
  });
  afterEach(() => resetWorkTree(story, dir));

  it('a UNIT_PASSED verdict alone no longer promotes; the reason names the requirement', async () => {
    writeFiles(dir, { 'src/unit.ts': 'export const unit = 1;\n' });
    await recordVerdict(story, dir, 'src/unit.ts');
    const verdict = checkPath(dir, 'src/unit.ts');
    expect(verdict).toMatchObject({
      code: 1,
      promoted: false,
      reason: 'a unit passed it, but the policy requires 2 reviewer approval(s) and it has none',
    });
    const refused = stageAndCommit(dir, 'src/unit.ts', 'verdict only');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('the policy requires 2 reviewer approval(s)');
  });

  it("one person's two keys (one email, another letter case) count once, at the commit and in verify; a second person promotes it", () => {
    const own = copyWorkTree(story, dir, 'rotation');
    const email = (
      JSON.parse(fs.readFileSync(path.join(own, keyFileOf(OPERATOR)), 'utf8')) as { email: string }
    ).email;
    addKeys(story, own, [{ name: 'alice-2', email: email.toUpperCase() }], [OPERATOR, 'bob']);
    writeFiles(own, { 'src/rotated.ts': 'export const rotated = 1;\n' });
    approveBy(story, own, ['src/rotated.ts'], [OPERATOR, 'alice-2']);
    expect(checkPath(own, 'src/rotated.ts').reason).toMatch(
      /^the policy requires 2 reviewer approval\(s\) and it has 1 \(alice(-2)?\); alice and alice-2 count as one reviewer/,
    );
    const refused = stageAndCommit(own, 'src/rotated.ts', 'one person, two keys');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('alice and alice-2 count as one reviewer');
    // Past the hook, CI refuses it too.
    expect(commit(story, own, 'past the hook', ['--no-verify']).code).toBe(0);
    const verified = cli(story, own, ['verify']);
    expect(verified.code).toBe(1);
    expect(verified.stdout).toContain('NOT PROMOTED  src/rotated.ts');
    // Control: another person's approval of the same content promotes it.
    attestOk(story, own, 'approve', ['src/rotated.ts'], { key: 'bob' });
    expect(cli(story, own, ['verify']).code).toBe(0);
  });

  it('the same reviewer approving twice counts once; a second reviewer promotes it', () => {
    writeFiles(dir, { 'src/two.ts': 'export const two = 1;\n' });
    approveBy(story, dir, ['src/two.ts'], [OPERATOR, OPERATOR]);
    expect(reviewDecisions(dir, 'src/two.ts')).toEqual(['alice:approve', 'alice:approve']);
    expect(checkPath(dir, 'src/two.ts')).toMatchObject({
      code: 1,
      reason: 'the policy requires 2 reviewer approval(s) and it has 1 (alice)',
    });
    const refused = stageAndCommit(dir, 'src/two.ts', 'one reviewer, twice');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('it has 1 (alice)');

    attestOk(story, dir, 'approve', ['src/two.ts'], { key: 'bob' });
    expect(checkPath(dir, 'src/two.ts')).toMatchObject({
      code: 0,
      promoted: true,
      reason: 'approved by alice, bob and unchanged since',
      by: ['alice', 'bob'],
    });
    const committed = commit(story, dir, 'two reviewers');
    expect(committed.code, committed.stderr).toBe(0);
  });

  it('changing the policy needs the threshold in force: one approval is refused, two are accepted', () => {
    editPolicy(dir, (p) => {
      p.reviewThreshold = 1;
    });
    attestOk(story, dir, 'approve', [POLICY]);
    const refused = stageAndCommit(dir, POLICY, 'lower the threshold, one approval');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`NOT PROMOTED  ${POLICY}`);
    expect(refused.stderr).toContain('the policy requires 2 reviewer approval(s) and it has 1 (alice)');

    attestOk(story, dir, 'approve', [POLICY], { key: 'bob' });
    const committed = commit(story, dir, 'lower the threshold, two approvals');
    expect(committed.code, committed.stderr).toBe(0);
  });
});

describe('the trust root protects itself: at commit, at push and in CI', () => {
  let server: string;
  let work: string;

  beforeAll(() => {
    server = makeServer(story, 'governed.git');
    work = cloneInto(story, server, 'governed');
    adopt(story, work, ['src/**']);
    const first = gitRun(story, work, ATOMIC);
    if (first.code !== 0) throw new Error(`the adopting push was refused:\n${first.stderr}`);
  });

  /** The clone back in step with the server: branch and ledger as the server has them, work tree clean. */
  afterEach(() => {
    gitOk(story, work, [
      'fetch',
      '-q',
      'origin',
      '+main:refs/remotes/origin/main',
      `+${LEDGER_REF}:${LEDGER_REF}`,
    ]);
    gitOk(story, work, ['reset', '-q', '--hard', 'origin/main']);
    resetWorkTree(story, work);
  });

  function pushRefused(what: string): Run {
    const serverMain = refTip(story, server, 'main');
    const serverLedger = refTip(story, server, LEDGER_REF);
    const push = gitRun(story, work, ATOMIC);
    expect(push.code, `${what}: ${push.stderr}`).not.toBe(0);
    expect(refTip(story, server, 'main')).toBe(serverMain);
    expect(refTip(story, server, LEDGER_REF)).toBe(serverLedger);
    return push;
  }

  function pushAccepted(what: string): void {
    const push = gitRun(story, work, ATOMIC);
    expect(push.code, `${what}: ${push.stderr}`).toBe(0);
    expect(refTip(story, server, 'main')).toBe(gitOk(story, work, ['rev-parse', 'HEAD']));
    expect(refTip(story, server, LEDGER_REF)).toBe(ledgerTip(story, work));
  }

  it('a weakened policy (protect glob removed) without approval is refused at commit, push and by verify', () => {
    editPolicy(work, (p) => {
      p.protect = [];
    });
    const atCommit = stageAndCommit(work, POLICY, 'stop protecting src');
    expect(atCommit.code).not.toBe(0);
    expect(atCommit.stderr).toContain(`NOT PROMOTED  ${POLICY}`);
    expect(atCommit.stderr).toContain(`approved by ${OPERATOR} for another version`);

    // Past the local hook, and with it an unpromoted file the weakened policy no longer protects.
    expect(commit(story, work, 'stop protecting src', ['--no-verify']).code).toBe(0);
    const weakened = gitOk(story, work, ['rev-parse', 'HEAD']);
    writeFiles(work, { 'src/sneaked.ts': 'export const sneaked = 1;\n' });
    const sneak = stageAndCommit(work, 'src/sneaked.ts', 'unpromoted, under the weakened policy');
    expect(sneak.code, sneak.stderr).toBe(0);

    const atPush = pushRefused('weakened policy');
    expect(atPush.stderr).toMatch(
      new RegExp(`refused refs/heads/main ${weakened.slice(0, 12)} ${POLICY.replace(/\./g, '\\.')}: `),
    );
    expect(atPush.stderr).toMatch(/refused refs\/heads\/main [0-9a-f]{12} src\/sneaked\.ts: no verdict/);

    const inCi = cli(story, work, ['verify', '--rev', weakened]);
    expect(inCi.code).toBe(1);
    expect(inCi.stdout).toContain(`NOT PROMOTED  ${POLICY}`);
    expect(inCi.stdout).toContain('verify: FAILED');
  });

  it('control: the same weakening approved by the existing reviewer is accepted at commit, push and by verify', () => {
    editPolicy(work, (p) => {
      p.protect = [];
    });
    attestOk(story, work, 'approve', [POLICY]);
    const atCommit = stageAndCommit(work, POLICY, 'stop protecting src, approved');
    expect(atCommit.code, atCommit.stderr).toBe(0);
    pushAccepted('approved weakening');
    const inCi = cli(story, work, ['verify', '--rev', 'HEAD']);
    expect(inCi.code, inCi.stdout).toBe(0);
    expect(inCi.stdout).toContain('verify: ok');
  });

  it('a key added without approval, or approved only by itself, is refused at commit, push and by verify', () => {
    const [mallory] = registerKeys(story, work, [{ name: 'mallory' }]);
    const keyFile = mallory!.keyFile;
    gitOk(story, work, ['add', keyFile]);
    const unapproved = commit(story, work, 'trust mallory');
    expect(unapproved.code).not.toBe(0);
    expect(unapproved.stderr).toContain(`NOT PROMOTED  ${keyFile}`);

    // The work tree's trust root lists mallory, so attest signs; the trust root in force does not count it.
    attestOk(story, work, 'approve', [keyFile], { key: 'mallory' });
    const selfApproved = commit(story, work, 'trust mallory, self-approved');
    expect(selfApproved.code).not.toBe(0);
    expect(selfApproved.stderr).toContain(`NOT PROMOTED  ${keyFile}`);
    expect(selfApproved.stderr).toContain('not in the trust root');

    expect(commit(story, work, 'trust mallory, self-approved', ['--no-verify']).code).toBe(0);
    const atPush = pushRefused('self-approved key');
    expect(atPush.stderr).toMatch(
      new RegExp(
        `refused refs/heads/main [0-9a-f]{12} ${keyFile.replace(/\./g, '\\.')}: .*not in the trust root`,
      ),
    );

    // HEAD's own trust root lists mallory, so her approval would count there: CI judges the key file by the rules
    // in force before the commit that added it.
    const inCi = cli(story, work, ['verify', '--rev', 'HEAD']);
    expect(inCi.code, inCi.stdout).toBe(1);
    expect(inCi.stdout).toMatch(
      new RegExp(
        `NOT PROMOTED  ${keyFile.replace(/\./g, '\\.')}: changed in commit [0-9a-f]{12} without the approval`,
      ),
    );
    expect(inCi.stdout).toContain('verify: FAILED');
    // The same answer from a subdirectory with diff.relative set (which makes a `git log` run there leave out
    // .delegate-git/; the commands run at the top level, and their log is pinned with --no-relative as well).
    fs.mkdirSync(path.join(work, 'docs'), { recursive: true });
    gitOk(story, work, ['config', 'diff.relative', 'true']);
    const fromSubdir = cli(story, path.join(work, 'docs'), ['verify', '--rev', 'HEAD']);
    gitOk(story, work, ['config', '--unset', 'diff.relative']);
    expect(fromSubdir.code, fromSubdir.stdout).toBe(1);
    expect(fromSubdir.stdout).toContain('without the approval');

    // Control: an existing reviewer approving that key file afterwards settles it for CI.
    attestOk(story, work, 'approve', [keyFile]);
    const settled = cli(story, work, ['verify', '--rev', 'HEAD']);
    expect(settled.code, settled.stdout).toBe(0);
  });

  it('a key file in a case variant of the keys directory (the same directory where case is ignored) needs approval too', () => {
    const [trudy] = registerKeys(story, work, [{ name: 'trudy' }]);
    const variant = trudy!.keyFile.replace('.delegate-git/', '.DELEGATE-GIT/');
    fs.mkdirSync(path.dirname(path.join(work, variant)), { recursive: true });
    fs.renameSync(path.join(work, trudy!.keyFile), path.join(work, variant));
    gitOk(story, work, ['add', variant]);
    const atCommit = commit(story, work, 'trust trudy where case is ignored');
    expect(atCommit.code).not.toBe(0);
    expect(atCommit.stderr).toContain(`NOT PROMOTED  ${variant}`);
    expect(commit(story, work, 'trust trudy where case is ignored', ['--no-verify']).code).toBe(0);
    const atPush = pushRefused('key file in a case variant of the keys directory');
    expect(atPush.stderr).toContain(variant);
    const inCi = cli(story, work, ['verify', '--rev', 'HEAD']);
    expect(inCi.code, inCi.stdout).toBe(1);
    expect(inCi.stdout).toContain(`NOT PROMOTED  ${variant}`);

    // Control: approved by the existing reviewer, it goes through like any key file.
    attestOk(story, work, 'approve', [variant]);
    pushAccepted('key file in a case variant, approved');
    const settled = cli(story, work, ['verify', '--rev', 'HEAD']);
    expect(settled.code, settled.stdout).toBe(0);
  });

  it('deleting the policy and adopting afresh under a new key is judged by the rules before the deletion', () => {
    gitOk(story, work, ['rm', '-q', '-r', '.delegate-git']);
    expect(commit(story, work, 'drop delegate-git', ['--no-verify']).code).toBe(0);
    adoptByHand(story, work, ['--protect', 'src/**', '--key', 'usurper']);
    gitOk(story, work, ['add', '.delegate-git']);
    expect(commit(story, work, 're-adopt under another key', ['--no-verify']).code).toBe(0);

    const atPush = pushRefused('re-adopted policy');
    expect(atPush.stderr).toMatch(
      new RegExp(`refused refs/heads/main [0-9a-f]{12} ${POLICY.replace(/\./g, '\\.')}: `),
    );
    const inCi = cli(story, work, ['verify', '--rev', 'HEAD']);
    expect(inCi.code, inCi.stdout).toBe(1);
    expect(inCi.stdout).toMatch(
      new RegExp(
        `NOT PROMOTED  ${POLICY.replace(/\./g, '\\.')}: changed in commit [0-9a-f]{12} without the approval`,
      ),
    );
    expect(inCi.stdout).toContain('NOT PROMOTED  .delegate-git/keys/usurper.json');
  });

  it('control: a key approved by an existing reviewer is accepted at commit, push and by verify, and then counts', () => {
    const [oscar] = addKeys(story, work, [{ name: 'oscar' }]);
    expect(oscar!.keyFile).toBe(keyFileOf('oscar'));
    pushAccepted('key approved by alice');
    const inCi = cli(story, work, ['verify', '--rev', 'HEAD']);
    expect(inCi.code, inCi.stdout).toBe(0);

    // Now in force on the server, oscar's own approvals count there.
    writeFiles(work, { 'src/by-oscar.ts': 'export const byOscar = 1;\n' });
    attestOk(story, work, 'approve', ['src/by-oscar.ts'], { key: 'oscar' });
    const committed = stageAndCommit(work, 'src/by-oscar.ts', 'approved by oscar');
    expect(committed.code, committed.stderr).toBe(0);
    pushAccepted('content approved by the new reviewer');
  });

  it('a key directory change stays governed even when exclude names it (approved exclude, then an unapproved key)', () => {
    editPolicy(work, (p) => {
      p.exclude = ['.delegate-git/**'];
    });
    commitApproved(story, work, [POLICY], [OPERATOR], 'exclude the governance directory, approved');
    const [trent] = registerKeys(story, work, [{ name: 'trent' }]);
    const refused = stageAndCommit(work, trent!.keyFile, 'trust trent, unapproved');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`NOT PROMOTED  ${trent!.keyFile}`);

    const approved = attest(story, work, 'approve', [trent!.keyFile]);
    expect(approved.code, approved.stderr).toBe(0);
    const committed = commit(story, work, 'trust trent, approved');
    expect(committed.code, committed.stderr).toBe(0);
  });

  it('a branch rebased onto the default branch, or merging it in, is not judged again by its older trust root', () => {
    for (const branch of ['older-feature', 'older-merging']) {
      gitOk(story, work, ['checkout', '-q', '-B', branch, 'main']);
      writeFiles(work, { [`${branch}.md`]: 'a feature\n' });
      expect(stageAndCommit(work, `${branch}.md`, 'a feature').code).toBe(0);
      expect(gitRun(story, work, ['push', 'origin', branch]).code).toBe(0);
    }

    // Meanwhile the default branch trusts a new reviewer, who promotes a file there.
    gitOk(story, work, ['checkout', '-q', 'main']);
    const [carol] = registerKeys(story, work, [{ name: 'carol' }]);
    commitApproved(story, work, [carol!.keyFile], [OPERATOR], 'trust carol');
    pushAccepted('trust carol'); // her key is in force on the server before a record of hers arrives
    writeFiles(work, { 'src/by-carol.ts': 'export const carol = 1;\n' });
    attestOk(story, work, 'approve', ['src/by-carol.ts'], { key: 'carol' });
    expect(stageAndCommit(work, 'src/by-carol.ts', 'promoted by carol').code).toBe(0);
    pushAccepted('carol on main');

    // The branches' own trust root does not list carol; main accepted her record and the file it promotes already
    // (a merge's first-parent diff brings them again; a rebase replays only the branch's own commits).
    gitOk(story, work, ['checkout', '-q', 'older-feature']);
    gitOk(story, work, ['rebase', '-q', 'main']);
    gitOk(story, work, ['checkout', '-q', 'older-merging']);
    gitOk(story, work, ['merge', '-q', '--no-edit', 'main']);
    gitOk(story, work, ['checkout', '-q', 'main']);
    const rebased = gitRun(story, work, ['push', '--force', 'origin', 'older-feature']);
    expect(rebased.code, rebased.stderr).toBe(0);
    const merged = gitRun(story, work, ['push', 'origin', 'older-merging']);
    expect(merged.code, merged.stderr).toBe(0);
    // Control: what the branch brings of its own is still judged (here, a policy edit nobody approved).
    gitOk(story, work, ['checkout', '-q', 'older-merging']);
    editPolicy(work, (p) => {
      p.exclude = ['docs/**'];
    });
    gitOk(story, work, ['add', POLICY]);
    expect(commit(story, work, 'an unapproved policy edit on the branch', ['--no-verify']).code).toBe(0);
    gitOk(story, work, ['checkout', '-q', 'main']);
    const own = gitRun(story, work, ['push', 'origin', 'older-merging']);
    expect(own.code).not.toBe(0);
    expect(own.stderr).toContain(`refused refs/heads/older-merging`);
    expect(own.stderr).toContain(POLICY);
  });

  it('a rewind, or a merge whose first parent is the older commit, cannot put the earlier policy back at push', async () => {
    const before = gitOk(story, work, ['rev-parse', 'HEAD']);
    await new Promise((resolve) => setTimeout(resolve, 20));
    editPolicy(work, (p) => {
      p.protect = ['src/**', 'tests/**'];
    });
    attestOk(story, work, 'approve', [POLICY]);
    expect(stageAndCommit(work, POLICY, 'protect tests too').code).toBe(0);
    pushAccepted('tightened policy');
    const tightened = gitOk(story, work, ['rev-parse', 'HEAD']);

    // No commit's first-parent diff shows the policy going back: the change is between the branch's two tips.
    const rewind = gitRun(story, work, ['push', '--force', 'origin', `${before}:main`]);
    expect(rewind.code).not.toBe(0);
    expect(rewind.stderr).toMatch(
      new RegExp(
        `refused refs/heads/main ${before.slice(0, 12)} ${POLICY.replace(/\./g, '\\.')}: approved by ${OPERATOR} only before`,
      ),
    );
    gitOk(story, work, ['checkout', '-q', '--detach', before]);
    gitOk(story, work, [
      'merge',
      '-q',
      '-s',
      'ours',
      '--no-verify',
      '-m',
      'merge, keeping the older side',
      tightened,
    ]);
    const merged = gitRun(story, work, ['push', 'origin', 'HEAD:main']);
    expect(merged.code).not.toBe(0);
    expect(merged.stderr).toContain(
      `${POLICY}: approved by ${OPERATOR} only before the version it replaces was approved`,
    );
    expect(refTip(story, server, 'main')).toBe(tightened);

    // Control: the earlier policy approved again, now, goes back through the same merge.
    attestOk(story, work, 'approve', [POLICY]);
    const accepted = gitRun(story, work, ['push', '--atomic', 'origin', 'HEAD:main', LEDGER_REF]);
    expect(accepted.code, accepted.stderr).toBe(0);
    gitOk(story, work, ['checkout', '-q', '-B', 'main', 'HEAD']);
  });

  it('content a reviewer rejected since cannot come back by a rewind or a merge whose first parent is older', async () => {
    const file = 'src/back.ts';
    writeFiles(work, { [file]: 'export const v = 1;\n' });
    attestOk(story, work, 'approve', [file]);
    expect(stageAndCommit(work, file, 'v1').code).toBe(0);
    pushAccepted('v1');
    const v1 = gitOk(story, work, ['rev-parse', 'HEAD']);
    writeFiles(work, { [file]: 'export const v = 2;\n' });
    attestOk(story, work, 'approve', [file]);
    expect(stageAndCommit(work, file, 'v2').code).toBe(0);
    pushAccepted('v2');
    const v2 = gitOk(story, work, ['rev-parse', 'HEAD']);
    // v1 turns out to be wrong: the reviewer rejects it.
    await new Promise((resolve) => setTimeout(resolve, 20));
    writeFiles(work, { [file]: 'export const v = 1;\n' });
    attestOk(story, work, 'reject', [file]);
    gitOk(story, work, ['checkout', '--', file]);
    pushAccepted('the rejection');

    // No commit's first-parent diff brings v1 back: the merge has v1's tree, and v1 as its first parent.
    const merge = gitOk(story, work, ['commit-tree', '-p', v1, '-p', v2, '-m', 'merge main', `${v1}^{tree}`]);
    const merged = gitRun(story, work, ['push', 'origin', `${merge}:refs/heads/main`]);
    expect(merged.code).not.toBe(0);
    expect(merged.stderr).toContain(
      `refused refs/heads/main ${merge.slice(0, 12)} ${file}: rejected by ${OPERATOR}`,
    );
    const rewind = gitRun(story, work, ['push', '--force', 'origin', `${v1}:refs/heads/main`]);
    expect(rewind.code).not.toBe(0);
    expect(rewind.stderr).toContain(`${file}: rejected by ${OPERATOR}`);
    expect(refTip(story, server, 'main')).toBe(v2);

    // Control: approved again by the reviewer who rejected it, the same merge goes through.
    await new Promise((resolve) => setTimeout(resolve, 20));
    writeFiles(work, { [file]: 'export const v = 1;\n' });
    attestOk(story, work, 'approve', [file]);
    gitOk(story, work, ['checkout', '--', file]);
    const accepted = gitRun(story, work, [
      'push',
      '--atomic',
      'origin',
      `${merge}:refs/heads/main`,
      LEDGER_REF,
    ]);
    expect(accepted.code, accepted.stderr).toBe(0);
    gitOk(story, work, ['reset', '-q', '--hard', merge]);
  });

  it('going back to an earlier approved policy needs a new approval at commit, push and in CI; re-approved, it passes', async () => {
    const earlier = fs.readFileSync(path.join(work, POLICY), 'utf8');
    // The approval of the version in force must be later than the earlier version's (milliseconds apart at least).
    await new Promise((resolve) => setTimeout(resolve, 20));
    editPolicy(work, (p) => {
      p.protect = ['src/**', 'lib/**'];
    });
    attestOk(story, work, 'approve', [POLICY]);
    expect(stageAndCommit(work, POLICY, 'protect lib too').code).toBe(0);
    pushAccepted('tightened policy');

    // The earlier policy carries its old approval, made before the tightened one was approved.
    fs.writeFileSync(path.join(work, POLICY), earlier);
    const atCommit = stageAndCommit(work, POLICY, 'back to the earlier policy');
    expect(atCommit.code).not.toBe(0);
    expect(atCommit.stderr).toContain(`NOT PROMOTED  ${POLICY}`);
    expect(atCommit.stderr).toContain(
      `approved by ${OPERATOR} only before the version it replaces was approved: going back to earlier content needs a new approval (as does any change approved only before it)`,
    );
    expect(commit(story, work, 'back to the earlier policy', ['--no-verify']).code).toBe(0);
    const rolledBack = gitOk(story, work, ['rev-parse', 'HEAD']);
    const atPush = pushRefused('rolled-back policy');
    expect(atPush.stderr).toMatch(
      new RegExp(
        `refused refs/heads/main ${rolledBack.slice(0, 12)} ${POLICY.replace(/\./g, '\\.')}: approved by ${OPERATOR} only before`,
      ),
    );
    const inCi = cli(story, work, ['verify', '--rev', 'HEAD']);
    expect(inCi.code, inCi.stdout).toBe(1);
    expect(inCi.stdout).toContain(`NOT PROMOTED  ${POLICY}`);

    // Control: the reviewer approves the earlier policy again, now; the same commit passes everywhere.
    attestOk(story, work, 'approve', [POLICY]);
    pushAccepted('rolled-back policy, approved again');
    const settled = cli(story, work, ['verify', '--rev', 'HEAD']);
    expect(settled.code, settled.stdout).toBe(0);
  });

  it('going back twice: the policy that was replaced by going back cannot return on the approval it had before', async () => {
    // After the test above: the earlier policy came back on a new approval; the tightened one, which it replaced,
    // was approved before that. Reverting the revert brings the tightened one back on that older approval.
    const restored = gitOk(story, work, ['rev-parse', 'HEAD']);
    const tightened = gitOk(story, work, ['rev-list', '-1', 'HEAD~1', '--', POLICY]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    gitOk(story, work, ['checkout', tightened, '--', POLICY]);
    const atCommit = stageAndCommit(work, POLICY, 'the tightened policy again');
    expect(atCommit.code).not.toBe(0);
    expect(atCommit.stderr).toContain(
      `approved by ${OPERATOR} only before the version it replaces was approved: going back to earlier content needs a new approval (as does any change approved only before it)`,
    );
    expect(commit(story, work, 'the tightened policy again', ['--no-verify']).code).toBe(0);
    const again = gitOk(story, work, ['rev-parse', 'HEAD']);
    const atPush = pushRefused('the tightened policy again, on its old approval');
    expect(atPush.stderr).toContain(`refused refs/heads/main ${again.slice(0, 12)} ${POLICY}: approved by`);
    for (const since of [[], ['--since', restored]]) {
      const inCi = cli(story, work, ['verify', '--rev', 'HEAD', ...since]);
      expect(inCi.code, inCi.stdout).toBe(1);
      expect(inCi.stdout).toContain('only before the version it replaces was approved');
    }

    // Control: approved again now, it passes everywhere; and the earlier policy goes back once more the same way.
    attestOk(story, work, 'approve', [POLICY]);
    pushAccepted('the tightened policy again, approved again');
    expect(cli(story, work, ['verify', '--rev', 'HEAD']).code).toBe(0);
    expect(cli(story, work, ['verify', '--rev', 'HEAD', '--since', restored]).code).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 20));
    gitOk(story, work, ['checkout', restored, '--', POLICY]);
    attestOk(story, work, 'approve', [POLICY]);
    expect(stageAndCommit(work, POLICY, 'the earlier policy once more').code).toBe(0);
    pushAccepted('the earlier policy once more');
    const settled = cli(story, work, ['verify', '--rev', 'HEAD']);
    expect(settled.code, settled.stdout).toBe(0);
  });

  it('a merge whose first parent is the adoption commit does not restart the policy’s history: going back twice stays refused', () => {
    // After the test above: the earlier policy is back on its newest approval; the tightened one was approved before.
    const restored = gitOk(story, work, ['rev-parse', 'HEAD']);
    const tightened = gitOk(story, work, ['rev-list', '-1', 'HEAD~1', '--', POLICY]);
    const adoption = gitOk(story, work, ['rev-list', '--max-parents=0', 'HEAD']);
    // The merge holds main's tree as it is, so it passes; its first-parent diff shows the policy as added.
    const merge = gitOk(story, work, [
      'commit-tree',
      '-p',
      adoption,
      '-p',
      'HEAD',
      '-m',
      "Merge branch 'main'",
      'HEAD^{tree}',
    ]);
    gitOk(story, work, ['reset', '-q', '--hard', merge]);
    pushAccepted('a merge with the adoption commit as its first parent');
    gitOk(story, work, ['checkout', tightened, '--', POLICY]);
    expect(commit(story, work, 'the tightened policy, on its old approval', ['--no-verify']).code).toBe(0);
    const atPush = pushRefused('the tightened policy, on its old approval, after the merge');
    expect(atPush.stderr).toContain(`${POLICY}: approved by`);
    expect(atPush.stderr).toContain('only before the version it replaces was approved');
    for (const since of [[], ['--since', merge], ['--since', restored]]) {
      const inCi = cli(story, work, ['verify', '--rev', 'HEAD', ...since]);
      expect(inCi.code, `${since.join(' ')}: ${inCi.stdout}`).toBe(1);
      expect(inCi.stdout).toContain('only before the version it replaces was approved');
    }
    gitOk(story, work, ['reset', '-q', '--hard', merge]);
  });

  // Last in this block: it leaves the keys in trust/.
  it('moving the keys directory to one filled before judges every key file there, at commit, push and in CI', () => {
    // Filled while nothing governed it: the hook lets it through.
    const [zed] = registerKeys(story, work, [{ name: 'zed' }]);
    const moved = (file: string) => file.replace('.delegate-git/keys/', 'trust/');
    fs.mkdirSync(path.join(work, 'trust'), { recursive: true });
    fs.renameSync(path.join(work, zed!.keyFile), path.join(work, moved(zed!.keyFile)));
    const alice = `.delegate-git/keys/${OPERATOR}.json`;
    // Every key in force moves along (a move cannot leave one behind); only zed's file is new there.
    const keysInForce = fs
      .readdirSync(path.join(work, '.delegate-git/keys'))
      .map((n) => `.delegate-git/keys/${n}`);
    for (const key of keysInForce) fs.copyFileSync(path.join(work, key), path.join(work, moved(key)));
    gitOk(story, work, ['add', 'trust']);
    expect(commit(story, work, 'some files in trust/').code).toBe(0);

    // One approved line of policy makes trust/ the keys directory, and with it zed's file.
    editPolicy(work, (p) => {
      p.keysDir = 'trust';
    });
    attestOk(story, work, 'approve', [POLICY, ...keysInForce.map(moved)]);
    gitOk(story, work, ['add', POLICY]);
    const atCommit = commit(story, work, 'keys now in trust/');
    expect(atCommit.code).not.toBe(0);
    expect(atCommit.stderr).toContain(`NOT PROMOTED  ${moved(zed!.keyFile)}`);
    expect(commit(story, work, 'keys now in trust/', ['--no-verify']).code).toBe(0);
    const atPush = pushRefused('keys directory moved onto an unapproved key');
    expect(atPush.stderr).toContain(moved(zed!.keyFile));
    expect(atPush.stderr).not.toContain(`${moved(alice)}:`); // approved: only zed is refused
    // In CI, even once zed approves its own key file (the revision's trust root lists zed; the rules before the
    // move, which judge it, do not). In a copy: a line signed by zed would stay in this clone's ledger.
    const selfApproved = copyWorkTree(story, work, 'moved-keys-self-approved');
    attestOk(story, selfApproved, 'approve', [moved(zed!.keyFile)], { key: 'zed' });
    const inCi = cli(story, selfApproved, ['verify', '--rev', 'HEAD']);
    expect(inCi.code, inCi.stdout).toBe(1);
    expect(inCi.stdout).toContain(`NOT PROMOTED  ${moved(zed!.keyFile)}: changed in commit`);

    // Control: the existing reviewer approves zed's key file too; the same commit goes through.
    attestOk(story, work, 'approve', [moved(zed!.keyFile)]);
    pushAccepted('keys directory moved, every key approved');
    // (The keys earlier tests added stayed in .delegate-git/keys, so their records no longer count here: only the
    // moved key files are asked about.)
    const settled = cli(story, work, ['verify', '--rev', 'HEAD']);
    expect(settled.stdout).toContain('HEAD (');
    expect(settled.stdout).not.toContain('NOT PROMOTED  trust/');
  });
});

describe('attest and check judge the policy and key files by the rules in force, as the commit hook does', () => {
  it('a threshold raised in the work tree: attest and check say promoted, and the commit is accepted (admin audit a04); control: a file the new rules govern is judged by them', () => {
    const dir = copyWorkTree(story, template, 'rules-in-force');
    editPolicy(dir, (p) => {
      p.reviewThreshold = 2;
      p.requireReview = true;
    });
    writeFiles(dir, { 'src/r.ts': 'export const r = 1;\n' });
    const approved = attestOk(story, dir, 'approve', [POLICY, 'src/r.ts']);
    expect(approved.stdout).toContain(
      `${POLICY} now: promoted (approved by ${OPERATOR} and unchanged since)`,
    );
    // src/r.ts is judged by the rules the change brings (two reviewers), as the hook judges it.
    expect(approved.stdout).toMatch(
      /src\/r\.ts now: not promoted \(the policy requires 2 reviewer approval\(s\)/,
    );
    const checked = cli(story, dir, ['check', '--path', POLICY]);
    expect(checked.code, checked.stdout).toBe(0);
    expect(checked.stdout).toMatch(/^PROMOTED +\.delegate-git\/policy\.json$/m);
    gitOk(story, dir, ['add', POLICY]);
    const committed = commit(story, dir, 'two reviewers from now on');
    expect(committed.code, committed.stderr).toBe(0);
  });
});
