// `delegate-git delegate` end to end, the operator's policy around the unit: whether its command may run
// (approval, allowlist), the project-wide coherence command, and the retry context a failure leaves for the next
// attempt. Built CLI, temp repositories, a real HTTP worker on 127.0.0.1.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  type DelegateRepo,
  decodeLine,
  delegateCreating,
  delegateGitBin,
  fileBlock,
  makeDelegateRepo,
  patchBlock,
  userPrompt,
} from '../support/delegate-repo.js';
import { type FakeWorker, startFakeWorker } from '../support/fake-worker.js';

let worker: FakeWorker;

beforeAll(async () => {
  worker = await startFakeWorker();
});

afterAll(async () => {
  await worker?.close();
});

describe('verification approval', () => {
  let repo: DelegateRepo;
  // The command leaves a mark when it runs, so "not run" is observed, not inferred from the receipt.
  let marker: string;
  const markCommand = () => `touch '${marker}'`;

  beforeAll(async () => {
    // approval: null keeps the default, `ask`.
    repo = await makeDelegateRepo({ workerUrl: worker.url, approval: null });
    marker = path.join(repo.root, 'command-ran');
  });
  afterAll(() => repo?.cleanup());

  test('`ask` with no terminal refuses: VERIFICATION_NOT_APPROVED, the command never ran, the file is recorded unpromoted', async () => {
    const { code, receipt, verdicts } = await delegateCreating(repo, worker, 'src/asked.js', {
      runVerification: markCommand(),
    });

    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('VERIFICATION_NOT_APPROVED');
    expect(fs.existsSync(marker)).toBe(false);
    expect(receipt?.verification.runs).toEqual([]);
    expect(receipt?.verification.skipped).toContain('`touch` is not on the verification allowlist');
    expect(receipt?.verification.skipped).toContain('no terminal to ask on');
    expect(repo.exists('src/asked.js')).toBe(true);
    expect(verdicts).toEqual(['VERIFICATION_NOT_APPROVED']);
    const check = await repo.check(['src/asked.js']);
    expect(check.code).toBe(1);
    expect(check.report?.results[0]?.reason).toContain('verdict was VERIFICATION_NOT_APPROVED');
  });

  test('control: with the program on the allowlist the same command runs and the unit passes', async () => {
    await repo.configSet('verification.allowlist', '["touch"]');
    const { code, receipt, verdicts } = await delegateCreating(repo, worker, 'src/allowlisted.js', {
      runVerification: markCommand(),
    });
    expect(code).toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    expect(fs.existsSync(marker)).toBe(true);
    expect(verdicts).toEqual(['UNIT_PASSED']);
  });

  test('`deny` refuses even an allowlisted program', async () => {
    fs.rmSync(marker, { force: true });
    await repo.configSet('verification.approval', 'deny');
    const { code, receipt, verdicts } = await delegateCreating(repo, worker, 'src/denied.js', {
      runVerification: markCommand(),
    });
    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('VERIFICATION_NOT_APPROVED');
    expect(receipt?.verification.skipped).toContain('"deny"');
    expect(fs.existsSync(marker)).toBe(false);
    expect(verdicts).toEqual(['VERIFICATION_NOT_APPROVED']);
  });
});

/**
 * `delegate` on a terminal (util-linux `script` gives it one), answering `answer` once the question is on it: the
 * only way to reach the question, which needs stdin and stderr to be terminals.
 */
function delegateOnTerminal(
  repo: DelegateRepo,
  unitFile: string,
  answer: string,
): Promise<{ code: number | null; output: string }> {
  const quoted = [process.execPath, delegateGitBin, 'delegate', unitFile].map((a) => `'${a}'`).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', quoted, '/dev/null'], { cwd: repo.dir, env: repo.env });
    let output = '';
    let answered = false;
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (!answered && output.includes('[y/N]')) {
        answered = true;
        child.stdin.write(`${answer}\n`);
      }
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

// util-linux's `script` (on every Linux this suite runs on; macOS's takes other arguments).
const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).stdout?.includes('util-linux');

