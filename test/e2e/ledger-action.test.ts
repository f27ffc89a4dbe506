/**
 * The GitHub Action's verify step (ledger-tools/verify.sh), run as the action runs it: in a plain clone, which has no
 * ledger until the step fetches it, with the inputs in the environment and the step output in $GITHUB_OUTPUT.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adopt,
  cliOk,
  cloneInto,
  gitOk,
  LEDGER,
  makeServer,
  makeStory,
  operatorEnv,
  refTip,
  type Story,
  storyCli,
  writeFiles,
} from '../support/cli-story.js';
import { repoRoot } from '../support/paths.js';
import { addKeys, attestOk, revokeKey } from '../support/reviewers.js';

const action = path.join(repoRoot, 'ledger-tools');

let story: Story;
beforeAll(() => {
  story = makeStory();
});
afterAll(() => story.cleanup());

interface Step {
  code: number;
  stdout: string;
  stderr: string;
  output: string;
}

/**
 * Runs verify.sh in `dir` as the action does; `baseline` and `verified`: the ledger tip and the commit remembered by
 * an earlier run.
 */
function verifyStep(
  dir: string,
  env: Record<string, string> = {},
  baseline?: string,
  verified?: string,
): Step {
  const output = path.join(story.root, `output-${Math.random().toString(36).slice(2)}`);
  fs.writeFileSync(output, '');
  const remembered = (value: string | undefined) => {
    const file = path.join(story.root, `remembered-${Math.random().toString(36).slice(2)}`);
    if (value !== undefined) fs.writeFileSync(file, `${value}\n`);
    return file;
  };
  const run = spawnSync('sh', [path.join(action, 'verify.sh')], {
    cwd: dir,
    env: {
      ...story.env,
      DELEGATE_GIT_CLI: `${process.execPath} ${storyCli}`,
      DELEGATE_GIT_BASELINE: remembered(baseline),
      DELEGATE_GIT_VERIFIED: remembered(verified),
      GITHUB_OUTPUT: output,
      ...env,
    },
    encoding: 'utf8',
  });
  return {
    code: run.status ?? 128,
    stdout: run.stdout,
    stderr: run.stderr,
    output: fs.readFileSync(output, 'utf8'),
  };
}

/** A remote without a server hook (as on github.com), and a clone that adopted delegate-git and pushed its ledger. */
function hostedPair(name: string): { remote: string; work: string } {
  const remote = makeServer(story, `${name}.git`, { hook: false });
  const work = cloneInto(story, remote, `${name}-work`);
  adopt(story, work, ['src/**']);
  writeFiles(work, { 'src/a.ts': 'export const a = 1;\n' });
  cliOk(story, work, ['attest', '--approve', 'src/a.ts', '--yes']);
  gitOk(story, work, ['add', 'src/a.ts']);
  gitOk(story, work, ['commit', '-q', '-m', 'a promoted file']);
  gitOk(story, work, ['push', '-q', 'origin', 'main', LEDGER]);
  return { remote, work };
}

