/**
 * A one-line progress display for the worker's generation. On a terminal it rewrites the same line; anywhere
 * else (CI logs, pipes, --json) it stays silent so machine output is never interleaved with it.
 */
import { monotonicMs } from './clock.js';
import type { WorkerProgress } from './worker-client.js';

export interface ProgressLine {
  update(progress: WorkerProgress): void;
  done(): void;
}

/** Repaints at most this often: a fast local model can stream hundreds of chunks per second. */
const REPAINT_INTERVAL_MS = 100;

/** While no token came yet, the wait is repainted this often, so a model loading is not taken for a dead one. */
const WAITING_REPAINT_MS = 1000;

function formatProgress(progress: WorkerProgress): string {
  const seconds = (progress.elapsedMs / 1000).toFixed(1);
  if (progress.completionTokens === 0) return `worker: waiting for the first token, ${seconds}s`;
  return `worker: ${progress.completionTokens} tokens, ${progress.tokensPerSecond.toFixed(1)} tok/s, ${seconds}s`;
}

export function createProgressLine(stream: NodeJS.WriteStream): ProgressLine {
  if (!stream.isTTY) return { update() {}, done() {} };
  let last: WorkerProgress | null = null;
  let lastPaint = Number.NEGATIVE_INFINITY;
  let painted = false;
  let waiting: NodeJS.Timeout | undefined;
  const stopWaiting = () => {
    clearInterval(waiting);
    waiting = undefined;
  };
  const paint = (progress: WorkerProgress) => {
    // Carriage return + "erase line" keeps the display on one line however long the previous text was.
    stream.write(`\r\x1b[2K${formatProgress(progress)}`);
    painted = true;
    lastPaint = monotonicMs();
  };
  return {
    update(progress) {
      last = progress;
      if (progress.completionTokens === 0 && waiting === undefined) {
        const since = monotonicMs() - progress.elapsedMs;
        const repaint = () => paint({ ...progress, elapsedMs: monotonicMs() - since });
        waiting = setInterval(repaint, WAITING_REPAINT_MS).unref();
        repaint();
        return;
      }
      if (progress.completionTokens > 0) stopWaiting();
      if (monotonicMs() - lastPaint >= REPAINT_INTERVAL_MS) paint(progress);
    },
    done() {
      stopWaiting();
      if (last && last.completionTokens > 0) paint(last);
      if (painted) stream.write('\n');
      last = null;
      painted = false;
    },
  };
}
