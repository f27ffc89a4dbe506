/**
 * `delegate-git attest` end to end, with the built CLI in real repositories: what a review signs (the exact path,
 * sha256 and git blob of the content, the reviewer as the trust root names them), what the reviewer is shown before
 * signing, which keys may sign at all, and the confirmation on a terminal. Each refusal is paired with a control that
 * passes, and what is (or is not) in the ledger is read back with `git notes` and `delegate-git show --json`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  adopt,
  cli,
  cliOk,
  commit,
  copyWorkTree,
  gitOk,
  makeStory,
  makeWorkTree,
  noteLines,
  OPERATOR,
  type Run,
  recordVerdict,
  resetWorkTree,
  type Story,
  statementOf,
  storyCli,
  writeFiles,
} from '../support/cli-story.js';
import {
  type AddedKey,
  addKeys,
  attest,
  attestOk,
  generateKey,
  ledgerTip,
  revokeKey,
} from '../support/reviewers.js';

const POLICY = '.delegate-git/policy.json';

let story: Story;
/**
 * Adopted (protect src/**), with four more keys committed with alice's approval: bob (reviewer), carol (delegator
 * only), dave (reviewer whose validity ended in 2020) and erin (reviewer valid until 2099). Describes work on copies.
 */
let template: string;
let keys: Record<string, AddedKey>;

beforeAll(() => {
  story = makeStory();
  template = makeWorkTree(story, 'template');
  adopt(story, template, ['src/**']);
  const added = addKeys(story, template, [
    { name: 'bob' },
    { name: 'carol', roles: ['delegator'] },
    { name: 'dave', notAfter: '2020-01-01T00:00:00Z' },
    { name: 'erin', notAfter: '2099-01-01T00:00:00Z' },
  ]);
  keys = Object.fromEntries(added.map((k) => [k.name, k]));
});

afterAll(() => story.cleanup());

function sha256Of(dir: string, file: string): string {
  return createHash('sha256')
    .update(fs.readFileSync(path.join(dir, file)))
    .digest('hex');
}

/** The blob id of the work-tree content (written, so notes can be read on it). */
function blobOf(dir: string, file: string): string {
  return gitOk(story, dir, ['hash-object', '-w', '--', file]);
}

interface CheckJson {
  results: Array<{
    path: string;
    promoted: boolean;
    reason: string;
    by: string[];
    sha256: string;
    gitBlob: string;
  }>;
  exitCode: number;
}

function checkPath(dir: string, file: string): { run: Run; result: CheckJson['results'][number] } {
  const run = cli(story, dir, ['check', '--path', file, '--json']);
  const parsed = JSON.parse(run.stdout) as CheckJson;
  expect(parsed.exitCode).toBe(run.code);
  return { run, result: parsed.results.find((r) => r.path === file)! };
}

function policyId(dir: string): string {
  return (JSON.parse(fs.readFileSync(path.join(dir, POLICY), 'utf8')) as { repositoryId: string })
    .repositoryId;
}

