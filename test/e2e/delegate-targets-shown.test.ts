// The worker is shown each target file that exists, as it is: it changes such a file only with a patch whose SEARCH
// text is copied from it, so a unit that did not also name the file in contextFiles could not be done (finding dl02).
// Built CLI, a temp repository, a real HTTP worker on 127.0.0.1 that records what it was sent.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  type DelegateRepo,
  decodeLine,
  FAKE_AWS_KEY_ID,
  fileBlock,
  makeDelegateRepo,
  patchBlock,
  userPrompt,
} from '../support/delegate-repo.js';
import { type FakeWorker, startFakeWorker } from '../support/fake-worker.js';

const GREET = "export function greet(name) {\n  return 'hello ' + name;\n}\n";
// About 50 KB, over the 32 KiB the worker is shown at most.
const BIG = Array.from({ length: 2000 }, (_, i) => `export const v${i} = ${i};\n`).join('');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

let worker: FakeWorker;
let repo: DelegateRepo;

beforeAll(async () => {
  worker = await startFakeWorker();
  repo = await makeDelegateRepo({
    workerUrl: worker.url,
    files: {
      'src/greet.js': GREET,
      'src/ranged.js': 'export const a = 1;\nexport const b = 2;\nexport const c = 3;\n',
      'src/big.js': BIG,
      'src/secret.js': `export const id = '${FAKE_AWS_KEY_ID}';\n`,
      'lib/other.js': 'export {};\n',
      '.gitignore': '.env\n',
      'assets/logo.bin': Buffer.from([0xff, 0xfe, 0x00, 0x01]),
    },
  });
});

afterAll(async () => {
  await worker?.close();
  repo?.cleanup();
});

const CURRENT = 'Current Content of the Target Files (change them with patch blocks):';

describe('a target file that exists is shown to the worker', () => {
  test('whole, under its own heading; the patch copied from it applies, and the record signs what was shown', async () => {
    worker.enqueue({
      content: patchBlock('src/greet.js', [["  return 'hello ' + name;", "  return 'hello, ' + name;"]]),
    });
    const { code, receipt, stdout } = await repo.delegate({
      taskName: 'comma',
      instruction: 'Greet with a comma.',
      targetFiles: ['src/greet.js', 'src/new.js'],
      runVerification: 'true',
    });
    expect(code, stdout).toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    expect(userPrompt(worker.requests.at(-1))).toContain(
      'Target Files:\n- src/greet.js (exists: change it with a patch block)\n- src/new.js\n',
    );
    expect(userPrompt(worker.requests.at(-1))).toContain(`${CURRENT}\n--- src/greet.js ---\n${GREET}`);
    // The target that does not exist yet is listed as a target, with no content.
    expect(userPrompt(worker.requests.at(-1))).not.toContain('--- src/new.js ---');
    expect(receipt?.context).toEqual([]);
    expect(receipt?.contextTargets).toEqual([
      { path: 'src/greet.js', lineRange: null, lines: 3, bytes: GREET.length, sha256: sha256(GREET) },
    ]);
    const predicate = decodeLine(receipt!.envelope!).predicate;
    expect(predicate.unit.targetContextFiles).toEqual([
      { path: 'src/greet.js', lineRange: null, sha256: sha256(GREET) },
    ]);
    expect(repo.read('src/greet.js')).toContain("return 'hello, ' + name;");
  });

  test('control: a unit whose targets do not exist shows none, and its record has no targetContextFiles', async () => {
    worker.enqueue({ content: fileBlock('src/fresh.js', 'export {};') });
    const { code, receipt } = await repo.delegate({
      taskName: 'fresh',
      instruction: 'Create src/fresh.js.',
      targetFiles: ['src/fresh.js', 'lib/'],
      runVerification: 'true',
    });
    expect(code).toBe(0);
    expect(userPrompt(worker.requests.at(-1))).not.toContain(CURRENT);
    expect(receipt?.contextTargets).toEqual([]);
    // A directory target is not a file to show: its files are not sent.
    expect(userPrompt(worker.requests.at(-1))).not.toContain('lib/other.js');
    expect(decodeLine(receipt!.envelope!).predicate.unit).not.toHaveProperty('targetContextFiles');
  });

  test('a target the unit names in contextFiles is shown only as contextFiles names it', async () => {
    worker.enqueue({
      content: patchBlock('src/ranged.js', [['export const b = 2;', 'export const b = 20;']]),
    });
    const { code, receipt } = await repo.delegate({
      taskName: 'ranged',
      instruction: 'Set b to 20.',
      targetFiles: ['src/ranged.js'],
      contextFiles: [{ path: 'src/ranged.js', startLine: 2, endLine: 2 }],
      runVerification: 'true',
    });
    expect(code).toBe(0);
    const user = userPrompt(worker.requests.at(-1));
    expect(user).toContain('Declared Context:\n--- src/ranged.js (lines 2-2) ---\nexport const b = 2;\n');
    expect(user).not.toContain(CURRENT);
    expect(receipt?.contextTargets).toEqual([]);
  });
});

