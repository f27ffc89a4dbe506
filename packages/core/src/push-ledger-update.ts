/**
 * The gate on `refs/notes/delegations` itself: no deletion, no rewrite, no dropped line along the way, nothing but
 * notes, and every line it adds verified under the trust root in force.
 */

import { parentsIn } from './commit-ancestry.js';
import type { Governance } from './governance.js';
import type { LedgerChange } from './ledger-change.js';
import { ForeignEntries, type ForeignEntry, whyNotANote } from './notes-format.js';
import { noGovernanceReason } from './push-governance.js';
import { isZeroId, type PushJudgement, type RefUpdate } from './push-judgement.js';
import { type LedgerCheck, NOT_CHECKED } from './push-ledger-check.js';
import type { PushReads } from './push-reads.js';
import type { Repository } from './repository.js';
import { shownPath } from './shown-path.js';

export async function judgeLedgerUpdate(
  reads: PushReads,
  u: RefUpdate,
  governance: Governance | null,
  ledger: LedgerCheck,
  alongRead: Promise<AlongUpdate> | null,
  result: PushJudgement,
) {
  const refuse = (reason: string) => result.refusals.push({ ref: u.ref, reason });
  // A ledger rewritten (deleted, forced back, lines dropped): what catching up with the server by sync answers.
  const refuseRewrite = (reason: string) =>
    result.refusals.push({ ref: u.ref, reason, kind: 'ledger rewrite' });
  if (isZeroId(u.newId)) return refuseRewrite('the ledger cannot be deleted (it is append-only)');
  // Every reader takes the ref as it is: a tag of a notes commit would read as damage in every clone that fetched it.
  const pushed = await reads.repo.objects.read(u.newId);
  if (pushed?.type !== 'commit')
    return refuse(`the ledger must name a notes commit, not a ${pushed?.type ?? 'missing object'}`);
  if (ledger.fastForward && ledger.change) {
    if (!(await ledger.fastForward)) {
      return refuseRewrite(
        'non-fast-forward update of the ledger (it is append-only): run `delegate-git sync` and push again',
      );
    }
    const { dropped } = await ledger.change;
    if (dropped.length > 0) {
      const blobs = [...new Set(dropped.map((d) => d.annotated.slice(0, 12)))];
      return refuseRewrite(
        `the update drops ${dropped.length} record line(s) on blob(s) ${blobs.join(', ')} (the ledger is append-only)`,
      );
    }
  }
  const along = await alongRead;
  if (along && along.dropped.length > 0)
    return refuseRewrite(
      `${droppedAlongText(along.dropped)}; push the ledger as delegate-git and \`delegate-git sync\` write it`,
    );
  const { added, foreign } = ledger.change ? await ledger.change : await wholeLedger(reads.repo, u.newId);
  // At the tip, and in every commit the update brings (a commit of content may hide in the ledger's history).
  const everywhere = new Map([...foreign, ...(along?.foreign ?? [])].map((entry) => [entry.path, entry]));
  for (const reason of foreignRefusals([...everywhere.values()])) refuse(reason);
  if (!governance)
    return refuse(
      (await reads.holdsContent())
        ? await noGovernanceReason(reads)
        : 'no policy is in force on this repository to verify the ledger against: push the adopting commit and the ledger together (`git push --atomic <remote> <branch> refs/notes/delegations`; the first push is judged by the policy it carries)',
    );
  const problems = await Promise.all(
    added.map(({ annotated, lines }) => ledger.problems(governance, annotated, lines)),
  );
  let unchecked = 0;
  added.forEach(({ annotated, lines }, i) => {
    lines.forEach((_, j) => {
      result.noteLines++;
      const problem = problems[i]![j];
      if (problem === NOT_CHECKED) unchecked++;
      else if (problem)
        result.refusals.push({
          ref: u.ref,
          reason: `note on blob ${annotated.slice(0, 12)}: ${problem}`,
          kind: 'ledger line',
        });
    });
  });
  if (unchecked > 0)
    refuse(`${unchecked} more new line(s) not checked: the push is refused for the lines above already`);
}

export interface AlongUpdate {
  /** Entries that are no notes in the commits the update brings, each against its first parent. */
  foreign: ForeignEntry[];
  /** Lines dropped along those commits and missing at the new tip. */
  dropped: Array<{ commit: string }>;
}

/**
 * What the notes commits a ledger update brings hold that the tips' comparison cannot see, read in one walk of them
 * (NotesLedger.walkUpdate): entries that are no notes (a commit of content may hide in the ledger's history), and
 * lines dropped along them and missing at the new tip, which `verify` finds in the history for good (rt44 f01). One
 * commit on the old tip, the usual append, is the tips' comparison itself: nothing to walk, no git process more.
 */
export async function alongUpdate(repo: Repository, u: RefUpdate): Promise<AlongUpdate> {
  const older = isZeroId(u.oldId) ? null : u.oldId;
  if (older !== null) {
    const pushed = await repo.objects.read(u.newId);
    const parents = pushed?.type === 'commit' ? parentsIn(pushed.content) : null;
    if (parents?.length === 1 && parents[0] === older) return { foreign: [], dropped: [] };
  }
  const walk = await repo.ledger.walkUpdate(u.newId, older, { foreign: true, dropped: true });
  const dropped = walk.dropped() ?? [];
  return { foreign: walk.foreign, dropped: await repo.ledger.notHeldAt(dropped, [u.newId]) };
}

/**
 * What is wrong with a ledger whose history drops lines between its tips that its tip lacks: the tips' comparison
 * cannot see them, `verify` checks the whole history, and a server could never take the history back.
 */
export function droppedAlongText(dropped: ReadonlyArray<{ commit: string }>): string {
  const commits = [...new Set(dropped.map((d) => d.commit.slice(0, 12)))];
  const named = `${commits.slice(0, 3).join(', ')}${commits.length > 3 ? ` and ${commits.length - 3} more` : ''}`;
  return `notes commit(s) ${named} drop ${dropped.length} line(s) their parents hold that the tip does not hold either (a line that was ever in the ledger stays in it: verify checks its whole history)`;
}

/** A first push of the ledger adds all of it: every note, and every entry that is no note. */
async function wholeLedger(repo: Repository, at: string): Promise<Pick<LedgerChange, 'added' | 'foreign'>> {
  const foreign = new ForeignEntries();
  const added: LedgerChange['added'] = [];
  for await (const note of repo.ledger.entries(at, foreign)) added.push(note);
  return { added, foreign: foreign.found };
}

/** Entries that are no notes named one by one in a refusal; the rest are counted. */
const FOREIGN_NAMED = 10;

/**
 * The ledger holds only notes: every reader skips anything else, so it would stay in the append-only history unread
 * and unchecked for good.
 */
function foreignRefusals(foreign: readonly ForeignEntry[]): string[] {
  const named = foreign
    .slice(0, FOREIGN_NAMED)
    .map(
      (e) => `the update adds ${shownPath(e.path)}, which is ${whyNotANote(e)}; the ledger holds only notes`,
    );
  const more = foreign.length - named.length;
  if (more > 0) named.push(`the update adds ${more} more entr${more === 1 ? 'y' : 'ies'} that are not notes`);
  return named;
}
