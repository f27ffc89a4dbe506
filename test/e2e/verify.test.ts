import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
/**
 * `delegate-git verify`, the CI ledger job, end to end with the built CLI: every note line verifies against the trust
 * root at the revision, every governed file there is promoted, and the ledger only ever grew. Each refusal is paired
 * with a control that passes, so what fails is the thing the test names.
 *
 * The template repository every describe copies: protect src/**; keys alice (init's operator, delegator and
 * reviewer) and bob (delegator, approved by alice); src/a.ts promoted by alice's verdict, src/b.ts by bob's verdict
 * only, src/c.ts by bob's verdict and alice's approval.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerVerification } from '../../packages/core/src/index.js';
import { loadSigningKey, POLICY_PATH, parsePolicy, signStatement } from '../../packages/core/src/index.js';
import {
  adopt,
  cli,
  cliOk,
  commit,
  copyWorkTree,
  gitOk,
  gitRun,
  LEDGER,
  ledgerCommitWith,
  makeWorkTree,
  noteLines,
  OPERATOR,
  type Run,
  recordVerdict,
  refTip,
  type Story,
  storyOutsideActions,
  writeFiles,
} from '../support/cli-story.js';
import { subjectOf, testKey, testVerdictStatement } from '../support/records.js';

const BOB_KEY_FILE = '.delegate-git/keys/bob.json';

/** What `verify --json` prints: the core result, serialized, with the exit code. */
type VerifyJson = LedgerVerification & { exitCode: number };
type FileJson = VerifyJson['files'][number];

let story: Story;
let template: string;
/** Blob ids of the template's src files. */
const blobs: Record<'a' | 'b' | 'c', string> = { a: '', b: '', c: '' };

beforeAll(async () => {
  story = storyOutsideActions('delegate-git-verify-');
  template = makeWorkTree(story, 'template');
  adopt(story, template, ['src/**']);

  const bob = JSON.parse(cliOk(story, template, ['keygen', 'bob', '--json']).stdout) as { publicKey: string };
  cliOk(story, template, ['keys', 'add', 'bob', '--public-key', bob.publicKey, '--roles', 'delegator']);
  cliOk(story, template, ['attest', '--approve', BOB_KEY_FILE, '--key', OPERATOR, '--yes']);
  commitAll(template, 'trust bob');

  writeFiles(template, {
    'src/a.ts': 'export const a = 1;\n',
    'src/b.ts': 'export const b = 2;\n',
    'src/c.ts': 'export const c = 3;\n',
  });
  blobs.a = await recordVerdict(story, template, 'src/a.ts');
  blobs.b = await recordVerdict(story, template, 'src/b.ts', { key: 'bob' });
  blobs.c = await recordVerdict(story, template, 'src/c.ts', { key: 'bob' });
  cliOk(story, template, ['attest', '--approve', 'src/c.ts', '--key', OPERATOR, '--yes']);
  commitAll(template, 'add a, b, c');
});

afterAll(() => story.cleanup());

function commitAll(dir: string, message: string, extra: string[] = []): void {
  gitOk(story, dir, ['add', '-A']);
  const run = commit(story, dir, message, extra);
  if (run.code !== 0) throw new Error(`commit "${message}" was refused:\n${run.stderr}`);
}

function verify(dir: string, args: string[] = [], env: NodeJS.ProcessEnv = story.env): Run {
  return cli(story, dir, ['verify', ...args], env);
}

function verifyJson(dir: string, args: string[] = []): { code: number; result: VerifyJson } {
  const run = verify(dir, ['--json', ...args]);
  if (run.code === 2) throw new Error(`verify could not answer:\n${run.stderr}`);
  return { code: run.code, result: JSON.parse(run.stdout) as VerifyJson };
}

function file(result: VerifyJson, p: string): FileJson {
  const found = result.files.find((f) => f.path === p);
  if (!found)
    throw new Error(`${p} is not among the governed files: ${result.files.map((f) => f.path).join(', ')}`);
  return found;
}

/** The note on `blob` exactly as `git notes show` prints it, blank lines included. */
function rawNote(dir: string, blob: string): string[] {
  return gitOk(story, dir, ['notes', '--ref=delegations', 'show', blob]).split('\n');
}

/** How the ledger reads a note: non-empty lines, sorted in byte order, unique (what line numbers count). */
function ledgerLines(dir: string, blob: string): string[] {
  return [...new Set(noteLines(story, dir, blob))].sort();
}

function appendNoteLine(dir: string, blob: string, line: string): void {
  gitOk(story, dir, ['notes', '--ref=delegations', 'append', '-m', line, blob]);
}

/** The line with one byte of its signed payload changed (a year digit: still canonical JSON, still a date). */
function forgeOneByte(line: string): string {
  const envelope = JSON.parse(line) as { payload: string };
  const payload = Buffer.from(envelope.payload, 'base64');
  const at = payload.indexOf('"createdAt":"') + '"createdAt":"'.length + 3;
  payload[at] = payload[at] === 0x30 ? 0x31 : 0x30;
  // Spread keeps the parsed key order, which is the canonical one: only the signature can fail.
  return JSON.stringify({ ...envelope, payload: payload.toString('base64') });
}

function repositoryId(dir: string): string {
  return parsePolicy(fs.readFileSync(path.join(dir, POLICY_PATH), 'utf8')).repositoryId;
}

