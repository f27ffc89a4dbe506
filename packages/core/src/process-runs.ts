/**
 * Whether a process of this host runs: signal 0 checks without sending anything (ESRCH: no such process; EPERM: it
 * runs, as another user). A pid reused by an unrelated process reads as running.
 */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
