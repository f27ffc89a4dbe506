import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bundleModule } from '../../../test/support/bundle.js';
import { isAlive } from '../../../test/support/processes.js';
import {
  resolveTimeoutMs,
  runCommand,
  runVerification,
  TIMEOUT_EXIT_CODE,
} from '../src/verification-runner.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dg-runner-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('runCommand', () => {
  it('a zero exit passes; stdout and stderr are both captured, in the workspace', async () => {
    fs.writeFileSync(path.join(dir, 'marker.txt'), 'here');
    const run = await runCommand('cat marker.txt; echo " to stdout"; echo "to stderr" >&2', {
      cwd: dir,
      timeoutMs: 10_000,
    });
    expect(run).toMatchObject({ exitCode: 0, timedOut: false, failed: 0 });
    expect(run.output).toBe('here to stdout\nto stderr');
  });

  it('a non-zero exit is a failure even when the output looks happy', async () => {
    const run = await runCommand('echo "all good"; exit 3', { cwd: dir, timeoutMs: 10_000 });
    expect(run).toMatchObject({ exitCode: 3, failed: 1, timedOut: false });
  });

  it('stdin is closed: a command reading it sees end of input instead of hanging', async () => {
    const run = await runCommand('cat; echo "after stdin"', { cwd: dir, timeoutMs: 10_000 });
    expect(run).toMatchObject({ exitCode: 0, output: 'after stdin' });
  });

  it('a timeout kills the whole process group, grandchildren included, and fails the run', async () => {
    const run = await runCommand('sleep 30 & echo $! > grandchild.pid; wait', {
      cwd: dir,
      timeoutMs: 300,
      killGraceMs: 500,
    });
    const grandchild = Number(fs.readFileSync(path.join(dir, 'grandchild.pid'), 'utf8'));
    expect(run).toMatchObject({ exitCode: TIMEOUT_EXIT_CODE, timedOut: true });
    expect(run.failed).toBeGreaterThanOrEqual(1);
    expect(run.durationMs).toBeLessThan(5_000);
    expect(isAlive(grandchild)).toBe(false);
  });

  it('a grandchild that ignores SIGTERM is SIGKILLed after the grace', async () => {
    const script = `sh -c 'trap "" TERM; echo $$ > stubborn.pid; while :; do sleep 0.05; done' & wait`;
    const run = await runCommand(script, { cwd: dir, timeoutMs: 400, killGraceMs: 300 });
    const stubborn = Number(fs.readFileSync(path.join(dir, 'stubborn.pid'), 'utf8'));
    expect(run.timedOut).toBe(true);
    expect(isAlive(stubborn)).toBe(false);
  });

  it('a command that finishes in time is not marked timed out (control)', async () => {
    const run = await runCommand('sleep 0.05; echo done', { cwd: dir, timeoutMs: 5_000 });
    expect(run).toMatchObject({ exitCode: 0, timedOut: false });
  });

  it('a missing working directory is a failed run, not a crash', async () => {
    const run = await runCommand('echo hi', { cwd: path.join(dir, 'missing'), timeoutMs: 5_000 });
    expect(run.exitCode).not.toBe(0);
    expect(run.failed).toBeGreaterThanOrEqual(1);
  });
});

