// `delegate-git delegate` interrupted (rt49 f01): a signal while the unit's verification runs puts back every file the
// worker wrote and records nothing, and says so in one paragraph; one while the worker answers writes nothing. The
// command exits as a shell reports the signal (128 + its number). Before, it exited saying nothing, left the files
// written with no verdict, and the next run of the unit blamed the worker for them. A file that cannot be put back
// keeps the copy of what it held, named (rt53 f01: it went with the journal). Built CLI as a child process, real
// signals, a real HTTP worker on 127.0.0.1, temp repositories.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { type DelegateRepo, fileBlock, patchBlock, type Receipt } from '../support/delegate-repo.js';
import { ledgerTip, until, verifying, waitingVerification, workerSession } from '../support/delegate-runs.js';
import { isAlive } from '../support/processes.js';

const ORIGINAL_A = 'export function a() {\n  return 1;\n}\n';
/** Read-only for others, unlike what the umask gives a new file: put back, the mode must be this one. */
const MODE_A = 0o640;

const session = workerSession();

async function freshRepo(): Promise<DelegateRepo> {
  const repo = await session.repo({ files: { 'src/a.js': ORIGINAL_A } });
  fs.chmodSync(path.join(repo.dir, 'src/a.js'), MODE_A);
  return repo;
}

/** The worker's reply: a patch of an existing file and a new file in a new directory. */
function reply(): string {
  return (
    patchBlock('src/a.js', [['  return 1;', '  return 2;']]) +
    fileBlock('src/new/b.js', 'export const b = 2;')
  );
}

/**
 * The unit: its verification writes `sentinel` (its own pid in it, so the test can see it ended) and then waits
 * `waitMs`, long enough to be interrupted, or not at all; `before` runs first (waitingVerification).
 */
function unit(repo: DelegateRepo, sentinel: string, waitMs: number, before = ''): string {
  return repo.writeUnit({
    taskName: 'interrupted',
    instruction: 'Make a return 2 and add b.',
    targetFiles: ['src/a.js', 'src/new/b.js'],
    runVerification: waitingVerification(sentinel, waitMs, before),
    verificationRepeats: 1,
  });
}

/** Every `*.lock` file under the git directory (a git or delegate-git stopped while holding it). */
function locksLeft(repo: DelegateRepo): string[] {
  const gitDir = path.join(repo.dir, '.git');
  return fs
    .readdirSync(gitDir, { recursive: true })
    .map(String)
    .filter((name) => name.endsWith('.lock'));
}

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function modeOf(repo: DelegateRepo, file: string): number {
  return fs.statSync(path.join(repo.dir, file)).mode & 0o7777;
}