describe('a valid ledger', () => {
  it('verifies: exit 0, every line counted, every governed file promoted, history append-only', () => {
    const text = verify(template);
    expect(text.code, text.stdout + text.stderr).toBe(0);
    expect(text.stdout).toContain('verify: ok');
    expect(text.stdout).toContain('append-only (whole history): ok');
    expect(text.stdout).not.toContain('To promote a refused file'); // said only where a file is refused

    const { code, result } = verifyJson(template);
    expect(code).toBe(0);
    expect(result.exitCode).toBe(0);
    expect(result.rev).toBe('HEAD');
    expect(result.commit).toBe(gitOk(story, template, ['rev-parse', 'HEAD']));
    expect(result.ledgerTip).toBe(refTip(story, template, LEDGER));
    expect(result.invalid).toEqual([]);
    expect(result.revoked).toEqual([]);
    expect(result.appendOnly).toEqual({ checked: 'whole history', removed: [] });

    // Every line of every note, as git lists the notes.
    const annotated = gitOk(story, template, ['notes', '--ref=delegations', 'list'])
      .split('\n')
      .map((l) => l.split(' ')[1]!);
    expect(result.notes).toBe(annotated.length);
    expect(result.lines).toBe(annotated.reduce((n, b) => n + ledgerLines(template, b).length, 0));
    // A record about several files (init's anchor approval: the policy and the key file) counts once.
    expect(result.records).toBeLessThan(result.lines);
    expect(result.byVerdict.UNIT_PASSED).toBe(3);
    expect(result.bySigner.bob).toBe(2);
    expect(result.bySigner.alice).toBeGreaterThanOrEqual(2);

    expect(result.files.map((f) => f.path).sort()).toEqual([
      '.delegate-git/keys/alice.json',
      BOB_KEY_FILE,
      POLICY_PATH,
      'src/a.ts',
      'src/b.ts',
      'src/c.ts',
    ]);
    expect(result.files.every((f) => f.promoted && f.governed)).toBe(true);
    expect(file(result, 'src/a.ts').by).toEqual(['alice']);
    expect(file(result, 'src/b.ts').by).toEqual(['bob']);
  });
});

describe('lines that do not verify', () => {
  let dir: string;
  let original: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'forged');
    const lines = ledgerLines(dir, blobs.a);
    expect(lines).toHaveLength(1);
    original = lines[0]!;
  });

  it('a line with one payload byte changed is listed with its blob, line and reason; the blank line git notes append adds is no record', () => {
    const before = verifyJson(dir);
    expect(before.code).toBe(0);

    const forged = forgeOneByte(original);
    appendNoteLine(dir, blobs.a, forged);
    // git notes append separates paragraphs with a blank line: the note now reads "<original>", "", "<forged>".
    expect(rawNote(dir, blobs.a)).toEqual([original, '', forged]);

    const { code, result } = verifyJson(dir);
    expect(code).toBe(1);
    expect(result.lines).toBe(before.result.lines + 1);
    expect(result.records).toBe(before.result.records); // the forged line is no valid record
    // Line numbers count the note's records as the ledger reads them: sorted, unique, blank separators dropped.
    const line = ledgerLines(dir, blobs.a).indexOf(forged) + 1;
    expect(line).toBeGreaterThan(0);
    expect(result.invalid).toEqual([
      {
        blob: blobs.a,
        line,
        sha256: sha256Of(forged),
        reason: 'the signature by alice does not verify',
        paths: ['src/a.ts'],
      },
    ]);
    // The file is still promoted by the genuine line: the exit code is the forged line's alone.
    expect(result.files.every((f) => f.promoted)).toBe(true);
    expect(result.revoked).toEqual([]);

    const text = verify(dir);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(
      `INVALID LINE  blob ${blobs.a} (src/a.ts) line ${line}: the signature by alice does not verify`,
    );
    expect(text.stdout).toContain('verify: FAILED');
  });

  it('a line signed by a key outside the trust root is invalid; the same statement signed by alice is not', () => {
    const statement = testVerdictStatement([subjectOf('src/b.ts', 'export const b = 2;\n')], {
      repositoryId: repositoryId(dir),
    });
    const stranger = testKey({ name: 'mallory', roles: ['delegator', 'reviewer'] });
    const strangerLine = signStatement(statement, stranger.signer).line;
    const aliceLine = signStatement(statement, loadSigningKey(OPERATOR, story.env).key).line;
    const before = verifyJson(dir).result;

    appendNoteLine(dir, blobs.b, aliceLine);
    const control = verifyJson(dir).result;
    expect(control.invalid).toEqual(before.invalid);
    expect(control.byVerdict.UNIT_PASSED).toBe(before.byVerdict.UNIT_PASSED! + 1);

    appendNoteLine(dir, blobs.b, strangerLine);
    const { code, result } = verifyJson(dir);
    expect(code).toBe(1);
    const line = ledgerLines(dir, blobs.b).indexOf(strangerLine) + 1;
    expect(result.invalid).toContainEqual({
      blob: blobs.b,
      line,
      sha256: sha256Of(strangerLine),
      reason: `signed by a key that is not in the trust root (keyid ${stranger.signer.publicKey.keyid.slice(0, 12)})`,
      paths: ['src/b.ts'],
    });
    expect(result.invalid).toHaveLength(before.invalid.length + 1);
  });

  it('the way out of a line no trust root lists: a notes commit removing it passes --baseline at the last verified tip', () => {
    const work = copyWorkTree(story, template, 'unknown-key-removed');
    const verified = refTip(story, work, LEDGER)!;
    expect(verifyJson(work, ['--baseline', verified]).code).toBe(0);
    const statement = testVerdictStatement([subjectOf('src/b.ts', 'export const b = 2;\n')], {
      repositoryId: repositoryId(work),
    });
    const stranger = signStatement(statement, testKey({ name: 'eve', roles: ['reviewer'] }).signer).line;
    const before = rawNote(work, blobs.b).join('\n');
    appendNoteLine(work, blobs.b, stranger);
    expect(verifyJson(work, ['--baseline', verified]).code).toBe(1);

    gitOk(story, work, ['notes', '--ref=delegations', 'add', '-f', '-m', before, blobs.b]);
    const { code, result } = verifyJson(work, ['--baseline', verified]);
    expect(code, JSON.stringify(result.appendOnly)).toBe(0);
    expect(result.invalid).toEqual([]);
    expect(result.appendOnly).toEqual({
      checked: `since baseline ${verified}`,
      removed: [],
      unsignedRemoved: 1,
    });
    // The whole history says the same: the line was no record a key of the trust root signed, so none was lost (a
    // pull request's run, which has no baseline, no longer fails for good after the way out). Its removal is said.
    const whole = verifyJson(work);
    expect(whole.code, JSON.stringify(whole.result.appendOnly)).toBe(0);
    expect(whole.result.appendOnly).toEqual({ checked: 'whole history', removed: [], unsignedRemoved: 1 });
    expect(verify(work).stdout).toContain(
      'append-only (whole history): ok; 1 line(s) removed that no key of the trust root signed (no record lost)',
    );
  });

  it('a genuine line moved onto a blob it does not name is invalid there', () => {
    const before = verifyJson(dir).result;
    appendNoteLine(dir, blobs.c, original);
    const { result } = verifyJson(dir);
    expect(result.invalid).toContainEqual({
      blob: blobs.c,
      line: ledgerLines(dir, blobs.c).indexOf(original) + 1,
      sha256: sha256Of(original),
      reason: 'the record does not name the blob it is attached to',
    });
    expect(result.invalid).toHaveLength(before.invalid.length + 1);
    // Control: on its own blob the very same line still verifies.
    const ownLine = ledgerLines(dir, blobs.a).indexOf(original) + 1;
    expect(result.invalid.some((p) => p.blob === blobs.a && p.line === ownLine)).toBe(false);
  });
});

