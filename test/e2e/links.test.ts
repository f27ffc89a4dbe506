/**
 * Symbolic links and submodules whose own path no protect glob matches, but beneath which (checked out) files the
 * globs do match would appear. Each gate (pre-commit `check --staged`, the server's pre-receive, CI `verify`) judges
 * such a link as if protected: a governed symbolic link is promoted, like a file, by an approval of its content (the
 * target's text, as git stores it); a governed submodule is refused. A path named beyond a symbolic link
 * (`src/gd/config` with `src/gd -> ../.git`) is refused by check --path, attest and show, as git refuses it. Each
 * refusal is paired with a control that passes.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adopt,
  cli,
  cliOk,
  commit,
  gitOk,
  gitRun,
  LEDGER,
  makeStory,
  makeWorkTree,
  noteLines,
  refTip,
  type Story,
  writeFiles,
} from '../support/cli-story.js';
import { acceptedByEveryGate, adoptedClone, refusedByEveryGate } from '../support/every-gate.js';
import { editPolicy } from '../support/reviewers.js';

const SUBMODULE = 'a submodule: records judge file content';

function link(work: string, at: string, target: string): void {
  fs.mkdirSync(path.dirname(path.join(work, at)), { recursive: true });
  fs.symlinkSync(target, path.join(work, at));
}

describe('protect src/**/*.js', () => {
  let story: Story;
  let work: string;

  beforeAll(() => {
    story = makeStory();
    work = adoptedClone(story, ['src/**/*.js']);
    // Content outside governance, which a link would bring under src/.
    writeFiles(work, { 'lib/evil.js': 'steal()\n', 'README.md': 'read me\n' });
    gitOk(story, work, ['add', 'lib', 'README.md']);
    acceptedByEveryGate(story, work, 'ungoverned content');
  });

  afterAll(() => story.cleanup());

  it('a symbolic link src/util -> ../lib (src/util/evil.js once checked out) is refused by every gate', () => {
    link(work, 'src/util', '../lib');
    gitOk(story, work, ['add', 'src/util']);
    refusedByEveryGate(story, work, 'src/util');
  });

  it('a symbolic link no glob reaches beneath (docs/link -> ../README.md) passes every gate', () => {
    link(work, 'docs/link', '../README.md');
    gitOk(story, work, ['add', 'docs/link']);
    acceptedByEveryGate(story, work, 'a link outside governance');
  });

  it('a governed symbolic link a reviewer approved (its target text, as git stores it) passes every gate', () => {
    link(work, 'src/util', '../lib');
    const before = cli(story, work, ['check', '--path', 'src/util']);
    expect(before.code, before.stdout).toBe(1);
    expect(before.stdout).toContain('NOT PROMOTED  src/util');
    const approved = cliOk(story, work, ['attest', '--approve', 'src/util', '--yes', '--json']);
    // What `git add` stages for a link: a blob of its target's text (not the content of what it points to).
    const linkBlob = createHash('sha1').update('blob 6\0../lib').digest('hex');
    expect(JSON.parse(approved.stdout).files[0].gitBlob).toBe(linkBlob);
    expect(cli(story, work, ['check', '--path', 'src/util']).code).toBe(0);
    gitOk(story, work, ['add', 'src/util']);
    expect(gitOk(story, work, ['ls-files', '-s', 'src/util'])).toContain(`120000 ${linkBlob}`);
    acceptedByEveryGate(story, work, 'an approved link');
  });

  it("a submodule (gitlink) at src/vendor is refused by every gate; one outside the globs' reach passes", () => {
    const someCommit = gitOk(story, work, ['rev-parse', 'HEAD']).trim();
    gitOk(story, work, ['update-index', '--add', '--cacheinfo', `160000,${someCommit},src/vendor`]);
    refusedByEveryGate(story, work, 'src/vendor', SUBMODULE, { byContent: false });

    gitOk(story, work, ['update-index', '--add', '--cacheinfo', `160000,${someCommit},vendor/lib`]);
    acceptedByEveryGate(story, work, 'a submodule outside governance');
  });
});

