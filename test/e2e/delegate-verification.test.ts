// `delegate-git delegate` end to end, the verification side: the command decides the verdict (repeats, flakiness,
// timeouts), the contract is re-hashed after it ran, and what a failure says is redacted before it leaves the
// machine while the raw log stays local. Built CLI, temp repositories, a real HTTP worker on 127.0.0.1.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  type DelegateRepo,
  delegateCreating,
  fileBlock,
  makeDelegateRepo,
  patchBlock,
} from '../support/delegate-repo.js';
import { type FakeWorker, startFakeWorker } from '../support/fake-worker.js';

let worker: FakeWorker;
let repo: DelegateRepo;

beforeAll(async () => {
  worker = await startFakeWorker();
  repo = await makeDelegateRepo({
    workerUrl: worker.url,
    files: {
      'test/spec-tampered.txt': 'the contract\n',
      'test/spec-control.txt': 'the contract\n',
    },
  });
});

afterAll(async () => {
  await worker?.close();
  repo?.cleanup();
});

describe('contract re-hash after verification', () => {
  test('a command that changes a contract file gives CONTRACT_MODIFIED, outranking its own passing runs', async () => {
    const { code, receipt, verdicts } = await delegateCreating(repo, worker, 'src/tampered.js', {
      contractFiles: ['test/spec-tampered.txt'],
      runVerification: 'echo tampered >> test/spec-tampered.txt',
    });

    expect(receipt?.verification.runs.map((r) => r.exitCode)).toEqual([0, 0, 0]);
    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('CONTRACT_MODIFIED');
    expect(receipt?.contract.violations).toEqual(['test/spec-tampered.txt was modified while the unit ran']);
    expect(receipt?.contract.files[0]).toMatchObject({ path: 'test/spec-tampered.txt', unchanged: false });
    expect(verdicts).toEqual(['CONTRACT_MODIFIED']);
    const check = await repo.check(['src/tampered.js']);
    expect(check.code).toBe(1);
    expect(check.report?.results[0]?.reason).toContain('verdict was CONTRACT_MODIFIED');
  });

  test('control: a command that only reads the contract passes, and the contract is reported unchanged', async () => {
    const { code, receipt, verdicts } = await delegateCreating(repo, worker, 'src/untampered.js', {
      contractFiles: ['test/spec-control.txt'],
      runVerification: 'cat test/spec-control.txt',
    });
    expect(code).toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    expect(receipt?.contract).toEqual({
      files: [
        { path: 'test/spec-control.txt', sha256: expect.stringMatching(/^[0-9a-f]{64}$/), unchanged: true },
      ],
      violations: [],
    });
    expect(verdicts).toEqual(['UNIT_PASSED']);
  });

  test('a declared contract file that does not exist (a typo) is CONTEXT_REFUSED before the worker is called (ux57 f07)', async () => {
    const before = worker.requestCount();
    const ledgerBefore = repo.ledgerCommits();
    const { code, receipt } = await repo.delegate({
      taskName: 'typo',
      instruction: 'Create src/typo.js.',
      targetFiles: ['src/typo.js'],
      contractFiles: ['test/spec-typo.txt'],
      runVerification: 'true',
    });
    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('CONTEXT_REFUSED');
    expect(receipt?.errors).toEqual([
      "test/spec-typo.txt: no such file (a contract file is a test the worker's code must pass unchanged: name one that exists)",
    ]);
    expect(worker.requestCount()).toBe(before);
    expect(repo.ledgerCommits()).toBe(ledgerBefore);
    expect(repo.exists('src/typo.js')).toBe(false);
  });
});