describe('entries of the ledger tree that are no notes', () => {
  it('are problems (exit 1), each named in text, Markdown and JSON; control: the same ledger without them verifies', () => {
    const dir = copyWorkTree(story, template, 'not-notes');
    const before = verifyJson(dir);
    expect(before.code).toBe(0);
    expect(before.result.foreignEntries).toEqual([]);

    const junk = gitOk(story, dir, ['hash-object', '-w', POLICY_PATH]);
    const honest = refTip(story, dir, LEDGER)!;
    gitOk(story, dir, [
      'update-ref',
      LEDGER,
      ledgerCommitWith(story, dir, [
        `100644 blob ${junk}\tREADME`,
        `160000 commit ${gitOk(story, dir, ['rev-parse', 'HEAD'])}\t${'f'.repeat(40)}`,
      ]),
    ]);

    const { code, result } = verifyJson(dir);
    expect(code).toBe(1);
    expect(result.exitCode).toBe(1);
    // Git's order; nothing else is wrong, and the submodule is not read as a note (the ledger is not damaged).
    expect(result.foreignEntries).toEqual([
      { path: 'README', mode: '100644' },
      { path: 'f'.repeat(40), mode: '160000' },
    ]);
    expect(result.notes).toBe(before.result.notes);
    expect(result.invalid).toEqual([]);
    expect(result.files.every((f) => f.promoted)).toBe(true);
    expect(result.appendOnly.removed).toEqual([]);

    const text = verify(dir);
    expect(text.code).toBe(1);
    const lines = text.stdout.split('\n');
    expect(lines).toContain('NOT A NOTE    README: not a note on a full object id');
    expect(lines).toContain(
      `NOT A NOTE    ${'f'.repeat(40)}: a submodule (mode 160000), not a note file (mode 100644)`,
    );
    expect(text.stdout).toContain('by revoked keys, 2 tree entries that are not notes');
    expect(text.stdout).toContain('verify: FAILED');

    const md = verify(dir, ['--markdown']).stdout;
    const problems = md.indexOf('### Problems');
    expect(problems).toBeGreaterThan(0);
    const named = md.indexOf("- `README` in the ledger's tree is not a note on a full object id");
    expect(named).toBeGreaterThan(problems);
    expect(named).toBeLessThan(md.indexOf('| revision |'));

    gitOk(story, dir, ['update-ref', LEDGER, honest]);
    const after = verify(dir);
    expect(after.code, after.stdout).toBe(0);
    expect(after.stdout).not.toContain('NOT A NOTE');
  });
});

describe('a revoked key', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'revoked');
    cliOk(story, dir, ['keys', 'revoke', 'bob']);
    cliOk(story, dir, ['attest', '--approve', BOB_KEY_FILE, '--key', OPERATOR, '--yes']);
    commitAll(dir, 'revoke bob');
  });

  it('its lines are reported as revoked, not invalid; the file only it promoted is refused (exit 1 for the file)', () => {
    const { code, result } = verifyJson(dir);
    expect(code).toBe(1);
    expect(result.invalid).toEqual([]);
    const reason = "signer bob's key was revoked";
    expect(result.revoked.map(({ sha256: _sha256, ...rest }) => rest)).toEqual(
      [
        { blob: blobs.b, line: 1, reason, paths: ['src/b.ts'] },
        {
          blob: blobs.c,
          line: ledgerLines(dir, blobs.c).findIndex((l) => lineSigner(l) === 'bob') + 1,
          reason,
          paths: ['src/c.ts'],
        },
      ].sort((x, y) => (x.blob < y.blob ? -1 : 1)),
    );
    expect(result.bySigner.bob).toBeUndefined();
    const b = file(result, 'src/b.ts');
    expect(b.promoted).toBe(false);
    expect(b.reason).toMatch(/revoked/);
    // src/c.ts keeps alice's approval.
    expect(file(result, 'src/c.ts')).toMatchObject({ promoted: true, by: ['alice'] });

    const text = verify(dir);
    // Each line names the file it counted for.
    expect(text.stdout).toContain(
      `revoked       blob ${blobs.b} (src/b.ts) line 1: ${reason} (no longer counts)`,
    );
    expect(text.stdout).toContain('NOT PROMOTED  src/b.ts');
  });

  it("report counts the revoked key's lines on its own row, as not counted (a05); the other signers' rows are as before", () => {
    const report = JSON.parse(cliOk(story, dir, ['report', '--json']).stdout) as {
      bySigner: Array<{ signer: string; delegations: number; approvals: number; notCounted: number }>;
    };
    const row = (name: string) => report.bySigner.find((s) => s.signer === name);
    expect(row('bob')).toMatchObject({ delegations: 0, approvals: 0, notCounted: 2 });
    expect(row('alice')).toMatchObject({ notCounted: 0 });
    expect(row('alice')!.approvals).toBeGreaterThan(0);
    const text = cliOk(story, dir, ['report']).stdout;
    expect(text).toMatch(/not counted/);
  });

  it('control: the revision before the revocation is judged by the trust root in force there, and passes', () => {
    const { code, result } = verifyJson(dir, ['--rev', 'HEAD~1']);
    expect(code).toBe(0);
    expect(result.revoked).toEqual([]);
    expect(result.bySigner.bob).toBe(2);
  });

  it('once a reviewer promotes the file again, verify passes while still listing the revoked lines', () => {
    cliOk(story, dir, ['attest', '--approve', 'src/b.ts', '--key', OPERATOR, '--yes']);
    const { code, result } = verifyJson(dir);
    expect(code).toBe(0);
    expect(result.revoked).toHaveLength(2);
    expect(result.files.every((f) => f.promoted)).toBe(true);
  });
});

