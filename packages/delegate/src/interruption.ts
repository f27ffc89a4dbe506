/**
 * The signals that stop a delegation part-way: a terminal's Ctrl-C (SIGINT) or Ctrl-\ (SIGQUIT), a kill (SIGTERM), a
 * closed terminal (SIGHUP). Heard, they no longer end the process at once, which left the worker's files written
 * with no verdict recorded and nothing said: the delegation ends at its next safe point instead (delegate.ts).
 */
import os from 'node:os';

export const INTERRUPTING_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];

/** What a delegation reads of an interrupt: `signal` aborts the step that can stop (the worker, a command). */
export interface Interrupt {
  readonly signal: AbortSignal;
  /** The first signal heard, or null. */
  readonly received: NodeJS.Signals | null;
}

/**
 * Listens for INTERRUPTING_SIGNALS from its creation until `close()`, which the command must reach however it ends:
 * commands also run inside a longer process (tests), where a listener left behind would swallow the next Ctrl-C.
 * Later signals are ignored: the run is already ending, and the record it may be finishing must not be cut.
 */
export class InterruptListener implements Interrupt {
  private readonly controller = new AbortController();
  readonly signal = this.controller.signal;
  received: NodeJS.Signals | null = null;

  private readonly onSignal = (signal: NodeJS.Signals) => {
    if (this.received !== null) return;
    this.received = signal;
    this.controller.abort(new Error(`interrupted (${signal})`));
  };

  constructor() {
    for (const signal of INTERRUPTING_SIGNALS) process.on(signal, this.onSignal);
  }

  close(): void {
    for (const signal of INTERRUPTING_SIGNALS) process.removeListener(signal, this.onSignal);
  }
}

/** How a shell reports a process `signal` ended: 128 + its number (130 for SIGINT, 143 for SIGTERM). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (os.constants.signals[signal] ?? 0);
}
