/**
 * Refs a push may not update by the name it uses: replace refs, names git reads as the ledger, and symbolic refs that
 * lead to it. Decided from the names (and the server's loose ref files) alone, before anything is read.
 */

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LEDGER_REF } from './notes-ledger.js';
import type { PushRefusal, RefUpdate } from './push-judgement.js';
import { shadowsOf } from './ref-shadows.js';
import type { Repository } from './repository.js';

/** Any spelling: loose refs on a server whose file system ignores case put `refs/REPLACE/x` where git reads. */
export function isReplaceRef(ref: string): boolean {
  return ref.toLowerCase().startsWith('refs/replace/');
}

/**
 * A replace ref makes git read one object in place of another wherever it is reachable: `git show`, `git archive` and
 * every checkout on the server and in mirror clones would hold content no gate judged (the gates read objects as
 * stored). Nothing delegate-git governs needs one, so none is taken; removing one is fine.
 */
export const REPLACE_REFUSED =
  'a replace ref makes git show other content in place of an object wherever it is read (the server, archives, mirror clones), which no gate judges: push the change as a commit instead';

const LEDGER_SHADOWS = shadowsOf(LEDGER_REF);

/**
 * A ref git takes for the ledger though it is not it: one that differs only in case is the ledger's own file on a
 * server whose file system ignores case, and git reads `refs/tags/refs/notes/delegations` (and the like) as the
 * ledger in a clone that has none.
 */
export function posesAsLedger(ref: string): boolean {
  const folded = ref.toLowerCase();
  return ref !== LEDGER_REF && (folded === LEDGER_REF || LEDGER_SHADOWS.includes(folded));
}

export const POSES_AS_LEDGER = `git reads this name as ${LEDGER_REF} (where case is ignored, or in a clone without the ledger): push the ledger by its own name`;

/**
 * Ways around the ledger's checks through symbolic refs here (ones an administrator made). When the ledger is a
 * symbolic ref, the ref its chain ends at (which may not exist yet) is the ledger; and a pushed symbolic ref whose
 * chain ends where the ledger's does (an alias, or a link in the middle of the ledger's own chain, dangling or not)
 * moves, creates or deletes the ledger. Either is pushed as the ledger by its own name, where its checks run.
 */
export function ledgerDetours(repo: Repository, updates: readonly RefUpdate[]): PushRefusal[] {
  const ledgerEnd = chainEnd(repo.layout.commonDir, LEDGER_REF);
  const refusals: PushRefusal[] = [];
  for (const { ref } of updates) {
    if (ref === LEDGER_REF) continue;
    if (ref === ledgerEnd)
      refusals.push({
        ref,
        reason: `${LEDGER_REF} is a symbolic ref to this one here: ${THROUGH_THE_LEDGER}`,
      });
    else if (chainEnd(repo.layout.commonDir, ref) === ledgerEnd)
      refusals.push({
        ref,
        reason: `a symbolic ref here that leads where ${LEDGER_REF} does: ${THROUGH_THE_LEDGER}`,
      });
  }
  return refusals;
}

/**
 * The name a chain of symbolic refs from `ref` ends at (`ref` itself when it is none), read from git's loose ref
 * files, where a symbolic ref lives (`ref: <name>`), dangling ones included, which git's listings leave out. As git,
 * no more than five links are followed.
 */
function chainEnd(commonDir: string, ref: string): string {
  let at = ref;
  for (let hop = 0; hop < 5; hop++) {
    let text: string;
    try {
      text = readFileSync(path.join(commonDir, at), 'utf8');
    } catch {
      return at;
    }
    const next = /^ref: (refs\/\S+)\s*$/.exec(text)?.[1];
    if (next === undefined) return at;
    at = next;
  }
  return at;
}

const THROUGH_THE_LEDGER =
  'a push to it moves the ledger; push the ledger by its own name, where its checks run';
