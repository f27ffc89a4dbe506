// `delegate-git delegate` end to end, the emission side: what the worker's reply may write, and where. The built CLI
// runs in a temp repository against a real OpenAI-compatible server on 127.0.0.1; every refusal is paired with a
// control that passes.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  type DelegateRepo,
  fileBlock,
  makeDelegateRepo,
  patchBlock,
  userPrompt,
} from '../support/delegate-repo.js';
import { type FakeWorker, startFakeWorker } from '../support/fake-worker.js';
import { runGitText } from '../support/git-repo.js';

const CRLF_FILE = 'line one\r\nconst a = 1;\r\nconst b = 2;\r\nline four\r\n';
const DUPLICATED_FILE = 'export const value = 1;\nexport const value = 1;\n';
const EXISTING_FILE = 'export const existing = true;\n';
const CONTRACT_FILE = "import { sum } from '../src/sum.js';\nif (sum(1, 2) !== 3) process.exit(1);\n";

let worker: FakeWorker;
let repo: DelegateRepo;

beforeAll(async () => {
  worker = await startFakeWorker();
  repo = await makeDelegateRepo({
    workerUrl: worker.url,
    files: {
      'src/crlf.js': CRLF_FILE,
      'src/dup.js': DUPLICATED_FILE,
      'src/existing.js': EXISTING_FILE,
      'test/contract.test.js': CONTRACT_FILE,
    },
  });
});

afterAll(async () => {
  await worker?.close();
  repo?.cleanup();
});

describe('a second block for the same file', () => {
  test('is ignored and said so in the receipt (text and JSON); the first block is what is written', async () => {
    worker.enqueue({
      content: `${fileBlock('src/twice.js', 'export const first = 1;')}\n${fileBlock('./src/twice.js', 'export const second = 2;')}`,
    });
    const unit = {
      taskName: 'twice',
      instruction: 'Create src/twice.js.',
      targetFiles: ['src/twice.js'],
      runVerification: 'true',
    };
    const { receipt } = await repo.delegate(unit);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    expect(receipt?.duplicates).toEqual(['./src/twice.js']);
    expect(repo.read('src/twice.js')).toBe('export const first = 1;\n');
    fs.rmSync(path.join(repo.dir, 'src/twice.js'));
    worker.enqueue({
      content: `${fileBlock('src/twice.js', 'export const first = 1;')}\n${fileBlock('./src/twice.js', 'export const second = 2;')}`,
    });
    const text = await repo.cli(['delegate', repo.writeUnit(unit, 'twice-text.json')]);
    expect(text.stdout).toContain('  ignored: a second block for ./src/twice.js (the first one was used)');
    // Control: one block, nothing ignored.
    fs.rmSync(path.join(repo.dir, 'src/twice.js'));
    worker.enqueue({ content: fileBlock('src/twice.js', 'export const first = 1;') });
    expect((await repo.delegate(unit)).receipt?.duplicates).toEqual([]);
    fs.rmSync(path.join(repo.dir, 'src/twice.js'));
  });

  test('patch blocks for one file, prose between, are applied in order as one patch (ux57 f04)', async () => {
    repo.write('src/hunks.js', 'export const a = 1;\nexport const mid = 0;\nexport const b = 1;\n');
    repo.git(['add', 'src/hunks.js']);
    worker.enqueue({
      content:
        `First a:\n${patchBlock('src/hunks.js', [['export const a = 1;', 'export const a = 2;']])}\n` +
        `Then b:\n${patchBlock('src/hunks.js', [['export const b = 1;', 'export const b = 2;']])}`,
    });
    const { code, receipt } = await repo.delegate({
      taskName: 'hunks',
      instruction: 'Set a and b to 2.',
      targetFiles: ['src/hunks.js'],
      runVerification: 'grep -q "a = 2" src/hunks.js && grep -q "b = 2" src/hunks.js',
    });
    expect(code).toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    expect(receipt?.duplicates).toEqual([]);
    expect(receipt?.files).toEqual([
      expect.objectContaining({ path: 'src/hunks.js', mode: 'patched', hunks: 2 }),
    ]);
    expect(repo.read('src/hunks.js')).toBe(
      'export const a = 2;\nexport const mid = 0;\nexport const b = 2;\n',
    );
  });
});