describe('runVerification: repeats (plugin 2.8 table)', () => {
  /** A command whose n-th run passes or fails as the script says, counting runs in a file. */
  function scripted(sequence: string[]): string {
    fs.writeFileSync(path.join(dir, 'sequence'), `${sequence.join('\n')}\n`);
    return 'n=$(( $(cat count 2>/dev/null || echo 0) + 1 )); echo $n > count; r=$(sed -n "$n"p sequence); echo "run $n: $r"; [ "$r" = PASS ]';
  }
  const verify = (command: string, repeats = 3) =>
    runVerification(command, {
      cwd: dir,
      timeoutMs: 10_000,
      repeats,
      logPath: path.join(dir, 'logs', 'last.log'),
    });
  const runsExecuted = () => Number(fs.readFileSync(path.join(dir, 'count'), 'utf8'));

  it('PASS PASS PASS → passed, 3 runs', async () => {
    const result = await verify(scripted(['PASS', 'PASS', 'PASS']));
    expect(result).toMatchObject({ passed: true, flaky: false });
    expect(result.runs).toHaveLength(3);
    expect(runsExecuted()).toBe(3);
  });

  it('FAIL FAIL FAIL → failed, all 3 runs spent (agreeing failures do not stop early)', async () => {
    const result = await verify(scripted(['FAIL', 'FAIL', 'FAIL']));
    expect(result).toMatchObject({ passed: false, flaky: false });
    expect(result.runs).toHaveLength(3);
    expect(runsExecuted()).toBe(3);
  });

  it('says as each run starts which of how many it is (a flaky result stops early)', async () => {
    const told: Array<[number, number]> = [];
    await runVerification(scripted(['PASS', 'FAIL', 'PASS']), {
      cwd: dir,
      timeoutMs: 10_000,
      repeats: 3,
      logPath: path.join(dir, 'logs', 'last.log'),
      onRun: (run, of) => told.push([run, of]),
    });
    expect(told).toEqual([
      [1, 3],
      [2, 3],
    ]);
  });

  it('PASS FAIL → flaky after 2 runs', async () => {
    const result = await verify(scripted(['PASS', 'FAIL', 'PASS']));
    expect(result).toMatchObject({ passed: false, flaky: true });
    expect(result.runs.map((run) => run.exitCode)).toEqual([0, 1]);
    expect(runsExecuted()).toBe(2);
  });

  it('FAIL PASS → flaky after 2 runs', async () => {
    const result = await verify(scripted(['FAIL', 'PASS', 'FAIL']));
    expect(result).toMatchObject({ passed: false, flaky: true });
    expect(runsExecuted()).toBe(2);
  });

  it('PASS PASS FAIL → flaky after 3 runs', async () => {
    const result = await verify(scripted(['PASS', 'PASS', 'FAIL']));
    expect(result).toMatchObject({ passed: false, flaky: true });
    expect(result.runs).toHaveLength(3);
  });

  it('with repeats = 1 an alternating command passes on its first run', async () => {
    const result = await verify(scripted(['PASS', 'FAIL']), 1);
    expect(result).toMatchObject({ passed: true, flaky: false });
    expect(runsExecuted()).toBe(1);
  });

  it('writes every run to the log with a header, replacing the previous log', async () => {
    const logPath = path.join(dir, 'logs', 'last.log');
    fs.mkdirSync(path.dirname(logPath));
    fs.writeFileSync(logPath, 'STALE CONTENT FROM AN EARLIER UNIT\n');
    await verify(scripted(['PASS', 'FAIL']));
    const log = fs.readFileSync(logPath, 'utf8');
    expect(log).not.toContain('STALE CONTENT');
    expect(log).toMatch(/^===== run 1\/3: exit 0, passed 1, failed 0, \d+ ms =====\n\$ n=/);
    expect(log).toContain('run 1: PASS');
    expect(log).toMatch(/===== run 2\/3: exit 1, passed 0, failed 1, \d+ ms =====/);
    expect(log).toContain('run 2: FAIL');
    expect(fs.readdirSync(path.dirname(logPath))).toEqual(['last.log']); // no temp file left behind
  });
});

describe('resolveTimeoutMs', () => {
  it('falls back for anything that is not a positive finite number, and floors fractions', () => {
    for (const bad of [
      0,
      -5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      '4000',
      null,
      {},
      undefined,
    ]) {
      expect(resolveTimeoutMs(bad)).toBe(30000);
    }
    expect(resolveTimeoutMs(-1, 1234)).toBe(1234);
    expect(resolveTimeoutMs(1500.9)).toBe(1500);
    expect(resolveTimeoutMs(0.5)).toBe(1);
    expect(resolveTimeoutMs(120000)).toBe(120000);
  });
});

