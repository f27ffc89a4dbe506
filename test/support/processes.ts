/** Processes as the tests that signal them see them. */
import fs from 'node:fs';

/**
 * Whether `pid` still runs: a zombie (ended, its exit status not collected because the init that adopted the orphan
 * does not reap, as in some containers) runs nothing, and counts as gone.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}
