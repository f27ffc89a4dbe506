/**
 * A key file keeps its key: replacing the key in place would leave the old key's records unverifiable, and what they
 * approved (a revocation, say) would lose its date, so a version it replaced could come back on an old approval.
 * Refused at commit, at push and by verify, whoever approves it; control: revoking a key in place passes everywhere.
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
  recordApproval,
  refTip,
  type Story,
  writeFiles,
} from '../support/cli-story.js';
import { acceptedByEveryGate, adoptedClone, refusedByEveryGate } from '../support/every-gate.js';
import {
  type AddedKey,
  addKeys,
  attest,
  attestOk,
  editPolicy,
  generateKey,
  keyFileOf,
  registerKeys,
} from '../support/reviewers.js';

/** A reviewer's key added, approved by the operator, and accepted by every gate. */
function trustedKey(story: Story, work: string, name: string): AddedKey {
  const [key] = registerKeys(story, work, [{ name }]);
  attestOk(story, work, 'approve', [key!.keyFile]);
  gitOk(story, work, ['add', key!.keyFile]);
  acceptedByEveryGate(story, work, `trust ${name}`);
  return key!;
}

/**
 * An adopted clone whose operator trusted `reviewers` and then raised the threshold to two (approved alone, under
 * the threshold of one in force), accepted by every gate; with the text of that policy.
 */
function twoReviewersFromNowOn(story: Story, reviewers: string[]): { work: string; policy: string } {
  const work = adoptedClone(story, ['src/**']);
  for (const name of reviewers) trustedKey(story, work, name);
  editPolicy(work, (p) => {
    p.reviewThreshold = 2;
  });
  attestOk(story, work, 'approve', [POLICY_PATH]);
  gitOk(story, work, ['add', POLICY_PATH]);
  acceptedByEveryGate(story, work, 'two reviewers from now on');
  return { work, policy: fs.readFileSync(path.join(work, POLICY_PATH), 'utf8') };
}

describe('a key file keeps its key', () => {
  let story: Story;
  let work: string;
  let bobFile: string;

  beforeAll(() => {
    story = makeStory();
    work = adoptedClone(story, ['src/**']);
    bobFile = trustedKey(story, work, 'bob').keyFile;
  });

  afterAll(() => story.cleanup());

  it('another key put into a key file in place is refused at every gate, though a trusted reviewer approves it', () => {
    const rotated = generateKey(story, work, 'bob-2');
    const file = path.join(work, bobFile);
    const key = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(file, `${JSON.stringify({ ...key, ...rotated }, null, 2)}\n`);
    attestOk(story, work, 'approve', [bobFile]);
    gitOk(story, work, ['add', bobFile]);
    refusedByEveryGate(story, work, bobFile, 'a key file keeps its key');
  });

  it('control: the key revoked in place passes every gate', () => {
    cliOk(story, work, ['keys', 'revoke', 'bob']);
    attestOk(story, work, 'approve', [bobFile]);
    gitOk(story, work, ['add', bobFile]);
    acceptedByEveryGate(story, work, 'revoke bob');
  });

  it('the keys directory moved back onto a stale copy of a key revoked since is refused at every gate; the copy brought up to date passes', () => {
    // dave trusted, the keys moved to trust/ (copies approved there), then dave revoked there; the old directory
    // keeps his unrevoked file.
    const daveFile = trustedKey(story, work, 'dave').keyFile;
    fs.cpSync(path.join(work, '.delegate-git/keys'), path.join(work, 'trust'), { recursive: true });
    editPolicy(work, (p) => {
      p.keysDir = 'trust';
    });
    attestOk(story, work, 'approve', [POLICY_PATH, 'trust/alice.json', 'trust/bob.json', 'trust/dave.json']);
    gitOk(story, work, ['add', POLICY_PATH, 'trust']);
    acceptedByEveryGate(story, work, 'keys in trust/');
    cliOk(story, work, ['keys', 'revoke', 'dave']);
    attestOk(story, work, 'approve', ['trust/dave.json']);
    gitOk(story, work, ['add', 'trust/dave.json']);
    acceptedByEveryGate(story, work, 'revoke dave in trust/');

    editPolicy(work, (p) => {
      p.keysDir = '.delegate-git/keys';
    });
    attestOk(story, work, 'approve', [POLICY_PATH]);
    gitOk(story, work, ['add', POLICY_PATH]);
    refusedByEveryGate(story, work, daveFile, 'with other content');

    // Control: the old copy brought up to date (revoked), and every key file there approved again for the move:
    // approvals from before the policy the move replaces do not count.
    fs.copyFileSync(path.join(work, 'trust/dave.json'), path.join(work, daveFile));
    gitOk(story, work, ['add', daveFile]);
    editPolicy(work, (p) => {
      p.keysDir = '.delegate-git/keys';
    });
    const oldKeys = ['.delegate-git/keys/alice.json', bobFile, daveFile];
    attestOk(story, work, 'approve', [POLICY_PATH, ...oldKeys]);
    gitOk(story, work, ['add', POLICY_PATH]);
    acceptedByEveryGate(story, work, 'keys back in .delegate-git/keys, each approved again');
  });

  it('a key file left in a directory the keys moved away from, while ungoverned there, cannot come back on its old approval', () => {
    // The keys move to keys2/ with all files, bob is revoked there, and they move on to keys3/ without his file.
    const copyKeys = (from: string, to: string, skip: string[] = []) => {
      for (const name of fs.readdirSync(path.join(work, from)))
        if (!skip.includes(name)) fs.copyFileSync(path.join(work, from, name), path.join(work, to, name));
    };
    const moveTo = (dir: string, skip: string[] = []) => {
      const from = JSON.parse(fs.readFileSync(path.join(work, POLICY_PATH), 'utf8')).keysDir as string;
      fs.mkdirSync(path.join(work, dir), { recursive: true });
      copyKeys(from, dir, skip);
      editPolicy(work, (p) => {
        p.keysDir = dir;
      });
      const files = fs.readdirSync(path.join(work, dir)).map((n) => `${dir}/${n}`);
      attestOk(story, work, 'approve', [POLICY_PATH, ...files]);
      gitOk(story, work, ['add', POLICY_PATH, dir]);
    };
    const erin = trustedKey(story, work, 'erin');
    const stale = erin.keyFile; // stays where it is, unrevoked, approved when erin was added
    moveTo('keys2');
    acceptedByEveryGate(story, work, 'keys in keys2/');
    cliOk(story, work, ['keys', 'revoke', 'erin']);
    attestOk(story, work, 'approve', ['keys2/erin.json']);
    gitOk(story, work, ['add', 'keys2/erin.json']);
    acceptedByEveryGate(story, work, 'revoke erin');
    // Moving on without erin's file is refused: a key leaves the trust root only by revocation.
    moveTo('keys3', ['erin.json']);
    const dropped = commit(story, work, 'keys in keys3/, without erin');
    expect(dropped.code).not.toBe(0);
    expect(dropped.stderr).toContain('DELETION REFUSED  keys2/erin.json');
    gitOk(story, work, ['reset', '-q', '--hard', 'origin/main']);
    gitOk(story, work, ['clean', '-q', '-fdx']);

    // Back to the first directory, approving only the policy: erin's old file there would be trusted again.
    editPolicy(work, (p) => {
      p.keysDir = '.delegate-git/keys';
    });
    attestOk(story, work, 'approve', [POLICY_PATH]);
    gitOk(story, work, ['add', POLICY_PATH]);
    refusedByEveryGate(
      story,
      work,
      stale,
      'the policy a move of the keys directory here replaces was admitted',
    );
  });
});

