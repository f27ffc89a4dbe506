/**
 * Runs the verification command. The command runs under `/bin/sh -c` in its own process group, with stdin closed
 * and stdout/stderr written to files (a host sandbox once refused pipes, and files cannot fill up and block the
 * child). A timeout kills the whole group — SIGTERM, then SIGKILL after a grace — so a test runner's workers and
 * grandchildren cannot outlive the bound. The exit code is authoritative.
 *
 * Repeats: only disagreement with the first run stops early (flaky); agreement, pass or fail, spends all N runs,
 * because a race that happens to lose twice must not be reported as a deterministic failure.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monotonicMs } from './clock.js';
import { INTERRUPTING_SIGNALS } from './interruption.js';
import { parseTestOutput } from './test-output.js';

export interface RunResult {
  exitCode: number;
  passed: number;
  failed: number;
  durationMs: number;
  timedOut: boolean;
  /** Raw stdout, a newline, raw stderr (trimmed). Local only: never put in a receipt. */
  output: string;
}

export interface RunOptions {
  cwd: string;
  timeoutMs: number;
  env?: NodeJS.ProcessEnv;
  /** Time between SIGTERM and SIGKILL for a group that outlives its timeout (default 2000 ms). */
  killGraceMs?: number;
  /**
   * The caller's own interrupt: it listens for the process's signals and aborts this, and the run ends its group
   * and throws the abort's reason instead of ending the process (the caller has files to put back first). Without
   * it, the run forwards those signals itself, as below.
   */
  interrupt?: AbortSignal;
}

export interface VerificationResult {
  runs: RunResult[];
  flaky: boolean;
  passed: boolean;
  /** The fingerprint of the files verified changed during the last run (only when a fingerprint was given). */
  changedByLastRun: boolean;
}

const DEFAULT_VERIFICATION_TIMEOUT_MS = 30000;
const DEFAULT_KILL_GRACE_MS = 2000;
/** Exit code reported for a run killed at its timeout (as coreutils `timeout` does). */
export const TIMEOUT_EXIT_CODE = 124;
/** Exit code reported when the shell could not be started at all. */
const SPAWN_FAILURE_EXIT_CODE = 127;
/** Each captured stream keeps its first and last half of this many bytes; the rest is elided. */
const MAX_CAPTURE_BYTES = 8 * 1024 * 1024;
const GROUP_POLL_MS = 25;
const SIGKILL_SETTLE_MS = 1000;
const DEFAULT_REPEATS = 3;
const MAX_REPEATS = 20;

/** Never unbounded: non-numbers, non-finite values and values <= 0 fall back; fractions are floored. */
export function resolveTimeoutMs(value: unknown, fallback = DEFAULT_VERIFICATION_TIMEOUT_MS): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return fallback;
  return Math.max(1, Math.floor(value));
}

export async function runCommand(command: string, opts: RunOptions): Promise<RunResult> {
  // An interrupt between runs (repeats, or the coherence check after the unit's command) starts no other.
  opts.interrupt?.throwIfAborted();
  const grace = opts.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const timeoutMs = resolveTimeoutMs(opts.timeoutMs);
  const captureDir = fs.mkdtempSync(path.join(os.tmpdir(), 'delegate-git-run-'));
  const stdoutPath = path.join(captureDir, 'stdout');
  const stderrPath = path.join(captureDir, 'stderr');
  const started = monotonicMs();
  const discardCapture = () => fs.rmSync(captureDir, { recursive: true, force: true });
  try {
    const outcome = await spawnInGroup(command, {
      ...opts,
      timeoutMs,
      grace,
      stdoutPath,
      stderrPath,
      discardCapture,
    });
    // The group is gone by now: what the interrupted command would have said is no verdict on anything.
    opts.interrupt?.throwIfAborted();
    const durationMs = Math.round(monotonicMs() - started);
    let output = [readCapture(stdoutPath), readCapture(stderrPath)]
      .map((text) => text.trimEnd())
      .filter((text) => text !== '')
      .join('\n')
      .trim();
    let exitCode: number;
    if (outcome.error) {
      exitCode = SPAWN_FAILURE_EXIT_CODE;
      output = `${output}\n[delegate-git] the command could not be started: ${outcome.error.message}`.trim();
    } else if (outcome.timedOut) {
      exitCode = TIMEOUT_EXIT_CODE;
      output =
        `${output}\n[delegate-git] timed out after ${timeoutMs} ms; the process group was killed`.trim();
    } else if (outcome.code !== null) {
      exitCode = outcome.code;
    } else {
      exitCode = 128 + (outcome.signal ? (os.constants.signals[outcome.signal] ?? 0) : 0);
    }
    const parsed = await parseTestOutput(output, exitCode);
    return {
      exitCode,
      passed: parsed.passed,
      failed: parsed.failed,
      durationMs,
      timedOut: outcome.timedOut,
      output,
    };
  } finally {
    discardCapture();
  }
}

