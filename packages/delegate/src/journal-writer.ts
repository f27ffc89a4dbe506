/**
 * Whether the process a journal names may still be the run that made it, decided without touching the disk. A pid
 * alone cannot say: the kernel gives a dead run's number to later processes, and a journal naming one that now
 * belongs to a long-lived program (a shell, an editor, a server) was skipped as "still at work" on every run, its
 * files never put back and nothing said. A run that may still be at work is never replayed under it (its files are
 * still being verified); what changed is that such a process is told apart where the journal makes that possible,
 * and named where it does not.
 */

/** Longer than any run lasts (the worker's and the verification's timeouts are minutes): past it, a live pid is named. */
export const LONGEST_RUN_MS = 24 * 60 * 60 * 1000;

/** The process a journal says made it, and when. */
export interface JournalWriter {
  pid: number;
  /** The boot the process ran in (Linux): a pid alive after a reboot is some other process. */
  boot: string | null;
  /**
   * When the process started, as /proc/<pid>/stat counts it (clock ticks since boot; version 4 journals): with the
   * pid and the boot it names one process, never a later one given the same number.
   */
  starttime: string | null;
  /** The monotonic clock (ns) when the journal was made: how long ago that was, within its boot. */
  monotonic: bigint | null;
  /** When the journal was made by the wall clock (ms), or null when nothing readable says. */
  made: number | null;
}

/** What is seen now of the process with the writer's pid. */
export interface ProcessSeen {
  /** This boot's id, or null where the system does not say. */
  boot: string | null;
  /** A process with the pid exists and has not ended (a zombie has). */
  alive: boolean;
  /** Its start time as /proc/<pid>/stat gives it, or null where that cannot be read. */
  starttime: string | null;
  /** The monotonic clock (ns) and the wall clock (ms) now. */
  monotonic: bigint;
  wall: number;
}

export type WriterState =
  /** It is, or may be, the run that made the journal, at work: leave the journal alone and say nothing. */
  | { state: 'running' }
  /** That run is over: the journal is a stopped run's. */
  | { state: 'gone' }
  /**
   * A process with the pid has run for longer than any run lasts since the journal was made, and nothing recorded
   * tells whether it is the run: never acted on, but named (`forMs`: how long since the journal was made).
   */
  | { state: 'unsure'; forMs: number };

export function writerState(writer: JournalWriter, seen: ProcessSeen): WriterState {
  if (writer.boot !== seen.boot || !seen.alive) return { state: 'gone' };
  if (writer.starttime !== null && seen.starttime !== null)
    return writer.starttime === seen.starttime ? { state: 'running' } : { state: 'gone' };
  // The monotonic clock is the one measure of time that no one sets, but it is only comparable within a known boot.
  const forMs =
    writer.monotonic !== null && writer.boot !== null
      ? Number((seen.monotonic - writer.monotonic) / 1_000_000n)
      : writer.made !== null
        ? seen.wall - writer.made
        : null;
  return forMs !== null && forMs > LONGEST_RUN_MS ? { state: 'unsure', forMs } : { state: 'running' };
}