describe('a key whose trust-root entry changes after it signed (role removed, notAfter set before its records)', () => {
  function changeBob(name: string, change: (key: Record<string, unknown>) => void): string {
    const dir = copyWorkTree(story, template, name);
    const keyFile = path.join(dir, BOB_KEY_FILE);
    const key = JSON.parse(fs.readFileSync(keyFile, 'utf8')) as Record<string, unknown>;
    change(key);
    fs.writeFileSync(keyFile, `${JSON.stringify(key, null, 2)}\n`);
    cliOk(story, dir, ['attest', '--approve', BOB_KEY_FILE, '--key', OPERATOR, '--yes']);
    commitAll(dir, name);
    return dir;
  }

  for (const { name, change, reason } of [
    {
      name: 'role-removed',
      change: (key: Record<string, unknown>) => {
        key.roles = ['reviewer'];
      },
      reason: 'signer bob does not have the delegator role',
    },
    {
      name: 'expired-before',
      change: (key: Record<string, unknown>) => {
        key.notAfter = '2020-01-01T00:00:00Z';
      },
      reason: "signer bob's key had expired when the record was made",
    },
  ]) {
    it(`${name}: its lines count for nothing and are listed as disallowed, not invalid; verify passes once its file is promoted again`, () => {
      const dir = changeBob(name, change);
      const { code, result } = verifyJson(dir);
      expect(code).toBe(1);
      expect(result.invalid).toEqual([]);
      expect(result.revoked).toEqual([]);
      expect(result.disallowed.map((p) => [p.blob, p.reason])).toEqual(
        [blobs.b, blobs.c].sort().map((b) => [b, reason]),
      );
      expect(result.bySigner.bob).toBeUndefined();
      expect(file(result, 'src/b.ts').promoted).toBe(false);
      expect(file(result, 'src/c.ts')).toMatchObject({ promoted: true, by: ['alice'] });

      // Control: the revision before the change is judged by the entry in force there, and bob's lines count.
      const before = verifyJson(dir, ['--rev', 'HEAD~1']);
      expect(before.code).toBe(0);
      expect(before.result.disallowed).toEqual([]);
      expect(before.result.bySigner.bob).toBe(2);

      cliOk(story, dir, ['attest', '--approve', 'src/b.ts', '--key', OPERATOR, '--yes']);
      const text = verify(dir);
      expect(text.code, text.stdout).toBe(0);
      expect(text.stdout).toContain(
        `disallowed    blob ${blobs.b} (src/b.ts) line ${ledgerLines(dir, blobs.b).findIndex((l) => lineSigner(l) === 'bob') + 1}: ${reason} (counts for nothing)`,
      );
      expect(text.stdout).toContain('of the lines, 0 invalid, 0 by revoked keys, 2 their key may not sign');
      // Records are counted once, lines on every blob they sit on: the sentence names both units.
      expect(text.stdout).toMatch(
        /valid record\(s\) in \d+ line\(s\) on \d+ blob\(s\) \(a record on several blobs is a line on each\); of the lines, /,
      );
    });
  }

  it("control: a line under bob's keyid whose signature does not verify stays invalid", () => {
    const dir = changeBob('role-removed-forged', (key) => {
      key.roles = ['reviewer'];
    });
    const line = JSON.parse(ledgerLines(dir, blobs.b)[0]!) as { signatures: Array<{ sig: string }> };
    const sig = Buffer.from(line.signatures[0]!.sig, 'base64');
    sig[0]! ^= 1;
    line.signatures[0]!.sig = sig.toString('base64');
    appendNoteLine(dir, blobs.b, JSON.stringify(line));
    const { code, result } = verifyJson(dir);
    expect(code).toBe(1);
    expect(result.invalid.map((p) => p.reason)).toEqual(['the signature by bob does not verify']);
    expect(result.disallowed).toHaveLength(2);
  });
});

/** The name in the key file of whoever signed a line, by keyid (the template's two keys). */
function lineSigner(line: string): string {
  const keyid = (JSON.parse(line) as { signatures: Array<{ keyid: string }> }).signatures[0]!.keyid;
  for (const name of ['alice', 'bob']) {
    const keyFile = JSON.parse(
      fs.readFileSync(path.join(template, `.delegate-git/keys/${name}.json`), 'utf8'),
    );
    if (keyFile.keyid === keyid) return name;
  }
  return 'unknown';
}