interface SpawnOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  error?: Error;
}

function spawnInGroup(
  command: string,
  opts: RunOptions & {
    timeoutMs: number;
    grace: number;
    stdoutPath: string;
    stderrPath: string;
    discardCapture: () => void;
  },
): Promise<SpawnOutcome> {
  return new Promise<SpawnOutcome>((resolve) => {
    const stdoutFd = fs.openSync(opts.stdoutPath, 'w');
    const stderrFd = fs.openSync(opts.stderrPath, 'w');
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn('/bin/sh', ['-c', command], {
        cwd: opts.cwd,
        env: opts.env ?? process.env,
        stdio: ['ignore', stdoutFd, stderrFd],
        detached: true,
      });
    } catch (error) {
      resolve({ code: null, signal: null, timedOut: false, error: error as Error });
      return;
    } finally {
      // The child holds its own copies of the descriptors.
      fs.closeSync(stdoutFd);
      fs.closeSync(stderrFd);
    }
    let timedOut = false;
    let killTimer: NodeJS.Timeout | undefined;
    const timeoutTimer = setTimeout(() => {
      timedOut = true;
      signalGroup(child.pid, 'SIGTERM');
      killTimer = setTimeout(() => signalGroup(child.pid, 'SIGKILL'), opts.grace);
    }, opts.timeoutMs);
    // The group is detached (so a timeout can end it whole), so the terminal's Ctrl-C reaches delegate-git alone: an
    // interrupt or a hangup of delegate-git ends the group first (the worker's code must not run on unattended), then
    // delegate-git, as that signal would have.
    // A caller that hears the signals itself (opts.interrupt) has the group ended the same way, and the leader's
    // exit then settles the run.
    let interrupted = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (interrupted) return;
      interrupted = true;
      void reapGroup(child.pid, opts.grace).finally(() => {
        stopSignals();
        // The signal ends this process before runCommand's own cleanup could run.
        opts.discardCapture();
        process.kill(process.pid, signal);
      });
    };
    const onInterrupt = () => void reapGroup(child.pid, opts.grace);
    const { interrupt } = opts;
    if (interrupt) interrupt.addEventListener('abort', onInterrupt, { once: true });
    else for (const signal of INTERRUPTING_SIGNALS) process.on(signal, onSignal);
    const stopSignals = () => {
      interrupt?.removeEventListener('abort', onInterrupt);
      for (const signal of INTERRUPTING_SIGNALS) process.removeListener(signal, onSignal);
    };
    const stopTimers = () => {
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      if (!interrupted) stopSignals();
    };
    child.once('error', (error) => {
      stopTimers();
      resolve({ code: null, signal: null, timedOut: false, error });
    });
    child.once('exit', (code, signal) => {
      stopTimers();
      // The leader is gone; its group (test workers, background jobs, a `sleep` it forked) must go too.
      void reapGroup(child.pid, opts.grace).then(() => resolve({ code, signal, timedOut }));
    });
  });
}

/** Garbage never disables the protection repeats give: invalid → the default 3; huge values capped at 20. */
function resolveRepeats(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) return DEFAULT_REPEATS;
  return Math.min(value, MAX_REPEATS);
}

export function runPassed(run: RunResult): boolean {
  return run.exitCode === 0 && run.failed === 0 && !run.timedOut;
}

