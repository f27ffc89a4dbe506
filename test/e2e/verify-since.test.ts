/**
 * `verify --since <commit verified last>`: the revision judged as a push onto that commit, as pre-receive judges it.
 * Without it, verify judges each policy or key change by its own parent's rules and cannot tell the protected line
 * from a branch merged into it: a branch from before a revocation brings in a key the revoked one approved (refused
 * with --since, passing without: the gap it closes), and the default branch merged into a feature branch is judged by
 * that branch's older trust root (passing with --since, refused without). Each has a control.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adopt,
  cli,
  cliOk,
  commit,
  commitBeforeAdoption,
  copyWorkTree,
  gitOk,
  makeStory,
  makeWorkTree,
  OPERATOR,
  type Story,
  writeFiles,
} from '../support/cli-story.js';
import { attestOk, commitApproved, editPolicy, registerKeys } from '../support/reviewers.js';

const POLICY = '.delegate-git/policy.json';

let story: Story;
/** A commit from before the adoption, then the adoption (protect src/**), bob trusted as a reviewer. */
let template: string;
let beforeAdoption: string;

beforeAll(() => {
  story = makeStory();
  template = makeWorkTree(story, 'template');
  beforeAdoption = commitBeforeAdoption(story, template);
  adopt(story, template, ['src/**']);
  const [bob] = registerKeys(story, template, [{ name: 'bob' }]);
  commitApproved(story, template, [bob!.keyFile], [OPERATOR], 'trust bob');
});

afterAll(() => story.cleanup());

function verify(dir: string, since?: string) {
  return cli(story, dir, ['verify', '--rev', 'HEAD', ...(since ? ['--since', since] : [])]);
}

function head(dir: string): string {
  return gitOk(story, dir, ['rev-parse', 'HEAD']);
}

function commitFile(dir: string, file: string, text: string, by: string, extra: string[] = []): string {
  writeFiles(dir, { [file]: text });
  attestOk(story, dir, 'approve', [file], { key: by });
  gitOk(story, dir, ['add', file]);
  const made = commit(story, dir, `add ${file}`, extra);
  expect(made.code, made.stderr).toBe(0);
  return head(dir);
}

