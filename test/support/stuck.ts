/**
 * A child process that never ends holds a synchronous spawn, and with it the whole test run, until CI's own limit:
 * a test's timeout cannot interrupt spawnSync. So the helpers' children are killed after two minutes, and the test
 * fails naming the command. (It happened once: Node 20 deadlocked in a `keygen` run.)
 */
export const STUCK_AFTER = { timeout: 120_000, killSignal: 'SIGKILL' } as const;

/** spawnSync's error, or for a child killed as stuck, an error that names it. */
export function spawnFailure(error: Error, command: string, args: readonly string[]): Error {
  return (error as NodeJS.ErrnoException).code === 'ETIMEDOUT'
    ? new Error(
        `${command} ${args.join(' ')} did not end within ${STUCK_AFTER.timeout / 1000} s and was killed`,
      )
    : error;
}
