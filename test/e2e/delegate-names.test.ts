// `delegate-git delegate` end to end, the names a worker (or its server) chose that no file system or record can take:
// each is a refusal of that one file, or a name made signable, and the run still ends with a recorded verdict
// (rt45 f02, f04, f06, f14). Every refusal is paired with a control that is written and recorded.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { type DelegateRepo, fileBlock, makeDelegateRepo } from '../support/delegate-repo.js';
import { type FakeWorker, startFakeWorker } from '../support/fake-worker.js';

let worker: FakeWorker;
let repo: DelegateRepo;

beforeAll(async () => {
  worker = await startFakeWorker();
  repo = await makeDelegateRepo({ workerUrl: worker.url, files: { 'src/a.js': 'export const a = 1;\n' } });
});

afterAll(async () => {
  await worker?.close();
  repo?.cleanup();
});

afterEach(() => {
  repo.git(['clean', '-qfd', 'src']);
});

const unit = (taskName: string) => ({
  taskName,
  instruction: 'Write files under src/.',
  targetFiles: ['src/'],
  runVerification: 'true',
});

/** Its own content per test, so the verdicts on its blob are this run's alone. */
const okBlock = (taskName: string) =>
  fileBlock('src/ok.js', `export const ok = ${JSON.stringify(taskName)};`);

/** Delegates a reply whose files are `blocks` plus `src/ok.js`, and reads the verdicts recorded on src/ok.js. */
async function delegateWithControl(taskName: string, blocks: string[]) {
  worker.enqueue({ content: [...blocks, okBlock(taskName)].join('\n') });
  const result = await repo.delegate(unit(taskName));
  const ok = result.receipt?.files.find((f) => f.path === 'src/ok.js');
  const verdicts = ok ? repo.ledger(ok.gitBlob).map((s) => s.predicate.verdict as string) : [];
  return { ...result, verdicts };
}

describe('a name the file system refuses', () => {
  test('a segment over 255 bytes is refused as that file; the run ends UNIT_FAILED, exit 1, recorded', async () => {
    const { code, receipt, stderr, verdicts } = await delegateWithControl('too-long', [
      fileBlock(`src/${'a'.repeat(300)}.js`, 'export const q = 1;'),
    ]);
    expect(stderr).not.toContain('unexpected error');
    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('UNIT_FAILED');
    expect(receipt?.errors).toHaveLength(1);
    expect(receipt?.errors[0]).toMatch(/: name too long \(.*\); not written$/);
    expect(receipt?.files.map((f) => f.path)).toEqual(['src/ok.js']);
    expect(verdicts).toEqual(['UNIT_FAILED']);
  });

  test('a file and a directory under one name, or a file under a file: the later is refused, no errno', async () => {
    const { code, receipt, verdicts } = await delegateWithControl('file-and-dir', [
      fileBlock('src/m/x.js', 'export const x = 1;'),
      fileBlock('src/m', 'export const m = 1;'),
      fileBlock('src/a.js/x.js', 'export const y = 1;'),
    ]);
    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('UNIT_FAILED');
    expect(receipt?.errors).toEqual([
      '`src/m` is also the directory of `src/m/x.js`, planned earlier in this reply; one name cannot be a file and ' +
        'a directory. Not written.',
      '`src/a.js/x.js` would go under `src/a.js`, which is a file, not a directory; not written',
    ]);
    expect(receipt?.files.map((f) => f.path)).toEqual(['src/m/x.js', 'src/ok.js']);
    expect(verdicts).toEqual(['UNIT_FAILED']);
  });
});

describe('a name no record can hold', () => {
  test('a lone surrogate in a name is refused before anything is written or run', async () => {
    const { code, receipt, verdicts } = await delegateWithControl('surrogate', [
      fileBlock('src/x\ud800y.js', 'export const q = 1;'),
    ]);
    expect(code).toBe(1);
    expect(receipt?.errors).toEqual([
      '"src/x\\ud800y.js" is not a valid file name (it holds half of a UTF-16 surrogate pair); not written',
    ]);
    expect(receipt?.verification.skipped).toBe('the emission had refused files');
    expect(repo.git(['status', '--porcelain', 'src'])).toBe('?? src/ok.js\n');
    expect(verdicts).toEqual(['UNIT_FAILED']);
  });

  test("a lone surrogate in the server's model name is recorded as U+FFFD; the unit passes", async () => {
    worker.enqueue({ content: okBlock('model'), model: 'm\ud800' });
    const { code, receipt } = await repo.delegate(unit('model'));
    expect(code).toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    const [statement] = repo.ledger(receipt!.files[0]!.gitBlob);
    expect(statement?.predicate.worker.reportedModel).toBe('m\ufffd');
  });

  test('a backslash in a name is refused (record() would leave it out); a quote alone is written and recorded', async () => {
    const { code, receipt, verdicts } = await delegateWithControl('backslash', [
      '```js\n// FILE: src/q"b\\c.js\nexport const q = 1;\n```\n',
      '```js\n// FILE: src/q"b.js\nexport const q = 2;\n```\n',
    ]);
    expect(code).toBe(1);
    expect(receipt?.errors).toEqual([
      '`src/q"b\\c.js`: no record can name it (a repository path holds no backslash, and no empty, `.` or `..` ' +
        'segment), so it could never be recorded nor promoted. Not written.',
    ]);
    expect(repo.exists('src/q"b\\c.js')).toBe(false);
    const quoted = receipt?.files.find((f) => f.path === 'src/q"b.js');
    expect(quoted).toBeDefined();
    const [statement] = repo.ledger(quoted!.gitBlob);
    expect(statement?.subject.map((s) => s.name)).toEqual(['src/q"b.js', 'src/ok.js']);
    expect(verdicts).toEqual(['UNIT_FAILED']);
  });
});

describe('a name shown in the receipt', () => {
  test('the text receipt C-quotes the paths the worker chose, as log and show do; control: a plain path as it is', async () => {
    worker.enqueue({
      content: [
        fileBlock('src/\u200ba.js', 'export const a = 2;'),
        fileBlock('./src/\u200ba.js', 'export const a = 3;'),
        okBlock('shown'),
      ].join('\n'),
    });
    const { code, stdout } = await repo.cli(['delegate', repo.writeUnit(unit('shown'))]);
    expect(code).toBe(0);
    expect(stdout).toContain('  "src/\\342\\200\\213a.js": 1 line(s), 20 bytes, created\n');
    expect(stdout).toContain(
      '  ignored: a second block for "./src/\\342\\200\\213a.js" (the first one was used)\n',
    );
    expect(stdout).toContain('  src/ok.js: 1 line(s), 27 bytes, created\n');
    expect(stdout).not.toContain('\u200b');
  });
});