describe.skipIf(!hasScript)('verification approval on a terminal', () => {
  let repo: DelegateRepo;
  let marker: string;

  beforeAll(async () => {
    repo = await makeDelegateRepo({ workerUrl: worker.url, approval: null });
    marker = path.join(repo.root, 'command-ran');
  });
  afterAll(() => repo?.cleanup());

  test('asks with the command on one line, its line breaks shown; "n" runs nothing, control: "y" runs it', async () => {
    // Line breaks would scroll `touch` off the question, leaving only the harmless last line in view.
    const command = `touch '${marker}';${'\n'.repeat(40)}echo looks harmless`;
    for (const [answer, runs] of [
      ['n', false],
      ['y', true],
    ] as const) {
      const file = `src/asked-${answer}.js`;
      worker.enqueue({ content: fileBlock(file, 'export const asked = 1;') });
      const unit = repo.writeUnit({
        taskName: file,
        instruction: `Create ${file}.`,
        targetFiles: [file],
        runVerification: command,
      });
      const { code, output } = await delegateOnTerminal(repo, unit, answer);
      const question = output.split('\n').find((line) => line.includes('[y/N]')) ?? '';
      expect(question, output).toContain(`Run the verification command \`touch '${marker}';\\u000a\\u000a`);
      expect(question).toContain('echo looks harmless`? [y/N]');
      expect(fs.existsSync(marker), output).toBe(runs);
      expect(code).toBe(runs ? 0 : 1);
      expect(output).toContain(runs ? 'UNIT_PASSED' : 'VERIFICATION_NOT_APPROVED');
    }
  });
});

describe('coherence', () => {
  let repo: DelegateRepo;

  beforeAll(async () => {
    repo = await makeDelegateRepo({ workerUrl: worker.url });
  });
  afterAll(() => repo?.cleanup());

  test('a passing unit with a failing coherence command is INCOHERENT, recorded, and not promoted', async () => {
    await repo.configSet('coherence', 'echo "src/incoherent.js:1:1 lint: indentation" >&2; exit 1');
    const { code, receipt, verdicts, blob } = await delegateCreating(repo, worker, 'src/incoherent.js', {
      runVerification: 'true',
    });

    expect(receipt?.verification.runs.map((r) => r.exitCode)).toEqual([0, 0, 0]);
    const rawLog = path.join(repo.stateDir, 'last-coherence.log');
    expect(receipt?.coherence).toEqual({
      command: 'echo "src/incoherent.js:1:1 lint: indentation" >&2; exit 1',
      exitCode: 1,
      passed: 0,
      failed: 1,
      rawLog,
    });
    // Its output is kept for the operator (ux57 f14), and its path is never signed into the ledger.
    expect(fs.readFileSync(rawLog, 'utf8')).toContain('src/incoherent.js:1:1 lint: indentation');
    expect(repo.ledger(blob!)[0]!.predicate.coherence).not.toHaveProperty('rawLog');
    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('INCOHERENT');
    expect(verdicts).toEqual(['INCOHERENT']);
    const check = await repo.check(['src/incoherent.js']);
    expect(check.code).toBe(1);
    expect(check.report?.results[0]?.reason).toContain('verdict was INCOHERENT');
  });

  test('control: a passing coherence command leaves the unit UNIT_PASSED and promoted', async () => {
    await repo.configSet('coherence', 'exit 0');
    const { code, receipt } = await delegateCreating(repo, worker, 'src/coherent.js', {
      runVerification: 'true',
    });
    expect(code).toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    expect(receipt?.coherence).toMatchObject({ command: 'exit 0', exitCode: 0 });
    expect((await repo.check(['src/coherent.js'])).code).toBe(0);
  });
});