describe('interrupted while the verification runs', () => {
  test.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const)(
    '%s: the files the worker wrote are put back, nothing is recorded, the command exits %i and says so; the unit then runs again as new',
    async (signal, exitCode) => {
      const repo = await freshRepo();
      const sentinel = path.join(repo.root, `verifying-${signal}`);
      const tipBefore = ledgerTip(repo);
      session.worker.enqueue({ content: reply() });

      const run = repo.start(['delegate', unit(repo, sentinel, 30_000), '--json']);
      const verifier = await verifying(sentinel);
      // What the interrupt must undo is there: the files were written before the command ran.
      expect(repo.read('src/a.js')).toContain('return 2;');
      expect(repo.exists('src/new/b.js')).toBe(true);
      run.child.kill(signal);
      const result = await run.result;

      expect.soft(result.signal).toBeNull();
      expect.soft(result.code).toBe(exitCode);
      expect.soft(result.stdout).toBe('');
      expect
        .soft(result.stderr)
        .toBe(
          `delegate-git delegate: interrupted (${signal}) while verifying: the 2 file(s) the worker wrote (src/a.js, src/new/b.js) were put back as they were, and nothing was recorded. Run the unit again to delegate it anew.\n`,
        );
      expect.soft(isAlive(verifier)).toBe(false);
      expect.soft(fs.readFileSync(path.join(repo.dir, 'src/a.js'))).toEqual(Buffer.from(ORIGINAL_A));
      expect.soft(modeOf(repo, 'src/a.js')).toBe(MODE_A);
      expect.soft(repo.exists('src/new/b.js')).toBe(false);
      expect.soft(repo.exists('src/new')).toBe(false);
      expect.soft(ledgerTip(repo)).toBe(tipBefore);
      expect.soft(locksLeft(repo)).toEqual([]);
      expect.soft(repo.gitText(['status', '--porcelain'])).toBe('');
      // Every file put back: the journal of what they held went with the run, nothing of it is set aside.
      expect.soft(fs.readdirSync(path.join(repo.stateDir, 'unrecorded'))).toEqual([]);
      expect.soft(fs.existsSync(path.join(repo.stateDir, 'unrecorded-kept'))).toBe(false);

      // The same unit again, its verification quick: the worker's files are new again, and the verdict recorded.
      session.worker.enqueue({ content: reply() });
      const again = await repo.cli(['delegate', unit(repo, `${sentinel}-again`, 0), '--json']);
      expect.soft(again.stderr).toBe('');
      expect.soft(again.code).toBe(0);
      const receipt = again.code === 0 ? (JSON.parse(again.stdout) as Receipt) : null;
      expect.soft(receipt?.verdict).toBe('UNIT_PASSED');
      expect.soft(receipt?.files.map((f) => [f.path, f.mode])).toEqual([
        ['src/a.js', 'patched'],
        ['src/new/b.js', 'created'],
      ]);
      for (const file of receipt?.files ?? [])
        expect.soft(repo.ledger(file.gitBlob).map((s) => s.predicate.verdict)).toEqual(['UNIT_PASSED']);
      expect.soft(ledgerTip(repo)).not.toBe(tipBefore);
    },
  );

  test('SIGINT, a file edited while the verification ran: the edit stays, what the file held before the worker is kept and named; the file the worker created and nobody touched is removed (finding dl01)', async () => {
    const repo = await freshRepo();
    const sentinel = path.join(repo.root, 'verifying-edited');
    session.worker.enqueue({ content: reply() });
    // The user's edit, made while the command runs (as in an editor during a long test suite).
    const editing = "require('fs').appendFileSync('src/a.js', '// mine, while it verified\\n'); ";

    const run = repo.start(['delegate', unit(repo, sentinel, 30_000, editing), '--json']);
    await verifying(sentinel);
    const edited = repo.read('src/a.js');
    expect(edited).toContain('// mine, while it verified');
    run.child.kill('SIGINT');
    const result = await run.result;

    expect.soft(result.code).toBe(130);
    expect.soft(repo.read('src/a.js')).toBe(edited);
    const kept = result.stderr.match(/what it held before is kept in (\S+)\)/)?.[1];
    expect(kept).toBeDefined();
    expect.soft(fs.readFileSync(kept!, 'utf8')).toBe(ORIGINAL_A);
    expect.soft(result.stderr).toContain('src/a.js (changed since the worker wrote it, so left as it is;');
    expect.soft(result.stderr).toContain('The other 1 file(s) (src/new/b.js) were put back as they were.');
    expect.soft(repo.exists('src/new')).toBe(false);
  });

  test('SIGINT, a file that cannot be put back (a directory stands there now): what it held (an uncommitted edit) is kept in unrecorded-kept and named, not removed with the run', async () => {
    const repo = await freshRepo();
    const edited = ORIGINAL_A.replace('return 1;', 'return 1; // mine, not committed');
    repo.write('src/a.js', edited);
    const sentinel = path.join(repo.root, 'verifying-blocked');
    session.worker.enqueue({
      content:
        patchBlock('src/a.js', [['  return 1; // mine, not committed', '  return 2;']]) +
        fileBlock('src/new/b.js', 'export const b = 2;'),
    });
    // The command makes src/a.js a directory: no file can be renamed over it, so a.js cannot be put back (as a full
    // disk refuses it, for any user).
    const blocking =
      "require('fs').rmSync('src/a.js'); require('fs').mkdirSync('src/a.js/inside', { recursive: true }); ";

    const run = repo.start(['delegate', unit(repo, sentinel, 30_000, blocking), '--json']);
    await verifying(sentinel);
    run.child.kill('SIGINT');
    const result = await run.result;

    expect.soft(result.code).toBe(130);
    const kept = result.stderr.match(/what it held before is kept in (\S+)\)/)?.[1];
    expect(kept).toBeDefined();
    expect
      .soft(result.stderr)
      .toMatch(
        new RegExp(
          `^delegate-git delegate: interrupted \\(SIGINT\\) while verifying, and not every file the worker wrote could be put back: src/a\\.js \\(changed since the worker wrote it, so left as it is; what it held before is kept in ${escaped(kept!)}\\) is left as it is, with no verdict recorded\\. The other 1 file\\(s\\) \\(src/new/b\\.js\\) were put back as they were\\. Nothing was recorded\\. Keep what a file changed since holds, or put back what it held before the worker from the copy named \\(remove it once done\\); then run the unit again\\.\n$`,
        ),
      );
    expect.soft(kept!.startsWith(path.join(repo.stateDir, 'unrecorded-kept') + path.sep)).toBe(true);
    expect.soft(fs.readFileSync(kept!, 'utf8')).toBe(edited);
    expect.soft(repo.exists('src/new')).toBe(false);
    expect.soft(fs.readdirSync(path.join(repo.stateDir, 'unrecorded'))).toEqual([]);

    // Set aside, it is no journal to act on: the next delegate says nothing of it, and the copy stays.
    fs.rmSync(path.join(repo.dir, 'src/a.js'), { recursive: true });
    session.worker.enqueue({ content: fileBlock('src/c.js', 'export const c = 3;') });
    const next = await repo.cli([
      'delegate',
      repo.writeUnit({ taskName: 'next', instruction: 'Add c.', targetFiles: ['src/c.js'] }),
      '--json',
    ]);
    expect.soft(next.stderr).toBe('');
    expect.soft(fs.readFileSync(kept!, 'utf8')).toBe(edited);
  });

  test('control: the same unit, not interrupted, writes the files and records the verdict', async () => {
    const repo = await freshRepo();
    const sentinel = path.join(repo.root, 'verifying-control');
    const tipBefore = ledgerTip(repo);
    session.worker.enqueue({ content: reply() });

    const result = await repo.start(['delegate', unit(repo, sentinel, 0), '--json']).result;

    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(fs.existsSync(sentinel)).toBe(true);
    const receipt = JSON.parse(result.stdout) as Receipt;
    expect(receipt.verdict).toBe('UNIT_PASSED');
    expect(repo.read('src/a.js')).toBe(ORIGINAL_A.replace('return 1;', 'return 2;'));
    expect(modeOf(repo, 'src/a.js')).toBe(MODE_A);
    expect(repo.read('src/new/b.js')).toBe('export const b = 2;\n');
    for (const file of receipt.files)
      expect(repo.ledger(file.gitBlob).map((s) => s.predicate.verdict)).toEqual(['UNIT_PASSED']);
    expect(ledgerTip(repo)).not.toBe(tipBefore);
    expect(locksLeft(repo)).toEqual([]);
  });
});