describe('a whole-file block creates a file', () => {
  test('UNIT_PASSED, exit 0, the verdict is in the ledger on the new blob and `check --path` promotes it', async () => {
    const before = worker.requestCount();
    worker.enqueue({
      content: `Here it is.\n\n${fileBlock('src/created.js', 'export const created = 1;')}`,
      model: 'gpt-4o (human-reviewed)',
    });
    const { code, receipt, stderr } = await repo.delegate({
      taskName: 'create a module',
      instruction: 'Export a constant named created.',
      targetFiles: ['src/created.js'],
      runVerification: 'true',
    });

    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    expect(worker.requestCount()).toBe(before + 1);
    expect(repo.read('src/created.js')).toBe('export const created = 1;\n');
    expect(receipt?.files).toEqual([
      expect.objectContaining({ path: 'src/created.js', mode: 'created', hunks: 0, lines: 1 }),
    ]);
    expect(receipt?.verification.runs).toHaveLength(3);

    const blob = repo.gitText(['hash-object', 'src/created.js']);
    expect(receipt?.files[0]?.gitBlob).toBe(blob);
    const [statement, ...others] = repo.ledger(blob);
    expect(others).toEqual([]);
    expect(statement?.predicateType).toBe('urn:delegate-git:verdict:v1');
    expect(statement?.predicate.verdict).toBe('UNIT_PASSED');
    // The operator's setting is the model on record; the name the server gave is kept apart, as its claim.
    expect(statement?.predicate.worker).toMatchObject({
      model: 'local-model',
      reportedModel: 'gpt-4o (human-reviewed)',
    });
    // The server reported its usage: the counts are its own, and not marked as estimates.
    expect(statement?.predicate.worker).not.toHaveProperty('tokensEstimated');
    expect(receipt?.tokens).not.toHaveProperty('estimated');
    expect(statement?.subject).toEqual([
      { name: 'src/created.js', digest: { sha256: receipt?.files[0]?.sha256, gitBlob: blob } },
    ]);
    expect(repo.noteLines(blob)).toEqual([receipt?.envelope]);

    const check = await repo.check(['src/created.js']);
    expect(check.code).toBe(0);
    expect(check.report?.results[0]).toMatchObject({ path: 'src/created.js', promoted: true });

    // The trust root's key, found sound, is remembered for the next run (core/key-checks.ts).
    const keysDir = path.join(repo.dir, '.delegate-git', 'keys');
    const keys = fs.readdirSync(keysDir).map((f) => {
      const { publicKey } = JSON.parse(fs.readFileSync(path.join(keysDir, f), 'utf8'));
      return Buffer.from(publicKey, 'base64').toString('hex');
    });
    const sound = fs.readFileSync(
      path.join(repo.dir, '.git', 'delegate-git', 'cache', 'sound-keys-1'),
      'utf8',
    );
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(sound.split('\n')).toContain(key);
  });

  test('the request the worker received carries the unit (task, targets, command) and the operator model', async () => {
    const request = worker.requests.at(-1)!;
    expect(request.body.model).toBe('local-model');
    expect(request.body.stream).toBe(true);
    const user = userPrompt(request);
    expect(user).toContain('Task: create a module');
    expect(user).toContain('Target Files:\n- src/created.js');
    expect(user).toContain('Verification Command:\ntrue');
  });

  test('a server that reports no usage: the record says its token counts are the client’s estimate', async () => {
    worker.enqueue({
      content: fileBlock('src/estimated.js', 'export const estimated = 1;'),
      usage: null,
    });
    const { code, receipt } = await repo.delegate({
      taskName: 'create another module',
      instruction: 'Export a constant named estimated.',
      targetFiles: ['src/estimated.js'],
      runVerification: 'true',
    });
    expect(code).toBe(0);
    // The JSON receipt says so too (finding dl05; the control, a server reporting usage, is the test above).
    expect(receipt?.tokens.estimated).toBe(true);
    const [statement] = repo.ledger(repo.gitText(['hash-object', 'src/estimated.js']));
    const recorded = statement!.predicate.worker as { tokensEstimated?: boolean; completionTokens: number };
    expect(recorded.tokensEstimated).toBe(true);
    expect(recorded.completionTokens).toBeGreaterThan(1);
  });
});