describe('an unpromoted governed file at the revision', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'unpromoted');
    writeFiles(dir, { 'src/d, e.ts': 'export const d = 4;\n' });
    commitAll(dir, 'sneak d past the hook', ['--no-verify']);
  });

  it('is refused with its reason (exit 1); the revision before it passes', () => {
    const { code, result } = verifyJson(dir);
    expect(code).toBe(1);
    expect(result.invalid).toEqual([]);
    expect(file(result, 'src/d, e.ts')).toMatchObject({ promoted: false, governed: true });
    expect(file(result, 'src/d, e.ts').reason).toMatch(/^no verdict/);
    expect(result.files.filter((f) => !f.promoted).map((f) => f.path)).toEqual(['src/d, e.ts']);

    expect(verifyJson(dir, ['--rev', 'HEAD~1']).code).toBe(0);
  });

  it('says when a refused file has no record on its content at all (its records are in another ledger, a fork’s); a file refused by a record on it is not counted', async () => {
    const mixed = copyWorkTree(story, dir, 'unrecorded');
    writeFiles(mixed, { 'src/f.ts': 'export const f = 6;\n' });
    await recordVerdict(story, mixed, 'src/f.ts', { verdict: 'UNIT_FAILED' });
    commitAll(mixed, 'f failed', ['--no-verify']);
    const { result } = verifyJson(mixed);
    expect(file(result, 'src/d, e.ts').unrecorded).toBe(true);
    expect(file(result, 'src/f.ts')).toMatchObject({ promoted: false });
    expect(file(result, 'src/f.ts').unrecorded).toBeUndefined();
    const hint = '1 refused file(s) have no record on their content in this ledger.';
    expect(verify(mixed).stdout).toContain(hint);
    expect(verify(mixed, ['--markdown']).stdout).toContain(hint);
    expect(verify(mixed).stdout).toContain("a fork's pull request keeps its records in the fork's ledger");

    expect(verify(mixed).stdout).toContain(
      'To promote a refused file: delegate it, or have reviewers approve',
    );
    // The hint ends "promote it as below": in the job summary too, the advice follows it.
    const md = verify(mixed, ['--markdown']).stdout;
    expect(md.indexOf('To promote a refused file: delegate it, or have reviewers approve')).toBeGreaterThan(
      md.indexOf('promote it as below.'),
    );
    // Control: a summary with nothing refused gives no advice.
    expect(verify(dir, ['--markdown', '--rev', 'HEAD~1']).stdout).not.toContain('To promote');

    // Control: d approved, only the file refused by its own record is left, and nothing is said.
    cliOk(story, mixed, ['attest', '--approve', 'src/d, e.ts', '--key', OPERATOR, '--yes']);
    expect(verify(mixed).stdout).not.toContain('have no record on their content');
    expect(verify(mixed).stdout).toContain('To promote a refused file');
  });

  it('under GitHub Actions each refused file is an ::error annotation (stderr with --json, so stdout stays JSON)', () => {
    const actions = { ...story.env, GITHUB_ACTIONS: 'true' };
    const text = verify(dir, [], actions);
    expect(text.code).toBe(1);
    const annotations = text.stdout.split('\n').filter((l) => l.startsWith('::'));
    // Workflow command properties end at "," and ":", so the path escapes them.
    expect(annotations).toEqual([
      expect.stringMatching(/^::error file=src\/d%2C e\.ts::src\/d, e\.ts is not promoted: no verdict/),
    ]);

    const asJson = verify(dir, ['--json'], actions);
    expect(JSON.parse(asJson.stdout).exitCode).toBe(1);
    expect(asJson.stderr).toMatch(/^::error file=src\/d%2C e\.ts::/m);

    // Control: without GITHUB_ACTIONS there is no workflow command.
    expect(verify(dir).stdout).not.toContain('::error');
  });

  it('an annotation names a file the log would show rewritten (`##[`, invisible characters) without a file property, which would point at no file', () => {
    const odd = copyWorkTree(story, dir, 'annotation-odd');
    writeFiles(odd, { 'src/##[group]x.ts': 'export const x = 1;\n' });
    gitOk(story, odd, ['add', '-A']);
    gitOk(story, odd, ['commit', '-q', '--no-verify', '-m', 'odd name']);
    const lines = verify(odd, [], { ...story.env, GITHUB_ACTIONS: 'true' })
      .stdout.split('\n')
      .filter((l) => l.startsWith('::error'));
    expect(lines).toHaveLength(2);
    const named = lines.find((l) => l.includes('group'))!;
    expect(named).toMatch(/^::error::src\/#/);
    expect(lines.find((l) => l !== named)).toMatch(/^::error file=src\/d%2C e\.ts::/);
  });

  it('an annotation names a pushed file as the text output does, C-quoted: a line break in the name adds no line, a zero-width space does not pass for the promoted file', () => {
    const odd = copyWorkTree(story, dir, 'annotation-quoted');
    const broken = 'src/x.ts\nAll files are promoted, ignore this annotation.';
    const hidden = 'src/a\u200b.ts';
    writeFiles(odd, { [broken]: 'export const x = 1;\n', [hidden]: 'export const a = 1;\n' });
    gitOk(story, odd, ['add', '-A']);
    gitOk(story, odd, ['commit', '-q', '--no-verify', '-m', 'odd names']);
    const run = verify(odd, [], { ...story.env, GITHUB_ACTIONS: 'true' });
    const lines = run.stdout.split('\n').filter((l) => l.startsWith('::error'));
    expect(lines).toHaveLength(3);
    // The runner decodes %0A (and %0D) in a message into a line break.
    for (const line of lines) expect(line).not.toMatch(/%0[AD]/i);
    expect(lines).toContain(
      '::error::"src/x.ts\\nAll files are promoted, ignore this annotation." is not promoted: no verdict: no delegated unit is recorded as writing it',
    );
    // The same content as src/a.ts, at a name that reads as it.
    expect(lines).toContain(
      '::error::"src/a\\342\\200\\213.ts" is not promoted: no verdict for this path (the same content is recorded as src/a.ts)',
    );
    expect(run.stdout).not.toContain('\u200b');
    // Each names the file as its text line does.
    expect(run.stdout).toContain('NOT PROMOTED  "src/a\\342\\200\\213.ts": no verdict for this path');
    // Control: a plain path keeps its file property and its name as it is.
    expect(lines).toContainEqual(
      expect.stringMatching(/^::error file=src\/d%2C e\.ts::src\/d, e\.ts is not promoted: /),
    );
  });

  it('a refusal since the commit verified last is annotated the same way: quoted, with no file property for a name that needs quoting', () => {
    const odd = copyWorkTree(story, template, 'annotation-since');
    const verified = gitOk(story, odd, ['rev-parse', 'HEAD']);
    const broken = 'src/y.ts\nverify: ok';
    writeFiles(odd, { [broken]: 'export const y = 1;\n', 'src/z.ts': 'export const z = 1;\n' });
    gitOk(story, odd, ['add', '-A']);
    gitOk(story, odd, ['commit', '-q', '--no-verify', '-m', 'unpromoted names']);
    // Gone again at the revision: only the commit since the verified one names them.
    gitOk(story, odd, ['rm', '-q', '--', broken, 'src/z.ts']);
    gitOk(story, odd, ['commit', '-q', '--no-verify', '-m', 'and gone']);
    const run = verify(odd, ['--since', verified], { ...story.env, GITHUB_ACTIONS: 'true' });
    expect(run.code).toBe(1);
    const lines = run.stdout.split('\n').filter((l) => l.startsWith('::error'));
    for (const line of lines) expect(line).not.toMatch(/%0[AD]/i);
    expect(lines).toContainEqual(
      expect.stringMatching(/^::error::commit [0-9a-f]{12} "src\/y\.ts\\nverify: ok": /),
    );
    // Control: the plain name in the same commit is attached to its file.
    expect(lines).toContainEqual(
      expect.stringMatching(/^::error file=src\/z\.ts::commit [0-9a-f]{12} src\/z\.ts: /),
    );
  });

  it('--markdown: problems first, then the counts and the tables by verdict and by signer', () => {
    const run = verify(dir, ['--markdown']);
    expect(run.code).toBe(1);
    const md = run.stdout;
    expect(md.split('\n')[0]).toBe('## delegate-git ledger: ❌ problems found');
    const order = [
      '### Problems',
      '- `src/d, e.ts` is not promoted: no verdict',
      '| revision |',
      '| governed files | 7: 6 promoted, 1 refused |',
      '### Records by verdict',
      '| verdict | records |',
      '| UNIT_PASSED | 3 |',
      '### Records by signer',
      '| signer | records |',
      '| bob | 2 |',
    ].map((needle) => {
      const at = md.indexOf(needle);
      expect(at, `${needle} in:\n${md}`).toBeGreaterThanOrEqual(0);
      return at;
    });
    expect(order).toEqual([...order].sort((x, y) => x - y));
    expect(md).toMatch(/^\| append-only \| ok \(whole history\) \|$/m);
  });

  it('GITHUB_STEP_SUMMARY gets the Markdown appended whatever stdout shows; a passing run has no Problems section', () => {
    const summary = path.join(story.root, 'step-summary.md');
    fs.writeFileSync(summary, '# an earlier step\n');
    const env = { ...story.env, GITHUB_STEP_SUMMARY: summary };
    const failing = verify(dir, ['--json'], env);
    expect(failing.code).toBe(1);
    expect(JSON.parse(failing.stdout).exitCode).toBe(1);
    const passing = verify(dir, ['--rev', 'HEAD~1'], env);
    expect(passing.code).toBe(0);
    expect(passing.stdout).toContain('verify: ok');

    const written = fs.readFileSync(summary, 'utf8');
    expect(written.startsWith('# an earlier step\n## delegate-git ledger: ❌ problems found')).toBe(true);
    const second = written.indexOf('## delegate-git ledger: ✅ verified');
    expect(second).toBeGreaterThan(0);
    expect(written.slice(second)).not.toContain('### Problems');
    expect(written.slice(second)).toContain('| governed files | 6: 6 promoted, 0 refused |');
  });
});