describe('contract files are pinned only where context may be read', () => {
  test('outside the workspace, in .git, a device, a pipe: CONTEXT_REFUSED before the worker is called, nothing hashed or recorded', async () => {
    const outside = path.join(repo.root, 'outside-secret.txt');
    fs.writeFileSync(outside, 'not the unit’s business\n');
    fs.mkdirSync(path.join(repo.dir, 'test'), { recursive: true });
    execFileSync('mkfifo', [path.join(repo.dir, 'test/spec-fifo')]);
    const declared = [outside, '../outside-secret.txt', '.git/config', '/dev/zero', 'test/spec-fifo'];
    const before = worker.requestCount();
    const ledgerBefore = repo.ledgerCommits();
    const { code, receipt } = await repo.delegate({
      taskName: 'contained',
      instruction: 'Create src/contained.js.',
      targetFiles: ['src/contained.js'],
      contractFiles: declared,
      runVerification: 'true',
    });
    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('CONTEXT_REFUSED');
    expect(receipt?.message).toBe('The declared contract files were refused; the worker was not called.');
    expect(receipt?.errors).toEqual([
      `${outside}: outside the workspace`,
      '../outside-secret.txt: outside the workspace',
      '.git/config: inside a git directory',
      '/dev/zero: outside the workspace',
      'test/spec-fifo: not a regular file',
    ]);
    expect(receipt?.contract.files).toEqual([]);
    expect(receipt?.envelope).toBeNull();
    expect(worker.requestCount()).toBe(before);
    expect(repo.ledgerCommits()).toBe(ledgerBefore);
    fs.rmSync(path.join(repo.dir, 'test/spec-fifo'));
  });

  test('control: a contract file inside the workspace, named twice and through a symbolic link, is pinned once', async () => {
    fs.symlinkSync('spec-control.txt', path.join(repo.dir, 'test/spec-link.txt'));
    const { code, receipt } = await delegateCreating(repo, worker, 'src/pinned.js', {
      contractFiles: ['test/spec-control.txt', './test/spec-control.txt', 'test/spec-link.txt'],
      runVerification: 'true',
    });
    fs.rmSync(path.join(repo.dir, 'test/spec-link.txt'));
    expect(code).toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    expect(receipt?.contract.files).toEqual([
      { path: 'test/spec-control.txt', sha256: expect.stringMatching(/^[0-9a-f]{64}$/), unchanged: true },
    ]);
  });
});