describe('a late approval of a policy admitted under a lower threshold', () => {
  let story: Story;
  afterAll(() => story.cleanup());

  it('does not move its date: the change that replaced it stays approved in CI; control: going back still needs new approvals', async () => {
    story = makeStory();
    const { work, policy: twoReviewers } = twoReviewersFromNowOn(story, ['bob']);
    await new Promise((resolve) => setTimeout(resolve, 20));
    editPolicy(work, (p) => {
      p.protect = ['src/**', 'lib/**'];
    });
    attestOk(story, work, 'approve', [POLICY_PATH]);
    attestOk(story, work, 'approve', [POLICY_PATH], { key: 'bob' });
    gitOk(story, work, ['add', POLICY_PATH]);
    acceptedByEveryGate(story, work, 'protect lib too');
    const tightened = fs.readFileSync(path.join(work, POLICY_PATH), 'utf8');

    // bob approves the earlier version now, as a second reviewer would have had to under today's threshold.
    await new Promise((resolve) => setTimeout(resolve, 20));
    fs.writeFileSync(path.join(work, POLICY_PATH), twoReviewers);
    attestOk(story, work, 'approve', [POLICY_PATH], { key: 'bob' });
    fs.writeFileSync(path.join(work, POLICY_PATH), tightened);
    expect(gitRun(story, work, ['push', '-q', 'origin', LEDGER]).code).toBe(0);
    const inCi = cli(story, work, ['verify']);
    expect(inCi.code, inCi.stdout).toBe(0);

    // Control: going back to it needs two approvals made since the tightened policy: bob's is one.
    fs.writeFileSync(path.join(work, POLICY_PATH), twoReviewers);
    gitOk(story, work, ['add', POLICY_PATH]);
    refusedByEveryGate(story, work, POLICY_PATH);
    fs.writeFileSync(path.join(work, POLICY_PATH), twoReviewers);
    attestOk(story, work, 'approve', [POLICY_PATH]);
    gitOk(story, work, ['add', POLICY_PATH]);
    acceptedByEveryGate(story, work, 'back to two reviewers, protecting src only');
  });
});