describe('a SEARCH/REPLACE block patches a file', () => {
  test('two hunks applied, CRLF kept; the human receipt says "patched in place with 2 hunk(s)"', async () => {
    worker.enqueue({
      content: patchBlock('src/crlf.js', [
        ['const a = 1;', 'const a = 10;'],
        ['const b = 2;', 'const b = 20;'],
      ]),
    });
    const unit = repo.writeUnit({
      taskName: 'bump',
      instruction: 'Multiply by ten.',
      targetFiles: ['src/crlf.js'],
      runVerification: 'true',
    });
    const { code, stdout } = await repo.cli(['delegate', unit]);

    expect(code).toBe(0);
    const after = 'line one\r\nconst a = 10;\r\nconst b = 20;\r\nline four\r\n';
    expect(repo.read('src/crlf.js')).toBe(after);
    expect(stdout).toContain(
      `src/crlf.js: 4 line(s), ${Buffer.byteLength(after)} bytes, patched in place with 2 hunk(s)`,
    );
    expect(stdout).toContain('Verdict: UNIT_PASSED (signed and recorded in refs/notes/delegations)');
    // `true` prints no test summary: nothing is said of tests it did not report.
    expect(stdout).toContain(
      'Verification (3 run(s): PASS PASS PASS): exit 0, no test counts in its output.',
    );
    expect(stdout).not.toContain('Passed 0, Failed 0');

    const blob = repo.gitText(['hash-object', 'src/crlf.js']);
    const [statement] = repo.ledger(blob);
    expect(statement?.predicate.files).toEqual([
      expect.objectContaining({ path: 'src/crlf.js', mode: 'patched', hunks: 2 }),
    ]);
    expect((await repo.check(['src/crlf.js'])).code).toBe(0);
  });

  test('with an eol attribute the record names the staged (clean-filtered) content, so `check` promotes it', async () => {
    // In the work tree the file is CRLF; what git stores (and `check` judges) is LF.
    repo.write('.gitattributes', 'src/eol/*.js text eol=crlf\n');
    repo.write('src/eol/a.js', 'first line\r\nconst limit = 1;\r\n');
    worker.enqueue({ content: patchBlock('src/eol/a.js', [['const limit = 1;', 'const limit = 2;']]) });
    const { code, receipt } = await repo.delegate({
      taskName: 'eol',
      instruction: 'Raise the limit.',
      targetFiles: ['src/eol/a.js'],
      runVerification: 'true',
    });

    expect(code, receipt?.message ?? '').toBe(0);
    expect(repo.read('src/eol/a.js')).toBe('first line\r\nconst limit = 2;\r\n');
    const staged = createHash('sha256').update('first line\nconst limit = 2;\n').digest('hex');
    expect(receipt?.files[0]).toMatchObject({ path: 'src/eol/a.js', sha256: staged });
    const check = await repo.check(['src/eol/a.js']);
    expect(check.report?.results[0]?.reason).toBe('a unit passed it and its content is unchanged');
    expect(check.code).toBe(0);
  });

  test('a SEARCH that matches twice is refused: file unchanged, UNIT_FAILED, nothing recorded, not promoted', async () => {
    const ledgerBefore = repo.ledgerCommits();
    worker.enqueue({
      content: patchBlock('src/dup.js', [['export const value = 1;', 'export const value = 2;']]),
    });
    const { code, receipt } = await repo.delegate({
      taskName: 'ambiguous',
      instruction: 'Change the value.',
      targetFiles: ['src/dup.js'],
      runVerification: 'true',
    });

    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('UNIT_FAILED');
    expect(receipt?.errors).toEqual([expect.stringContaining('matched more than once (2 times)')]);
    expect(receipt?.files).toEqual([]);
    expect(receipt?.verification.runs).toEqual([]);
    expect(receipt?.verification.skipped).toBe('the emission had refused files');
    expect(repo.read('src/dup.js')).toBe(DUPLICATED_FILE);
    expect(repo.ledgerCommits()).toBe(ledgerBefore);
    expect(receipt?.envelope).toBeNull();
    const check = await repo.check(['src/dup.js']);
    expect(check.code).toBe(1);
    expect(check.report?.results[0]?.promoted).toBe(false);
  });

  test('a SEARCH that matches nowhere is refused with "no exact match", all blocks or none', async () => {
    const ledgerBefore = repo.ledgerCommits();
    // The first block alone would apply; the second does not match, so neither is.
    worker.enqueue({
      content: patchBlock('src/existing.js', [
        ['export const existing = true;', 'export const existing = false;'],
        ['export const missing = 3;', 'export const missing = 4;'],
      ]),
    });
    const { code, receipt } = await repo.delegate({
      taskName: 'missing search',
      instruction: 'Flip it.',
      targetFiles: ['src/existing.js'],
    });

    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('UNIT_FAILED');
    expect(receipt?.errors).toEqual([expect.stringContaining('block 2: SEARCH has no exact match')]);
    expect(repo.read('src/existing.js')).toBe(EXISTING_FILE);
    expect(repo.ledgerCommits()).toBe(ledgerBefore);
  });
});