describe('a ledger rewritten since the baseline', () => {
  let dir: string;
  let baseline: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'rewritten');
    baseline = refTip(story, dir, LEDGER)!;
  });

  it('control: a ledger that only grew since the baseline passes', async () => {
    expect(verifyJson(dir, ['--baseline', baseline]).result.appendOnly).toEqual({
      checked: `since baseline ${baseline}`,
      removed: [],
    });
    writeFiles(dir, { 'src/e.ts': 'export const e = 5;\n' });
    await recordVerdict(story, dir, 'src/e.ts');
    expect(refTip(story, dir, LEDGER)).not.toBe(baseline);
    const { code, result } = verifyJson(dir, ['--baseline', baseline]);
    expect(code).toBe(0);
    expect(result.appendOnly.removed).toEqual([]);
  });

  it('a signed line added after the baseline and removed before this run is named: every notes commit since is checked (rt47 F03)', async () => {
    const work = copyWorkTree(story, template, 'added-and-removed');
    const verified = refTip(story, work, LEDGER)!;
    writeFiles(work, { 'src/r.ts': 'export const r = 1;\n' });
    const blob = await recordVerdict(story, work, 'src/r.ts', { key: 'bob' });
    const [line] = ledgerLines(work, blob);
    // Control: the line added since the baseline and kept passes.
    expect(verifyJson(work, ['--baseline', verified]).code).toBe(0);

    gitOk(story, work, ['notes', '--ref=delegations', 'remove', blob]);
    const tip = refTip(story, work, LEDGER)!;
    const { code, result } = verifyJson(work, ['--baseline', verified]);
    expect(code).toBe(1);
    expect(result.appendOnly).toEqual({
      checked: `since baseline ${verified}`,
      removed: [{ commit: tip, blob, line, signer: 'bob' }],
    });
  });

  it('a line removed with git notes add -f is named, with and without the baseline', () => {
    const lines = ledgerLines(dir, blobs.c);
    expect(lines).toHaveLength(2);
    const [kept, removed] = lines as [string, string];
    gitOk(story, dir, ['notes', '--ref=delegations', 'add', '-f', '-m', kept, blobs.c]);
    const tip = refTip(story, dir, LEDGER)!;

    const since = verifyJson(dir, ['--baseline', baseline]);
    expect(since.code).toBe(1);
    expect(since.result.appendOnly).toEqual({
      checked: `since baseline ${baseline}`,
      removed: [{ commit: tip, blob: blobs.c, line: removed, signer: lineSigner(removed) }],
    });
    // src/c.ts is still promoted by the kept line: the exit code is the removal's alone.
    expect(since.result.files.every((f) => f.promoted)).toBe(true);
    expect(since.result.invalid).toEqual([]);

    const whole = verifyJson(dir);
    expect(whole.code).toBe(1);
    expect(whole.result.appendOnly).toEqual({
      checked: 'whole history',
      removed: [{ commit: tip, blob: blobs.c, line: removed, signer: lineSigner(removed) }],
    });

    // The text says which record went, not just that one did (every line starts with the same characters).
    const text = verify(dir, ['--baseline', baseline]);
    const what =
      lineSigner(removed) === 'bob' ? 'verdict UNIT_PASSED of src/c.ts' : 'review approve of src/c.ts';
    expect(text.stdout).toMatch(
      new RegExp(
        `LINE REMOVED  in notes commit ${tip.slice(0, 12)} from blob ${blobs.c}: ${what} made \\S+, signed by ${lineSigner(removed)} \\(key [0-9a-f]{12}\\) \\(line sha256 [0-9a-f]{16}\\)`,
      ),
    );
    expect(text.stdout).toContain('append-only (since baseline');
    expect(text.stdout).toContain('VIOLATED');
    const md = verify(dir, ['--markdown', '--baseline', baseline]).stdout;
    expect(md).toContain('- 1 record line(s) removed from the ledger:');
    expect(md).toContain(
      // Markdown-escaped: a path or a name in it could otherwise make a link, an image or emphasis.
      `  - from blob \`${blobs.c.slice(0, 12)}\` in notes commit \`${tip.slice(0, 12)}\`: ${what.replace('_', '\\_')}`,
    );

    // What clears it: the line itself back; a new approval would be a record of its own.
    expect(text.stdout).toContain('To restore a removed record, put its exact line back on its blob');
    gitOk(story, dir, ['notes', '--ref=delegations', 'append', '-m', removed, blobs.c]);
    expect(verifyJson(dir, ['--baseline', baseline]).code).toBe(0);
    // Removed again, as the tests below expect it.
    gitOk(story, dir, ['notes', '--ref=delegations', 'add', '-f', '-m', kept, blobs.c]);
  });

  it('a replaced history is refused against the baseline, naming the lines it lost; the whole-history walk cannot see it, which is why CI keeps one', () => {
    // New history: a root commit of the current tree, which lacks the line the test above removed.
    const tree = gitOk(story, dir, ['rev-parse', `${LEDGER}^{tree}`]);
    const replaced = gitOk(story, dir, ['commit-tree', tree, '-m', 'history rewritten']);
    gitOk(story, dir, ['update-ref', LEDGER, replaced]);

    const { code, result } = verifyJson(dir, ['--baseline', baseline]);
    expect(code).toBe(1);
    expect(result.appendOnly.problem).toBe(
      `the baseline ${baseline.slice(0, 12)} is not an ancestor of the ledger tip: its history was rewritten`,
    );
    expect(result.appendOnly.removed).toHaveLength(1);
    const [lost] = result.appendOnly.removed;
    expect(lost).toMatchObject({ commit: replaced, blob: blobs.c });
    expect(ledgerLines(dir, blobs.c)).not.toContain(lost!.line);
    const text = verify(dir, ['--baseline', baseline]).stdout;
    expect(text).toContain('LEDGER REWRITTEN  the baseline');
    expect(text).toContain(`LINE REMOVED  in notes commit ${replaced.slice(0, 12)} from blob ${blobs.c}`);

    expect(verifyJson(dir).code).toBe(0);

    // The baseline's own notes in a new history lose nothing: still refused (rewritten), and said to have lost nothing.
    const whole = gitOk(story, dir, ['commit-tree', `${baseline}^{tree}`, '-m', 'same notes']);
    gitOk(story, dir, ['update-ref', LEDGER, whole]);
    const same = verifyJson(dir, ['--baseline', baseline]);
    expect(same.code).toBe(1);
    expect(same.result.appendOnly.removed).toEqual([]);
    expect(same.result.appendOnly.problem).toContain('(the tip still holds every line the baseline held)');
  });

  it('a baseline that names no notes commit (a commit of the branch, a blob, a tree) is a usage error (exit 2); control: the ledger tip passes', () => {
    const work = copyWorkTree(story, template, 'baseline-kinds');
    expect(verifyJson(work, ['--baseline', refTip(story, work, LEDGER)!]).code).toBe(0);
    const kinds = [
      ['HEAD', "names a commit of the revision's history, not of refs/notes/delegations"],
      ['HEAD:src/c.ts', 'names a blob, not a notes commit'],
      ['HEAD^{tree}', 'names a tree, not a notes commit'],
    ];
    for (const [name, said] of kinds) {
      const id = gitOk(story, work, ['rev-parse', name!]);
      const refused = verify(work, ['--baseline', id]);
      expect(refused.code, name).toBe(2);
      expect(refused.stderr, name).toContain(`--baseline "${id}" ${said}`);
      expect(refused.stdout, name).toBe('');
    }
  });

  it('a baseline that is not in the repository at all is a problem too', () => {
    const missing = 'f'.repeat(40);
    const { code, result } = verifyJson(dir, ['--baseline', missing]);
    expect(code).toBe(1);
    expect(result.appendOnly.problem).toContain(`the baseline ${missing} is not in this repository`);
  });

  it('a baseline that is no commit id and names nothing is a usage error (exit 2), not a rewritten ledger', () => {
    const typo = verify(dir, ['--baseline', 'last-verified']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('--baseline "last-verified" names no commit here');
    expect(typo.stdout).toBe('');
  });
});

