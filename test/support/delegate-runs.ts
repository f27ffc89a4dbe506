/**
 * What the tests that stop a delegate part-way (a signal, SIGKILL) share: one fake worker per test file and the
 * repositories its tests make, a verification command that says when it runs and then waits to be stopped, polling
 * with a deadline (never a fixed sleep), and the ledger's tip.
 *
 *   const session = workerSession();                     // at the top level of the test file
 *   const repo = await session.repo({ files: { 'src/a.js': '...' } });
 *   session.worker.enqueue({ content: reply });
 *   const run = repo.start(['delegate', repo.writeUnit({ ..., runVerification: waitingVerification(sentinel, 30_000) })]);
 *   const verifier = await verifying(sentinel);          // the command's pid, once it runs
 */
import fs from 'node:fs';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { type DelegateRepo, type DelegateRepoOptions, makeDelegateRepo } from './delegate-repo.js';
import { type FakeWorker, startFakeWorker } from './fake-worker.js';

export interface WorkerSession {
  /** The file's fake worker (started before its first test). */
  readonly worker: FakeWorker;
  /** A repository set up for the session's worker (or `workerUrl`), removed after the test. */
  repo(opts?: DelegateRepoOptions): Promise<DelegateRepo>;
}

/** Starts a fake worker for the test file and removes each test's repositories after it. Call at the top level. */
export function workerSession(): WorkerSession {
  let worker: FakeWorker | undefined;
  const repos: DelegateRepo[] = [];
  beforeAll(async () => {
    worker = await startFakeWorker();
  });
  afterEach(() => {
    for (const repo of repos.splice(0)) repo.cleanup();
  });
  afterAll(async () => {
    await worker?.close();
  });
  const session: WorkerSession = {
    get worker(): FakeWorker {
      if (worker === undefined)
        throw new Error('the session worker starts in beforeAll: use it inside a test');
      return worker;
    },
    async repo(opts = {}) {
      const repo = await makeDelegateRepo({ workerUrl: session.worker.url, ...opts });
      repos.push(repo);
      return repo;
    },
  };
  return session;
}

/** Polls (never a fixed sleep) until `ready`, for at most 20 s. */
export async function until(ready: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A verification command that writes its own pid to `sentinel` (so a test sees it run, and then end) and waits
 * `waitMs`: long enough to be stopped, or not at all. `before`, JavaScript run first (what the command does to the
 * work tree before it says it runs).
 */
export function waitingVerification(sentinel: string, waitMs: number, before = ''): string {
  const script = `${before}require('fs').writeFileSync(${JSON.stringify(sentinel)}, String(process.pid)); setTimeout(() => {}, ${waitMs})`;
  return `node -e ${JSON.stringify(script)}`;
}

/** The pid of the waitingVerification writing `sentinel`, once it runs. */
export async function verifying(sentinel: string): Promise<number> {
  await until(() => fs.existsSync(sentinel) && fs.readFileSync(sentinel, 'utf8') !== '', 'the verification');
  return Number(fs.readFileSync(sentinel, 'utf8'));
}

/** The commit refs/notes/delegations names, or null when there is no ledger yet. */
export function ledgerTip(repo: DelegateRepo): string | null {
  try {
    return repo.gitText(['rev-parse', '-q', '--verify', 'refs/notes/delegations']);
  } catch {
    return null;
  }
}