describe('a move of the keys directory', () => {
  let story: Story;
  afterAll(() => story.cleanup());

  it('cannot leave a key behind: at commit, at push and in CI; control: every key moved along passes', () => {
    story = makeStory();
    const work = adoptedClone(story, ['src/**']);
    const bob = trustedKey(story, work, 'bob');
    const server = gitOk(story, work, ['rev-parse', 'origin/main']);

    fs.mkdirSync(path.join(work, 'k2'));
    fs.copyFileSync(path.join(work, '.delegate-git/keys/alice.json'), path.join(work, 'k2/alice.json'));
    editPolicy(work, (p) => {
      p.keysDir = 'k2';
    });
    attestOk(story, work, 'approve', [POLICY_PATH, 'k2/alice.json']);
    gitOk(story, work, ['add', POLICY_PATH, 'k2']);
    const atCommit = commit(story, work, 'keys in k2/, without bob');
    expect(atCommit.code).not.toBe(0);
    expect(atCommit.stderr).toContain(`DELETION REFUSED  ${bob.keyFile}`);
    expect(atCommit.stderr).toContain('left behind when the keys directory moves to k2/');
    expect(commit(story, work, 'keys in k2/, without bob', ['--no-verify']).code).toBe(0);
    const pushed = gitRun(story, work, ['push', '--atomic', 'origin', 'main', 'refs/notes/delegations']);
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toContain(`${bob.keyFile}: left behind when the keys directory moves to k2/`);
    // A key file is kept or revoked, never promoted back into place: the advice is the one for deletions.
    expect(pushed.stderr).toContain('The policy file and key files are never deleted');
    expect(pushed.stderr).not.toContain('Promote each file');
    const inCi = cli(story, work, ['verify']);
    expect(inCi.code).toBe(1);
    expect(inCi.stdout).toContain(
      `NOT PROMOTED  ${bob.keyFile}: left behind when the keys directory moves to k2/`,
    );

    // A copy of bob's file under a name the trust root does not load (only *.json holds a key) leaves him behind
    // just the same.
    gitOk(story, work, ['reset', '-q', '--soft', server]);
    for (const name of ['bob.txt', 'bob.JSON']) {
      fs.copyFileSync(path.join(work, bob.keyFile), path.join(work, 'k2', name));
      attestOk(story, work, 'approve', [`k2/${name}`]);
      gitOk(story, work, ['add', 'k2']);
      expect(commit(story, work, `keys in k2/, bob as ${name}`, ['--no-verify']).code).toBe(0);
      const renamed = gitRun(story, work, ['push', '--atomic', 'origin', 'main', 'refs/notes/delegations']);
      expect(renamed.code, name).not.toBe(0);
      expect(renamed.stderr).toContain(`${bob.keyFile}: left behind when the keys directory moves to k2/`);
      const renamedInCi = cli(story, work, ['verify']);
      expect(renamedInCi.stdout).toContain(`NOT PROMOTED  ${bob.keyFile}: left behind`);
      gitOk(story, work, ['reset', '-q', '--soft', server]);
      gitOk(story, work, ['rm', '-q', '--cached', `k2/${name}`]);
      fs.rmSync(path.join(work, 'k2', name));
    }

    // Control: bob's file moved along too.
    fs.copyFileSync(path.join(work, bob.keyFile), path.join(work, 'k2/bob.json'));
    attestOk(story, work, 'approve', ['k2/bob.json']);
    gitOk(story, work, ['add', 'k2']);
    acceptedByEveryGate(story, work, 'keys in k2/, all of them');
  });
});

describe('a move of the keys directory and back within one push', () => {
  let story: Story;
  afterAll(() => story.cleanup());

  it('is judged at the commit that moves: an unapproved key file there is refused at push; control: without it, accepted', async () => {
    story = makeStory();
    const work = adoptedClone(story, ['src/**']);
    const policy = path.join(work, POLICY_PATH);
    const adopted = fs.readFileSync(policy, 'utf8');
    const moveAndBack = async (extra: boolean) => {
      fs.cpSync(path.join(work, '.delegate-git/keys'), path.join(work, 'k2'), { recursive: true });
      if (extra) {
        const [carol] = registerKeys(story, work, [{ name: 'carol' }]);
        fs.renameSync(path.join(work, carol!.keyFile), path.join(work, 'k2/carol.json'));
      }
      editPolicy(work, (p) => {
        p.keysDir = 'k2';
      });
      attestOk(story, work, 'approve', [POLICY_PATH, 'k2/alice.json']);
      gitOk(story, work, ['add', POLICY_PATH, 'k2']);
      expect(commit(story, work, 'keys in k2/', ['--no-verify']).code).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 20));
      fs.writeFileSync(policy, adopted);
      attestOk(story, work, 'approve', [POLICY_PATH, '.delegate-git/keys/alice.json']);
      gitOk(story, work, ['add', POLICY_PATH]);
      expect(commit(story, work, 'keys back', ['--no-verify']).code).toBe(0);
      return gitRun(story, work, ['push', '--atomic', 'origin', 'main', 'refs/notes/delegations']);
    };
    const refused = await moveAndBack(true);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/refused refs\/heads\/main [0-9a-f]{12} k2\/carol\.json: /);

    // Control: the same two commits without carol's file.
    gitOk(story, work, ['reset', '-q', '--hard', 'origin/main']);
    gitOk(story, work, ['clean', '-q', '-fdx']);
    const accepted = await moveAndBack(false);
    expect(accepted.code, accepted.stderr).toBe(0);
  });
});

describe('a move of the keys directory with git mv', () => {
  let story: Story;
  afterAll(() => story.cleanup());

  it('deletes the key files in force, and is refused at commit, at push and in CI; control: copied, it passes', () => {
    story = makeStory();
    const work = adoptedClone(story, ['src/**']);
    const alice = '.delegate-git/keys/alice.json';
    gitOk(story, work, ['mv', '.delegate-git/keys', 'k3']);
    editPolicy(work, (p) => {
      p.keysDir = 'k3';
    });
    attestOk(story, work, 'approve', [POLICY_PATH, 'k3/alice.json']);
    gitOk(story, work, ['add', POLICY_PATH]);
    const atCommit = commit(story, work, 'keys moved to k3/');
    expect(atCommit.code).not.toBe(0);
    expect(atCommit.stderr).toContain(`DELETION REFUSED  ${alice}`);
    expect(commit(story, work, 'keys moved to k3/', ['--no-verify']).code).toBe(0);
    const pushed = gitRun(story, work, ['push', '--atomic', 'origin', 'main', 'refs/notes/delegations']);
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toContain(`${alice}: the policy file and the trust root cannot be deleted`);
    expect(cli(story, work, ['verify']).stdout).toContain(`NOT PROMOTED  ${alice}: deleted in commit`);

    // Control: the key files copied, the old directory kept as it is.
    gitOk(story, work, ['reset', '-q', '--hard', 'origin/main']);
    fs.cpSync(path.join(work, '.delegate-git/keys'), path.join(work, 'k3'), { recursive: true });
    editPolicy(work, (p) => {
      p.keysDir = 'k3';
    });
    gitOk(story, work, ['add', POLICY_PATH, 'k3']);
    acceptedByEveryGate(story, work, 'keys copied to k3/');
  });
});