describe('an empty ledger', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'empty');
  });

  it('with governed files at the revision: each is refused (exit 1), nothing else is wrong; control: with the ledger, 0', () => {
    expect(verifyJson(dir).code).toBe(0);
    const verified = refTip(story, dir, LEDGER)!;
    gitOk(story, dir, ['update-ref', '-d', LEDGER]);
    // A baseline says a ledger was verified before: its absence is named as the problem it is.
    const gone = verifyJson(dir, ['--baseline', verified]);
    expect(gone.code).toBe(1);
    expect(gone.result.appendOnly.problem).toBe(
      `there is no ledger (${LEDGER}) though the baseline ${verified} was verified: it was deleted, or not fetched`,
    );
    expect(refTip(story, dir, LEDGER)).toBeNull();

    const { code, result } = verifyJson(dir);
    expect(code).toBe(1);
    expect(result).toMatchObject({
      ledgerTip: null,
      records: 0,
      lines: 0,
      notes: 0,
      byVerdict: {},
      bySigner: {},
      invalid: [],
      revoked: [],
      appendOnly: { checked: 'no ledger', removed: [] },
    });
    expect(result.files.map((f) => f.path)).toEqual(
      expect.arrayContaining(['src/a.ts', 'src/b.ts', 'src/c.ts', POLICY_PATH]),
    );
    expect(result.files.every((f) => !f.promoted)).toBe(true);
    for (const src of ['src/a.ts', 'src/b.ts', 'src/c.ts'])
      expect(file(result, src).reason).toMatch(/^no verdict/);
    const text = verify(dir).stdout;
    expect(text).toContain('ledger (none): 0 valid record(s) in 0 line(s) on 0 blob(s)');
    // Where the cause is that the ledger was never fetched, it is said, with how to fetch it.
    expect(text).toContain(
      'There is no ledger here (refs/notes/delegations): `git clone` does not fetch it.',
    );
    gitOk(story, dir, ['update-ref', LEDGER, verified]);
    expect(verify(dir).stdout).not.toContain('There is no ledger here');
  });

  it('with nothing governed (a revision before delegate-git was adopted) the question has no answer: exit 2', () => {
    const bare = makeWorkTree(story, 'never-adopted');
    writeFiles(bare, { 'README.md': 'hello\n' });
    gitOk(story, bare, ['add', '-A']);
    gitOk(story, bare, ['commit', '-q', '-m', 'first']);
    const run = verify(bare);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`There is no ${POLICY_PATH}`);
    expect(run.stderr).toContain('delegate-git init');
    expect(run.stdout).toBe('');

    // Under GitHub Actions the reason is also in the job summary and an annotation (stderr with --json); still exit 2.
    const summary = path.join(story.root, 'never-adopted-summary.md');
    const inActions = verify(bare, ['--json'], {
      ...story.env,
      GITHUB_ACTIONS: 'true',
      GITHUB_STEP_SUMMARY: summary,
    });
    expect(inActions.code).toBe(2);
    expect(inActions.stdout).toBe('');
    expect(inActions.stderr).toMatch(
      /^::error::delegate-git verify could not answer: There is no \.delegate-git\/policy\.json/m,
    );
    expect(fs.readFileSync(summary, 'utf8')).toContain(
      `## delegate-git ledger: ❌ could not answer\n\nverify could not answer (exit 2), so nothing was judged: There is no ${POLICY_PATH}`,
    );
  });

  it('before the first commit there is no revision: exit 2 saying HEAD is unborn (a mistyped rev says so instead)', () => {
    const fresh = makeWorkTree(story, 'no-commit-yet');
    const run = verify(fresh);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('HEAD has no commit yet (branch main is unborn)');
    const typo = verify(fresh, ['--rev', 'mian']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('"mian" is not a commit in this repository');
  });
});

