/**
 * `verify` (the CI gate, and the only one on github.com) against merges that change the trust root without a diff:
 * a merge's first-parent diff shows nothing when its first parent is the older commit (`git merge -s ours` from it),
 * so each merge's governance files are also compared with its other parents. Each refusal has a control: a stale
 * branch merged in (it did not touch the policy since it parted) passes, as does going back once approved again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adopt,
  adoptByHand,
  cli,
  cliOk,
  commit,
  commitBeforeAdoption,
  copyWorkTree,
  gitOk,
  gitRun,
  makeStory,
  makeWorkTree,
  OPERATOR,
  type Story,
  writeFiles,
} from '../support/cli-story.js';
import { attestOk, commitApproved, editPolicy, registerKeys } from '../support/reviewers.js';

const POLICY = '.delegate-git/policy.json';

let story: Story;
/** A first commit from before the adoption, then the adoption (protect src/**). */
let template: string;

beforeAll(() => {
  story = makeStory();
  template = makeWorkTree(story, 'template');
  commitBeforeAdoption(story, template);
  adopt(story, template, ['src/**']);
});

afterAll(() => story.cleanup());

function verify(dir: string) {
  return cli(story, dir, ['verify', '--rev', 'HEAD']);
}

function head(dir: string): string {
  return gitOk(story, dir, ['rev-parse', 'HEAD']);
}

/** Tightens the policy (also protecting `glob`), approved now by `by`, committed through the hook. */
async function tighten(dir: string, glob: string, by = OPERATOR): Promise<void> {
  // The approval of the tightened version must come later than the earlier version's (milliseconds at least).
  await new Promise((resolve) => setTimeout(resolve, 20));
  editPolicy(dir, (p) => {
    p.protect = [...p.protect, glob];
  });
  commitApproved(story, dir, [POLICY], [by], `protect ${glob} too`);
}

function mergeKeepingOurs(dir: string, other: string): void {
  gitOk(story, dir, ['merge', '-q', '-s', 'ours', '--no-verify', '-m', 'merge, keeping this side', other]);
}