describe('files changed by the verification itself', () => {
  test('code that rewrites the file it was verified as on the last run gets UNIT_UNVERIFIED, recorded as such', async () => {
    // Each run passes; on the third, the command rewrites the written file on its way out.
    const rewriteOnThird =
      'n=$(cat .runs 2>/dev/null || echo 0); n=$((n + 1)); echo $n > .runs; ' +
      'if [ $n -ge 3 ]; then echo "export const value = 0;" > src/rewritten.js; fi';
    const { code, receipt, verdicts } = await delegateCreating(repo, worker, 'src/rewritten.js', {
      runVerification: rewriteOnThird,
    });
    expect(receipt?.verification.runs.map((r) => r.exitCode)).toEqual([0, 0, 0]);
    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('UNIT_UNVERIFIED');
    expect(receipt?.message).toContain('changed during the last verification run');
    expect(verdicts).toEqual(['UNIT_UNVERIFIED']);
    expect((await repo.check(['src/rewritten.js'])).code).toBe(1);
    fs.rmSync(path.join(repo.dir, '.runs'));
  });

  test('control: a formatter in the command settles on the first run, and the formatted content passes', async () => {
    const { code, receipt, verdicts } = await delegateCreating(repo, worker, 'src/formatted.js', {
      runVerification: 'grep -q tidied src/formatted.js || echo "// tidied" >> src/formatted.js',
    });
    expect(code, receipt?.message ?? '').toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    expect(verdicts).toEqual(['UNIT_PASSED']);
    // What is recorded and promoted is the formatted content the later runs verified.
    expect(fs.readFileSync(path.join(repo.dir, 'src/formatted.js'), 'utf8')).toMatch(/\/\/ tidied\n$/);
    expect((await repo.check(['src/formatted.js'])).code).toBe(0);
  });

  test('a written file left as a pipe, a link to the same bytes or grown past 256 MiB gets UNIT_UNVERIFIED, without hanging', async () => {
    // A pipe can answer each reader with other bytes (git's read is not the tests'); a link is no file a blob names.
    // The grown file is sparse: 3 GiB that take no disk, and more than Node reads into one buffer at all.
    for (const [file, swap, why] of [
      ['src/piped.js', 'rm src/piped.js && mkfifo src/piped.js', 'is no regular file'],
      [
        'src/linked.js',
        'cp src/linked.js .copy.js && rm src/linked.js && ln -s ../.copy.js src/linked.js',
        'is no regular file',
      ],
      ['src/grown.js', 'truncate -s 3G src/grown.js', 'is 3221225472 bytes after verification'],
    ] as const) {
      const once = `test -p ${file} || test -L ${file} || { ${swap}; }`;
      const { code, receipt, verdicts } = await delegateCreating(repo, worker, file, {
        runVerification: once,
      });
      expect(code, `${file}: ${receipt?.message}`).toBe(1);
      expect(receipt?.verdict).toBe('UNIT_UNVERIFIED');
      expect(receipt?.message).toContain(why);
      expect(verdicts).toEqual([]); // nothing regular is there to record
      fs.rmSync(path.join(repo.dir, file), { force: true });
    }
    fs.rmSync(path.join(repo.dir, '.copy.js'), { force: true });
  });

  test('git storing or checking out other bytes than those verified gets UNIT_UNVERIFIED; control: the same bytes without it pass', async () => {
    // `ident` collapses "$Id: 1 $" to "$Id$" when git stores the file, and expands "$Id$" when it checks it out.
    repo.write('.gitattributes', 'src/ident-*.js ident\n');
    for (const [file, body, why] of [
      ['src/ident-on.js', 'export const id = "$Id: 1 $";', 'changed by a clean filter'],
      ['src/ident-out.js', 'export const out = "$Id$";', 'does not give back the bytes verified'],
      ['src/plain-off.js', 'export const id = "$Id: 1 $";', null],
    ] as const) {
      worker.enqueue({ content: fileBlock(file, body) });
      const { code, receipt } = await repo.delegate({
        taskName: file,
        instruction: `Create ${file}.`,
        targetFiles: [file],
        runVerification: `grep -q 'Id' ${file}`,
      });
      const blob = receipt?.files[0]?.gitBlob ?? '';
      expect(receipt?.verdict, `${file}: ${receipt?.message}`).toBe(why ? 'UNIT_UNVERIFIED' : 'UNIT_PASSED');
      expect(code).toBe(why ? 1 : 0);
      expect(repo.ledger(blob).map((s) => s.predicate.verdict)).toEqual([receipt?.verdict]);
      if (why) expect(receipt?.message).toContain(why);
      // The record names what git stores: the blob of the file as staged.
      expect(repo.gitText(['hash-object', file])).toBe(blob);
    }
    fs.rmSync(path.join(repo.dir, '.gitattributes'));
  });

  test("line endings only this clone's config converts get UNIT_UNVERIFIED; control: without core.autocrlf the patch passes", async () => {
    for (const [file, autocrlf] of [
      ['src/crlf-local.js', true],
      ['src/crlf-plain.js', false],
    ] as const) {
      repo.write(file, 'const one = 1;\r\nconst two = 2;\r\n');
      if (autocrlf) repo.git(['config', 'core.autocrlf', 'true']);
      try {
        worker.enqueue({ content: patchBlock(file, [['const two = 2;', 'const two = 3;']]) });
        const { receipt } = await repo.delegate({
          taskName: file,
          instruction: 'Raise two.',
          targetFiles: [file],
          runVerification: 'true',
        });
        expect(repo.read(file)).toBe('const one = 1;\r\nconst two = 3;\r\n');
        expect(receipt?.verdict, `${file}: ${receipt?.message}`).toBe(
          autocrlf ? 'UNIT_UNVERIFIED' : 'UNIT_PASSED',
        );
        if (autocrlf)
          expect(receipt?.message).toContain(
            "this clone's core.autocrlf or core.eol converts the line endings",
          );
      } finally {
        if (autocrlf) repo.git(['config', '--unset', 'core.autocrlf']);
      }
    }
  });

  test("a file whose indexed blob has CRLF keeps it under core.autocrlf or text=auto (git's safer autocrlf): recorded as git add stages it, and promoted", async () => {
    // Hashing the bytes at their path converts them; `git add` does not, because the index already holds CRLF.
    for (const [file, setting] of [
      ['src/crlf-kept-config.js', 'config'],
      ['src/crlf-kept-attr.js', 'attributes'],
    ] as const) {
      repo.write(file, 'const one = 1;\r\nconst two = 2;\r\n');
      repo.git(['add', file]);
      if (setting === 'config') repo.git(['config', 'core.autocrlf', 'true']);
      else repo.write('.gitattributes', `${file} text=auto\n`);
      try {
        worker.enqueue({ content: patchBlock(file, [['const two = 2;', 'const two = 3;']]) });
        const { code, receipt } = await repo.delegate({
          taskName: file,
          instruction: 'Raise two.',
          targetFiles: [file],
          runVerification: 'true',
        });
        expect(receipt?.verdict, `${file}: ${receipt?.message}`).toBe('UNIT_PASSED');
        expect(code).toBe(0);
        expect(repo.read(file)).toBe('const one = 1;\r\nconst two = 3;\r\n');
        const blob = receipt?.files[0]?.gitBlob;
        expect(repo.gitText(['hash-object', '--no-filters', file])).toBe(blob);
        expect(repo.gitText(['hash-object', file])).not.toBe(blob); // what hashing alone names
        repo.git(['add', file]);
        expect(repo.gitText(['rev-parse', `:${file}`])).toBe(blob);
        expect((await repo.check([file])).code).toBe(0);
      } finally {
        if (setting === 'config') repo.git(['config', '--unset', 'core.autocrlf']);
        else fs.rmSync(path.join(repo.dir, '.gitattributes'));
      }
    }
  });
});