describe('attest: what an approval promotes', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'what');
  });
  afterEach(() => resetWorkTree(story, dir));

  it('promotes the exact content it names; an edit makes it stale: "approved by <name> for another version"', () => {
    writeFiles(dir, { 'src/stale.ts': 'export const stale = 1;\n' });
    const before = checkPath(dir, 'src/stale.ts');
    expect(before.run.code).toBe(1);
    expect(before.result.reason).toMatch(/^no verdict/);

    const approved = attestOk(story, dir, 'approve', ['src/stale.ts'], { key: 'bob' });
    expect(approved.stdout).toContain('Recorded approval by bob of 1 file(s) in refs/notes/delegations.');
    // Where the file stands with the new record, said after signing (before it: not promoted).
    expect(approved.stdout).toContain('  now: not promoted (no verdict');
    expect(approved.stdout).toContain(
      'refs/notes/delegations.\nsrc/stale.ts now: promoted (approved by bob and unchanged since)',
    );
    // check names the approvers once: in the reason, not again after it.
    const text = cliOk(story, dir, ['check', 'src/stale.ts']).stdout;
    expect(text).toContain('    approved by bob and unchanged since\n');
    const promoted = checkPath(dir, 'src/stale.ts');
    expect(promoted.run.code).toBe(0);
    expect(promoted.result).toMatchObject({
      promoted: true,
      reason: 'approved by bob and unchanged since',
      by: ['bob'],
    });
    gitOk(story, dir, ['add', 'src/stale.ts']);
    const committed = commit(story, dir, 'approved content');
    expect(committed.code, committed.stderr).toBe(0);

    writeFiles(dir, { 'src/stale.ts': 'export const stale = 2;\n' });
    const stale = checkPath(dir, 'src/stale.ts');
    expect(stale.run.code).toBe(1);
    expect(stale.result).toMatchObject({ promoted: false, reason: 'approved by bob for another version' });
    expect(noteLines(story, dir, stale.result.gitBlob)).toEqual([]);
    gitOk(story, dir, ['add', 'src/stale.ts']);
    const refused = commit(story, dir, 'edited after the approval');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/stale.ts');
    expect(refused.stderr).toContain('approved by bob for another version');
  });

  it('approves a symbolic link as git stages it (the text of its target), so the commit that adds it passes', () => {
    writeFiles(dir, { 'src/target.ts': 'export const target = 1;\n' });
    fs.symlinkSync('target.ts', path.join(dir, 'src/alias.ts'));
    attestOk(story, dir, 'approve', ['src/target.ts', 'src/alias.ts'], { key: 'bob' });
    const link = checkPath(dir, 'src/alias.ts');
    expect(link.run.code).toBe(0);
    gitOk(story, dir, ['add', 'src/target.ts', 'src/alias.ts']);
    expect(link.result.gitBlob).toBe(gitOk(story, dir, ['rev-parse', ':src/alias.ts']));
    expect(link.result.sha256).toBe(createHash('sha256').update('target.ts').digest('hex'));
    const committed = commit(story, dir, 'a file and a link to it');
    expect(committed.code, committed.stderr).toBe(0);

    // Control: the link pointed elsewhere is other content, and is refused until approved.
    fs.unlinkSync(path.join(dir, 'src/alias.ts'));
    fs.symlinkSync('../README.md', path.join(dir, 'src/alias.ts'));
    gitOk(story, dir, ['add', 'src/alias.ts']);
    const refused = commit(story, dir, 'the link moved');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/alias.ts');
  });

  it('approves what `git add` stages under core.autocrlf: a file whose indexed blob has CRLF keeps them (git’s “safer autocrlf”), one indexed with LF is converted; the commit of both passes', () => {
    writeFiles(dir, { 'src/crlf.ts': 'a = 1;\r\nb = 2;\r\n', 'src/lf.ts': 'x = 1;\n' });
    attestOk(story, dir, 'approve', ['src/crlf.ts', 'src/lf.ts'], { key: 'bob' });
    gitOk(story, dir, ['add', 'src/crlf.ts', 'src/lf.ts']);
    expect(commit(story, dir, 'before autocrlf').code).toBe(0);
    gitOk(story, dir, ['config', 'core.autocrlf', 'true']);
    try {
      writeFiles(dir, { 'src/crlf.ts': 'a = 2;\r\nb = 2;\r\n', 'src/lf.ts': 'x = 2;\r\n' });
      attestOk(story, dir, 'approve', ['src/crlf.ts', 'src/lf.ts'], { key: 'bob' });
      const approved = ['src/crlf.ts', 'src/lf.ts'].map((f) => checkPath(dir, f).result.gitBlob);
      // `show` looks up the same blob, and finds the approval on it.
      const shown = JSON.parse(cliOk(story, dir, ['show', 'src/crlf.ts', '--json']).stdout);
      expect([shown.blob, shown.records.length]).toEqual([approved[0], 1]);
      gitOk(story, dir, ['add', 'src/crlf.ts', 'src/lf.ts']);
      expect(approved).toEqual([
        gitOk(story, dir, ['rev-parse', ':src/crlf.ts']),
        gitOk(story, dir, ['rev-parse', ':src/lf.ts']),
      ]);
      // What each blob holds: the CRLF file as it is, the other converted to LF.
      expect(gitOk(story, dir, ['cat-file', 'blob', approved[0]!])).toContain('\r');
      expect(gitOk(story, dir, ['cat-file', 'blob', approved[1]!])).toBe('x = 2;');
      const committed = commit(story, dir, 'edited under autocrlf');
      expect(committed.code, committed.stderr).toBe(0);
    } finally {
      gitOk(story, dir, ['config', '--unset', 'core.autocrlf']);
    }
  });

  it('records one statement per file, its subject exactly (path, sha256, gitBlob), on that blob, with the reviewer from the trust root (one statement of all would make the ledger grow with the square of their number)', () => {
    writeFiles(dir, { 'src/one.ts': 'export const one = 1;\n', 'src/two.ts': 'export const two = 2;\n' });
    const files = ['src/one.ts', 'src/two.ts'];
    const expected = files.map((f) => ({
      name: f,
      digest: { sha256: sha256Of(dir, f), gitBlob: blobOf(dir, f) },
    }));
    // Whatever git says about who is at the keyboard, the record names the key's owner as the trust root does.
    const env = {
      ...story.env,
      GIT_AUTHOR_NAME: 'Mallory',
      GIT_AUTHOR_EMAIL: 'mallory@example.org',
      GIT_COMMITTER_NAME: 'Mallory',
      GIT_COMMITTER_EMAIL: 'mallory@example.org',
    };
    const tipBefore = ledgerTip(story, dir);
    attestOk(story, dir, 'approve', files, {
      key: 'bob',
      message: 'read both; the tests cover the edge cases',
      env,
    });

    const lines = expected.map((s) => noteLines(story, dir, s.digest.gitBlob));
    expect(lines[1]).not.toEqual(lines[0]);
    expected.forEach((subject, i) => {
      expect(lines[i]).toHaveLength(1);
      const envelope = JSON.parse(lines[i]![0]!) as {
        payloadType: string;
        signatures: Array<{ keyid: string }>;
      };
      expect(envelope.payloadType).toBe('application/vnd.in-toto+json');
      expect(envelope.signatures.map((s) => s.keyid)).toEqual([keys.bob!.keyid]);
      const statement = statementOf(lines[i]![0]!) as ReturnType<typeof statementOf> & {
        predicateType: string;
      };
      expect(statement.predicateType).toBe('urn:delegate-git:review:v1');
      expect(statement.subject).toEqual([subject]);
      expect(statement.predicate).toMatchObject({
        decision: 'approve',
        reviewer: { name: 'bob', email: 'bob@example.com' },
        comment: 'read both; the tests cover the edge cases',
        repository: { id: policyId(dir) },
      });
      expect(statement.predicate.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
      expect(JSON.stringify(statement)).not.toContain('Mallory');
    });

    // One notes commit for the whole review, on top of the previous tip, naming the files.
    const tip = ledgerTip(story, dir)!;
    expect(gitOk(story, dir, ['rev-parse', `${tip}^`])).toBe(tipBefore);
    expect(gitOk(story, dir, ['log', '-1', '--format=%s', tip])).toBe(
      `delegate-git attest --approve: ${files.join(', ')}`,
    );

    const shown = JSON.parse(cliOk(story, dir, ['show', 'src/two.ts', '--json']).stdout) as {
      blob: string;
      records: Array<Record<string, unknown>>;
    };
    expect(shown.blob).toBe(expected[1]!.digest.gitBlob);
    expect(shown.records).toHaveLength(1);
    expect(shown.records[0]).toMatchObject({
      valid: true,
      signer: 'bob',
      kind: 'review',
      outcome: 'approve',
    });

    // Content with no record had nothing to look at; the next review of it names the record it was shown.
    expect(statementOf(lines[1]![0]!).predicate.reviewed).toBeUndefined();
    attestOk(story, dir, 'approve', ['src/two.ts']);
    const [again] = noteLines(story, dir, expected[1]!.digest.gitBlob).filter((l) => l !== lines[1]![0]);
    expect(statementOf(again!).predicate.reviewed).toEqual([
      createHash('sha256').update(lines[1]![0]!).digest('hex'),
    ]);
  });

  it('--staged signs the staged blob: the commit passes, the different work-tree content is not promoted', () => {
    writeFiles(dir, { 'src/staged.ts': 'export const staged = "index";\n', 'notes.txt': 'not governed\n' });
    gitOk(story, dir, ['add', 'src/staged.ts', 'notes.txt']);
    const stagedBlob = gitOk(story, dir, ['rev-parse', ':src/staged.ts']);
    const stagedSha = createHash('sha256').update('export const staged = "index";\n').digest('hex');
    writeFiles(dir, { 'src/staged.ts': 'export const staged = "work tree";\n' });
    const worktreeBlob = blobOf(dir, 'src/staged.ts');

    const run = attestOk(story, dir, 'approve', [], { staged: true });
    expect(run.stdout).toContain(stagedSha);
    expect(run.stdout).toContain(`Recorded approval by ${OPERATOR} of 1 file(s)`);
    const lines = noteLines(story, dir, stagedBlob);
    expect(lines).toHaveLength(1);
    expect(statementOf(lines[0]!).subject).toEqual([
      { name: 'src/staged.ts', digest: { sha256: stagedSha, gitBlob: stagedBlob } },
    ]);
    expect(noteLines(story, dir, worktreeBlob)).toEqual([]);

    const worktree = checkPath(dir, 'src/staged.ts');
    expect(worktree.run.code).toBe(1);
    expect(worktree.result.reason).toBe(`approved by ${OPERATOR} for another version`);
    const committed = commit(story, dir, 'the staged, approved content');
    expect(committed.code, committed.stderr).toBe(0);
    expect(gitOk(story, dir, ['rev-parse', 'HEAD:src/staged.ts'])).toBe(stagedBlob);

    // Nothing governed staged any more: nothing to review and nothing recorded.
    const tip = ledgerTip(story, dir);
    const nothing = attestOk(story, dir, 'approve', [], { staged: true });
    expect(nothing.stdout).toContain('Nothing to review: no staged governed file.');
    const nothingJson = attestOk(story, dir, 'approve', [], { staged: true, json: true });
    expect(JSON.parse(nothingJson.stdout)).toMatchObject({
      decision: 'approve',
      files: [],
      notesCommit: null,
    });
    expect(ledgerTip(story, dir)).toBe(tip);
  });
});