describe('verify and merges that change the trust root', () => {
  it('a merge whose first parent is the older commit cannot put the earlier policy back; approved again, it can', async () => {
    const work = copyWorkTree(story, template, 'ours');
    const adopted = head(work);
    await tighten(work, 'lib/**');
    const tightened = head(work);
    expect(verify(work).code).toBe(0);

    gitOk(story, work, ['checkout', '-q', '--detach', adopted]);
    mergeKeepingOurs(work, tightened);
    const merge = head(work);
    expect(gitOk(story, work, ['diff', 'HEAD^1', 'HEAD', '--', POLICY])).toBe(''); // nothing in its first-parent diff
    const refused = verify(work);
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stdout).toContain(`NOT PROMOTED  ${POLICY}`);
    expect(refused.stdout).toContain(
      `merge ${merge.slice(0, 12)} does not keep what its parent ${tightened.slice(0, 12)} changed here`,
    );
    expect(refused.stdout).toContain('only before the version it replaces was approved');
    const json = JSON.parse(cli(story, work, ['verify', '--rev', 'HEAD', '--json']).stdout) as {
      governanceChanges: Array<{ commit: string; parent?: string; path: string }>;
    };
    expect(json.governanceChanges).toEqual([
      expect.objectContaining({ commit: merge, parent: tightened, path: POLICY }),
    ]);

    // Control: the earlier policy approved again, now, goes back through the same merge.
    attestOk(story, work, 'approve', [POLICY]);
    const settled = verify(work);
    expect(settled.code, settled.stdout).toBe(0);
  });

  it('a stale branch merged after a policy change approved by a newly trusted reviewer passes; a merge that discards a change the other side made does not', async () => {
    const work = copyWorkTree(story, template, 'stale');
    gitOk(story, work, ['checkout', '-q', '-b', 'stale']);
    writeFiles(work, { 'docs/notes.md': 'a note\n' });
    gitOk(story, work, ['add', 'docs/notes.md']);
    expect(commit(story, work, 'a note').code).toBe(0);

    // main trusts carol, and carol alone approves the next policy: a key the stale branch's rules do not know.
    gitOk(story, work, ['checkout', '-q', 'main']);
    const [carol] = registerKeys(story, work, [{ name: 'carol' }]);
    commitApproved(story, work, [carol!.keyFile], [OPERATOR], 'trust carol');
    await tighten(work, 'lib/**', 'carol');
    const tightened = head(work);

    // The stale branch never touched the policy: main's version stands, whatever the stale side's rules say.
    gitOk(story, work, ['merge', '-q', '--no-verify', '--no-edit', 'stale']);
    const merged = verify(work);
    expect(merged.code, merged.stdout).toBe(0);

    // A branch that did change the policy after it parted from main, merged with main's version kept: the merge
    // goes back from that branch's change, judged by that branch's rules.
    gitOk(story, work, ['checkout', '-q', '-b', 'hotfix', tightened]);
    await tighten(work, 'tools/**', 'carol');
    const hotfix = head(work);
    gitOk(story, work, ['checkout', '-q', 'main']);
    mergeKeepingOurs(work, 'hotfix');
    const discarding = verify(work);
    expect(discarding.code, discarding.stdout).toBe(1);
    expect(discarding.stdout).toContain(`does not keep what its parent ${hotfix.slice(0, 12)} changed here`);
  });

  it('a revoked key deleted and then added back as it was before the revocation is not trusted again', () => {
    const work = copyWorkTree(story, template, 'resurrect');
    const [bob] = registerKeys(story, work, [{ name: 'bob' }]);
    commitApproved(story, work, [bob!.keyFile], [OPERATOR], 'trust bob');
    const trusted = head(work);
    cliOk(story, work, ['keys', 'revoke', 'bob']);
    commitApproved(story, work, [bob!.keyFile], [OPERATOR], 'revoke bob');
    const control = verify(work);
    expect(control.code, control.stdout).toBe(0);

    gitOk(story, work, ['rm', '-q', bob!.keyFile]);
    expect(commit(story, work, 'drop bob', ['--no-verify']).code).toBe(0);
    const dropped = head(work);
    gitOk(story, work, ['checkout', trusted, '--', bob!.keyFile]); // added back as it was: an addition replaces nothing
    expect(commit(story, work, 'bob again', ['--no-verify']).code).toBe(0);
    writeFiles(work, { 'src/by-bob.ts': 'export const bob = 1;\n' });
    attestOk(story, work, 'approve', ['src/by-bob.ts'], { key: 'bob' });
    gitOk(story, work, ['add', 'src/by-bob.ts']);
    expect(commit(story, work, 'approved by bob', ['--no-verify']).code).toBe(0);

    const refused = verify(work);
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stdout).toContain(
      `NOT PROMOTED  ${bob!.keyFile}: deleted in commit ${dropped.slice(0, 12)}: the policy file and the trust root cannot be deleted`,
    );
  });

  it('a merge that drops the policy cannot start a fresh adoption under looser rules', () => {
    const work = copyWorkTree(story, template, 'drop');
    const main = head(work);
    const control = verify(work); // main itself, with its policy
    expect(control.code, control.stdout).toBe(0);
    gitOk(story, work, ['checkout', '-q', '--detach', 'HEAD~1']); // before the adoption: no policy
    mergeKeepingOurs(work, main);
    const merge = head(work);
    // Adopted afresh with nothing protected, and an unpromoted file under src/.
    fs.rmSync(path.join(work, '.delegate-git'), { recursive: true, force: true });
    adoptByHand(story, work, ['--protect', 'nothing/**']);
    gitOk(story, work, ['add', '.delegate-git']);
    expect(commit(story, work, 'adopted afresh', ['--no-verify']).code).toBe(0);
    writeFiles(work, { 'src/unjudged.ts': 'export const x = 1;\n' });
    gitOk(story, work, ['add', 'src/unjudged.ts']);
    expect(commit(story, work, 'unjudged', ['--no-verify']).code).toBe(0);

    const refused = verify(work);
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stdout).toContain(
      `NOT PROMOTED  ${POLICY}: deleted by merge ${merge.slice(0, 12)}, though its parent ${main.slice(0, 12)} changed it after the two sides parted: the policy file and the trust root cannot be deleted`,
    );
  });

  it('init --keys-dir ./trust keeps the directory as git names it: its approval names trust/, and keys there stay governed', () => {
    const work = makeWorkTree(story, 'dot-keys-dir');
    cliOk(story, work, ['init', '--protect', 'src/**', '--keys-dir', './trust']);
    gitOk(story, work, ['add', '.delegate-git', 'trust']);
    const adopted = commit(story, work, 'Adopt delegate-git'); // through the hook: init's approval names trust/
    expect(adopted.code, adopted.stderr).toBe(0);
    const policy = JSON.parse(fs.readFileSync(path.join(work, POLICY), 'utf8')) as { keysDir: string };
    expect(policy.keysDir).toBe('trust');
    expect(verify(work).code).toBe(0);

    const [mallory] = registerKeys(story, work, [{ name: 'mallory' }]);
    expect(mallory!.keyFile.startsWith('trust/')).toBe(true);
    gitOk(story, work, ['add', mallory!.keyFile]);
    const refused = commit(story, work, 'trust mallory');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`NOT PROMOTED  ${mallory!.keyFile}`);
    expect(commit(story, work, 'trust mallory', ['--no-verify']).code).toBe(0);
    const inCi = verify(work);
    expect(inCi.code, inCi.stdout).toBe(1);
    expect(inCi.stdout).toContain(`NOT PROMOTED  ${mallory!.keyFile}`);
  });

  it('a branch from before the adoption that adopts again with a key of its own cannot bring that key in by a merge', () => {
    const work = copyWorkTree(story, template, 'second-anchor');
    const control = verify(work); // the adopted line alone
    expect(control.code, control.stdout).toBe(0);

    gitOk(story, work, ['checkout', '-q', '-b', 'feature', 'HEAD~1']); // before the adoption
    gitOk(story, work, ['checkout', 'main', '--', '.delegate-git']); // main's policy and keys, as they are
    const [eve] = registerKeys(story, work, [{ name: 'eve' }]);
    attestOk(story, work, 'approve', [eve!.keyFile], { key: 'eve' });
    gitOk(story, work, ['add', '-A']);
    expect(commit(story, work, 'adopt, with eve', ['--no-verify']).code).toBe(0);
    const ownAdoption = head(work);
    gitOk(story, work, ['merge', '-q', '--no-edit', '--no-verify', 'main']);
    writeFiles(work, { 'src/evil.ts': 'export const evil = 1;\n' });
    attestOk(story, work, 'approve', ['src/evil.ts'], { key: 'eve' });
    gitOk(story, work, ['add', 'src/evil.ts']);
    expect(commit(story, work, 'evil', ['--no-verify']).code).toBe(0);

    const refused = verify(work);
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stdout).toContain(`adopted in commit ${ownAdoption.slice(0, 12)}, one of 2 adoptions`);
  });

  it('a branch from before the adoption brought up to date with the adopted line passes, after main changed its rules; a key added on the way is refused', async () => {
    const work = copyWorkTree(story, template, 'pre-adoption-update');
    gitOk(story, work, ['branch', 'feature', 'HEAD~1']); // before the adoption
    await tighten(work, 'lib/**'); // main's rules change once after the adoption
    gitOk(story, work, ['checkout', '-q', 'feature']);
    writeFiles(work, { 'README.md': 'feature work\n' });
    gitOk(story, work, ['add', 'README.md']);
    expect(commit(story, work, 'feature work').code).toBe(0);
    gitOk(story, work, ['merge', '-q', '--no-edit', 'main']); // "Update branch", through the hook
    const updated = verify(work);
    expect(updated.code, updated.stdout).toBe(0); // not a second adoption: its rules come from main
    const merged = head(work);
    gitOk(story, work, ['checkout', '-q', 'main']);
    gitOk(story, work, ['merge', '-q', '--no-ff', '--no-edit', 'feature']);
    expect(verify(work).code).toBe(0);

    // The same merge with a key of its own added on the way is a change from main's rules, and refused.
    gitOk(story, work, ['checkout', '-q', '--detach', `${merged}^1`]);
    gitOk(story, work, ['merge', '-q', '--no-commit', 'main']);
    const [eve] = registerKeys(story, work, [{ name: 'eve-2' }]);
    attestOk(story, work, 'approve', [eve!.keyFile], { key: 'eve-2' });
    gitOk(story, work, ['add', eve!.keyFile]);
    expect(commit(story, work, 'update, with eve', ['--no-verify']).code).toBe(0);
    const evil = verify(work);
    expect(evil.code, evil.stdout).toBe(1);
    expect(evil.stdout).toContain(
      `NOT PROMOTED  ${eve!.keyFile}: changed in commit ${head(work).slice(0, 12)}`,
    );
  });

  it('merging the default branch into a stale branch through the hook takes its policy as that branch approved it; unpromoted content it holds is still refused', async () => {
    const work = copyWorkTree(story, template, 'update-branch');
    for (const branch of ['stale', 'stale-pull', 'stale-too', 'stale-octopus', 'side']) {
      gitOk(story, work, ['checkout', '-q', '-b', branch, 'main']);
      writeFiles(work, { [`docs/${branch}.md`]: 'a note\n' });
      gitOk(story, work, ['add', `docs/${branch}.md`]);
      expect(commit(story, work, `a note on ${branch}`).code).toBe(0);
    }
    // main trusts dora, and dora alone approves the next policy: a key the stale branches' rules do not know.
    gitOk(story, work, ['checkout', '-q', 'main']);
    const [dora] = registerKeys(story, work, [{ name: 'dora' }]);
    commitApproved(story, work, [dora!.keyFile], [OPERATOR], 'trust dora');
    await tighten(work, 'lib/**', 'dora');

    gitOk(story, work, ['checkout', '-q', 'stale']);
    const merged = gitRun(story, work, ['merge', '--no-edit', 'main']); // pre-merge-commit runs
    expect(merged.code, merged.stderr).toBe(0);
    // The same through `git pull` (what it merges is in FETCH_HEAD then).
    gitOk(story, work, ['checkout', '-q', 'stale-pull']);
    const pulled = gitRun(story, work, ['-c', 'pull.rebase=false', 'pull', '--no-edit', '.', 'main']);
    expect(pulled.code, pulled.stderr).toBe(0);

    // An octopus merge, main named second: each merged branch is asked about what it holds.
    gitOk(story, work, ['checkout', '-q', 'stale-octopus']);
    const octopus = gitRun(story, work, ['merge', '--no-edit', 'side', 'main']);
    expect(octopus.code, octopus.stderr).toBe(0);
    expect(gitOk(story, work, ['rev-list', '--parents', '-1', 'HEAD']).split(' ')).toHaveLength(4);

    // Control: content main holds that nobody promoted (committed there past the hook) is refused in the merge.
    gitOk(story, work, ['checkout', '-q', 'main']);
    writeFiles(work, { 'src/unpromoted.ts': 'export const u = 1;\n' });
    gitOk(story, work, ['add', 'src/unpromoted.ts']);
    expect(commit(story, work, 'unpromoted', ['--no-verify']).code).toBe(0);
    gitOk(story, work, ['checkout', '-q', 'stale-too']);
    const refused = gitRun(story, work, ['merge', '--no-edit', 'main']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/unpromoted.ts');
    expect(refused.stderr).not.toContain(`NOT PROMOTED  ${POLICY}`);

    // A branch whose new key approved itself (committed past the hook): its rules do not judge what a merge takes.
    gitOk(story, work, ['checkout', '-q', '-b', 'rogue', 'stale']);
    const [rex] = registerKeys(story, work, [{ name: 'rex' }]);
    attestOk(story, work, 'approve', [rex!.keyFile], { key: 'rex' });
    gitOk(story, work, ['add', rex!.keyFile]);
    expect(commit(story, work, 'rex trusts himself', ['--no-verify']).code).toBe(0);
    gitOk(story, work, ['checkout', '-q', '-b', 'takes-rogue', 'side']);
    const rogue = gitRun(story, work, ['merge', '--no-edit', 'rogue']);
    expect(rogue.code).not.toBe(0);
    expect(rogue.stderr).toContain(`NOT PROMOTED  ${rex!.keyFile}`);

    // Nor do the rules of an orphan that adopted on its own with main's files and a key of its own.
    gitOk(story, work, ['merge', '--abort']);
    gitOk(story, work, ['checkout', '-q', '--orphan', 'orphan', 'main']);
    const [oz] = registerKeys(story, work, [{ name: 'oz' }]);
    attestOk(story, work, 'approve', [oz!.keyFile], { key: 'oz' });
    gitOk(story, work, ['add', oz!.keyFile]);
    expect(commit(story, work, 'an orphan trusting oz', ['--no-verify']).code).toBe(0);
    gitOk(story, work, ['checkout', '-q', 'main']);
    const orphan = gitRun(story, work, ['merge', '--no-edit', '--allow-unrelated-histories', 'orphan']);
    expect(orphan.code).not.toBe(0);
    expect(orphan.stderr).toContain(`NOT PROMOTED  ${oz!.keyFile}`);
  });

  it('a branch forked before main revoked a key: its older rules do not judge what a merge into main takes from it; a branch holding the revocation does', () => {
    const work = copyWorkTree(story, template, 'stale-rules');
    const [cara, dina] = registerKeys(story, work, [{ name: 'cara' }, { name: 'dina' }]);
    commitApproved(story, work, [cara!.keyFile], [OPERATOR], 'trust cara');
    gitOk(story, work, ['branch', 'before-revocation']);
    cliOk(story, work, ['keys', 'revoke', 'cara']);
    commitApproved(story, work, [cara!.keyFile], [OPERATOR], 'revoke cara');

    // The stale branch: cara alone approves a file, as its rules (cara trusted) allow.
    gitOk(story, work, ['checkout', '-q', 'before-revocation']);
    writeFiles(work, { 'src/caras.ts': 'export const c = 1;\n' });
    commitApproved(story, work, ['src/caras.ts'], ['cara'], 'cara approves');
    gitOk(story, work, ['checkout', '-q', 'main']);
    const stale = gitRun(story, work, ['merge', '--no-edit', 'before-revocation']);
    expect(stale.code).not.toBe(0);
    expect(stale.stderr).toContain('NOT PROMOTED  src/caras.ts');
    gitOk(story, work, ['merge', '--abort']);

    // Control: a branch holding the revocation trusts dina, who approves a file there; main takes both.
    gitOk(story, work, ['checkout', '-q', '-b', 'after-revocation']);
    commitApproved(story, work, [dina!.keyFile], [OPERATOR], 'trust dina');
    writeFiles(work, { 'src/dinas.ts': 'export const d = 1;\n' });
    commitApproved(story, work, ['src/dinas.ts'], ['dina'], 'dina approves');
    gitOk(story, work, ['checkout', '-q', 'main']);
    writeFiles(work, { 'docs/main.md': 'main moves on\n' });
    gitOk(story, work, ['add', 'docs/main.md']);
    expect(commit(story, work, 'main moves on').code).toBe(0);
    const fresh = gitRun(story, work, ['merge', '--no-edit', 'after-revocation']);
    expect(fresh.code, fresh.stderr).toBe(0);
  });
});