describe('a whole-file block may create, never modify', () => {
  test('over an existing file it is refused: file unchanged, UNIT_FAILED with nothing recorded, not promoted', async () => {
    const ledgerBefore = repo.ledgerCommits();
    worker.enqueue({ content: fileBlock('src/existing.js', 'export const existing = "rewritten";') });
    const { code, receipt } = await repo.delegate({
      taskName: 'rewrite',
      instruction: 'Rewrite it.',
      targetFiles: ['src/existing.js'],
      runVerification: 'true',
    });

    expect(code).toBe(1);
    // What the code does: an emission that was refused whole is a failed unit; nothing was written, so there
    // is no blob to put a record on and the ledger is untouched.
    expect(receipt?.verdict).toBe('UNIT_FAILED');
    expect(receipt?.errors).toEqual([
      expect.stringContaining('`src/existing.js` already exists; a whole-file block may only create'),
    ]);
    expect(receipt?.files).toEqual([]);
    expect(receipt?.envelope).toBeNull();
    expect(repo.read('src/existing.js')).toBe(EXISTING_FILE);
    expect(repo.ledgerCommits()).toBe(ledgerBefore);
    const refusedBlob = runGitText(
      repo.dir,
      ['hash-object', '--stdin'],
      'export const existing = "rewritten";\n',
    );
    expect(repo.noteLines(refusedBlob)).toEqual([]);
    const check = await repo.check(['src/existing.js']);
    expect(check.code).toBe(1);
    expect(check.report?.results[0]).toMatchObject({ promoted: false });
  });
});

describe('containment: nothing is written outside the workspace', () => {
  test('`..`, an absolute path, a symlink leading out and .git are refused; the in-bounds file is written but not promoted', async () => {
    const outside = path.join(repo.root, 'outside');
    fs.mkdirSync(outside);
    fs.symlinkSync(outside, path.join(repo.dir, 'src', 'link'));
    const absolute = path.join(repo.root, 'escape-absolute.js');
    worker.enqueue({
      content: [
        fileBlock('../escape-dotdot.js', 'export const x = 1;'),
        fileBlock(absolute, 'export const x = 2;'),
        fileBlock('src/link/escape-link.js', 'export const x = 3;'),
        fileBlock('.git/hooks/post-checkout', '#!/bin/sh\necho pwned', 'sh'),
        fileBlock('src/inside.js', 'export const inside = 1;'),
      ].join('\n'),
    });
    const { code, receipt } = await repo.delegate({
      taskName: 'escape',
      instruction: 'Write files.',
      targetFiles: ['src/inside.js'],
      runVerification: 'true',
    });

    expect(fs.existsSync(path.join(repo.root, 'escape-dotdot.js'))).toBe(false);
    expect(fs.existsSync(absolute)).toBe(false);
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(fs.existsSync(path.join(repo.dir, '.git', 'hooks', 'post-checkout'))).toBe(false);
    expect(receipt?.errors).toHaveLength(4);
    const [dotdot, abs, link, gitDir] = receipt!.errors;
    for (const reason of [dotdot, abs, link]) expect(reason).toContain('outside the workspace');
    expect(link).toContain('src/link/escape-link.js');
    expect(gitDir).toContain('inside a git directory');

    // A partly refused emission did not do what it was asked: the file that landed is recorded as UNIT_FAILED.
    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('UNIT_FAILED');
    expect(receipt?.verification.skipped).toBe('the emission had refused files');
    expect(repo.read('src/inside.js')).toBe('export const inside = 1;\n');
    const blob = repo.gitText(['hash-object', 'src/inside.js']);
    expect(repo.ledger(blob).map((s) => s.predicate.verdict)).toEqual(['UNIT_FAILED']);
    const check = await repo.check(['src/inside.js']);
    expect(check.code).toBe(1);
    expect(check.report?.results[0]?.reason).toContain('verdict was UNIT_FAILED');
  });
});