describe('attest: what the reviewer is shown before signing', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'shown');
  });

  it('each path, its sha256, the records already on it, and the diff against the last promoted version', async () => {
    // Two promoted versions, the second approved last; the diff must be against that one.
    for (const n of [1, 2]) {
      writeFiles(dir, { 'src/shown.ts': `export const a = ${n};\n` });
      attestOk(story, dir, 'approve', ['src/shown.ts']);
      gitOk(story, dir, ['add', 'src/shown.ts']);
      expect(commit(story, dir, `version ${n}`).code).toBe(0);
    }
    const v2Blob = gitOk(story, dir, ['rev-parse', 'HEAD:src/shown.ts']);
    writeFiles(dir, { 'src/shown.ts': 'export const a = 3;\n' });
    await recordVerdict(story, dir, 'src/shown.ts', { verdict: 'UNIT_FAILED' });
    attestOk(story, dir, 'reject', ['src/shown.ts'], { key: 'bob', message: 'off by one' });

    const run = attestOk(story, dir, 'approve', ['src/shown.ts']);
    const text = run.stdout;
    expect(text).toContain('src/shown.ts');
    expect(text).toContain(sha256Of(dir, 'src/shown.ts'));
    // The records already there, each of them (not only the one that decides).
    expect(text).toMatch(/verdict UNIT_FAILED\b.*\balice\b/);
    expect(text).toMatch(/review reject\b.*\bbob\b/);
    expect(text).toContain('rejected by bob');
    // The diff against the last promoted version (version 2), not an older one.
    expect(text).toContain(v2Blob.slice(0, 12));
    expect(text).toContain('-export const a = 2;');
    expect(text).toContain('+export const a = 3;');
    expect(text).not.toContain('-export const a = 1;');
    // What was shown is shown before what was done.
    expect(text.indexOf('src/shown.ts')).toBeLessThan(text.indexOf('Recorded approval'));
  });

  it('several files: each diff under its own path, whatever order they are named in (one git diffs them all)', () => {
    const names = ['src/zz.ts', 'src/ü.ts', 'src/a b.ts', 'src/a.ts.orig'];
    writeFiles(dir, Object.fromEntries(names.map((n, i) => [n, `export const v${i} = 'old';\n`])));
    attestOk(story, dir, 'approve', names);
    gitOk(story, dir, ['add', ...names]);
    expect(commit(story, dir, 'old versions').code).toBe(0);
    writeFiles(dir, Object.fromEntries(names.map((n, i) => [n, `export const v${i} = 'new';\n`])));
    // What the work tree's attributes say (a branch under review may bring `-diff`) does not hide the changes; nor does
    // writing the scratch indexes run the repository's post-index-change hook.
    writeFiles(dir, { '.gitattributes': '*.ts -diff\n*.orig -diff\n' });
    const marker = path.join(dir, '.git', 'post-index-change-ran');
    const hook = path.join(dir, '.git', 'hooks', 'post-index-change');
    fs.writeFileSync(hook, `#!/bin/sh\necho "$GIT_INDEX_FILE" >> '${marker}'\n`, { mode: 0o755 });

    const text = attestOk(story, dir, 'approve', names).stdout;
    fs.rmSync(hook);
    expect(fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8') : 'never ran').toBe('never ran');
    const sectionOf = (name: string) => {
      const start = text.indexOf(`${name}\n  sha256 `);
      expect(start, `${name} in:\n${text}`).toBeGreaterThanOrEqual(0);
      const next = names.map((n) => text.indexOf(`${n}\n  sha256 `)).filter((at) => at > start);
      return text.slice(start, Math.min(text.indexOf('Recorded approval'), ...next));
    };
    names.forEach((name, i) => {
      const section = sectionOf(name);
      expect(section).toContain(`-export const v${i} = 'old';`);
      expect(section).toContain(`+export const v${i} = 'new';`);
      for (const [j] of names.entries()) if (j !== i) expect(section).not.toContain(`v${j} = `);
    });
    // Diffed as files of two trees (one git for all), so each patch names its path, not two blob ids.
    expect(sectionOf('src/zz.ts')).toContain('diff --git a/src/zz.ts b/src/zz.ts');
  });

  it('shows "no records" for content nothing is recorded on, and no diff when no version was ever promoted', () => {
    writeFiles(dir, { 'src/fresh.ts': 'export const fresh = 1;\n' });
    const text = attestOk(story, dir, 'approve', ['src/fresh.ts']).stdout;
    expect(text).toContain(sha256Of(dir, 'src/fresh.ts'));
    expect(text).toMatch(/no records/i);
    expect(text).not.toContain('changes since');
  });

  it('one file named three ways is one file reviewed: shown once, counted once, one record (rt49 f04); control: two files are two', () => {
    writeFiles(dir, {
      'src/spelled.ts': 'export const spelled = 1;\n',
      'src/other.ts': 'export const other = 1;\n',
    });
    const run = attestOk(story, dir, 'approve', ['src/spelled.ts', './src/spelled.ts', 'src//spelled.ts'], {
      key: 'erin',
    });
    expect(run.stdout).toContain('of 1 file(s)');
    expect(run.stdout.split('src/spelled.ts').length - 1, run.stdout).toBeLessThanOrEqual(2);
    expect(noteLines(story, dir, blobOf(dir, 'src/spelled.ts'))).toHaveLength(1);
    const two = attestOk(story, dir, 'approve', ['src/other.ts', 'src/spelled.ts'], { key: 'erin' });
    expect(two.stdout).toContain('of 2 file(s)');
  });

  it('--json: the decision, the reviewer, each file with its digests, prior records and envelope, and the notes commit', () => {
    writeFiles(dir, { 'src/json.ts': 'export const json = 1;\n' });
    const blob = blobOf(dir, 'src/json.ts');
    const run = attestOk(story, dir, 'approve', ['src/json.ts'], {
      key: 'erin',
      json: true,
      message: 'lgtm',
    });
    const out = JSON.parse(run.stdout) as {
      decision: string;
      reviewer: string;
      files: Array<Record<string, unknown> & { envelope: string }>;
      notesCommit: string;
    };
    expect(out.decision).toBe('approve');
    expect(out.reviewer).toBe('erin');
    expect(out.files).toHaveLength(1);
    expect(out.files[0]).toMatchObject({
      path: 'src/json.ts',
      sha256: sha256Of(dir, 'src/json.ts'),
      gitBlob: blob,
      records: [],
    });
    const envelope = out.files[0]!.envelope;
    expect(noteLines(story, dir, blob)).toEqual([envelope]);
    expect(out.notesCommit).toBe(ledgerTip(story, dir));
    expect(statementOf(envelope).predicate).toMatchObject({
      comment: 'lgtm',
      reviewer: { name: 'erin' },
    });
  });
});

