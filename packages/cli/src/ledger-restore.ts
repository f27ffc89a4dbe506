/**
 * A fetch whose refspec writes the ledger itself (`+refs/notes/*:refs/notes/*`, the notes-sharing recipe of git's
 * documentation) force-moves it to the remote's tip, dropping every record made here and not synced yet, without a
 * word (rt48 f09). sync's own fetch never applies such a refspec, but a plain `git fetch` or `git pull` does. git's
 * reflog of the ledger still names what it held: when the last write no fetch made is not in the ledger now, the
 * ledger is put back there, by compare-and-swap, while a configured fetch refspec writes the ledger (a fetch naming it
 * on its command line is a deliberate rewind, left alone). What the fetch brought is the remote's, and comes in the checked way
 * (sync's intake, or the fetched ledger's after a pull), so no line enters unchecked either.
 *
 * Not covered: a repository with reflogs turned off (`core.logAllRefUpdates=false`), and a fetch with `--prune`
 * from a remote without a ledger, which deletes the ref and its reflog (the commits stay until `git gc`).
 */
import { gitTry } from '@delegate-git/core/git';
import { LEDGER_REF } from '@delegate-git/core/notes-ledger';
import type { Repository } from '@delegate-git/core/repository';

/** A fetch refspec whose local side is, or matches, the ledger ref: a fetch would force the ledger to the remote's. */
export function writesLedger(spec: string): boolean {
  const colon = spec.indexOf(':');
  if (spec.startsWith('^') || colon === -1) return false;
  // A refspec has at most one `*`, matching any run of characters.
  const [before, after] = spec.slice(colon + 1).split('*');
  if (after === undefined) return before === LEDGER_REF;
  return (
    LEDGER_REF.length >= before!.length + after.length &&
    LEDGER_REF.startsWith(before!) &&
    LEDGER_REF.endsWith(after)
  );
}

/** A reflog entry git writes for a ref a fetch or pull moved ("fetch origin: forced-update", "pull: fast-forward"). */
const BY_FETCH = /^(?:fetch|pull)\b/;
/** How far back the last local write is looked for: fetches in between are few. */
const ENTRIES = 50;

export interface Restored {
  /** The ledger's tip as the last local write left it, now its tip again. */
  restored: string;
  /** The tip a fetch moved it to. */
  moved: string;
  /** The reflog's words for that move. */
  how: string;
}

/** Puts the ledger back where the last local write left it, when a fetch has since dropped that; null otherwise. */
export async function restoreForcedLedger(repo: Repository): Promise<Restored | null> {
  const forced = await forcedLedger(repo);
  if (!forced) return null;
  const message = `delegate-git: put back the ledger a fetch moved (${forced.how})`;
  const put = await gitTry(['update-ref', '-m', message, LEDGER_REF, forced.restored, forced.moved], {
    cwd: repo.cwd,
    env: repo.env,
  });
  return put.code === 0 ? forced : null;
}

/** Where the last local write left the ledger, when a fetch through a configured refspec has since dropped that. */
export async function forcedLedger(repo: Repository): Promise<Restored | null> {
  const opts = { cwd: repo.cwd, env: repo.env };
  const log = await gitTry(['reflog', 'show', `-n${ENTRIES}`, '--format=%H %gs', LEDGER_REF, '--'], opts);
  if (log.code !== 0) return null; // no ledger, or no reflog of it
  const entries = log.stdout
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => ({ id: line.slice(0, line.indexOf(' ')), says: line.slice(line.indexOf(' ') + 1) }));
  const [newest] = entries;
  const own = entries.find((e) => !BY_FETCH.test(e.says));
  if (!newest || !own || own === newest || !BY_FETCH.test(newest.says)) return null;
  // A fetch naming the ledger on its command line (`git fetch origin +refs/notes/delegations:refs/notes/delegations`)
  // is a deliberate rewind, such as a refused push's advice to rebuild the ledger on the server's: only a configured
  // refspec does this by accident.
  const refspecs = await gitTry(['config', '--get-regexp', '^remote\\..*\\.fetch$'], opts);
  const configured = refspecs.stdout.toString('utf8').split('\n');
  if (!configured.some((line) => writesLedger(line.slice(line.indexOf(' ') + 1)))) return null;
  const tip = await repo.ledger.tip();
  if (tip === null || tip === own.id) return null;
  if ((await gitTry(['merge-base', '--is-ancestor', own.id, tip], opts)).code === 0) return null;
  return { restored: own.id, moved: tip, how: newest.says };
}

/** What to tell the user: what happened, and the refspec to remove. */
export function restoredText(r: Restored, by: string): string {
  return (
    `a fetch (reflog: "${r.how}") had moved ${LEDGER_REF} to ${r.moved.slice(0, 12)}, dropping records made here; ` +
    `${by} put it back at ${r.restored.slice(0, 12)} (the remote's records come in checked, as sync takes them). A ` +
    'fetch refspec that writes the ledger does this at every fetch: remove it (`git config --get-all ' +
    'remote.origin.fetch`; init sets its own, into refs/notes/remotes/origin/delegations) and exchange the ledger ' +
    'with `delegate-git sync`.'
  );
}

/**
 * Before a command writes the ledger: a record written on top of a ledger a fetch moved would make that tip the last
 * local write, and the records the fetch dropped would never be put back. Says what it did (after `prefix`), if
 * anything.
 */
export async function restoreBeforeWriting(
  repo: Repository,
  by: string,
  say: (text: string) => void,
  prefix = 'delegate-git: ',
): Promise<void> {
  const restored = await restoreForcedLedger(repo);
  if (restored) say(`${prefix}${restoredText(restored, by)}\n`);
}