describe('protect src/core/**', () => {
  let story: Story;
  let work: string;

  beforeAll(() => {
    story = makeStory();
    work = adoptedClone(story, ['src/core/**']);
    writeFiles(work, { 'lib/core/evil.js': 'steal()\n' });
    gitOk(story, work, ['add', 'lib']);
    acceptedByEveryGate(story, work, 'ungoverned content');
  });

  afterAll(() => story.cleanup());

  it('a symbolic link src -> lib (src/core/evil.js once checked out) is refused by every gate', () => {
    link(work, 'src', 'lib');
    gitOk(story, work, ['add', 'src']);
    refusedByEveryGate(story, work, 'src');
  });

  it("a symbolic link beside the glob's base (src/other -> ../lib) passes every gate", () => {
    link(work, 'src/other', '../lib');
    gitOk(story, work, ['add', 'src/other']);
    acceptedByEveryGate(story, work, 'a link beside src/core');
  });
});

describe('protect src/**/*.js with protectDeletes', () => {
  let story: Story;
  let work: string;

  beforeAll(() => {
    story = makeStory();
    work = adoptedClone(story, ['src/**/*.js']);
    editPolicy(work, (p) => {
      p.protectDeletes = true;
    });
    cliOk(story, work, ['attest', '--approve', '.delegate-git/policy.json', '--yes']);
    writeFiles(work, { 'lib/util.js': 'help()\n' });
    link(work, 'src/util', '../lib');
    link(work, 'docs/link', '../lib');
    cliOk(story, work, ['attest', '--approve', 'src/util', '--yes']);
    gitOk(story, work, ['add', '-A']);
    acceptedByEveryGate(story, work, 'deletions protected; a governed link, approved, and one outside');
  });

  afterAll(() => story.cleanup());

  it('deleting a link the globs reach beneath is a protected deletion at commit and push; deleting one outside is not', () => {
    gitOk(story, work, ['rm', '-q', 'src/util']);
    const refused = commit(story, work, 'drop the link');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('protectDeletes');
    expect(commit(story, work, 'drop the link', ['--no-verify']).code).toBe(0);
    const pushed = gitRun(story, work, ['push', 'origin', 'main']);
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toMatch(/refused refs\/heads\/main [0-9a-f]{12} src\/util: .*protectDeletes/);
    // Told what allows it, not to approve content that is not there.
    expect(pushed.stderr).toContain(
      'A protected path may be deleted once a reviewer-approved policy change that turns protectDeletes off',
    );
    expect(pushed.stderr).not.toContain('attest --approve');
    expect(pushed.stderr).not.toContain('This push also changes the policy');
    gitOk(story, work, ['reset', '-q', '--hard', 'origin/main']);

    // The rules change that allows it, in the same push: judged by the rules in force before it, and told so.
    editPolicy(work, (p) => {
      p.protectDeletes = false;
    });
    cliOk(story, work, ['attest', '--approve', '.delegate-git/policy.json', '--yes']);
    gitOk(story, work, ['add', '.delegate-git/policy.json']);
    gitOk(story, work, ['rm', '-q', 'src/util']);
    const local = commit(story, work, 'allow deletes, and drop the link');
    expect(local.code, local.stderr).toBe(0);
    expect(local.stderr).toContain('pass only under the new rules');
    const together = gitRun(story, work, ['push', '--atomic', 'origin', 'main', 'refs/notes/delegations']);
    expect(together.code).not.toBe(0);
    expect(together.stderr).toContain(
      'This push also changes the policy or the trust root (refs/heads/main), but a push is judged by the rules in force on its branch before it: push the rules change on its own first.',
    );
    gitOk(story, work, ['reset', '-q', '--hard', 'origin/main']);

    gitOk(story, work, ['rm', '-q', 'docs/link']);
    acceptedByEveryGate(story, work, 'drop the link outside');
  });

  it('a link turned into a file is a protected deletion of the link at commit and push, the file deleted after it too (rt55 f03); a link outside, the same', () => {
    const toFile = (at: string) => {
      fs.rmSync(path.join(work, at));
      writeFiles(work, { [at]: 'a file where the link was\n' });
      gitOk(story, work, ['add', '-A']);
    };
    toFile('src/util');
    const refused = commit(story, work, 'the link becomes a file');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('protectDeletes');
    expect(commit(story, work, 'the link becomes a file', ['--no-verify']).code).toBe(0);
    gitOk(story, work, ['rm', '-q', 'src/util']);
    expect(commit(story, work, 'and the file goes', ['--no-verify']).code).toBe(0);
    const pushed = gitRun(story, work, ['push', 'origin', 'main']);
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toMatch(/refused refs\/heads\/main [0-9a-f]{12} src\/util: .*protectDeletes/);
    gitOk(story, work, ['reset', '-q', '--hard', 'origin/main']);

    // Control: a link no glob reaches beneath, turned into a file and then deleted, passes every gate.
    link(work, 'docs/outside', '../lib');
    gitOk(story, work, ['add', '-A']);
    acceptedByEveryGate(story, work, 'a link outside');
    toFile('docs/outside');
    acceptedByEveryGate(story, work, 'it becomes a file');
    gitOk(story, work, ['rm', '-q', 'docs/outside']);
    acceptedByEveryGate(story, work, 'and goes');
  });
});