describe('an interrupt of delegate-git while the command runs', () => {
  it.each(['SIGINT', 'SIGQUIT'] as const)(
    '%s ends the command’s whole group before delegate-git ends as the signal would end it; control: not interrupted, it runs on',
    async (signal) => {
      const runner = await bundleModule(
        'packages/delegate/src/verification-runner.ts',
        path.join(dir, `runner-${signal}.mjs`),
      );
      const pidFile = path.join(dir, `pid-${signal}`);
      const script = path.join(dir, `run-${signal}.mjs`);
      fs.writeFileSync(
        script,
        `import { runCommand } from ${JSON.stringify(runner)};\n` +
          `await runCommand(${JSON.stringify(`sleep 30 & echo $! > ${pidFile}; wait`)}, { cwd: ${JSON.stringify(dir)}, timeoutMs: 60000, killGraceMs: 500 });\n` +
          `process.stdout.write('finished');\n`,
      );
      // Its own temporary directory, to see that the run's capture files do not outlive it.
      const tmp = fs.mkdtempSync(path.join(dir, 'tmp-'));
      const started = (await import('node:child_process')).spawn(process.execPath, [script], {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, TMPDIR: tmp },
      });
      const until = async (ok: () => boolean) => {
        for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 25));
      };
      await until(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').trim() !== '');
      const sleeper = Number(fs.readFileSync(pidFile, 'utf8'));
      // Control: a moment later the command still runs.
      await new Promise((r) => setTimeout(r, 200));
      expect(isAlive(sleeper)).toBe(true);
      expect(fs.readdirSync(tmp)).toHaveLength(1);

      const ended = new Promise<NodeJS.Signals | null>((resolve) =>
        started.once('exit', (_, s) => resolve(s)),
      );
      started.kill(signal);
      expect(await ended).toBe(signal);
      expect(isAlive(sleeper)).toBe(false);
      expect(fs.readdirSync(tmp)).toEqual([]);
    },
    30_000,
  );
});

describe('a caller that listens for the signals itself (interrupt)', () => {
  it('an abort ends the whole group and the run throws its reason; no process listener is added, no later run starts', async () => {
    const listeners = () => ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'].map((s) => process.listenerCount(s));
    const before = listeners();
    const pidFile = path.join(dir, 'sleeper.pid');
    const controller = new AbortController();
    const running = runVerification(`sleep 30 & echo $! > ${pidFile}; wait`, {
      cwd: dir,
      timeoutMs: 60_000,
      killGraceMs: 500,
      repeats: 3,
      logPath: path.join(dir, 'log'),
      interrupt: controller.signal,
    });
    const outcome = running.then(
      () => 'finished',
      (error: Error) => error.message,
    );
    for (let i = 0; i < 200 && !(fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').trim()); i++)
      await new Promise((r) => setTimeout(r, 25));
    const sleeper = Number(fs.readFileSync(pidFile, 'utf8'));
    expect(listeners()).toEqual(before);
    fs.rmSync(pidFile);
    controller.abort(new Error('interrupted (SIGINT)'));

    expect(await outcome).toBe('interrupted (SIGINT)');
    expect(isAlive(sleeper)).toBe(false);
    // No second run was started, and what the cut run said is no log of a verification.
    expect(fs.existsSync(pidFile)).toBe(false);
    expect(fs.existsSync(path.join(dir, 'log'))).toBe(false);
    expect(listeners()).toEqual(before);
  });

  it('control: not aborted, the same command runs to its end', async () => {
    const controller = new AbortController();
    const run = await runCommand('sleep 0.05; echo done', {
      cwd: dir,
      timeoutMs: 5_000,
      interrupt: controller.signal,
    });
    expect(run).toMatchObject({ exitCode: 0, timedOut: false, output: 'done' });
  });
});