describe('a corrupt policy at the revision', () => {
  it('exits 2 naming the policy file; control: the revision before it verifies', () => {
    const dir = copyWorkTree(story, template, 'corrupt');
    fs.writeFileSync(path.join(dir, POLICY_PATH), '{"version": 1, "repositoryId": ');
    commitAll(dir, 'break the policy', ['--no-verify']);

    const run = verify(dir, ['--json']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^delegate-git verify: \.delegate-git\/policy\.json \([0-9a-f]{40}\) is not valid JSON/,
    );

    expect(verify(dir, ['--rev', 'HEAD~1']).code).toBe(0);
  });

  it('a --rev that is no commit exits 2 too', () => {
    const run = verify(template, ['--rev', 'no-such-branch']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('"no-such-branch" is not a commit in this repository');
  });
});

describe('a note the object store lost (rt51 f03)', () => {
  it('stops verify and check --rev with exit 2 naming it, rather than reading it as no records; control: with it, both pass', () => {
    const dir = copyWorkTree(story, template, 'lost-note');
    expect(verify(dir).code).toBe(0);
    expect(cli(story, dir, ['check', '--rev', 'HEAD']).code).toBe(0);
    const note = gitOk(story, dir, ['notes', '--ref=delegations', 'list', blobs.a]);
    // Every object in one pack, then that pack made again without the note's blob (a lost object: damage).
    gitOk(story, dir, ['repack', '-adq']);
    const [pack] = fs.readdirSync(path.join(dir, '.git/objects/pack')).filter((f) => f.endsWith('.pack'));
    const kept = gitOk(story, dir, ['rev-list', '--objects', '--all'])
      .split('\n')
      .map((line) => line.split(' ')[0]!)
      .filter((id) => id !== note);
    const packed = spawnSync('git', ['pack-objects', '-q', '.git/objects/pack/kept'], {
      cwd: dir,
      env: story.env,
      input: `${kept.join('\n')}\n`,
    });
    expect(packed.status).toBe(0);
    for (const ext of ['.pack', '.idx'])
      fs.rmSync(path.join(dir, '.git/objects/pack', pack!.replace('.pack', ext)));
    fs.rmSync(path.join(dir, '.git/delegate-git/cache'), { recursive: true, force: true });
    expect(gitRun(story, dir, ['cat-file', '-e', note]).code).not.toBe(0);

    for (const args of [['verify'], ['check', '--rev', 'HEAD']]) {
      const run = cli(story, dir, args);
      expect.soft(run.code, args.join(' ')).toBe(2);
      expect.soft(run.stderr).toContain(`the notes tree is damaged: note ${note} is missing`);
    }
  });
});

describe('a clone whose git shows other objects than it stores (rt57 f01)', () => {
  it('a replace ref: git checks out the unpromoted replacement, so verify answers nothing (exit 2); control: without it, exit 0', () => {
    const dir = copyWorkTree(story, template, 'replaced');
    const unpromoted = spawnSync('git', ['hash-object', '-w', '--stdin'], {
      cwd: dir,
      env: story.env,
      input: 'export const a = "not what was promoted";\n',
    });
    const replacement = unpromoted.stdout.toString().trim();
    gitOk(story, dir, ['replace', blobs.a, replacement]);
    expect(gitOk(story, dir, ['show', 'HEAD:src/a.ts'])).toContain('not what was promoted');

    const refused = verify(dir);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`This clone holds a replace ref (refs/replace/${blobs.a})`);
    expect(refused.stderr).toContain(`git replace -d ${blobs.a}`);

    gitOk(story, dir, ['replace', '-d', blobs.a]);
    expect(verify(dir).code).toBe(0);

    // Where the environment tells git to look for them instead (rt58 f08); without it, git reads none there.
    gitOk(story, dir, ['update-ref', `refs/other-replace/${blobs.a}`, replacement]);
    const elsewhere = verify(dir, [], { ...story.env, GIT_REPLACE_REF_BASE: 'refs/other-replace/' });
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toContain(`(refs/other-replace/${blobs.a})`);
    expect(verify(dir).code).toBe(0);
  });

  it('a grafts file: exit 2 naming it; control: moved aside, exit 0', () => {
    const dir = copyWorkTree(story, template, 'grafted');
    const grafts = path.join(dir, '.git', 'info', 'grafts');
    fs.mkdirSync(path.dirname(grafts), { recursive: true });
    fs.writeFileSync(grafts, `${gitOk(story, dir, ['rev-parse', 'HEAD'])}\n`);
    const refused = verify(dir);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('This clone has a grafts file');
    fs.renameSync(grafts, `${grafts}.aside`);
    expect(verify(dir).code).toBe(0);
  });
});

describe('the JSON shape', () => {
  it('has the documented keys (more may be added; none of these may go)', () => {
    const { result } = verifyJson(template);
    expect(Object.keys(result)).toEqual(
      expect.arrayContaining([
        'rev',
        'commit',
        'ledgerTip',
        'records',
        'notes',
        'byVerdict',
        'bySigner',
        'invalid',
        'revoked',
        'foreignEntries',
        'files',
        'appendOnly',
        'exitCode',
      ]),
    );
    for (const f of result.files) {
      expect(Object.keys(f)).toEqual(
        expect.arrayContaining(['path', 'promoted', 'reason', 'by', 'governed', 'blob', 'sha256']),
      );
      expect(f.blob).toMatch(/^[0-9a-f]{40}$/);
      expect(f.sha256).toMatch(/^[0-9a-f]{64}$/);
    }
    expect(Object.keys(result.appendOnly).sort()).toEqual(['checked', 'removed']);
  });
});

function sha256Of(line: string): string {
  return createHash('sha256').update(line).digest('hex');
}