describe('a move of the keys directory to its parent', () => {
  let story: Story;
  afterAll(() => story.cleanup());

  // Five stories through all three gates: about 40 s alone, and once over 60 s beside a CI run.
  it('does not hide a key file going back to its earlier content: refused at every gate; control: the move alone passes', async () => {
    story = makeStory();
    const work = adoptedClone(story, ['src/**']);
    // The keys in tr/keys/, then bob trusted there and revoked.
    fs.cpSync(path.join(work, '.delegate-git/keys'), path.join(work, 'tr/keys'), { recursive: true });
    editPolicy(work, (p) => {
      p.keysDir = 'tr/keys';
    });
    attestOk(story, work, 'approve', [POLICY_PATH, 'tr/keys/alice.json']);
    gitOk(story, work, ['add', POLICY_PATH, 'tr']);
    acceptedByEveryGate(story, work, 'keys in tr/keys/');
    const bob = trustedKey(story, work, 'bob');
    const unrevoked = fs.readFileSync(path.join(work, bob.keyFile), 'utf8');
    await new Promise((resolve) => setTimeout(resolve, 20));
    cliOk(story, work, ['keys', 'revoke', 'bob']);
    attestOk(story, work, 'approve', [bob.keyFile]);
    gitOk(story, work, ['add', bob.keyFile]);
    acceptedByEveryGate(story, work, 'revoke bob');

    // One approved policy change moves the keys to tr/, where bob's file stays (tr/keys/bob.json), and the same
    // commit puts his unrevoked content back: his file is dated by its own history as well as by the move.
    await new Promise((resolve) => setTimeout(resolve, 20));
    editPolicy(work, (p) => {
      p.keysDir = 'tr';
    });
    attestOk(story, work, 'approve', [POLICY_PATH, 'tr/keys/alice.json']);
    fs.writeFileSync(path.join(work, bob.keyFile), unrevoked);
    gitOk(story, work, ['add', POLICY_PATH, bob.keyFile]);
    refusedByEveryGate(story, work, bob.keyFile, 'only before the version it replaces was approved');

    // Control: the move alone, bob's revoked file approved since the policy it replaces.
    editPolicy(work, (p) => {
      p.keysDir = 'tr';
    });
    attestOk(story, work, 'approve', [POLICY_PATH, 'tr/keys/alice.json', bob.keyFile]);
    gitOk(story, work, ['add', POLICY_PATH]);
    acceptedByEveryGate(story, work, 'keys in tr/');
  }, 150_000);
});

describe('the review threshold raised', () => {
  let story: Story;
  afterAll(() => story.cleanup());

  it('does not ask the policy and key files in force for approvals again in CI; the next change to them needs two', () => {
    story = makeStory();
    const work = adoptedClone(story, ['src/**']);
    const bob = trustedKey(story, work, 'bob');
    editPolicy(work, (p) => {
      p.requireReview = true;
      p.reviewThreshold = 2;
    });
    attestOk(story, work, 'approve', [POLICY_PATH]); // the threshold in force is 1
    gitOk(story, work, ['add', POLICY_PATH]);
    acceptedByEveryGate(story, work, 'two reviewers from now on');

    // Control: a change to a key file now needs two approvals.
    cliOk(story, work, ['keys', 'revoke', 'bob', '--force']);
    attestOk(story, work, 'approve', [bob.keyFile]);
    gitOk(story, work, ['add', bob.keyFile]);
    refusedByEveryGate(story, work, bob.keyFile);

    // The same for a key file in the keys directory spelled in another case: verify's walk lists it too.
    const variant = '.delegate-git/KEYS/carol.json';
    const [carol] = registerKeys(story, work, [{ name: 'carol' }]);
    fs.mkdirSync(path.join(work, '.delegate-git/KEYS'));
    fs.renameSync(path.join(work, carol!.keyFile), path.join(work, variant));
    attestOk(story, work, 'approve', [variant]);
    gitOk(story, work, ['add', variant]);
    refusedByEveryGate(story, work, variant);
  });
});

describe('a revocation whose approvals all stop counting keeps its date', () => {
  let story: Story;
  let work: string;
  beforeAll(() => {
    story = makeStory();
    work = adoptedClone(story, ['src/**']);
  });
  afterAll(() => story.cleanup());

  it('mal’s key file put back after bob, who alone approved its revocation, is revoked from before then: refused at every gate; approved again, accepted', () => {
    const [, mal] = addKeys(story, work, [{ name: 'bob' }, { name: 'mal' }]);
    gitOk(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]);
    const malFile = path.join(work, mal!.keyFile);
    const unrevoked = fs.readFileSync(malFile, 'utf8');
    cliOk(story, work, ['keys', 'revoke', 'mal']);
    attestOk(story, work, 'approve', [mal!.keyFile], { key: 'bob' });
    gitOk(story, work, ['add', mal!.keyFile]);
    acceptedByEveryGate(story, work, 'revoke mal (approved by bob)');
    // bob found compromised since an hour ago: his approval of mal's revocation no longer counts.
    cliOk(story, work, ['keys', 'revoke', 'bob', '--at', new Date(Date.now() - 3_600_000).toISOString()]);
    attestOk(story, work, 'approve', [keyFileOf('bob')]);
    gitOk(story, work, ['add', keyFileOf('bob')]);
    // At the hook and the server (verify now refuses the revoked mal.json, approved by no key that counts).
    expect(commit(story, work, 'revoke bob from an hour ago').code).toBe(0);
    expect(gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);

    fs.writeFileSync(malFile, unrevoked);
    gitOk(story, work, ['add', mal!.keyFile]);
    refusedByEveryGate(story, work, mal!.keyFile, 'going back to earlier content needs a new approval');

    // Control: the operator approves putting it back now, and every gate accepts it.
    fs.writeFileSync(malFile, unrevoked);
    attestOk(story, work, 'approve', [mal!.keyFile]);
    gitOk(story, work, ['add', mal!.keyFile]);
    acceptedByEveryGate(story, work, 'trust mal again');
  });
});

