/**
 * A key file keeps its key: replacing the key in place would leave the old key's records unverifiable, and what they
 * approved (a revocation, say) would lose its date, so a version it replaced could come back on an old approval.
 * Refused at commit, at push and by verify, whoever approves it; control: revoking a key in place passes everywhere.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { POLICY_PATH } from '../../packages/core/src/index.js';
import { cliOk, gitOk, makeStory, type Story } from '../support/cli-story.js';
import { acceptedByEveryGate, adoptedClone, refusedByEveryGate } from '../support/every-gate.js';
import { attestOk, editPolicy, generateKey, registerKeys } from '../support/reviewers.js';

describe('a key file keeps its key', () => {
  let story: Story;
  let work: string;
  let bobFile: string;

  beforeAll(() => {
    story = makeStory();
    work = adoptedClone(story, ['src/**']);
    const [bob] = registerKeys(story, work, [{ name: 'bob' }]);
    bobFile = bob!.keyFile;
    attestOk(story, work, 'approve', [bobFile]);
    gitOk(story, work, ['add', bobFile]);
    acceptedByEveryGate(story, work, 'trust bob');
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
    const [dave] = registerKeys(story, work, [{ name: 'dave' }]);
    const daveFile = dave!.keyFile;
    attestOk(story, work, 'approve', [daveFile]);
    gitOk(story, work, ['add', daveFile]);
    acceptedByEveryGate(story, work, 'trust dave');
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

    // Control: the old copy brought up to date (revoked, approved), and then the same move back passes.
    fs.copyFileSync(path.join(work, 'trust/dave.json'), path.join(work, daveFile));
    attestOk(story, work, 'approve', [daveFile]);
    gitOk(story, work, ['add', daveFile]);
    acceptedByEveryGate(story, work, 'the old copy revoked too');
    editPolicy(work, (p) => {
      p.keysDir = '.delegate-git/keys';
    });
    attestOk(story, work, 'approve', [POLICY_PATH]);
    gitOk(story, work, ['add', POLICY_PATH]);
    acceptedByEveryGate(story, work, 'keys back in .delegate-git/keys');
  });
});