describe('a path named beyond a committed symbolic link to a directory (rt53 f05)', () => {
  let story: Story;
  let work: string;

  beforeAll(() => {
    story = makeStory();
    work = makeWorkTree(story, 'beyond');
    adopt(story, work, ['src/**']);
    // A remote whose URL holds a token: what a record of .git/config's blob would carry a hash of into the ledger.
    gitOk(story, work, [
      'config',
      'remote.origin.url',
      `https://user:${['token', 'of', 'a', 'remote'].join('-')}@example.com/x.git`,
    ]);
    writeFiles(work, { 'src/a.js': 'export const a = 1;\n', 'lib/x.js': 'export const x = 1;\n' });
    link(work, 'src/gd', '../.git');
    link(work, 'src/lib', '../lib');
    gitOk(story, work, ['add', 'src', 'lib']);
    expect(commit(story, work, 'links', ['--no-verify']).code).toBe(0);
    // git itself never takes such a path.
    expect(gitRun(story, work, ['add', 'src/gd/config']).stderr).toContain('is beyond a symbolic link');
  });

  afterAll(() => story.cleanup());

  it('check --path, attest and show refuse it with exit 2, naming the link; nothing is recorded', () => {
    const tip = refTip(story, work, LEDGER);
    const config = gitOk(story, work, ['hash-object', '.git/config']).trim();
    for (const [named, link] of [
      ['src/gd/config', 'src/gd'],
      ['src/lib/x.js', 'src/lib'],
    ] as const) {
      const message = `${named} is beyond a symbolic link (${link}), so it is no file of the repository`;
      for (const args of [
        ['check', '--path', named],
        ['check', '--path', named, '--json'],
        ['attest', '--approve', named, '--yes'],
        ['attest', '--reject', named, '-m', 'no', '--yes'],
        ['show', named],
      ]) {
        const run = cli(story, work, args);
        expect(run.code, `${args.join(' ')}: ${run.stdout}${run.stderr}`).toBe(2);
        expect(run.stderr).toContain(message);
      }
    }
    // Named from the link's directory, relative to it.
    const relative = cli(story, path.join(work, 'src'), ['attest', '--approve', 'gd/config', '--yes']);
    expect(relative.code).toBe(2);
    expect(relative.stderr).toContain('gd/config is beyond a symbolic link (src/gd)');
    expect(refTip(story, work, LEDGER)).toBe(tip);
    expect(noteLines(story, work, config)).toEqual([]);
  });

  it('control: a link itself, the file where it really is, and a plain path are checked, approved and shown', () => {
    for (const named of ['src/gd', 'src/lib', 'lib/x.js', 'src/a.js']) {
      const checked = cli(story, work, ['check', '--path', named]);
      expect(checked.stderr, named).not.toContain('beyond a symbolic link');
      expect([0, 1], `check --path ${named}: ${checked.stdout}${checked.stderr}`).toContain(checked.code);
    }
    const approved = cliOk(story, work, [
      'attest',
      '--approve',
      'src/gd',
      'src/lib',
      'src/a.js',
      '--yes',
      '--json',
    ]);
    // A link is approved as git stores it: a blob of its target's text, never what it points to.
    const blobs = JSON.parse(approved.stdout).files.map((f: { gitBlob: string }) => f.gitBlob);
    expect(blobs).toContain(createHash('sha1').update('blob 7\0../.git').digest('hex'));
    expect(blobs).toContain(createHash('sha1').update('blob 6\0../lib').digest('hex'));
    for (const named of ['src/gd', 'src/lib', 'src/a.js']) {
      expect(cli(story, work, ['check', '--path', named]).code, named).toBe(0);
      const shown = cli(story, work, ['show', named]);
      expect(shown.code, `show ${named}: ${shown.stderr}`).toBe(0);
    }
    expect(cli(story, work, ['show', 'lib/x.js']).code).toBe(0);
  });
});
