/**
 * What the server gate answers about a push: the refs it names, what it refuses and why, and what it judged.
 */
import type { RefusalKind } from './policy.js';

export interface RefUpdate {
  oldId: string;
  newId: string;
  ref: string;
}

export interface PushRefusal {
  ref: string;
  commit?: string;
  path?: string;
  reason: string;
  /**
   * For a refused path: what it needs (no kind: content to promote). `ledger line`: a line the ledger update adds that
   * may not enter it. `repeated ref`: a ref the push's commands name more than once (a client of one's own), which no
   * advice about the ledger helps. `ledger rewrite`: an update of the ledger that deletes it, forces it back or drops
   * lines (sync catches up with the server instead).
   */
  kind?: RefusalKind | 'ledger line' | 'repeated ref' | 'ledger rewrite';
  /** Refused by the rules the push brings, not by those in force (refusedByPushedRules): pushing those first is no way out. */
  byPushedRules?: true;
  /** The policy or a key file: the rules change itself, which pushing the rules change first cannot help either. */
  rulesFile?: true;
}

export interface PushJudgement {
  refusals: PushRefusal[];
  /** True when no policy was in force anywhere and the pushed one was trusted on first push. */
  bootstrap: boolean;
  /** Refs whose push changes the policy file or the trust root in force on them (judged by the rules before it). */
  changingRules: string[];
  commits: number;
  files: number;
  noteLines: number;
}

/** Git's id of no object (an old id of a created ref, a new id of a deleted one), in either object format. */
export function isZeroId(id: string): boolean {
  return /^0+$/.test(id);
}

/** A judgement before anything is judged: what judgePush fills in, and all a push refused on its commands gets. */
export function emptyJudgement(refusals: PushRefusal[] = []): PushJudgement {
  return { refusals, bootstrap: false, changingRules: [], commits: 0, files: 0, noteLines: 0 };
}