describe('repeats', () => {
  test('a command that passes then fails is UNIT_FLAKY after 2 runs, recorded, not promoted', async () => {
    const counter = path.join(repo.root, 'flaky-counter');
    const { code, receipt, verdicts } = await delegateCreating(repo, worker, 'src/flaky.js', {
      runVerification: `n=$(cat '${counter}' 2>/dev/null || echo 0); echo $((n+1)) > '${counter}'; test "$n" = 0`,
    });

    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('UNIT_FLAKY');
    expect(receipt?.verification.flaky).toBe(true);
    expect(receipt?.verification.runs.map((r) => r.exitCode)).toEqual([0, 1]);
    expect(fs.readFileSync(counter, 'utf8').trim()).toBe('2');
    expect(verdicts).toEqual(['UNIT_FLAKY']);
    const check = await repo.check(['src/flaky.js']);
    expect(check.code).toBe(1);
    expect(check.report?.results[0]?.reason).toContain('verdict was UNIT_FLAKY');
  });

  test('a command that always fails runs all 3 times: UNIT_FAILED in the ledger and `check` refuses', async () => {
    const { code, receipt, verdicts } = await delegateCreating(repo, worker, 'src/failing.js', {
      runVerification: 'echo "the sum is wrong" >&2; exit 3',
    });

    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('UNIT_FAILED');
    expect(receipt?.verification.flaky).toBe(false);
    expect(receipt?.verification.runs.map((r) => r.exitCode)).toEqual([3, 3, 3]);
    expect(repo.read('src/failing.js')).toContain('export const value');
    expect(verdicts).toEqual(['UNIT_FAILED']);
    const check = await repo.check(['src/failing.js']);
    expect(check.code).toBe(1);
    expect(check.report?.results[0]).toMatchObject({ path: 'src/failing.js', promoted: false });
    expect(check.report?.results[0]?.reason).toContain('verdict was UNIT_FAILED');
  });

  test('control: a command that always passes runs 3 times and promotes', async () => {
    const { code, receipt } = await delegateCreating(repo, worker, 'src/stable.js', {
      runVerification: 'exit 0',
    });
    expect(code).toBe(0);
    expect(receipt?.verification.runs.map((r) => r.exitCode)).toEqual([0, 0, 0]);
    expect((await repo.check(['src/stable.js'])).code).toBe(0);
  });
});