describe('a key past its notAfter', () => {
  let story: Story;
  let work: string;
  beforeAll(() => {
    story = makeStory();
    work = adoptedClone(story, ['src/**']);
  });
  afterAll(() => story.cleanup());

  it('signs nothing the server receives after it, however the record is dated; a key valid now is accepted (control)', async () => {
    const notAfter = new Date(Date.now() - 60_000);
    addKeys(story, work, [{ name: 'bob', notAfter: notAfter.toISOString() }, { name: 'carol' }]);
    expect(gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
    const before = refTip(story, work, LEDGER)!;

    writeFiles(work, { 'src/a.ts': 'export const a = 1;\n' });
    // bob dates his approval back to before his key expired: his own word.
    await recordApproval(story, work, 'src/a.ts', {
      key: 'bob',
      createdAt: new Date(notAfter.getTime() - 60_000).toISOString(),
    });
    gitOk(story, work, ['add', 'src/a.ts']);
    gitOk(story, work, ['commit', '-q', '--no-verify', '-m', 'approved by bob, dated back']);
    const refused = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      `signer bob's key expired at ${notAfter.toISOString()}, before this record arrived`,
    );

    gitOk(story, work, ['update-ref', LEDGER, before]);
    attestOk(story, work, 'approve', ['src/a.ts'], { key: 'carol' });
    const accepted = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(accepted.code, accepted.stderr).toBe(0);
  });
});

describe('a rotation of the reviewer whose approval completed the threshold (rt40 f01)', () => {
  let story: Story;
  afterAll(() => story.cleanup());

  it('does not reopen the way back: the version replaced still needs new approvals at every gate; control: approved again, it passes', async () => {
    story = makeStory();
    const { work, policy: before } = twoReviewersFromNowOn(story, ['bob', 'carol']);
    const tick = () => new Promise((resolve) => setTimeout(resolve, 20));

    // The tightening: approved by the operator first, then, after the earlier version was approved again by two
    // reviewers, by bob, whose approval admits it.
    editPolicy(work, (p) => {
      p.protectDeletes = true;
    });
    const tightened = fs.readFileSync(path.join(work, POLICY_PATH), 'utf8');
    attestOk(story, work, 'approve', [POLICY_PATH]);
    await tick();
    fs.writeFileSync(path.join(work, POLICY_PATH), before);
    attestOk(story, work, 'approve', [POLICY_PATH]);
    attestOk(story, work, 'approve', [POLICY_PATH], { key: 'carol' });
    await tick();
    fs.writeFileSync(path.join(work, POLICY_PATH), tightened);
    attestOk(story, work, 'approve', [POLICY_PATH], { key: 'bob' });
    gitOk(story, work, ['add', POLICY_PATH]);
    acceptedByEveryGate(story, work, 'protect deletions');

    // bob's key rotated out, approved by the operator and carol.
    cliOk(story, work, ['keys', 'revoke', 'bob']);
    const bobFile = '.delegate-git/keys/bob.json';
    attestOk(story, work, 'approve', [bobFile]);
    attestOk(story, work, 'approve', [bobFile], { key: 'carol' });
    gitOk(story, work, ['add', bobFile]);
    acceptedByEveryGate(story, work, 'revoke bob');

    fs.writeFileSync(path.join(work, POLICY_PATH), before);
    gitOk(story, work, ['add', POLICY_PATH]);
    refusedByEveryGate(story, work, POLICY_PATH, 'going back to earlier content needs a new approval');
    // Control: approved again by two reviewers, going back passes.
    fs.writeFileSync(path.join(work, POLICY_PATH), before);
    attestOk(story, work, 'approve', [POLICY_PATH]);
    attestOk(story, work, 'approve', [POLICY_PATH], { key: 'carol' });
    gitOk(story, work, ['add', POLICY_PATH]);
    acceptedByEveryGate(story, work, 'deletions allowed again');
  });
});

