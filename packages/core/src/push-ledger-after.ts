/**
 * The ledger as it will be after the push, which every pushed ref is judged against, read once for all of them.
 */

import type { CatFileBatch } from './git.js';
import { isLink, type LinkedEntry } from './judge.js';
import type { LedgerChange } from './ledger-change.js';
import { NotesLedger } from './notes-ledger.js';
import { NotesTree } from './notes-tree.js';
import type { PathIndex } from './path-index.js';
import type { GovernedMatcher } from './policy.js';
import type { CheckedPromotions } from './push-ledger-check.js';
import type { Repository } from './repository.js';

/** The ledger as it will be after the push, as the pushed refs are judged against it. */
export interface LedgerAfter {
  at: string | null;
  recordedPaths: () => Promise<Set<string>>;
  index: () => Promise<PathIndex>;
  ledger: Promise<NotesLedger>;
  /** The pushed files the ledger check already promoted while checking their notes (null: none). */
  promotions: Promise<CheckedPromotions | null>;
}

/**
 * The ledger, reading notes at `at` from one notes tree walked through the repository's object reader (the notes
 * the ledger check read are already there), instead of listing the whole notes tree for a thousand blobs.
 */
export async function ledgerReadAt(
  repo: Repository,
  at: string | null,
  checked: Promise<LedgerChange> | null,
): Promise<NotesLedger> {
  if (at === null) return repo.ledger;
  const tree = checked
    ? await checked.then(
        (c) => c.newer,
        () => NotesTree.open(repo.objects, at),
      )
    : await NotesTree.open(repo.objects, at);
  return new LedgerReadAt(repo, tree);
}

class LedgerReadAt extends NotesLedger {
  constructor(
    repo: Repository,
    private readonly tree: NotesTree,
  ) {
    super({ cwd: repo.ledger.cwd, ref: repo.ledger.ref, env: repo.env });
  }

  override linesOnMany(blobs: string[], at?: string): Promise<Map<string, string[]>> {
    return at === this.tree.at ? this.tree.linesOnMany(blobs) : super.linesOnMany(blobs, at);
  }

  // Every ref's judging reads notes at this tip: through the tree already open, not a git of its own each time (a
  // push of a hundred branches started a hundred).
  protected override withReader<T>(
    at: string | undefined,
    use: (reader: NotesTree | null, batch: CatFileBatch) => Promise<T>,
    few = false,
  ): Promise<T> {
    return at === this.tree.at ? use(this.tree, this.tree.batch) : super.withReader(at, use, few);
  }
}

/** The paths the ledger recorded, read only when the policy alone does not decide some path's governance. */
export async function recordedPathsFor(
  governed: GovernedMatcher,
  files: readonly LinkedEntry[],
  after: LedgerAfter,
): Promise<ReadonlySet<string>> {
  const depends = files.some((f) => governed(f.path, true, isLink(f)) !== governed(f.path, false, isLink(f)));
  return depends ? after.recordedPaths() : NOTHING_RECORDED;
}

const NOTHING_RECORDED: ReadonlySet<string> = new Set();