describe('retry context', () => {
  let repo: DelegateRepo;
  const xLines = Array.from({ length: 30 }, (_, i) => `export const line${i + 1} = ${i + 1};`);

  beforeAll(async () => {
    repo = await makeDelegateRepo({ workerUrl: worker.url, files: { 'src/x.js': `${xLines.join('\n')}\n` } });
  });
  afterAll(() => repo?.cleanup());

  const lastPrompt = () => userPrompt(worker.requests.at(-1));

  /** A verification command that reports one failing TAP test at `location`, and fails. */
  function failingTest(name: string, location: string): string {
    const tap = path.join(repo.root, `${name.replaceAll(' ', '-')}.tap`);
    fs.writeFileSync(
      tap,
      `TAP version 13\nnot ok 1 - ${name}\n  ---\n  location: '${location}'\n  ...\n1..1\n`,
    );
    return `cat '${tap}'; exit 1`;
  }

  test('a failure at src/x.js:5:1 widens the next delegation with src/x.js lines 1-15, once', async () => {
    const failed = await delegateCreating(repo, worker, 'src/y.js', {
      runVerification: failingTest('x handles zero', 'src/x.js:5:1'),
    });
    expect(failed.receipt?.verdict).toBe('UNIT_FAILED');
    expect(failed.receipt?.verification.failures).toEqual([
      { name: 'x handles zero', location: 'src/x.js:5:1' },
    ]);
    expect(failed.receipt?.contextWidened).toEqual([]);

    const retried = await delegateCreating(repo, worker, 'src/z.js', { runVerification: 'true' });
    expect(retried.code).toBe(0);
    expect(retried.receipt?.contextWidened.map((c) => [c.path, c.lineRange])).toEqual([
      ['src/x.js', [1, 15]],
    ]);
    // The signed record says what the worker was shown beyond the unit's context, with the slice's digest.
    const unitOf = (line: string | null) => decodeLine(line!).predicate.unit;
    expect(unitOf(retried.receipt!.envelope).retryContextFiles).toEqual([
      { path: 'src/x.js', lineRange: [1, 15], sha256: retried.receipt!.contextWidened[0]!.sha256 },
    ]);
    expect(unitOf(retried.receipt!.envelope).contextFiles).toEqual([]);
    const prompt = lastPrompt();
    // What failed is said, redacted as the receipt says it (ux57 f11).
    expect(prompt).toContain(
      'Previous Attempt:\nThe previous attempt in this workspace did not pass its verification:\n- x handles zero at src/x.js:5:1\n',
    );
    expect(prompt).toContain('Context Around the Previous Failure:');
    expect(prompt).toContain(`--- src/x.js (lines 1-15) ---\n${xLines.slice(0, 15).join('\n')}\n`);
    expect(prompt).not.toContain(xLines[15]);
    // Widened context is reported apart from the architect's declared context, which stays empty here.
    expect(retried.receipt?.context).toEqual([]);

    // Consumed once: the attempt after does not see it again.
    const next = await delegateCreating(repo, worker, 'src/w.js', { runVerification: 'true' });
    expect(next.receipt?.contextWidened).toEqual([]);
    const plain = JSON.parse(
      Buffer.from(JSON.parse(next.receipt!.envelope!).payload, 'base64').toString('utf8'),
    );
    expect(plain.predicate.unit).not.toHaveProperty('retryContextFiles');
    expect(lastPrompt()).not.toContain('Context Around the Previous Failure');
    expect(lastPrompt()).not.toContain('Previous Attempt:');
  });

  test('an attempt the worker gave no answer to (HTTP 503, a truncated reply) leaves the offer to the next one', async () => {
    const failed = await delegateCreating(repo, worker, 'src/v.js', {
      runVerification: failingTest('x again', 'src/x.js:20:1'),
    });
    expect(failed.receipt?.verdict).toBe('UNIT_FAILED');

    const unit = {
      taskName: 'u',
      instruction: 'Create src/u.js.',
      targetFiles: ['src/u.js'],
      runVerification: 'true',
    };
    worker.enqueue({ status: 503, errorBody: { error: { message: 'model loading' } } });
    expect((await repo.delegate(unit)).receipt?.verdict).toBe('WORKER_ERROR');
    worker.enqueue({ content: '```js file="src/u.js"\nexport const', finishReason: 'length' });
    expect((await repo.delegate(unit)).receipt?.verdict).toBe('WORKER_ERROR');

    const answered = await delegateCreating(repo, worker, 'src/u.js', { runVerification: 'true' });
    expect(answered.receipt?.verdict).toBe('UNIT_PASSED');
    expect(answered.receipt?.contextWidened.map((c) => [c.path, c.lineRange])).toEqual([
      ['src/x.js', [10, 30]],
    ]);
  });

  test('a failure in a file the next attempt is shown anyway is still said, with no window (ux57 f11); control: after a pass, nothing is', async () => {
    const unit = (runVerification: string) => ({
      taskName: 'x',
      instruction: 'Fix src/x.js.',
      targetFiles: ['src/x.js'],
      runVerification,
    });
    worker.enqueue({ content: patchBlock('src/x.js', [[xLines[0]!, xLines[0]!.replace('= 1', '= 0')]]) });
    const failed = await repo.delegate(unit(failingTest('x starts at one', 'src/x.js:1:1')));
    expect(failed.receipt?.verdict).toBe('UNIT_FAILED');

    worker.enqueue({ content: patchBlock('src/x.js', [[xLines[0]!.replace('= 1', '= 0'), xLines[0]!]]) });
    const retried = await repo.delegate(unit('true'));
    expect(retried.receipt?.verdict).toBe('UNIT_PASSED');
    expect(retried.receipt?.contextWidened).toEqual([]);
    expect(lastPrompt()).toContain(
      'Previous Attempt:\nThe previous attempt in this workspace did not pass its verification:\n- x starts at one at src/x.js:1:1\n',
    );
    expect(lastPrompt()).not.toContain('Context Around the Previous Failure');

    worker.enqueue({ content: fileBlock('src/after.js', 'export {};') });
    await repo.delegate({ ...unit('true'), targetFiles: ['src/after.js'] });
    expect(lastPrompt()).not.toContain('Previous Attempt:');
  });
});