describe('a push that revokes a key and brings content only that key approved (rt48 f04)', () => {
  let story: Story;
  let work: string;

  beforeAll(() => {
    story = makeStory();
    work = adoptedClone(story, ['src/**']);
    trustedKey(story, work, 'bob');
  });

  afterAll(() => story.cleanup());

  /** bob approves `src/new.ts`, and the same commit revokes bob (approved by the operator), pushed with the ledger. */
  function revokeWithBobsContent(message: string): { hook: number; push: ReturnType<typeof gitRun> } {
    writeFiles(work, { 'src/new.ts': `export const by = 'bob'; // ${message}\n` });
    attestOk(story, work, 'approve', ['src/new.ts'], { key: 'bob' });
    cliOk(story, work, ['keys', 'revoke', 'bob']);
    attestOk(story, work, 'approve', [keyFileOf('bob')]);
    gitOk(story, work, ['add', 'src/new.ts', keyFileOf('bob')]);
    const hook = commit(story, work, message).code;
    if (hook !== 0) expect(commit(story, work, message, ['--no-verify']).code).toBe(0);
    return { hook, push: gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]) };
  }

  it('is refused by the server as by the commit hook and verify: the content is judged by the rules the push brings too', () => {
    const { hook, push } = revokeWithBobsContent('revoke bob with his content');
    expect.soft(hook, 'the commit hook').not.toBe(0);
    expect.soft(push.code, `push: ${push.stderr}`).not.toBe(0);
    expect
      .soft(push.stderr)
      .toMatch(
        /refused refs\/heads\/main [0-9a-f]{12} src\/new\.ts: .*revoked.*\(under the rules this push brings\)/,
      );
    expect.soft(push.stderr).not.toContain(keyFileOf('bob'));
    expect.soft(push.stderr).not.toContain('push the rules change on its own first');
    const verified = cli(story, work, ['verify']);
    expect.soft(verified.code, verified.stdout).toBe(1);
    expect.soft(verified.stdout).toContain('NOT PROMOTED  src/new.ts');
    gitOk(story, work, ['reset', '-q', '--hard', 'origin/main']);
  });

  it('a new branch made from a branch that revokes the key is judged by its own rules too (rt50 f01); control: content a kept key approved', () => {
    writeFiles(work, { 'src/g.ts': "export const g = 'bob';\n" });
    attestOk(story, work, 'approve', ['src/g.ts'], { key: 'bob' });
    fs.rmSync(path.join(work, 'src/g.ts'));
    gitOk(story, work, ['checkout', '-q', '-b', 'revoking']);
    cliOk(story, work, ['keys', 'revoke', 'bob']);
    attestOk(story, work, 'approve', [keyFileOf('bob')]);
    gitOk(story, work, ['add', keyFileOf('bob')]);
    expect(commit(story, work, 'revoke bob').code).toBe(0);
    const revoking = gitRun(story, work, ['push', '--atomic', 'origin', 'revoking', LEDGER]);
    expect(revoking.code, revoking.stderr).toBe(0);

    gitOk(story, work, ['checkout', '-q', '-b', 'from-revoking']);
    writeFiles(work, { 'src/g.ts': "export const g = 'bob';\n" });
    gitOk(story, work, ['add', 'src/g.ts']);
    expect(commit(story, work, 'bob-approved content', ['--no-verify']).code).toBe(0);
    const refused = gitRun(story, work, ['push', '--atomic', 'origin', 'from-revoking', LEDGER]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      /refused refs\/heads\/from-revoking [0-9a-f]{12} src\/g\.ts: .*revoked.*\(under the rules this push brings\)/,
    );
    expect(cli(story, work, ['verify', '--rev', 'from-revoking']).code).toBe(1);

    attestOk(story, work, 'approve', ['src/g.ts']);
    const accepted = gitRun(story, work, ['push', '--atomic', 'origin', 'from-revoking', LEDGER]);
    expect(accepted.code, accepted.stderr).toBe(0);
    gitOk(story, work, ['checkout', '-q', 'main']);
  });

  it('control: the same content approved by a key the push keeps is accepted by every gate', () => {
    writeFiles(work, { 'src/new.ts': `export const by = 'operator';\n` });
    attestOk(story, work, 'approve', ['src/new.ts']);
    cliOk(story, work, ['keys', 'revoke', 'bob']);
    attestOk(story, work, 'approve', [keyFileOf('bob')]);
    gitOk(story, work, ['add', 'src/new.ts', keyFileOf('bob')]);
    acceptedByEveryGate(story, work, 'revoke bob, content the operator approved');
  });
});

/**
 * release-1 is pushed from main while bob is trusted; bob approves src/r.ts (on no branch); his revocation is staged on
 * main, approved by the operator.
 */
function bobApprovesThenIsRevoked(story: Story, work: string): void {
  gitOk(story, work, ['push', '-q', 'origin', 'main:refs/heads/release-1']);
  writeFiles(work, { 'src/r.ts': "export const r = 'bob';\n" });
  attestOk(story, work, 'approve', ['src/r.ts'], { key: 'bob' });
  fs.rmSync(path.join(work, 'src/r.ts'));
  cliOk(story, work, ['keys', 'revoke', 'bob']);
  attestOk(story, work, 'approve', [keyFileOf('bob')]);
  gitOk(story, work, ['add', keyFileOf('bob')]);
}

/** Branch `rel` from release-1, with the src/r.ts bob approved committed past the hook. */
function bobsContentOnRelease(story: Story, work: string): void {
  gitOk(story, work, ['checkout', '-q', '-b', 'rel', 'origin/release-1']);
  writeFiles(work, { 'src/r.ts': "export const r = 'bob';\n" });
  gitOk(story, work, ['add', 'src/r.ts']);
  expect(commit(story, work, 'what bob approved', ['--no-verify']).code).toBe(0);
}

