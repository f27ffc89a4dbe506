/**
 * What an interrupted delegation says, in one paragraph: where it was, what it did with the files the worker wrote,
 * whether anything was recorded, and what to do next. Without it an interrupted run said nothing, and the next
 * run blamed the worker for the files the interrupted one left.
 */
import { shownPath, shownText } from '@delegate-git/core/shown-path';

export type InterruptedRun =
  /** Before a file was written: the worker's request (if sent) was abandoned. */
  | { step: 'asking' }
  /**
   * After the files were written and before anything was recorded, or while recording when the record could not
   * be completed (`recordFailure`): the files were put back, but for `unrestored`.
   */
  | {
      step: 'verifying' | 'recording';
      written: readonly string[];
      /** `copy`: where what the file held before is kept (null: the worker created it, or nothing could be kept). */
      /** `changed`: the file no longer held what the worker wrote (an edit made meanwhile), so it was left. */
      unrestored: ReadonlyArray<{ path: string; reason: string; copy?: string | null; changed?: true }>;
      recordFailure?: string;
    }
  /** While recording: the interrupt waited for the record, which is complete (`recorded` false: nothing to record). */
  | { step: 'recorded'; verdict: string; written: readonly string[]; recorded: boolean };

const RUN_AGAIN = 'Run the unit again to delegate it anew.';

export function interruptionNotice(signal: NodeJS.Signals, run: InterruptedRun): string {
  const head = `interrupted (${signal})`;
  if (run.step === 'asking')
    return `${head} before any file was written (the request to the worker, if sent, was abandoned): nothing was written and nothing was recorded. ${RUN_AGAIN}`;
  if (run.step === 'recorded')
    return run.recorded
      ? `${head} while the verdict was being recorded, so the interrupt waited for the record to be complete: the verdict ${run.verdict} on the ${workerWrote(run.written)} is signed and recorded in refs/notes/delegations, and the files stay as recorded.`
      : `${head} as the run ended: the verdict was ${run.verdict}, and none of the ${workerWrote(run.written)} is in the repository, so there was nothing to record; the files stay as written.`;
  const where =
    run.step === 'verifying'
      ? `${head} while verifying`
      : `${head} while the verdict was being recorded, and the record could not be completed (${run.recordFailure?.replace(/\.$/, '') ?? 'unknown failure'})`;
  if (run.written.length === 0) return `${where}: nothing was written and nothing was recorded. ${RUN_AGAIN}`;
  if (run.unrestored.length === 0)
    return `${where}: the ${workerWrote(run.written)} were put back as they were, and nothing was recorded. ${RUN_AGAIN}`;
  const left = new Set(run.unrestored.map((u) => u.path));
  const restored = run.written.filter((p) => !left.has(p));
  const unrestored = run.unrestored.map(
    (u) =>
      `${shownPath(u.path)} (${u.reason.replace(/\.$/, '')}${u.copy ? `; what it held before is kept in ${shownText(u.copy)}` : ''})`,
  );
  // git status shows which files differ from the last commit, not what an uncommitted one held: that is in the copy.
  const copied = run.unrestored.filter((u) => u.copy).length;
  const byHand = run.unrestored.some((u) => u.changed)
    ? `Keep what a file changed since holds, or put back what it held before the worker${copied > 0 ? ` from the ${copied === 1 ? 'copy' : 'copies'} named (remove ${copied === 1 ? 'it' : 'them'} once done)` : ' (nothing: the worker created it)'}; then run the unit again.`
    : copied === 0
      ? 'Put back or delete what is left by hand (git status shows it), then run the unit again.'
      : `Put back what is left by hand from the ${copied === 1 ? 'copy' : 'copies'} named${copied < run.unrestored.length ? ' and delete what the worker created' : ''}, then run the unit again; remove the ${copied === 1 ? 'copy' : 'copies'} once done.`;
  // A file changed since the worker wrote it holds what someone else wrote too: "as the worker wrote it" is not so.
  const asLeft = run.unrestored.some((u) => u.changed)
    ? `as ${run.unrestored.length === 1 ? 'it is' : 'they are'}`
    : `as the worker wrote ${run.unrestored.length === 1 ? 'it' : 'them'}`;
  return (
    `${where}, and not every file the worker wrote could be put back: ${unrestored.join(', ')} ` +
    `${run.unrestored.length === 1 ? 'is' : 'are'} left ${asLeft}, with no verdict recorded. ` +
    (restored.length > 0 ? `The other ${filesNamed(restored)} were put back as they were. ` : '') +
    `Nothing was recorded. ${byHand}`
  );
}

/** `2 file(s) (src/a.js, src/b.js)`: the count and every name, as the receipt shows them. */
function filesNamed(paths: readonly string[]): string {
  return `${paths.length} file(s) (${names(paths)})`;
}

function workerWrote(paths: readonly string[]): string {
  return `${paths.length} file(s) the worker wrote (${names(paths)})`;
}

function names(paths: readonly string[]): string {
  return paths.map(shownPath).join(', ');
}