describe('the environment of the verification command', () => {
  test("the operator's signing key from DELEGATE_GIT_SIGNING_KEY is not passed to the (model-chosen) command", async () => {
    const pem = fs.readFileSync(
      path.join(repo.root, 'config', 'delegate-git', 'keys', 'operator.key'),
      'utf8',
    );
    worker.enqueue({ content: fileBlock('src/env.js', 'export const env = 1;') });
    const { code, receipt, stderr } = await repo.delegate(
      {
        taskName: 'env',
        instruction: 'Create env.js.',
        targetFiles: ['src/env.js'],
        runVerification: 'test -z "$DELEGATE_GIT_SIGNING_KEY" && test -n "$EXPECTED_VARIABLE"',
      },
      { env: { DELEGATE_GIT_SIGNING_KEY: pem, EXPECTED_VARIABLE: 'kept' } },
    );
    expect(stderr).toBe('');
    // The key from the environment still signed the record; only the command did not see it.
    expect(receipt?.verification.runs.map((r) => r.exitCode)).toEqual([0, 0, 0]);
    expect(code).toBe(0);
    expect(receipt?.envelope).toBeTruthy();
  });

  test("the worker's API key goes to the worker only, never to the command", async () => {
    await repo.configSet('worker.apiKeyEnv', 'WORKER_API_KEY');
    try {
      worker.enqueue({ content: fileBlock('src/env2.js', 'export const env2 = 2;') });
      const { code, receipt } = await repo.delegate(
        {
          taskName: 'env2',
          instruction: 'Create env2.js.',
          targetFiles: ['src/env2.js'],
          runVerification: 'test -z "$WORKER_API_KEY" && test -n "$EXPECTED_VARIABLE"',
        },
        { env: { WORKER_API_KEY: 'sk-local-test-key', EXPECTED_VARIABLE: 'kept' } },
      );
      expect(worker.requests.at(-1)?.headers.authorization).toBe('Bearer sk-local-test-key');
      expect(receipt?.verification.runs.map((r) => r.exitCode)).toEqual([0, 0, 0]);
      expect(code).toBe(0);
    } finally {
      await repo.configSet('worker.apiKeyEnv', 'null');
    }
  });
});

describe('redaction of failures', () => {
  // Built at runtime so this file never holds a credential-shaped literal.
  const token = `ghp_${Array.from({ length: 36 }, (_, i) => 'aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY'[(i * 7) % 32]).join('')}`;

  test('a credential in a failing test name is redacted in the receipt and ledger, intact in the local raw log', async () => {
    const tap = path.join(repo.root, 'failing.tap');
    fs.writeFileSync(
      tap,
      `TAP version 13\nok 1 - adds numbers\nnot ok 2 - logs in with ${token}\nnot ok 3 - keeps an innocent name\n1..3\n`,
    );
    const { code, stdout, receipt, blob } = await delegateCreating(repo, worker, 'src/redacted.js', {
      runVerification: `cat '${tap}'; exit 1`,
    });

    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('UNIT_FAILED');
    expect(stdout).not.toContain(token);
    expect(stdout).not.toContain(token.slice(4));
    expect(receipt?.verification.failures).toEqual([
      { name: '[REDACTED:github]' },
      { name: 'keeps an innocent name' },
    ]);
    const rawLog = path.join(repo.stateDir, 'last-verification.log');
    expect(receipt?.verification.rawLog).toBe(rawLog);
    expect(fs.readFileSync(rawLog, 'utf8')).toContain(`not ok 2 - logs in with ${token}`);

    const [statement] = repo.ledger(blob!);
    expect(JSON.stringify(statement)).not.toContain(token.slice(4));
    expect(statement?.predicate.verification.failures).toEqual(receipt?.verification.failures);
  });
});

