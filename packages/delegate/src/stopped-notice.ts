/**
 * What the next delegate says of the journals it found (unrecorded-writes.ts): one paragraph each, saying what is
 * wrong or what was done, and what to do.
 */
import path from 'node:path';
import { relativeWithin } from '@delegate-git/core/path-within';
import { shownLine, shownPath, shownText } from '@delegate-git/core/shown-path';
import type { FoundJournal, RefusedJournal, UnsureJournal } from './unrecorded-writes.js';

/** The paragraph that says what was found and done, for the operator. */
export function stoppedNotice(s: FoundJournal): string {
  if (s.kind !== 'stopped') {
    if (s.kind === 'unsure') return unsureNotice(s);
    return s.kind === 'failed' ? failedNotice(s) : refusedNotice(s);
  }
  const run = `An earlier \`delegate-git delegate\` of "${shownText(s.taskName)}" (process ${s.pid}, started ${shownText(s.started)}) stopped before it could finish (killed, or the machine went down).`;
  if (s.recorded) {
    const kept =
      s.kept.length === 0
        ? ''
        : ` What they held before it is kept all the same: ${s.kept.map((k) => `${shownPath(k.path)} in ${shownText(k.copy)}`).join(', ')}.`;
    return `${run} Its verdict had been recorded, so its files stay as recorded.${kept}\n`;
  }
  const parts = [`${run} Its verdict was never recorded`];
  if (s.putBack.length > 0)
    parts.push(
      `, so the worker's files were put back as they were before it: ${s.putBack.map(shownPath).join(', ')}`,
    );
  parts.push('.');
  if (s.left.length > 0) {
    const left = s.left.map(
      (l) =>
        `${shownPath(l.path)} (${shownLine(l.why)}${l.copy ? `; what it held before is kept in ${shownText(l.copy)}` : ''})`,
    );
    parts.push(
      ` Left as they are: ${left.join(', ')}. The gates refuse what the worker wrote until it is delegated again or reviewed.`,
    );
  }
  return `${parts.join('')}\n`;
}

function failedNotice(s: RefusedJournal): string {
  return `Putting back the files of an earlier \`delegate-git delegate\` that stopped before it could finish, from its journal ${shownText(s.dir)}, failed part-way: ${s.problems.map((p) => shownLine(p)).join('; ')}. The journal is left as it is, and the next delegate tries again; its numbered files hold what the files it names held before that run.\n`;
}

function refusedNotice(s: RefusedJournal): string {
  if (s.moved) return movedNotice(s.dir, s.moved);
  const alive = s.alive
    ? ` Process ${s.alive.pid}, which it names, is still running ${hours(s.alive.forMs)} after it was made, longer than a run lasts: most likely another program given the same number after that run stopped, so the journal is named rather than waited for.`
    : '';
  return `A journal of an earlier \`delegate-git delegate\` that stopped before it could finish, ${shownText(s.dir)}, is not as a run leaves one, so nothing was done with it: ${s.problems.map((p) => shownLine(p)).join('; ')}.${alive} It is left as it is: if a run of yours left it, its numbered files hold what the files it names held before that run. Remove the directory once you no longer need it.\n`;
}

function movedNotice(dir: string, moved: NonNullable<RefusedJournal['moved']>): string {
  const inRepository = moved.files.filter((f) => f.inRepository);
  // A file outside the work tree stayed where the run wrote it, unless it was under the directory that moved.
  const outside = moved.files
    .filter((f) => !f.inRepository)
    .map((f) => {
      const within = relativeWithin(moved.from, f.absolute);
      return { ...f, path: within === null ? f.absolute : path.join(moved.to, within) };
    });
  const undo = [
    ...(inRepository.length > 0
      ? [`(a path in the repository is under ${shownText(moved.to)} now): ${byHand(inRepository)}`]
      : []),
    ...(outside.length > 0
      ? [
          `${inRepository.length > 0 ? 'and ' : ''}outside the repository, where that run wrote them (these are not put back automatically either: whether that run's verdict was recorded, and its files are to stay, is told only by its files in the repository): ${byHand(outside)}`,
        ]
      : []),
  ];
  return `A journal of an earlier \`delegate-git delegate\` that stopped before it could finish, ${shownText(dir)}, was made when the repository was at ${shownText(moved.from)}, and it is at ${shownText(moved.to)} now: its paths name the old place, so nothing was done with it. The files it names may still hold what that run's worker wrote. To undo it by hand, put back what each held before that run ${undo.join('; ')}. Then remove the directory ${shownText(dir)}.\n`;
}

function unsureNotice(s: UnsureJournal): string {
  return `A journal of an earlier \`delegate-git delegate\` of "${shownText(s.taskName)}" (process ${s.pid}, started ${shownText(s.started)}), ${shownText(s.dir)}, names a process that is still running ${hours(s.forMs)} after the journal was made: longer than a run lasts, so it is most likely another program given the same number after that run stopped. Nothing recorded tells for sure (the journal is of an earlier version, which does not record when its process started, or that cannot be read here), and a run's files are never put back while it may still be at work, so nothing was done with it. If \`ps -o args= -p ${s.pid}\` shows no \`delegate-git delegate\`, undo that run by hand, for each file that still holds what its worker wrote: put back ${byHand(s.files)}. Then remove the directory ${shownText(s.dir)}. If it is that run, leave it: a run removes its journal when it ends.\n`;
}

/** Each file with the copy to put back from, or, for a file the run created, that it is to be removed. */
function byHand(files: ReadonlyArray<{ path: string; copy: string | null }>): string {
  return files
    .map((f) =>
      f.copy === null
        ? `${shownPath(f.path)} (that run created it: remove it)`
        : `${shownPath(f.path)} from ${shownText(f.copy)}`,
    )
    .join(', ');
}

function hours(ms: number): string {
  const h = Math.floor(ms / 3_600_000);
  return `${h} hour${h === 1 ? '' : 's'}`;
}