/**
 * A worker that starts streaming its reply when asked and holds the rest until `release()`: an interrupt lands in the
 * middle of the reply, and a run that did not abandon it would get the whole reply once released. `abandoned`
 * settles when the client closes the connection.
 */
async function startHeldWorker(content: string) {
  let arrived!: () => void;
  const arrival = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  let abandon!: () => void;
  const abandoned = new Promise<void>((resolve) => {
    abandon = resolve;
  });
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const event = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'held', object: 'chat.completion.chunk', created: 0, model: 'held', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const server = http.createServer((req, res) => {
    req.resume();
    res.on('close', () => abandon());
    req.on('end', async () => {
      const half = Math.floor(content.length / 2);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(event({ role: 'assistant', content: content.slice(0, half) }, null));
      arrived();
      await released;
      if (res.destroyed) return;
      res.write(event({ content: content.slice(half) }, null));
      res.write(event({}, 'stop'));
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    arrival,
    abandoned,
    release,
    close: () =>
      new Promise<void>((resolve) => {
        release();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('interrupted while the worker answers', () => {
  test('SIGINT: the reply is abandoned, nothing is written or recorded, the command exits 130 and says so', async () => {
    const held = await startHeldWorker(reply());
    try {
      const repo = await session.repo({ workerUrl: held.url, files: { 'src/a.js': ORIGINAL_A } });
      const sentinel = path.join(repo.root, 'never-verified');
      const tipBefore = ledgerTip(repo);

      const run = repo.start(['delegate', unit(repo, sentinel, 0), '--json']);
      await held.arrival;
      run.child.kill('SIGINT');
      // The rest of the reply, for a run that went on reading it (bounded: the run should drop the reply at once).
      let bound: NodeJS.Timeout | undefined;
      const dropped = await Promise.race([
        held.abandoned.then(() => true),
        new Promise<false>((resolve) => {
          bound = setTimeout(() => resolve(false), 5_000);
        }),
      ]);
      clearTimeout(bound);
      held.release();
      const result = await run.result;

      expect.soft(dropped).toBe(true);
      expect.soft(result.signal).toBeNull();
      expect.soft(result.code).toBe(130);
      expect.soft(result.stdout).toBe('');
      expect
        .soft(result.stderr)
        .toBe(
          'delegate-git delegate: interrupted (SIGINT) before any file was written (the request to the worker, if sent, was abandoned): nothing was written and nothing was recorded. Run the unit again to delegate it anew.\n',
        );
      expect.soft(fs.readFileSync(path.join(repo.dir, 'src/a.js'))).toEqual(Buffer.from(ORIGINAL_A));
      expect.soft(repo.exists('src/new')).toBe(false);
      expect.soft(fs.existsSync(sentinel)).toBe(false);
      expect.soft(ledgerTip(repo)).toBe(tipBefore);
      expect.soft(locksLeft(repo)).toEqual([]);
      expect.soft(repo.gitText(['status', '--porcelain'])).toBe('');
    } finally {
      await held.close();
    }
  });
});

describe('interrupted while the verdict is recorded', () => {
  test('SIGINT waits for the record to be complete: the verdict is recorded, the files stay, the command exits 130 and says so', async () => {
    const repo = await freshRepo();
    const sentinel = path.join(repo.root, 'verified');
    const tipBefore = ledgerTip(repo);
    const packs = path.join(repo.dir, '.git', 'objects', 'pack');
    const packsBefore = new Set(fs.readdirSync(packs));
    // Another writer's lock, fresh: the record's notes commit is written (a pack) but cannot move the ledger, and
    // the record is tried again until the lock goes. That is the moment to interrupt.
    const lock = path.join(repo.dir, '.git', 'refs', 'notes', 'delegations.lock');
    fs.mkdirSync(path.dirname(lock), { recursive: true });
    fs.writeFileSync(lock, '');
    session.worker.enqueue({ content: reply() });

    const run = repo.start(['delegate', unit(repo, sentinel, 0), '--json']);
    await until(
      () => fs.readdirSync(packs).some((name) => name.endsWith('.pack') && !packsBefore.has(name)),
      'the record to be tried',
    );
    run.child.kill('SIGINT');
    fs.rmSync(lock);
    const result = await run.result;

    expect.soft(result.signal).toBeNull();
    expect.soft(result.code).toBe(130);
    expect.soft(result.stdout).toBe('');
    expect
      .soft(result.stderr)
      .toBe(
        'delegate-git delegate: interrupted (SIGINT) while the verdict was being recorded, so the interrupt waited for the record to be complete: the verdict UNIT_PASSED on the 2 file(s) the worker wrote (src/a.js, src/new/b.js) is signed and recorded in refs/notes/delegations, and the files stay as recorded.\n',
      );
    expect.soft(repo.read('src/a.js')).toBe(ORIGINAL_A.replace('return 1;', 'return 2;'));
    expect.soft(repo.read('src/new/b.js')).toBe('export const b = 2;\n');
    for (const file of ['src/a.js', 'src/new/b.js'])
      expect
        .soft(repo.ledger(repo.gitText(['hash-object', file])).map((s) => s.predicate.verdict))
        .toEqual(['UNIT_PASSED']);
    expect.soft(ledgerTip(repo)).not.toBe(tipBefore);
    expect.soft(locksLeft(repo)).toEqual([]);
  });
});