describe('a unit run again after a failure (ux57 f02)', () => {
  test('the file the failed attempt created is shown as it is and marked to be patched; the patch passes', async () => {
    const unit = {
      taskName: 'kebab',
      instruction: 'Create src/kebab.js exporting kebab = "good".',
      targetFiles: ['src/kebab.js'],
      runVerification: 'grep -q good src/kebab.js',
    };
    worker.enqueue({ content: fileBlock('src/kebab.js', 'export const kebab = "bad";') });
    const first = await repo.delegate(unit);
    expect(first.receipt?.verdict).toBe('UNIT_FAILED');
    expect(repo.read('src/kebab.js')).toBe('export const kebab = "bad";\n');

    worker.enqueue({
      content: patchBlock('src/kebab.js', [['export const kebab = "bad";', 'export const kebab = "good";']]),
    });
    const second = await repo.delegate(unit);
    const user = userPrompt(worker.requests.at(-1));
    expect(user).toContain('Target Files:\n- src/kebab.js (exists: change it with a patch block)\n');
    expect(user).toContain(`${CURRENT}\n--- src/kebab.js ---\nexport const kebab = "bad";\n`);
    expect(second.code).toBe(0);
    expect(second.receipt?.verdict).toBe('UNIT_PASSED');
  });
});

describe('a target the worker is not shown (rt58 f04, f03)', () => {
  test('a file git ignores (.env) is never sent, whatever the unit names; control: the tracked file beside it is', async () => {
    repo.write('.env', 'DB_PASSWORD=hunter2-but-longer\n');
    worker.enqueue({ content: fileBlock('src/fresh2.js', 'export {};') });
    await repo.delegate({
      taskName: 'env',
      instruction: 'Create src/fresh2.js.',
      targetFiles: ['.env', 'src/greet.js', 'src/fresh2.js'],
      runVerification: 'true',
    });
    const user = userPrompt(worker.requests.at(-1));
    expect(user).not.toContain('hunter2');
    expect(user).toContain('--- src/greet.js ---');
  });

  test('a binary target refuses the unit, saying to take it out of targetFiles', async () => {
    const before = worker.requestCount();
    const { receipt } = await repo.delegate({
      taskName: 'logo',
      instruction: 'Change the logo.',
      targetFiles: ['assets/logo.bin'],
      runVerification: 'true',
    });
    expect(receipt?.verdict).toBe('CONTEXT_REFUSED');
    expect(receipt?.errors).toEqual([
      expect.stringMatching(
        /^target assets\/logo\.bin: not UTF-8 text .*a binary file cannot be; take it out of targetFiles$/,
      ),
    ]);
    expect(worker.requestCount()).toBe(before);
  });
});

describe('a target the worker cannot be shown refuses the unit before the worker is called', () => {
  test('over the context budget: CONTEXT_REFUSED, naming it as a target and what to do', async () => {
    const before = worker.requestCount();
    const { code, receipt } = await repo.delegate({
      taskName: 'big',
      instruction: 'Trim the comment.',
      targetFiles: ['src/big.js'],
      runVerification: 'true',
    });
    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('CONTEXT_REFUSED');
    expect(receipt?.message).toContain('the worker was not called');
    expect(receipt?.errors).toEqual([
      expect.stringMatching(
        /^target src\/big\.js: over the context budget: .*, over the 32768-byte limit .* name a line range of it in contextFiles to show only that range, or split the unit\.$/,
      ),
    ]);
    expect(worker.requestCount()).toBe(before);
  });

  test('control: the same file named by a line range in contextFiles is not refused', async () => {
    worker.enqueue({
      content: patchBlock('src/big.js', [['export const v0 = 0;', 'export const v0 = -1;']]),
    });
    const { code, receipt } = await repo.delegate({
      taskName: 'big, ranged',
      instruction: 'Trim the comment.',
      targetFiles: ['src/big.js'],
      contextFiles: [{ path: 'src/big.js', startLine: 1, endLine: 1 }],
      runVerification: 'true',
    });
    expect(code).toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    expect(receipt?.context.map((c) => c.lineRange)).toEqual([[1, 1]]);
  });

  test('holding a credential: CONTEXT_REFUSED without echoing it', async () => {
    const before = worker.requestCount();
    const { code, receipt, stdout } = await repo.delegate({
      taskName: 'secret',
      instruction: 'Rename id.',
      targetFiles: ['src/secret.js'],
      runVerification: 'true',
    });
    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('CONTEXT_REFUSED');
    expect(receipt?.errors).toEqual([
      expect.stringMatching(
        /^credential in src\/secret\.js:1 \(aws.*\): a target file that exists is shown to the worker whole/,
      ),
    ]);
    expect(stdout).not.toContain(FAKE_AWS_KEY_ID);
    expect(worker.requestCount()).toBe(before);
  });
});