describe('a revocation on the default branch binds the branches made before it', () => {
  let story: Story;
  let work: string;

  beforeAll(() => {
    story = makeStory();
    work = adoptedClone(story, ['src/**']);
    trustedKey(story, work, 'bob');
  });

  afterAll(() => story.cleanup());

  it("a push to a branch made before bob's revocation is refused for content only bob approved (admin audit a01); control: the operator's approval of it is accepted there", () => {
    bobApprovesThenIsRevoked(story, work);
    acceptedByEveryGate(story, work, 'revoke bob');
    bobsContentOnRelease(story, work);
    const refused = gitRun(story, work, ['push', '--atomic', 'origin', 'rel:release-1', LEDGER]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      /refused refs\/heads\/release-1 [0-9a-f]{12} src\/r\.ts: .*bob's key was revoked/,
    );
    // Its own key file says nothing of the revocation: the refusal says where it is (red team r06).
    expect(refused.stderr).toContain("bob's key was revoked on the default branch");
    // CI on that branch, as the ledger action runs it there: from where it left main, with main's revocations.
    const parted = gitOk(story, work, ['merge-base', 'HEAD', 'main']);
    const bound = cli(story, work, ['verify', '--since', parted, '--revocations-of', 'main']);
    expect(bound.code, bound.stdout).toBe(1);
    expect(bound.stdout).toMatch(/NOT PROMOTED {2}src\/r\.ts: .*bob's key was revoked at main/);
    expect(bound.stdout).toMatch(/^revoked +blob .*bob's key was revoked at main \(no longer counts\)$/m);
    // Control: by the branch's own keys (the option left out) bob's approval still counts.
    expect(cli(story, work, ['verify', '--since', parted]).code).toBe(0);

    attestOk(story, work, 'approve', ['src/r.ts']);
    const accepted = gitRun(story, work, ['push', '--atomic', 'origin', 'rel:release-1', LEDGER]);
    expect(accepted.code, accepted.stderr).toBe(0);
    const approved = cli(story, work, ['verify', '--since', parted, '--revocations-of', 'main']);
    expect(approved.code, approved.stdout).toBe(0);
    gitOk(story, work, ['checkout', '-q', 'main']);
    // A revision holding no policy (a default branch not adopted yet) revokes nothing (red team r03).
    const emptyTree = gitOk(story, work, ['hash-object', '-t', 'tree', '/dev/null']);
    const unadopted = gitOk(story, work, ['commit-tree', emptyTree, '-m', 'no policy here']);
    const none = cli(story, work, ['verify', '--revocations-of', unadopted]);
    expect(none.code, none.stdout + none.stderr).toBe(0);
  });

  it('that branch can still move its keys directory, its copy of the revoked key as it was (red team r02); the key stays revoked there', () => {
    gitOk(story, work, ['fetch', '-q', 'origin']);
    gitOk(story, work, ['checkout', '-q', '-B', 'rel2', 'origin/release-1']);
    fs.cpSync(path.join(work, '.delegate-git/keys'), path.join(work, 'trust'), { recursive: true });
    editPolicy(work, (p) => {
      p.keysDir = 'trust';
    });
    const copies = fs.readdirSync(path.join(work, 'trust')).map((f) => `trust/${f}`);
    attestOk(story, work, 'approve', [POLICY_PATH, ...copies]);
    gitOk(story, work, ['add', POLICY_PATH, 'trust']);
    expect(commit(story, work, 'keys in trust/').code).toBe(0);
    const moved = gitRun(story, work, ['push', '--atomic', 'origin', 'rel2:release-1', LEDGER]);
    expect(moved.code, moved.stderr).toBe(0);

    // bob's copy there says nothing of the revocation: main's still binds it.
    writeFiles(work, { 'src/s.ts': "export const s = 'bob';\n" });
    gitOk(story, work, ['add', 'src/s.ts']);
    attestOk(story, work, 'approve', ['src/s.ts'], { key: 'bob' });
    expect(commit(story, work, 'bob approves on the old branch', ['--no-verify']).code).toBe(0);
    const refused = gitRun(story, work, ['push', '--atomic', 'origin', 'rel2:release-1', LEDGER]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/src\/s\.ts: .*bob's key was revoked/);
    gitOk(story, work, ['checkout', '-q', 'main']);
  });
});

describe("the commit hook applies the revocations of origin's default branch as last fetched", () => {
  let story: Story;
  let work: string;

  beforeAll(() => {
    story = makeStory();
    work = adoptedClone(story, ['src/**']);
    trustedKey(story, work, 'bob');
    // A clone of the then empty server has no origin/HEAD; `git clone` of a non-empty one sets it.
    gitOk(story, work, ['remote', 'set-head', 'origin', 'main']);
  });

  afterAll(() => story.cleanup());

  it('a commit on a branch made before the revocation, of content only bob approved, passes until the fetch that brings the revocation, then is refused, even where it passed before in the same state', () => {
    gitOk(story, work, ['push', '-q', 'origin', 'main:refs/heads/release-1']);
    writeFiles(work, { 'src/r.ts': "export const r = 'bob';\n" });
    attestOk(story, work, 'approve', ['src/r.ts'], { key: 'bob' });
    fs.rmSync(path.join(work, 'src/r.ts'));
    gitOk(story, work, ['checkout', '-q', '-b', 'rel', 'origin/release-1']);
    writeFiles(work, { 'src/r.ts': "export const r = 'bob';\n" });
    gitOk(story, work, ['add', 'src/r.ts']);
    // Control: bob is trusted everywhere yet, so the hook takes it (and remembers the decision).
    const before = commit(story, work, 'what bob approved');
    expect(before.code, before.stderr).toBe(0);
    gitOk(story, work, ['branch', 'feature']); // that commit, for a merge below
    gitOk(story, work, ['reset', '-q', '--soft', 'HEAD~1']); // the same staged state again

    // Another clone revokes bob on main and pushes; this clone's own ledger and branch do not move.
    const other = path.join(story.root, 'other');
    gitOk(story, story.root, ['clone', '-q', path.join(story.root, 'remote.git'), other]);
    gitOk(story, other, ['fetch', '-q', 'origin', `${LEDGER}:${LEDGER}`]);
    cliOk(story, other, ['keys', 'revoke', 'bob']);
    attestOk(story, other, 'approve', [keyFileOf('bob')]);
    gitOk(story, other, ['add', keyFileOf('bob')]);
    expect(commit(story, other, 'revoke bob', ['--no-verify']).code).toBe(0);
    const pushed = gitRun(story, other, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(pushed.code, pushed.stderr).toBe(0);

    const ledgerTip = refTip(story, work, LEDGER);
    gitOk(story, work, ['fetch', '-q', 'origin']);
    expect(refTip(story, work, LEDGER)).toBe(ledgerTip);
    const refused = commit(story, work, 'what bob approved');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      /NOT PROMOTED {2}src\/r\.ts\n.*signer bob's key was revoked on origin's default branch/,
    );
    // keys list says so, though bob's file here says nothing of it (rt62 f06).
    const listed = cliOk(story, work, ['keys', 'list']).stdout;
    expect(listed).toMatch(
      /^bob .* REVOKED \S+ on origin's default branch \(origin\/main at [0-9a-f]{12}, as last fetched\)/m,
    );
    expect(listed).toMatch(/^alice .* active/m); // control
    const listedJson = JSON.parse(cliOk(story, work, ['keys', 'list', '--json']).stdout) as {
      keys: Array<{ name: string; revoked?: string; revokedOnDefaultBranch?: string }>;
    };
    const bobListed = listedJson.keys.find((k) => k.name === 'bob')!;
    expect(bobListed.revoked).toBeUndefined();
    expect(bobListed.revokedOnDefaultBranch).toMatch(/^\d{4}-\d\d-\d\dT/);
    // Nor may bob sign here any more: what he signs would count nowhere, and the server refuses such a ledger (rt62 f05).
    const ledgerBefore = refTip(story, work, LEDGER);
    const signed = attest(story, work, 'approve', ['src/r.ts'], { key: 'bob' });
    expect(signed.code).toBe(2);
    expect(signed.stderr).toContain("Cannot sign as bob: the key was revoked on origin's default branch");
    expect(refTip(story, work, LEDGER)).toBe(ledgerBefore);
    // check asks the hook's question, of the index or the work tree: the same answer.
    expect(cli(story, work, ['check', '--staged']).code).toBe(1);
    const asked = cli(story, work, ['check', '--path', 'src/r.ts']);
    expect(asked.code).toBe(1);
    // Where from, as this clone names it: a stale origin/HEAD would show here (rt62 f03).
    expect(asked.stdout).toMatch(
      /signer bob's key was revoked on origin's default branch \(origin\/main at [0-9a-f]{12}, as last fetched\)/,
    );
    expect(asked.stdout).toMatch(/with the revocations of origin\/main at [0-9a-f]{12}, as last fetched/);
    // The server refuses its push for the same reason (the commit made past the hook), and check --rev says so first.
    expect(commit(story, work, 'past the hook', ['--no-verify']).code).toBe(0);
    expect(cli(story, work, ['check', '--rev', 'rel']).code).toBe(1);
    const atServer = gitRun(story, work, ['push', '--atomic', 'origin', 'rel:release-1', LEDGER]);
    expect(atServer.code).not.toBe(0);
    expect(atServer.stderr).toContain("bob's key was revoked on the default branch");
    // Nor does it come in through a merge of the branch that holds it, judged by that branch's rules (rt62 f01).
    gitOk(story, work, ['reset', '-q', '--hard', 'HEAD~1']);
    const merged = gitRun(story, work, ['merge', '--no-ff', '-m', 'merge feature', 'feature']);
    expect(merged.code).not.toBe(0);
    expect(merged.stderr).toContain("signer bob's key was revoked on origin's default branch");
    gitOk(story, work, ['merge', '--abort']);
    writeFiles(work, { 'src/r.ts': "export const r = 'bob';\n" });
    gitOk(story, work, ['add', 'src/r.ts']);

    // Control: the operator's approval of the same content is taken by the hook.
    attestOk(story, work, 'approve', ['src/r.ts']);
    const approved = commit(story, work, 'what the operator approved');
    expect(approved.code, approved.stderr).toBe(0);
    gitOk(story, work, ['checkout', '-q', 'main']);
  });
});

describe('a revocation binds the other refs of the push that brings it', () => {
  let story: Story;
  let work: string;

  beforeAll(() => {
    story = makeStory();
    work = adoptedClone(story, ['src/**']);
    trustedKey(story, work, 'bob');
  });

  afterAll(() => story.cleanup());

  it("one atomic push revoking bob on main and bringing what bob alone approved to an old branch is refused (red team r04); control: main's revocation alone is accepted", () => {
    bobApprovesThenIsRevoked(story, work);
    expect(commit(story, work, 'revoke bob').code).toBe(0);
    bobsContentOnRelease(story, work);
    gitOk(story, work, ['checkout', '-q', 'main']);

    const both = gitRun(story, work, ['push', '--atomic', 'origin', 'main', 'rel:release-1', LEDGER]);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toMatch(
      /refused refs\/heads\/release-1 [0-9a-f]{12} src\/r\.ts: .*bob's key was revoked/,
    );
    expect(both.stderr).not.toContain('refused refs/heads/main');
    const alone = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(alone.code, alone.stderr).toBe(0);
  });
});
