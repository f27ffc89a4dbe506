import type { PushRefusal } from '@delegate-git/core/pre-receive';
import { RULES_ADVICE } from './refusal-advice.js';

const PROMOTE =
  "Promote each file (reviewers' approvals, `delegate-git attest --approve <path>`, as many as the reason says; or, where a verdict promotes it, a delegation: not for the policy and key files, nor under requireReview) and push the ledger with it: git push --atomic <remote> <branch> refs/notes/delegations";
const SYNC =
  'The ledger only grows, and only by records that verify: to catch up with the server, run `delegate-git sync` (fetch, merge, push without force) instead of rewriting refs/notes/delegations.';

/** The lines after "push refused." (none when every refusal says what to do itself). */
export function pushRefusalAdvice(
  refusals: readonly PushRefusal[],
  changingRules: readonly string[],
  ledgerRef: string,
): string[] {
  const content = refusals.filter((r) => r.path !== undefined);
  const kinds = new Set(content.map((r) => r.kind ?? 'content'));
  const out: string[] = [];
  if (kinds.has('content')) out.push(PROMOTE);
  for (const kind of ['protected deletion', 'governance deletion', 'submodule'] as const)
    if (kinds.has(kind)) out.push(RULES_ADVICE[kind]);
  if (content.length > 0 && changingRules.length > 0)
    out.push(
      `This push also changes the policy or the trust root (${changingRules.join(', ')}), but a push is judged by the rules in force on its branch before it: push the rules change on its own first.`,
    );
  if (content.length === 0 && refusals.some((r) => r.ref === ledgerRef)) out.push(SYNC);
  return out;
}