describe('the ledger action', () => {
  it('fetches the ledger a plain clone lacks, verifies it, and reports the verified tip', () => {
    const { remote, work } = hostedPair('plain');
    const ci = cloneInto(story, remote, 'plain-ci');
    expect(refTip(story, ci, LEDGER)).toBeNull();
    const step = verifyStep(ci);
    expect(step.code, step.stdout + step.stderr).toBe(0);
    expect(step.stdout).toContain('verify: ok');
    expect(step.output).toBe(`ledger-tip=${refTip(story, work, LEDGER)}\n`);
    expect(refTip(story, ci, LEDGER)).toBe(refTip(story, work, LEDGER));
  });

  it('fails, before verify runs, while the remote holds a replace ref (rt57 f01); control: deleted there, it passes', () => {
    const { remote, work } = hostedPair('replaced');
    const blob = gitOk(story, work, ['rev-parse', 'HEAD:src/a.ts']);
    const other = spawnSync('git', ['hash-object', '-w', '--stdin'], {
      cwd: work,
      env: story.env,
      input: 'export const a = "never promoted";\n',
    });
    gitOk(story, work, ['replace', blob, other.stdout.toString().trim()]);
    // A host without the hook takes it, and a mirror clone applies it to every checkout.
    gitOk(story, work, ['push', '-q', 'origin', `refs/replace/${blob}`]);
    const mirror = path.join(story.root, 'replaced-mirror');
    gitOk(story, story.root, ['clone', '-q', '--mirror', `file://${remote}`, mirror]);
    expect(gitOk(story, mirror, ['show', 'main:src/a.ts'])).toContain('never promoted');

    const ci = cloneInto(story, remote, 'replaced-ci');
    const refused = verifyStep(ci);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toContain(
      `::error::origin holds replace refs (1, the first refs/replace/${blob})`,
    );
    expect(refused.stdout).not.toContain('verify: ok');

    gitOk(story, work, ['push', '-q', 'origin', `:refs/replace/${blob}`]);
    const step = verifyStep(ci);
    expect(step.code, step.stdout + step.stderr).toBe(0);
    expect(step.stdout).toContain('verify: ok');
  });

  it("in a shallow clone (actions/checkout's default) fetches the whole history first; verify alone refuses to answer there", () => {
    const { remote, work } = hostedPair('shallow');
    const shallowClone = (name: string) => {
      const dir = path.join(story.root, name);
      gitOk(story, story.root, ['clone', '-q', '--depth', '1', `file://${remote}`, dir]);
      expect(gitOk(story, dir, ['rev-parse', '--is-shallow-repository'])).toBe('true');
      return dir;
    };
    const alone = shallowClone('shallow-verify');
    gitOk(story, alone, ['fetch', '-q', 'origin', `+${LEDGER}:${LEDGER}`]);
    const refused = spawnSync(process.execPath, [storyCli, 'verify'], {
      cwd: alone,
      env: story.env,
      encoding: 'utf8',
    });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('This clone is shallow');
    expect(refused.stderr).toContain('git fetch --unshallow');

    const ci = shallowClone('shallow-ci');
    const step = verifyStep(ci);
    expect(step.code, step.stdout + step.stderr).toBe(0);
    expect(step.stdout).toContain('verify: ok');
    expect(gitOk(story, ci, ['rev-parse', '--is-shallow-repository'])).toBe('false');
    expect(step.output).toBe(`ledger-tip=${refTip(story, work, LEDGER)}\n`);
  });

  it('fails a ledger rewritten since the remembered baseline; the same ledger against its own tip passes', () => {
    const { remote, work } = hostedPair('rewritten');
    const ci = cloneInto(story, remote, 'rewritten-ci');
    const verified = refTip(story, work, LEDGER)!;
    expect(verifyStep(ci, {}, verified).code).toBe(0);

    // Without a server hook, a force-push can replace the ledger with one that lacks the last record.
    gitOk(story, work, ['update-ref', LEDGER, `${verified}^`]);
    gitOk(story, work, ['push', '-q', '--force', 'origin', LEDGER]);
    const step = verifyStep(ci, {}, verified);
    expect(step.code).toBe(1);
    expect(step.stdout).toContain('verify: FAILED');
    expect(step.stdout).toContain(
      `LEDGER REWRITTEN  the baseline ${verified.slice(0, 12)} is not an ancestor`,
    );
    expect(step.output).toBe(`ledger-tip=${refTip(story, work, LEDGER)}\n`);
  });

  it('judges what the protected branch adds since the commit verified last, and fails it once rewritten past that commit', () => {
    const { remote, work } = hostedPair('since');
    const verified = gitOk(story, work, ['rev-parse', 'HEAD']);
    writeFiles(work, { 'src/b.ts': 'export const b = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/b.ts', '--yes']);
    gitOk(story, work, ['add', 'src/b.ts']);
    gitOk(story, work, ['commit', '-q', '-m', 'b']);
    gitOk(story, work, ['push', '-q', 'origin', 'main', LEDGER]);
    const ci = cloneInto(story, remote, 'since-ci');
    const step = verifyStep(ci, {}, undefined, verified);
    expect(step.code, step.stdout + step.stderr).toBe(0);
    expect(step.stdout).toContain(
      `since ${verified.slice(0, 12)}: 1 commit(s) judged as a push onto it, none refused`,
    );

    // A feature branch from before that commit is judged from where it left the line; as the protected branch it
    // would have to contain it.
    gitOk(story, work, ['push', '-q', 'origin', `${verified}^:refs/heads/feature`]);
    const feature = cloneInto(story, remote, 'since-feature-ci');
    gitOk(story, feature, ['checkout', '-q', 'feature']);
    const shared = gitOk(story, feature, ['rev-parse', 'HEAD']);
    const other = verifyStep(feature, { DELEGATE_GIT_PROTECTED: 'false' }, undefined, verified);
    expect(other.code, other.stdout + other.stderr).toBe(0);
    expect(other.stdout).toContain(`since ${shared.slice(0, 12)}: 0 commit(s)`);
    // The protected branch's revocations bind the other branch (as the server judges it); a protected run's own.
    const said = (protectedRun: string) =>
      verifyStep(
        feature,
        { DELEGATE_GIT_PROTECTED: protectedRun, DELEGATE_GIT_CLI: 'echo' },
        undefined,
        verified,
      ).stdout;
    expect(said('false')).toContain(`verify --rev HEAD --revocations-of ${verified} --since ${shared}`);
    expect(said('true')).not.toContain('--revocations-of');
    const strict = verifyStep(feature, {}, undefined, verified);
    expect(strict.code).toBe(1);
    expect(strict.stdout).toContain(
      `NOT FROM VERIFIED  the revision does not contain ${verified.slice(0, 12)}`,
    );

    // Without a server hook, main can be force-pushed to a history without the verified commit.
    gitOk(story, work, ['push', '-q', '--force', 'origin', `${verified}^:refs/heads/main`]);
    const fresh = path.join(story.root, 'since-rewritten-ci'); // over file://, so only reachable objects come
    gitOk(story, story.root, ['clone', '-q', `file://${remote}`, fresh]);
    const rewritten = verifyStep(fresh, {}, undefined, verified);
    expect(rewritten.code).toBe(1);
    expect(rewritten.stdout).toContain(
      `the commit verified last, ${verified.slice(0, 12)}, is not in this repository`,
    );
  });

  it("fails a branch made before the default branch revoked a key, for content only that key approved (red team r01); control: another reviewer's approval passes there", () => {
    const { remote, work } = hostedPair('revoked-there');
    addKeys(story, work, [{ name: 'bob' }]);
    gitOk(story, work, ['push', '-q', 'origin', 'main', LEDGER]);
    gitOk(story, work, ['push', '-q', 'origin', 'main:refs/heads/release-1']);
    writeFiles(work, { 'src/r.ts': "export const r = 'bob';\n" });
    attestOk(story, work, 'approve', ['src/r.ts'], { key: 'bob' });
    fs.rmSync(path.join(work, 'src/r.ts'));
    revokeKey(story, work, 'bob');
    gitOk(story, work, ['push', '-q', 'origin', 'main', LEDGER]);
    // A host without the hook (github.com) takes what only bob approved onto the old branch.
    gitOk(story, work, ['checkout', '-q', '-b', 'rel', 'origin/release-1']);
    writeFiles(work, { 'src/r.ts': "export const r = 'bob';\n" });
    gitOk(story, work, ['add', 'src/r.ts']);
    gitOk(story, work, ['commit', '-q', '--no-verify', '-m', 'what bob approved']);
    gitOk(story, work, ['push', '-q', 'origin', 'rel:release-1']);

    const ci = cloneInto(story, remote, 'revoked-there-ci');
    gitOk(story, ci, ['checkout', '-q', 'release-1']);
    const run = () =>
      verifyStep(ci, { DELEGATE_GIT_PROTECTED: 'false', DELEGATE_GIT_DEFAULT_BRANCH: 'main' });
    const refused = run();
    expect(refused.code, refused.stdout + refused.stderr).toBe(1);
    expect(refused.stdout).toContain("signer bob's key was revoked");

    attestOk(story, work, 'approve', ['src/r.ts']);
    gitOk(story, work, ['push', '-q', 'origin', LEDGER]);
    const approved = run();
    expect(approved.code, approved.stdout + approved.stderr).toBe(0);
    gitOk(story, work, ['checkout', '-q', 'main']);
  });

  /** A pull request from `base` whose merge is pushed as refs/pull/<n>/merge (what actions/checkout checks out). */
  function pullRequest(remote: string, work: string, n: number, change: () => void): string {
    const base = gitOk(story, work, ['rev-parse', 'HEAD']);
    gitOk(story, work, ['checkout', '-q', '-b', `pr-${n}`]);
    change();
    gitOk(story, work, ['checkout', '-q', 'main']);
    gitOk(story, work, ['merge', '-q', '--no-ff', `pr-${n}`, '-m', `Merge pull request ${n}`]);
    gitOk(story, work, ['push', '-q', 'origin', `HEAD:refs/pull/${n}/merge`, LEDGER]);
    gitOk(story, work, ['reset', '-q', '--hard', base]);
    const ci = cloneInto(story, remote, `${path.basename(remote)}-pull-${n}`);
    gitOk(story, ci, ['fetch', '-q', 'origin', `refs/pull/${n}/merge`]);
    gitOk(story, ci, ['checkout', '-q', 'FETCH_HEAD']);
    return ci;
  }

  it("judges a pull request's merge from its base, which the event names: a reviewer added and used in the same pull request fails there, as on the default branch once merged (rt47 F01)", () => {
    const { remote, work } = hostedPair('pull-request');
    const base = gitOk(story, work, ['rev-parse', 'HEAD']);
    const ci = pullRequest(remote, work, 1, () => {
      // bob's private key in an XDG home of his own, so the story's other attests keep one key to choose.
      const bob = operatorEnv(story, 'bob');
      const pub = JSON.parse(cliOk(story, work, ['keygen', 'bob', '--json'], bob).stdout).publicKey;
      cliOk(story, work, ['keys', 'add', 'bob', '--public-key', pub, '--roles', 'reviewer']);
      cliOk(story, work, ['attest', '--approve', '.delegate-git/keys/bob.json', '--yes']);
      gitOk(story, work, ['add', '.delegate-git/keys/bob.json']);
      gitOk(story, work, ['commit', '-q', '-m', 'trust bob']);
      writeFiles(work, { 'src/b.ts': 'export const b = 2;\n' });
      cliOk(story, work, ['attest', '--approve', 'src/b.ts', '--yes'], bob);
      gitOk(story, work, ['add', 'src/b.ts']);
      gitOk(story, work, ['commit', '-q', '-m', 'b, approved by bob only']);
    });
    const fromBase = verifyStep(ci, { DELEGATE_GIT_BASE_COMMIT: base });
    expect(fromBase.code, fromBase.stdout + fromBase.stderr).toBe(1);
    expect(fromBase.stdout).toMatch(/REFUSED SINCE .*src\/b\.ts/);
    expect(fromBase.stdout).toContain('verify: FAILED');
    // What the run did before: the whole history, where the key file's approval by alice lets bob count.
    expect(verifyStep(ci).code).toBe(0);
    // Only a full object id is taken from the event: anything else is said, and the whole history judged.
    const named = verifyStep(ci, { DELEGATE_GIT_BASE_COMMIT: 'main' });
    expect(named.stdout).toContain('::warning::ignoring DELEGATE_GIT_BASE_COMMIT');
    expect(named.code).toBe(0);
  });

  it('control: a pull request whose content a key trusted at its base approved passes, judged from that base', () => {
    const { remote, work } = hostedPair('pull-request-control');
    const base = gitOk(story, work, ['rev-parse', 'HEAD']);
    const ci = pullRequest(remote, work, 2, () => {
      writeFiles(work, { 'src/c.ts': 'export const c = 3;\n' });
      cliOk(story, work, ['attest', '--approve', 'src/c.ts', '--yes']);
      gitOk(story, work, ['add', 'src/c.ts']);
      gitOk(story, work, ['commit', '-q', '-m', 'c, approved by alice']);
    });
    const passes = verifyStep(ci, { DELEGATE_GIT_BASE_COMMIT: base });
    expect(passes.code, passes.stdout + passes.stderr).toBe(0);
    expect(passes.stdout).toContain(
      `since ${base.slice(0, 12)}: 2 commit(s) judged as a push onto it, none refused`,
    );
  });

  it('reads the remembered tip and commit only as full object ids: a revision such as HEAD is ignored and the whole history judged', () => {
    const { remote, work } = hostedPair('remembered-id');
    const clean = gitOk(story, work, ['rev-parse', 'HEAD']);
    // Control: a full id is passed on as --since; HEAD in its place is ignored, with a warning.
    const byId = verifyStep(cloneInto(story, remote, 'remembered-id-ci'), {}, undefined, clean);
    expect(byId.code, byId.stdout + byId.stderr).toBe(0);
    expect(byId.stdout).toContain(`since ${clean.slice(0, 12)}: 0 commit(s)`);
    expect(byId.stdout).not.toContain('::warning::');

    // A key that approved its own key file: only the walk over the whole history sees that no key trusted before
    // it did. A pull request's checkout could hold any file, so a committed "HEAD" must not pass as the commit
    // verified last (`--since HEAD` judges nothing as a push and skips the walk).
    const env = operatorEnv(story, 'mallory');
    const pub = JSON.parse(cliOk(story, work, ['keygen', 'mallory', '--json'], env).stdout).publicKey;
    cliOk(story, work, ['keys', 'add', 'mallory', '--public-key', pub, '--roles', 'reviewer,delegator']);
    cliOk(story, work, ['attest', '--approve', '.delegate-git/keys/mallory.json', '--yes'], env);
    gitOk(story, work, ['add', '.delegate-git/keys/mallory.json']);
    gitOk(story, work, ['commit', '-q', '--no-verify', '-m', 'mallory trusts herself']);
    gitOk(story, work, ['push', '-q', 'origin', 'main', LEDGER]);
    const ci = cloneInto(story, remote, 'remembered-head-ci');
    for (const planted of ['HEAD', `HEAD\n${clean}`, clean.slice(0, 12)]) {
      const step = verifyStep(ci, {}, undefined, planted);
      expect(step.code, `${planted}: ${step.stdout}`).toBe(1);
      expect(step.stdout).toContain('::warning::ignoring');
      expect(step.stdout).toContain('mallory.json');
      expect(step.stdout).not.toContain('since ');
    }
    // The same for the ledger tip: a revision there is ignored, not passed as --baseline.
    const tip = verifyStep(ci, {}, 'refs/notes/delegations', clean);
    expect(tip.stdout).toContain('::warning::ignoring');
    expect(tip.stdout).not.toContain('LEDGER REWRITTEN');
  });

  it('remembers the verified commit only while the default branch still points at it: a run that finished late puts nothing older back', () => {
    const { remote, work } = hostedPair('remember');
    const ci = cloneInto(story, remote, 'remember-ci');
    expect(verifyStep(ci).code).toBe(0);
    const remember = () => {
      const output = path.join(story.root, `remember-output-${Math.random().toString(36).slice(2)}`);
      const keep = path.join(story.root, `remember-keep-${Math.random().toString(36).slice(2)}`);
      const run = spawnSync('sh', [path.join(action, 'remember.sh')], {
        cwd: ci,
        env: { ...story.env, DELEGATE_GIT_BRANCH: 'main', DELEGATE_GIT_KEEP: keep, GITHUB_OUTPUT: output },
        encoding: 'utf8',
      });
      expect(run.status, run.stderr).toBe(0);
      const read = (name: string) =>
        fs.existsSync(path.join(keep, name)) ? fs.readFileSync(path.join(keep, name), 'utf8') : null;
      return {
        stdout: run.stdout,
        output: fs.readFileSync(output, 'utf8'),
        tip: read('tip'),
        commit: read('commit'),
      };
    };
    const verified = gitOk(story, ci, ['rev-parse', 'HEAD']);
    const kept = remember();
    expect(kept.output).toBe('save=true\n');
    expect(kept.commit).toBe(`${verified}\n`);
    expect(kept.tip).toBe(`${refTip(story, ci, LEDGER)}\n`);

    // Another push lands while this run is still going: its own run remembers it, this one keeps nothing.
    writeFiles(work, { 'README.md': 'later\n' });
    gitOk(story, work, ['add', 'README.md']);
    gitOk(story, work, ['commit', '-q', '-m', 'a later push']);
    gitOk(story, work, ['push', '-q', 'origin', 'main']);
    const late = remember();
    expect(late.output).toBe('save=false\n');
    expect(late.commit).toBeNull();
    expect(late.stdout).toContain(`::notice::not remembering ${verified}`);
  });

  it('takes its inputs as data: a revision holding shell syntax is a bad revision (exit 2) and runs nothing', () => {
    const { remote } = hostedPair('inputs');
    const ci = cloneInto(story, remote, 'inputs-ci');
    const marker = path.join(story.root, 'injected');
    const step = verifyStep(ci, { DELEGATE_GIT_REV: `HEAD; touch ${marker}` });
    expect(step.code).toBe(2);
    expect(fs.existsSync(marker)).toBe(false);
    // Control: the same step with a plain revision.
    expect(verifyStep(ci, { DELEGATE_GIT_REV: 'HEAD' }).code).toBe(0);
  });

  it('judges the remote’s ledger, not one a kept workspace holds: a ledger deleted on the remote fails against the baseline; a remote it cannot ask fails the step', () => {
    const { remote, work } = hostedPair('kept-workspace');
    const ci = cloneInto(story, remote, 'kept-workspace-ci');
    const verified = refTip(story, work, LEDGER)!;
    // Control: the first run (the workspace kept afterwards, as on a self-hosted runner) passes.
    expect(verifyStep(ci, {}, verified).code).toBe(0);
    expect(refTip(story, ci, LEDGER)).toBe(verified);

    gitOk(story, work, ['push', '-q', 'origin', `:${LEDGER}`]);
    const gone = verifyStep(ci, {}, verified);
    expect(gone.code).toBe(1);
    expect(gone.stdout).toContain('::notice::no ledger on origin yet');
    expect(gone.stdout).toContain(
      `though the baseline ${verified} was verified: it was deleted, or not fetched`,
    );
    expect(refTip(story, ci, LEDGER)).toBeNull();
    expect(gone.output).toBe('ledger-tip=\n');

    gitOk(story, ci, ['remote', 'set-url', 'origin', `${remote}-gone`]);
    const summary = path.join(story.root, 'kept-workspace-summary.md');
    const unreachable = verifyStep(ci, { GITHUB_STEP_SUMMARY: summary }, verified);
    expect(unreachable.code).toBe(2);
    expect(unreachable.stdout).toContain('::error::could not ask origin for its ledger');
    // The job summary says it too: a failed step's log alone is easy to miss.
    expect(fs.readFileSync(summary, 'utf8')).toBe(
      '## delegate-git ledger: ❌ could not answer\n\ncould not ask origin for its ledger (git ls-remote failed)\n',
    );
  });

  it('takes only the ref named exactly refs/notes/delegations: a branch or tag whose name ends in it is no ledger', () => {
    const { remote, work } = hostedPair('posing');
    const verified = refTip(story, work, LEDGER)!;
    const ci = cloneInto(story, remote, 'posing-ci');
    // Control: both the ledger and a branch named like it; the ledger is judged, and passes.
    gitOk(story, work, [
      'push',
      '-q',
      'origin',
      `${verified}:refs/heads/${LEDGER}`,
      `${verified}:refs/tags/${LEDGER}`,
    ]);
    const both = verifyStep(ci, {}, verified);
    expect(both.code, both.stdout + both.stderr).toBe(0);
    expect(both.output).toBe(`ledger-tip=${verified}\n`);

    // A push cannot name the ledger alone any more (git finds three refs of that name), so it goes on the remote.
    gitOk(story, remote, ['update-ref', '-d', LEDGER]);
    const gone = verifyStep(ci, {}, verified);
    expect(gone.code).toBe(1);
    expect(gone.stdout).toContain('::notice::no ledger on origin yet');
    expect(refTip(story, ci, LEDGER)).toBeNull();
  });

  it('fetches the ledger with its blobs in a partial clone, so verify reads no note from the remote one at a time', () => {
    const { remote } = hostedPair('partial');
    gitOk(story, remote, ['config', 'uploadpack.allowFilter', 'true']);
    const ci = path.join(story.root, 'partial-ci');
    gitOk(story, story.root, ['clone', '-q', '--filter=blob:none', `file://${remote}`, ci]);
    // What the ledger lacks once the step has fetched it, before verify could fetch anything itself.
    const probe = path.join(story.root, 'missing-notes.sh');
    fs.writeFileSync(
      probe,
      `echo "missing: $(git rev-list --objects --missing=print ${LEDGER} | grep -c '^?')"\n`,
    );
    const fetched = verifyStep(ci, { DELEGATE_GIT_CLI: `sh ${probe}` });
    expect(fetched.stdout).toContain('missing: 0');
    const step = verifyStep(ci);
    expect(step.code, step.stdout + step.stderr).toBe(0);
    // Control: the same fetch without --no-filter leaves the notes' blobs behind in such a clone.
    const filtered = path.join(story.root, 'partial-ci-filtered');
    gitOk(story, story.root, ['clone', '-q', '--filter=blob:none', `file://${remote}`, filtered]);
    gitOk(story, filtered, ['fetch', '-q', 'origin', `+${LEDGER}:${LEDGER}`]);
    const left = gitOk(story, filtered, ['rev-list', '--objects', '--missing=print', LEDGER]);
    expect(left.split('\n').filter((l) => l.startsWith('?')).length).toBeGreaterThan(0);
  });

  it('says when the remote has no ledger yet, and reports no tip', () => {
    const remote = makeServer(story, 'empty-ledger.git', { hook: false });
    const work = cloneInto(story, remote, 'empty-ledger-work');
    writeFiles(work, { 'README.md': 'no ledger here\n' });
    gitOk(story, work, ['add', 'README.md']);
    gitOk(story, work, ['commit', '-q', '-m', 'no delegate-git yet']);
    gitOk(story, work, ['push', '-q', 'origin', 'main']);
    const step = verifyStep(cloneInto(story, remote, 'empty-ledger-ci'));
    expect(step.stdout).toContain('::notice::no ledger on origin yet');
    expect(step.output).toBe('ledger-tip=\n');
  });

  it('a run that cannot answer (a ledger ref that points at a tree) says why in the job summary and an annotation, and still fails the step (exit 2)', () => {
    const { remote, work } = hostedPair('no-answer');
    const ci = cloneInto(story, remote, 'no-answer-ci');
    const actions = () => {
      const summary = path.join(story.root, `summary-${Math.random().toString(36).slice(2)}.md`);
      return { summary, env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary } };
    };
    // Control: the ledger as it was verifies, with no annotation.
    const good = actions();
    const passed = verifyStep(ci, good.env);
    expect(passed.code, passed.stdout + passed.stderr).toBe(0);
    expect(fs.readFileSync(good.summary, 'utf8')).toMatch(/^## delegate-git ledger: ✅ verified\n/);
    expect(passed.stdout).not.toContain('::error');

    // Without a server hook, anyone who can push can point the ledger ref at its own tree.
    const tree = gitOk(story, work, ['rev-parse', `${LEDGER}^{tree}`]);
    gitOk(story, work, ['push', '-q', '--force', 'origin', `${tree}:${LEDGER}`]);
    const bad = actions();
    const step = verifyStep(ci, bad.env);
    expect(step.code).toBe(2);
    const why = `refs/notes/delegations points to a tree (${tree.slice(0, 12)}), not a notes commit`;
    expect(step.stderr).toContain(why);
    const summary = fs.readFileSync(bad.summary, 'utf8');
    expect(summary).toMatch(/^## delegate-git ledger: ❌ could not answer\n/);
    expect(summary).toContain(`verify could not answer (exit 2), so nothing was judged: ${why}`);
    expect(step.stdout.split('\n').filter((l) => l.startsWith('::error'))).toEqual([
      expect.stringMatching(
        new RegExp(`^::error::delegate-git verify could not answer: ${why.replace(/[()]/g, '\\$&')}`),
      ),
    ]);
  });

  it('without a cli named, runs the CLI built beside the script, never a name from a registry; one not built is said (exit 2)', () => {
    const { remote } = hostedPair('own-build');
    // An npx that would answer for a registry name: the step must never reach it.
    const bin = path.join(story.root, 'registry-npx');
    const asked = path.join(story.root, 'npx-asked');
    writeFiles(bin, { npx: `#!/bin/sh\necho "$@" > ${asked}\nexit 0\n` });
    fs.chmodSync(path.join(bin, 'npx'), 0o755);
    const env = { DELEGATE_GIT_CLI: '', PATH: `${bin}:${story.env.PATH ?? process.env.PATH}` };
    const step = verifyStep(cloneInto(story, remote, 'own-build-ci'), env);
    expect(step.code, step.stdout + step.stderr).toBe(0);
    expect(step.stdout).toContain('verify: ok');
    expect(fs.existsSync(asked)).toBe(false);

    // The same script in a copy of the action's source that was never built.
    const unbuilt = path.join(story.root, 'unbuilt-action');
    fs.mkdirSync(path.join(unbuilt, 'ledger-tools'), { recursive: true });
    fs.copyFileSync(path.join(action, 'verify.sh'), path.join(unbuilt, 'ledger-tools', 'verify.sh'));
    const run = spawnSync('sh', [path.join(unbuilt, 'ledger-tools', 'verify.sh')], {
      cwd: cloneInto(story, remote, 'own-build-unbuilt'),
      env: { ...story.env, ...env },
      encoding: 'utf8',
    });
    expect(run.status).toBe(2);
    expect(run.stdout).toContain('delegate-git is not built beside this script');
    expect(fs.existsSync(asked)).toBe(false);
  });

  it('action.yml builds the CLI from its own source with the pnpm the repository pins, unless a cli is named', () => {
    const text = fs.readFileSync(path.join(action, 'action.yml'), 'utf8');
    const { packageManager } = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8'));
    const build = text.split(/\n\s*- name: /).find((step) => step.startsWith('Build'))!;
    expect(build).toContain("if: inputs.cli == ''");
    expect(build).toContain(
      `run: cd "$GITHUB_ACTION_PATH/.." && npx --yes ${packageManager} install --frozen-lockfile`,
    );
    expect(text).toMatch(/\n {4}default: ""\n/);
  });

  it('action.yml runs this script and passes every input through the environment, never into a script text', () => {
    const text = fs.readFileSync(path.join(action, 'action.yml'), 'utf8');
    expect(text).toContain('run: sh "$GITHUB_ACTION_PATH/verify.sh"');
    expect(text).toContain('run: sh "$GITHUB_ACTION_PATH/remember.sh"');
    expect(text).toContain("if: steps.remember.outputs.save == 'true'");
    const runs = text.split(/\n\s*- name: /).filter((step) => /\n\s*run: /.test(step));
    expect(runs.length).toBeGreaterThan(0);
    for (const step of runs) expect(step.slice(step.search(/\n\s*run: /))).not.toContain('${{');
    // What was remembered is kept outside the checkout, where no commit can put a file.
    const kept = [...text.matchAll(/DELEGATE_GIT_(?:BASELINE|VERIFIED|KEEP): (.*)/g)].map((m) => m[1]);
    expect(kept.length).toBe(4);
    for (const place of kept) expect(place).toMatch(/^\$\{\{ runner\.temp \}\}\/delegate-git-baseline/);
    // A pull request's run is judged from its base as the event names it, never from anything the checkout holds.
    expect(text).toMatch(/DELEGATE_GIT_BASE_COMMIT: \$\{\{ github\.event\.pull_request\.base\.sha \}\}\n/);
  });

  it('action.yml restores the baseline and the cache of checked lines only in runs on the default branch, and clears both first', () => {
    const text = fs.readFileSync(path.join(action, 'action.yml'), 'utf8');
    const steps = text.split(/\n\s*- name: /);
    const restore = steps.find((step) => step.includes('uses: actions/cache/restore@'))!;
    expect(restore).toContain(
      "if: github.ref == format('refs/heads/{0}', github.event.repository.default_branch)",
    );
    const save = steps.find((step) => step.includes('uses: actions/cache/save@'))!;
    expect(save).toContain("if: steps.remember.outputs.save == 'true'");
    const remember = steps.find((step) => step.includes('remember.sh'))!;
    expect(remember).toContain("github.event_name == 'push'");
    expect(remember).toContain(
      "github.ref == format('refs/heads/{0}', github.event.repository.default_branch)",
    );

    // The clearing step, run as the runner runs it: what a kept workspace holds in both places is gone.
    const clear = steps.find((step) => step.startsWith('Clear'))!;
    const script = clear.slice(clear.indexOf('run: |') + 'run: |'.length).replace(/^ {8}/gm, '');
    const { work } = hostedPair('kept-cache');
    const keep = path.join(story.root, 'kept-baseline');
    writeFiles(story.root, { 'kept-baseline/commit': 'planted\n' });
    writeFiles(work, { '.git/delegate-git/cache/verified-x.ndjson': 'planted\n' });
    const run = spawnSync('bash', ['-c', script], {
      cwd: work,
      env: { ...story.env, DELEGATE_GIT_KEEP: keep },
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    expect(fs.existsSync(keep)).toBe(false);
    expect(fs.existsSync(path.join(work, '.git/delegate-git/cache'))).toBe(false);
    // Control: nothing else of the git directory or the work tree is touched.
    expect(fs.existsSync(path.join(work, '.git/delegate-git'))).toBe(true);
    expect(fs.existsSync(path.join(work, 'src/a.ts'))).toBe(true);
  });
});