export async function runVerification(
  command: string,
  opts: RunOptions & {
    repeats: number;
    logPath: string;
    fingerprint?: () => string;
    /** Told as each run starts (1-based), of how many at most (a flaky result stops early). */
    onRun?: (run: number, of: number) => void;
  },
): Promise<VerificationResult> {
  const repeats = resolveRepeats(opts.repeats);
  const runs: RunResult[] = [];
  let flaky = false;
  let changedByLastRun = false;
  for (let i = 0; i < repeats; i++) {
    // The content recorded is what the last run leaves; it was verified only if that run found it already so (a
    // formatter in the command settles on the first run; code that rewrites itself on its way out does not).
    const before = opts.fingerprint?.();
    opts.onRun?.(i + 1, repeats);
    const run = await runCommand(command, opts);
    changedByLastRun = before !== opts.fingerprint?.();
    runs.push(run);
    if (runs.length > 1 && runPassed(run) !== runPassed(runs[0]!)) {
      flaky = true;
      break;
    }
  }
  writeLogAtomically(opts.logPath, renderLog(command, runs, repeats));
  return { runs, flaky, passed: !flaky && runPassed(runs[0]!), changedByLastRun };
}

function renderLog(command: string, runs: RunResult[], repeats: number): string {
  return runs
    .map((run, index) => {
      const header =
        `===== run ${index + 1}/${repeats}: exit ${run.exitCode}, passed ${run.passed}, failed ${run.failed}, ` +
        `${run.durationMs} ms${run.timedOut ? ', timed out' : ''} =====`;
      return `${header}\n$ ${command}\n${run.output}\n`;
    })
    .join('\n');
}

function writeLogAtomically(logPath: string, text: string): void {
  fs.mkdirSync(path.dirname(logPath), { recursive: true });
  const temporary = `${logPath}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    fs.writeFileSync(temporary, text, { mode: 0o600 });
    fs.renameSync(temporary, logPath);
  } catch (error) {
    fs.rmSync(temporary, { force: true });
    throw error;
  }
}

function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** SIGTERM whatever is left of the group, wait up to `grace` for it to go, then SIGKILL. */
async function reapGroup(pgid: number | undefined, grace: number): Promise<void> {
  if (pgid === undefined || !groupHasLiveMembers(pgid)) return;
  signalGroup(pgid, 'SIGTERM');
  if (await waitForGroupExit(pgid, grace)) return;
  signalGroup(pgid, 'SIGKILL');
  // SIGKILL cannot be caught, but its delivery is asynchronous: wait (bounded) so callers see the group gone.
  await waitForGroupExit(pgid, SIGKILL_SETTLE_MS);
}

async function waitForGroupExit(pgid: number, withinMs: number): Promise<boolean> {
  const deadline = monotonicMs() + withinMs;
  while (monotonicMs() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, GROUP_POLL_MS));
    if (!groupHasLiveMembers(pgid)) return true;
  }
  return false;
}

/**
 * Whether any process of the group is still running. On Linux, zombies are excluded: an orphan whose new parent
 * does not reap (PID 1 in some containers) stays a zombie forever and would otherwise look alive.
 */
function groupHasLiveMembers(pgid: number): boolean {
  // kill(-pgid, 0) first: ESRCH means no process at all is left in the group, zombies included (the usual case
  // once the shell exited), which answers without reading every process's /proc entry (9 ms per hundred).
  let signalled: boolean;
  try {
    process.kill(-pgid, 0);
    signalled = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    signalled = false;
  }
  if (process.platform === 'linux') {
    try {
      for (const entry of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        let stat: string;
        try {
          stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
        } catch {
          continue;
        }
        // Fields after the parenthesised command name: state ppid pgrp …
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true;
      }
      return false;
    } catch {
      // /proc unavailable: fall through to the portable probe.
    }
  }
  return signalled;
}

function readCapture(file: string): string {
  const size = fs.statSync(file).size;
  if (size <= MAX_CAPTURE_BYTES) return fs.readFileSync(file, 'utf8');
  const half = MAX_CAPTURE_BYTES / 2;
  const fd = fs.openSync(file, 'r');
  try {
    const head = Buffer.alloc(half);
    const tail = Buffer.alloc(half);
    fs.readSync(fd, head, 0, half, 0);
    fs.readSync(fd, tail, 0, half, size - half);
    return `${head.toString('utf8')}\n[delegate-git] ${size - MAX_CAPTURE_BYTES} bytes elided\n${tail.toString('utf8')}`;
  } finally {
    fs.closeSync(fd);
  }
}