describe('verify --since the commit verified last', () => {
  it('a branch from before a revocation cannot bring in a key the revoked one approved; a branch that keeps to the rules passes', () => {
    const work = copyWorkTree(story, template, 'revoked');
    gitOk(story, work, ['branch', 'old']);
    cliOk(story, work, ['keys', 'revoke', 'bob']);
    commitApproved(story, work, ['.delegate-git/keys/bob.json'], [OPERATOR], 'revoke bob');
    const verified = head(work);
    const atVerified = verify(work, verified);
    expect(atVerified.code, atVerified.stdout).toBe(0);
    expect(atVerified.stdout).toContain(
      `since ${verified.slice(0, 12)}: 0 commit(s) judged as a push onto it`,
    );
    const good = copyWorkTree(story, work, 'revoked-control'); // for the control, before mallory signs anything

    // On the old branch bob is still trusted: he approves mallory's key, mallory approves her own and her code.
    gitOk(story, work, ['checkout', '-q', 'old']);
    const [mallory] = registerKeys(story, work, [{ name: 'mallory' }]);
    commitApproved(story, work, [mallory!.keyFile], ['bob', 'mallory'], 'trust mallory');
    const trusting = head(work);
    commitFile(work, 'src/evil.ts', 'export const evil = 1;\n', 'mallory');
    // Brought up to date with main (first parent: the old branch), it is a fast-forward of the verified commit.
    gitOk(story, work, ['merge', '-q', '--no-edit', '--no-verify', 'main']);

    // The gap --since closes: judged by each commit's parent, bob approved mallory while he was trusted.
    const walked = verify(work);
    expect(walked.code, walked.stdout).toBe(0);

    const refused = verify(work, verified);
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stdout).toContain(`REFUSED SINCE commit ${trusting.slice(0, 12)} ${mallory!.keyFile}:`);
    expect(refused.stdout).toContain('src/evil.ts:');
    expect(refused.stdout).toContain('refusal(s)');
    const json = JSON.parse(
      cli(story, work, ['verify', '--rev', 'HEAD', '--since', verified, '--json']).stdout,
    ) as { exitCode: number; since: { commit: string; commits: number; refusals: Array<{ path?: string }> } };
    expect(json.exitCode).toBe(1);
    expect(json.since.commit).toBe(verified);
    expect(json.since.commits).toBe(3);
    expect(json.since.refusals.map((r) => r.path)).toEqual(
      expect.arrayContaining([mallory!.keyFile, 'src/evil.ts']),
    );
    const markdown = cli(story, work, ['verify', '--rev', 'HEAD', '--since', verified, '--markdown']).stdout;
    expect(markdown).toContain(
      // The path as code, as in the entries above it (not as text, whose escapes would show).
      `- refused since the commit verified last: commit ${trusting.slice(0, 12)} \`${mallory!.keyFile}\`:`,
    );
    expect(markdown).toContain(
      `| since \`${verified.slice(0, 12)}\` | 3 commit(s) judged as a push onto it, `,
    );
    // Under GitHub Actions each refusal is also an annotation on its file.
    const annotated = cli(story, work, ['verify', '--rev', 'HEAD', '--since', verified], {
      ...story.env,
      GITHUB_ACTIONS: 'true',
    }).stdout;
    expect(annotated).toContain(`::error file=src/evil.ts::commit `);

    // Control: from the verified commit, a change approved under its rules.
    commitFile(good, 'src/good.ts', 'export const good = 1;\n', OPERATOR);
    const passed = verify(good, verified);
    expect(passed.code, passed.stdout).toBe(0);
    expect(passed.stdout).toContain(
      `since ${verified.slice(0, 12)}: 1 commit(s) judged as a push onto it, none refused`,
    );
  });

  it('the default branch merged into a feature branch is judged by its own rules, not the feature branch’s older trust root', async () => {
    const work = copyWorkTree(story, template, 'update-branch');
    gitOk(story, work, ['checkout', '-q', '-b', 'feature']);
    commitFile(work, 'src/feature.ts', 'export const feature = 1;\n', OPERATOR);

    // main trusts carol, and carol alone approves the next policy: a key the feature branch does not know.
    gitOk(story, work, ['checkout', '-q', 'main']);
    const [carol] = registerKeys(story, work, [{ name: 'carol' }]);
    commitApproved(story, work, [carol!.keyFile], [OPERATOR], 'trust carol');
    await new Promise((resolve) => setTimeout(resolve, 20)); // approvals later than the policy's first one
    editPolicy(work, (p) => {
      p.protect = [...p.protect, 'lib/**'];
    });
    commitApproved(story, work, [POLICY], ['carol'], 'protect lib/** too');
    const verified = head(work);
    expect(verify(work, verified).code).toBe(0);

    // GitHub's "Update branch": main merged into the feature branch, first parent the feature branch.
    gitOk(story, work, ['checkout', '-q', 'feature']);
    gitOk(story, work, ['merge', '-q', '--no-edit', '--no-verify', 'main']);
    const walked = verify(work); // the false refusal --since ends: carol is unknown to the feature branch's rules
    expect(walked.code, walked.stdout).toBe(1);
    expect(walked.stdout).toContain(`NOT PROMOTED  ${POLICY}`);

    const shared = gitOk(story, work, ['merge-base', 'HEAD', verified]);
    expect(shared).toBe(verified);
    const passed = verify(work, shared);
    expect(passed.code, passed.stdout).toBe(0);

    // The pull request's merge (first parent: main) passes too, and an unpromoted file on the branch does not.
    gitOk(story, work, ['checkout', '-q', '--detach', verified]);
    gitOk(story, work, ['merge', '-q', '--no-ff', '--no-edit', '--no-verify', 'feature']);
    expect(verify(work, verified).code).toBe(0);
    gitOk(story, work, ['checkout', '-q', 'feature']);
    writeFiles(work, { 'src/unjudged.ts': 'export const x = 1;\n' });
    gitOk(story, work, ['add', 'src/unjudged.ts']);
    expect(commit(story, work, 'unjudged', ['--no-verify']).code).toBe(0);
    gitOk(story, work, ['checkout', '-q', '--detach', verified]);
    gitOk(story, work, ['merge', '-q', '--no-ff', '--no-edit', '--no-verify', 'feature']);
    const refused = verify(work, verified);
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stdout).toMatch(/^REFUSED SINCE commit [0-9a-f]{12} src\/unjudged\.ts: no verdict/m);
  });

  it('what an "Update branch" merge took from the default branch is not judged again by rules that replaced it since; kept at the tip, it is', async () => {
    const work = copyWorkTree(story, template, 'updated-then-rejected');
    const v1 = 'export const b = 1;\n';
    commitFile(work, 'src/b.ts', v1, OPERATOR);
    gitOk(story, work, ['checkout', '-q', '-b', 'feature', 'HEAD~1']);
    commitFile(work, 'src/feature.ts', 'export const feature = 1;\n', OPERATOR);
    gitOk(story, work, ['merge', '-q', '--no-edit', '--no-verify', 'main']); // the feature branch now holds v1

    // main moves on: b.ts becomes v2, and then the reviewer rejects v1.
    gitOk(story, work, ['checkout', '-q', 'main']);
    commitFile(work, 'src/b.ts', 'export const b = 2;\n', OPERATOR);
    await new Promise((resolve) => setTimeout(resolve, 20));
    writeFiles(work, { 'src/b.ts': v1 });
    attestOk(story, work, 'reject', ['src/b.ts']);
    gitOk(story, work, ['checkout', '--', 'src/b.ts']);
    const verified = head(work);
    expect(verify(work, verified).code).toBe(0);

    // The pull request's merge: the tip holds v2; v1 is only in the feature branch's update, taken from main.
    gitOk(story, work, ['checkout', '-q', '--detach', verified]);
    gitOk(story, work, ['merge', '-q', '--no-ff', '--no-edit', '--no-verify', 'feature']);
    const merged = verify(work, verified);
    expect(merged.code, merged.stdout).toBe(0);

    // Control: the same merge keeping v1 at the tip is refused, by the tips' difference as by the tree.
    gitOk(story, work, ['checkout', 'feature', '--', 'src/b.ts']);
    expect(commit(story, work, 'keep v1', ['--no-verify', '--amend', '--no-edit']).code).toBe(0);
    const kept = verify(work, verified);
    expect(kept.code, kept.stdout).toBe(1);
    expect(kept.stdout).toMatch(/^REFUSED SINCE commit [0-9a-f]{12} src\/b\.ts: rejected by alice/m);
  });

  it('a revision that does not contain the commit verified last is a problem; one from before the adoption judges the whole history', () => {
    const work = copyWorkTree(story, template, 'rewritten');
    const verified = commitFile(work, 'src/a.ts', 'export const a = 1;\n', OPERATOR);
    gitOk(story, work, ['reset', '-q', '--hard', 'HEAD~1']); // the protected branch rewritten past it
    commitFile(work, 'src/b.ts', 'export const b = 1;\n', OPERATOR);
    const control = verify(work);
    expect(control.code, control.stdout).toBe(0);
    const rewritten = verify(work, verified);
    expect(rewritten.code, rewritten.stdout).toBe(1);
    expect(rewritten.stdout).toContain(
      `NOT FROM VERIFIED  the revision does not contain ${verified.slice(0, 12)}, the commit verified last`,
    );

    const fromStart = verify(work, beforeAdoption);
    expect(fromStart.code, fromStart.stdout).toBe(0);
    expect(fromStart.stdout).toContain(
      'holds no policy yet (from before the adoption): the whole history was judged',
    );

    const typo = verify(work, 'no-such-commit');
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('no-such-commit');
    const tree = gitOk(story, work, ['rev-parse', 'HEAD^{tree}']); // a full id of something here, not a commit
    const notACommit = verify(work, tree);
    expect(notACommit.code).toBe(2);
    expect(notACommit.stderr).toContain(`"${tree}" names a tree, not a commit`);

    // A pull request's merge made before the protected branch moved on is older than the commit verified last.
    const older = head(work);
    gitOk(story, work, ['checkout', '-q', '-b', 'pr']);
    commitFile(work, 'src/pr.ts', 'export const pr = 1;\n', OPERATOR);
    gitOk(story, work, ['checkout', '-q', 'main']);
    const newer = commitFile(work, 'src/c.ts', 'export const c = 1;\n', OPERATOR);
    gitOk(story, work, ['checkout', '-q', '--detach', older]);
    gitOk(story, work, ['merge', '-q', '--no-ff', '--no-edit', '--no-verify', 'pr']);
    const stale = verify(work, newer);
    expect(stale.code, stale.stdout).toBe(1);
    expect(stale.stdout).toContain(`it is older (its first parent ${older.slice(0, 12)} comes before it)`);
    expect(verify(work, older).code).toBe(0); // control: from the commit it was made on
  });
});