describe('contract files are unwritable', () => {
  test('a patch to a declared contract file is refused and the contract keeps its bytes', async () => {
    const ledgerBefore = repo.ledgerCommits();
    worker.enqueue({
      content: patchBlock('test/contract.test.js', [
        ['if (sum(1, 2) !== 3) process.exit(1);', 'process.exit(0);'],
      ]),
    });
    const { code, receipt } = await repo.delegate({
      taskName: 'cheat',
      instruction: 'Make the test pass.',
      targetFiles: ['test/contract.test.js', 'src/sum.js'],
      contractFiles: ['test/contract.test.js'],
      runVerification: 'node test/contract.test.js',
    });

    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('UNIT_FAILED');
    expect(receipt?.errors).toEqual([
      expect.stringContaining('`test/contract.test.js` is a contract file declared by the architect'),
    ]);
    expect(repo.read('test/contract.test.js')).toBe(CONTRACT_FILE);
    expect(receipt?.contract).toEqual({
      files: [{ path: 'test/contract.test.js', sha256: expect.any(String), unchanged: true }],
      violations: [],
    });
    expect(repo.ledgerCommits()).toBe(ledgerBefore);
  });

  test('control: the implementation the contract names is written and the contract passes', async () => {
    worker.enqueue({ content: fileBlock('src/sum.js', 'export const sum = (a, b) => a + b;') });
    const { code, receipt } = await repo.delegate({
      taskName: 'sum',
      instruction: 'Implement sum.',
      targetFiles: ['src/sum.js'],
      contractFiles: ['test/contract.test.js'],
      runVerification: 'node test/contract.test.js',
    });
    expect(receipt?.errors).toEqual([]);
    expect(code).toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    expect(receipt?.contract.violations).toEqual([]);
  });
});

describe('a reply cut by the token limit', () => {
  test('finish_reason "length" is WORKER_ERROR and nothing is written; the same reply finished is written', async () => {
    const ledgerBefore = repo.ledgerCommits();
    const reply = fileBlock('src/long.js', 'export const long = 1;');
    const unit = {
      taskName: 'long',
      instruction: 'Write long.js.',
      targetFiles: ['src/long.js'],
      runVerification: 'true',
    };
    worker.enqueue({ content: reply, finishReason: 'length' });
    const cut = await repo.delegate(unit);

    expect(cut.code).toBe(1);
    expect(cut.receipt?.verdict).toBe('WORKER_ERROR');
    expect(cut.receipt?.message).toContain('finish_reason "length"');
    expect(cut.receipt?.files).toEqual([]);
    expect(repo.exists('src/long.js')).toBe(false);
    expect(repo.ledgerCommits()).toBe(ledgerBefore);
    // The git writers started while the worker answered were dismissed: nothing written, nothing left behind.
    expect(gitLeftovers(repo.dir)).toEqual([]);

    worker.enqueue({ content: reply });
    const whole = await repo.delegate(unit);
    expect(whole.code).toBe(0);
    expect(whole.receipt?.verdict).toBe('UNIT_PASSED');
    expect(repo.read('src/long.js')).toBe('export const long = 1;\n');
    expect(gitLeftovers(repo.dir)).toEqual([]);
  });
});

/** What a git writer cut short leaves: fast-import's crash reports, temporary packs and objects. */
function gitLeftovers(dir: string): string[] {
  const gitDir = path.join(dir, '.git');
  return [
    ...fs.readdirSync(gitDir).filter((f) => f.startsWith('fast_import_crash')),
    ...fs.readdirSync(path.join(gitDir, 'objects', 'pack')).filter((f) => f.startsWith('tmp_')),
    ...fs.readdirSync(path.join(gitDir, 'objects')).filter((f) => f.startsWith('tmp_')),
  ];
}