describe('verification timeout', () => {
  let timed: DelegateRepo;

  beforeAll(async () => {
    // One run: a unit may ask for more runs than the operator set, never fewer.
    timed = await makeDelegateRepo({
      workerUrl: worker.url,
      config: { 'verification.timeoutMs': '1000', 'verification.repeats': '1' },
    });
  });
  afterAll(() => timed?.cleanup());

  test('a command outliving verification.timeoutMs fails, and its whole process group is killed', async () => {
    const pidFile = path.join(timed.root, 'background.pid');
    worker.enqueue({ content: fileBlock('src/slow.js', 'export const slow = 1;') });
    const started = performance.now();
    const { code, receipt } = await timed.delegate({
      taskName: 'slow',
      instruction: 'Create slow.js.',
      targetFiles: ['src/slow.js'],
      runVerification: `sleep 30 & echo $! > '${pidFile}'; sleep 30`,
      verificationRepeats: 1,
    });

    expect(performance.now() - started).toBeLessThan(15_000);
    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('UNIT_FAILED');
    expect(receipt?.verification.runs).toEqual([expect.objectContaining({ timedOut: true, exitCode: 124 })]);
    expect(receipt?.verification.timeoutMs).toBe(1000);
    // The background `sleep` shares the command's process group; it must be gone (or a zombie nobody reaps).
    const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
    expect(pid).toBeGreaterThan(0);
    expect(processIsRunning(pid)).toBe(false);
    const blob = receipt!.files[0]!.gitBlob;
    expect(timed.ledger(blob).map((s) => s.predicate.verdict)).toEqual(['UNIT_FAILED']);
  });

  test('control: a command inside the bound passes', async () => {
    worker.enqueue({ content: fileBlock('src/quick.js', 'export const quick = 1;') });
    const { code, receipt } = await timed.delegate({
      taskName: 'quick',
      instruction: 'Create quick.js.',
      targetFiles: ['src/quick.js'],
      runVerification: 'sleep 0.05',
      verificationRepeats: 1,
    });
    expect(code).toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    expect(receipt?.verification.runs).toEqual([expect.objectContaining({ timedOut: false, exitCode: 0 })]);
  });
});

function processIsRunning(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

describe('a worker that writes nothing (ux57 f09: commands, not claims, decide)', () => {
  const unit = (runVerification: string) => ({
    taskName: 'nothing to do?',
    instruction: 'Make the check pass.',
    targetFiles: ['src/'],
    runVerification,
  });
  const claim = 'The existing implementation already handles this, so no changes are needed.';

  test('its claim that nothing needed changing is checked: a failing command is UNIT_FAILED (exit 1), nothing recorded', async () => {
    const ledgerBefore = repo.ledgerCommits();
    worker.enqueue({ content: claim });
    const { code, receipt, stdout } = await repo.delegate(unit('exit 1'));
    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('UNIT_FAILED');
    expect(receipt?.files).toEqual([]);
    expect(receipt?.verification.runs.map((r) => r.exitCode)).toEqual([1, 1, 1]);
    expect(receipt?.message).toContain("the worker's word that nothing needed changing is not borne out");
    // What the worker said is kept for the operator to read (ux57 f10).
    expect(fs.readFileSync(receipt!.worker!.reply!, 'utf8')).toBe(claim);
    expect(receipt!.worker!.reply).toBe(path.join(repo.stateDir, 'last-worker-reply.md'));
    expect(receipt?.envelope).toBeNull();
    expect(repo.ledgerCommits()).toBe(ledgerBefore);
    expect(stdout).not.toContain('NO_CHANGES');
  });

  test('control: a command that passes on the work tree as it is leaves NO_CHANGES (exit 0)', async () => {
    worker.enqueue({ content: claim });
    const { code, receipt } = await repo.delegate(unit('true'));
    expect(code).toBe(0);
    expect(receipt?.verdict).toBe('NO_CHANGES');
    expect(receipt?.verification.runs.map((r) => r.exitCode)).toEqual([0, 0, 0]);
    expect(receipt?.message).toBe(
      'The worker wrote nothing, and the verification passes on the work tree as it is.',
    );
    expect(receipt?.envelope).toBeNull();
  });
});