describe('attest: a path nothing governs yet', () => {
  it('says that a record makes the path governed for good before signing; control: a governed path gets no such word', () => {
    const dir = copyWorkTree(story, template, 'attest-ungoverned');
    writeFiles(dir, { 'NOTES.md': 'notes\n', 'src/governed.ts': 'export const g = 1;\n' });
    const run = attestOk(story, dir, 'approve', ['NOTES.md', 'src/governed.ts'], { json: true });
    const out = JSON.parse(run.stdout) as { files: Array<{ path: string; governed: boolean }> };
    expect(out.files.map((f) => [f.path, f.governed])).toEqual([
      ['NOTES.md', false],
      ['src/governed.ts', true],
    ]);
    writeFiles(dir, { 'OTHER.md': 'other\n' });
    const text = attestOk(story, dir, 'approve', ['OTHER.md']);
    expect(text.stdout).toContain('not governed now: a record on it makes this path governed for good');
    const governed = attestOk(story, dir, 'approve', ['NOTES.md']);
    expect(governed.stdout).not.toContain('not governed now');
  });
});

describe('attest: keys that may not sign', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'keys');
    writeFiles(dir, { 'src/k.ts': 'export const k = 1;\n' });
  });

  /** A refused attest: exit 2, the message, and the ledger exactly as it was. */
  function expectRefused(key: string, message: string | RegExp): void {
    const tip = ledgerTip(story, dir);
    const blob = blobOf(dir, 'src/k.ts');
    const linesBefore = noteLines(story, dir, blob);
    const run = attest(story, dir, 'approve', ['src/k.ts'], { key });
    expect(run.code, run.stdout + run.stderr).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toContain('Nothing was recorded');
    expect(run.stdout).not.toContain('Recorded');
    expect(ledgerTip(story, dir)).toBe(tip);
    expect(noteLines(story, dir, blob)).toEqual(linesBefore);
  }

  it('a key without the reviewer role cannot attest; a reviewer key can', () => {
    expectRefused('carol', 'Cannot sign as carol: signer carol does not have the reviewer role');
    expect(checkPath(dir, 'src/k.ts').result.reason).toMatch(/^no verdict/);

    const tip = ledgerTip(story, dir);
    attestOk(story, dir, 'approve', ['src/k.ts'], { key: 'bob' });
    expect(ledgerTip(story, dir)).not.toBe(tip);
    expect(checkPath(dir, 'src/k.ts').run.code).toBe(0);
  });

  it('a key that is not in the trust root cannot attest', () => {
    generateKey(story, dir, 'mallory');
    const tip = ledgerTip(story, dir);
    const run = attest(story, dir, 'approve', ['src/k.ts'], { key: 'mallory' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('is not in the trust root');
    expect(ledgerTip(story, dir)).toBe(tip);
  });

  it('an expired reviewer key (--not-after in the past) is refused; one still inside its window signs', () => {
    expectRefused('dave', "Cannot sign as dave: signer dave's key had expired");
    const run = attestOk(story, dir, 'approve', ['src/k.ts'], { key: 'erin' });
    expect(run.stdout).toContain('Recorded approval by erin');
  });

  it('a revoked reviewer key is refused, and its approvals made before the revocation no longer count', () => {
    const rdir = copyWorkTree(story, template, 'revoked');
    writeFiles(rdir, { 'src/r.ts': 'export const r = 1;\n' });
    attestOk(story, rdir, 'approve', ['src/r.ts'], { key: 'bob' });
    const before = cli(story, rdir, ['check', '--path', 'src/r.ts']);
    expect(before.code).toBe(0);
    expect(before.stdout).toContain('approved by bob and unchanged since');
    gitOk(story, rdir, ['add', 'src/r.ts']);
    expect(commit(story, rdir, 'approved by bob').code).toBe(0);

    revokeKey(story, rdir, 'bob');

    writeFiles(rdir, { 'src/r2.ts': 'export const r2 = 1;\n' });
    const tip = ledgerTip(story, rdir);
    const refused = attest(story, rdir, 'approve', ['src/r2.ts'], { key: 'bob' });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("Cannot sign as bob: signer bob's key was revoked");
    expect(ledgerTip(story, rdir)).toBe(tip);

    const after = cli(story, rdir, ['check', '--path', 'src/r.ts']);
    expect(after.code).toBe(1);
    expect(after.stdout).toContain("signer bob's key was revoked");
    const verify = cli(story, rdir, ['verify']);
    expect(verify.code).toBe(1);
    expect(verify.stdout).toContain('NOT PROMOTED  src/r.ts');
    expect(verify.stdout).toMatch(/revoked .*signer bob's key was revoked \(no longer counts\)/);

    // Control: another reviewer approves the same content again, and every gate is satisfied.
    attestOk(story, rdir, 'approve', ['src/r.ts']);
    expect(cli(story, rdir, ['check', '--path', 'src/r.ts']).code).toBe(0);
    const verified = cli(story, rdir, ['verify']);
    expect(verified.code, verified.stdout).toBe(0);
  });
});

describe('attest: revoking your own key', () => {
  it('a reviewer approves the revocation of their own key (judged by the committed trust root); the revoked key signs nothing else', () => {
    const dir = makeWorkTree(story, 'self-revoke');
    adopt(story, dir, ['src/**']); // one reviewer: the operator
    const keyFile = `.delegate-git/keys/${OPERATOR}.json`;
    cliOk(story, dir, ['keys', 'revoke', OPERATOR, '--force']);
    const approved = attest(story, dir, 'approve', [keyFile]);
    expect(approved.code, approved.stderr).toBe(0);
    gitOk(story, dir, ['add', keyFile]);
    const revoked = commit(story, dir, `revoke ${OPERATOR}`);
    expect(revoked.code, revoked.stderr).toBe(0);

    // Control: other content is judged by the trust root that now revokes the key.
    writeFiles(dir, { 'src/after.ts': 'export const after = 1;\n' });
    const refused = attest(story, dir, 'approve', ['src/after.ts']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`signer ${OPERATOR}'s key was revoked`);
  });
});

describe('attest: confirmation and usage', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'confirm');
  });

  it('without a terminal it signs nothing unless told to with --yes, and never waits for an answer (stdin left open)', async () => {
    writeFiles(dir, { 'src/pipe.ts': 'export const pipe = 1;\n' });
    const run = async (extra: string[]) => {
      const child = spawn(
        process.execPath,
        [storyCli, 'attest', '--approve', 'src/pipe.ts', '--key', OPERATOR, ...extra],
        { cwd: dir, env: story.env, stdio: ['pipe', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString('utf8');
      });
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString('utf8');
      });
      const code = await new Promise<number | string>((resolve) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          resolve('hung');
        }, 20_000);
        child.on('close', (c) => {
          clearTimeout(timer);
          resolve(c ?? 'killed');
        });
      });
      return { code, stdout, stderr };
    };
    const unconfirmed = await run([]);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain(
      'There is no terminal to confirm the signature on, so nothing was signed.',
    );
    expect(noteLines(story, dir, blobOf(dir, 'src/pipe.ts'))).toEqual([]);
    // --yes after `--` is a path: said so, not "add --yes" (fc audit f07).
    const afterDashes = await run(['--', '--yes']);
    expect(afterDashes.code).toBe(2);
    expect(afterDashes.stderr).toContain(
      'The --yes given after `--` was read as a path: put it before `--`.',
    );
    // Control: --yes signs, without asking.
    const confirmed = await run(['--yes']);
    expect(confirmed.code, confirmed.stderr).toBe(0);
    expect(confirmed.stdout + confirmed.stderr).not.toContain('[y/N]');
    expect(confirmed.stdout).toContain(`Recorded approval by ${OPERATOR}`);
    expect(noteLines(story, dir, blobOf(dir, 'src/pipe.ts'))).toHaveLength(1);
  });

  const hasScript = spawnSync('script', ['--version']).status === 0;
  it.skipIf(!hasScript)(
    'on a terminal it asks first: "n" records nothing, "y" signs, --yes does not ask',
    () => {
      writeFiles(dir, { 'src/tty.ts': 'export const tty = 1;\n' });
      const blob = blobOf(dir, 'src/tty.ts');
      const onTerminal = (extra: string, answer: string): Run => {
        const command = [
          process.execPath,
          storyCli,
          'attest',
          '--approve',
          'src/tty.ts',
          '--key',
          OPERATOR,
          extra,
        ]
          .filter(Boolean)
          .map((a) => `'${a}'`)
          .join(' ');
        // util-linux script(1) gives the command a pseudo-terminal and feeds it our stdin.
        const r = spawnSync('script', ['-qec', command, '/dev/null'], {
          cwd: dir,
          env: story.env,
          input: answer,
          timeout: 20_000,
        });
        return {
          code: r.status ?? 128,
          stdout: r.stdout.toString('utf8'),
          stderr: r.stderr.toString('utf8'),
        };
      };

      const tip = ledgerTip(story, dir);
      const declined = onTerminal('', 'n\n');
      expect(declined.code, declined.stdout).toBe(1);
      expect(declined.stdout).toContain(`Sign this APPROVAL as ${OPERATOR}? [y/N]`);
      expect(declined.stdout).toContain('Nothing recorded.');
      expect(ledgerTip(story, dir)).toBe(tip);
      expect(noteLines(story, dir, blob)).toEqual([]);

      const accepted = onTerminal('', 'y\n');
      expect(accepted.code, accepted.stdout).toBe(0);
      expect(accepted.stdout).toContain(`Recorded approval by ${OPERATOR}`);
      expect(noteLines(story, dir, blob)).toHaveLength(1);

      const yes = onTerminal('--yes', '');
      expect(yes.code, yes.stdout).toBe(0);
      expect(yes.stdout).not.toContain('[y/N]');
      expect(yes.stdout).toContain(`Recorded approval by ${OPERATOR}`);
    },
  );

  it('refuses unclear requests with exit 2 and records nothing: both decisions, no paths, a missing file', () => {
    const tip = ledgerTip(story, dir);
    const both = cli(story, dir, ['attest', '--approve', '--reject', 'src/x.ts', '--key', OPERATOR, '--yes']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('Give exactly one of --approve or --reject.');
    const none = cli(story, dir, ['attest', '--approve', '--key', OPERATOR, '--yes']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Name the paths to review, or use --staged.');
    const missing = attest(story, dir, 'approve', ['src/missing.ts']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('src/missing.ts is not a file in the work tree');
    // The git directory holds no file of the work tree: its config may carry a remote's token (rt52 f05).
    const gitDir = attest(story, dir, 'approve', ['.git/config']);
    expect(gitDir.code).toBe(2);
    expect(gitDir.stderr).toContain(
      '.git/config is inside a git directory (.git), which no commit can hold.',
    );
    expect(ledgerTip(story, dir)).toBe(tip);
  });
});

describe('attest --rev: content of a commit the work tree does not hold', () => {
  it("approves each path's content in that commit, leaving the work tree and index alone (admin audit a03); a path the commit lacks is refused", () => {
    const dir = copyWorkTree(story, template, 'review-rev');
    gitOk(story, dir, ['checkout', '-q', '-b', 'feature']);
    writeFiles(dir, { 'src/f.ts': 'export const f = 1;\n' });
    gitOk(story, dir, ['add', 'src/f.ts']);
    expect(commit(story, dir, 'the author commits, refused until reviewed', ['--no-verify']).code).toBe(0);
    gitOk(story, dir, ['checkout', '-q', 'main']);
    const index = gitOk(story, dir, ['write-tree']);
    expect(cli(story, dir, ['check', '--rev', 'feature']).code).toBe(1); // control: not promoted yet

    const reviewed = cliOk(story, dir, [
      'attest',
      '--approve',
      '--rev',
      'feature',
      'src/f.ts',
      '--key',
      OPERATOR,
      '--yes',
    ]);
    expect(reviewed.stdout).toContain('src/f.ts now: promoted');
    expect(fs.existsSync(path.join(dir, 'src/f.ts'))).toBe(false);
    expect(gitOk(story, dir, ['write-tree'])).toBe(index);
    const checked = cli(story, dir, ['check', '--rev', 'feature']);
    expect(checked.code, checked.stdout).toBe(0);

    const absent = cli(story, dir, [
      'attest',
      '--approve',
      '--rev',
      'feature',
      'src/none.ts',
      '--key',
      OPERATOR,
      '--yes',
    ]);
    expect(absent.code).toBe(2);
    expect(absent.stderr).toContain('src/none.ts is not a file in feature');
    const both = cli(story, dir, ['attest', '--approve', '--rev', 'feature', '--staged', '--yes']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('Give --staged or --rev, not both.');
  });
});

describe('attest: which personal key signs when none is named', () => {
  it('of two personal keys, the only one the trust root lets review signs; with two that may, it asks which (exit 2)', () => {
    const own = makeStory('delegate-git-attest-choice-');
    try {
      const dir = makeWorkTree(own, 'choice');
      adopt(own, dir, ['src/**']); // the operator's key: the only reviewer
      generateKey(own, dir, 'elsewhere'); // a personal key of another project: not in this trust root
      writeFiles(dir, { 'src/c.ts': 'export const c = 1;\n' });
      const unnamed = ['attest', '--approve', 'src/c.ts', '--yes'];

      const signed = cli(own, dir, unnamed);
      expect(signed.code, signed.stderr).toBe(0);
      expect(signed.stdout).toContain(`Recorded approval by ${OPERATOR}`);

      // Control: a second key that may review too, and the choice is the person's.
      addKeys(own, dir, [{ name: 'second', roles: ['reviewer'] }]);
      writeFiles(dir, { 'src/d.ts': 'export const d = 1;\n' });
      const tip = ledgerTip(own, dir);
      const asked = cli(own, dir, ['attest', '--approve', 'src/d.ts', '--yes']);
      expect(asked.code).toBe(2);
      expect(asked.stderr).toMatch(/there are 3 signing keys in .* so which one to use is ambiguous/);
      expect(ledgerTip(own, dir)).toBe(tip);
    } finally {
      own.cleanup();
    }
  });

  it('the key the trust root names, too open to use, is named with its fault, not called ambiguous (fc audit f01)', () => {
    const own = makeStory('delegate-git-attest-open-');
    try {
      const dir = makeWorkTree(own, 'open');
      adopt(own, dir, ['src/**']);
      generateKey(own, dir, 'elsewhere');
      writeFiles(dir, { 'src/o.ts': 'export const o = 1;\n' });
      const keyFile = path.join(own.env.XDG_CONFIG_HOME!, 'delegate-git', 'keys', `${OPERATOR}.key`);
      fs.chmodSync(keyFile, 0o644);
      const refused = cli(own, dir, ['attest', '--approve', 'src/o.ts', '--yes']);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('chmod 600');
      expect(refused.stderr).not.toContain('ambiguous');
      fs.chmodSync(keyFile, 0o600);
      expect(cli(own, dir, ['attest', '--approve', 'src/o.ts', '--yes']).code).toBe(0);
    } finally {
      own.cleanup();
    }
  });
});
