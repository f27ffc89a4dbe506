import type { PushRefusal } from '@delegate-git/core/push-judgement';
import { RULES_ADVICE } from './refusal-advice.js';

const PROMOTE =
  "Promote each file (reviewers' approvals, `delegate-git attest --approve <path>`, as many as the reason says; or, where a verdict promotes it, a delegation: not for the policy and key files, nor under requireReview) and push the ledger with it: git push --atomic <remote> <branch> refs/notes/delegations";
const SYNC =
  'The ledger only grows, and only by records that verify: to catch up with the server, run `delegate-git sync` (fetch, merge, push without force) instead of rewriting refs/notes/delegations.';
// sync never drops a line: a ledger that holds one the server refuses cannot be pushed until the line may enter, or
// until the ledger is rebuilt without it.
const REFUSED_LINE =
  "A refused line never enters the ledger, and git pushes a ledger with all its history, so this one cannot be pushed while it holds the line. One signed by a key not yet in force on the default branch passes once that key file is there (approved, pushed first). One that never can (a revoked or expired key, a record that does not match its blob) must leave this clone's ledger: rebuild it on the server's, then sign again what was made here since (git fetch origin +refs/notes/delegations:refs/notes/remotes/origin/delegations && git update-ref refs/notes/delegations refs/notes/remotes/origin/delegations; the old tip stays in git reflog refs/notes/delegations). `delegate-git sync` keeps every line, so it cannot help here.";

/** What approves a file refused in a commit before its branch's tip, which the work tree (the tip) no longer holds. */
const BEFORE_TIP =
  "A file refused in a commit before its branch's tip may hold content the work tree no longer has, which `attest <path>` does not approve (where the tip still holds it, `attest <path>` is enough): approve it from that commit (`git checkout <commit> -- <path> && delegate-git attest --approve --staged`, then `git checkout HEAD -- <path>`), or rewrite the branch so that no commit holds it (`git rebase -i`, squashing that commit into one whose content is promoted).";

/**
 * The lines after "push refused." (none when every refusal says what to do itself). `tips`: each pushed ref's new
 * tip, to tell a refusal of an earlier commit.
 */
export function pushRefusalAdvice(
  refusals: readonly PushRefusal[],
  changingRules: readonly string[],
  ledgerRef: string,
  ledgerPushed = true,
  tips: ReadonlyMap<string, string> = new Map(),
): string[] {
  const content = refusals.filter((r) => r.path !== undefined);
  const lines = refusals.some((r) => r.kind === 'ledger line');
  const kinds = new Set(content.map((r) => r.kind ?? 'content'));
  const out: string[] = [];
  // The commonest slip: the files are promoted in the pusher's clone, and a plain `git push` left the records behind.
  if (kinds.has('content') && !ledgerPushed)
    out.push(
      `This push brings no change to ${ledgerRef} (it was not pushed, or the server holds it as it is), so the server judged the files by its ledger alone: if \`delegate-git check <path>\` says they are promoted in your clone, push the ledger with the branch: git push --atomic <remote> <branch> ${ledgerRef}`,
    );
  if (kinds.has('content')) out.push(PROMOTE);
  const beforeTip = (r: PushRefusal) =>
    r.commit !== undefined && tips.has(r.ref) && !tips.get(r.ref)!.startsWith(r.commit);
  if (content.some((r) => (r.kind ?? 'content') === 'content' && beforeTip(r))) out.push(BEFORE_TIP);
  for (const kind of ['protected deletion', 'governance deletion', 'submodule'] as const)
    if (kinds.has(kind)) out.push(RULES_ADVICE[kind]);
  // Refused by the rules in force: once the rules change is in force, they are judged by it. What the pushed rules
  // refuse stays refused after that, and is promoted under them (PROMOTE) instead; so is the rules change itself.
  if (content.some((r) => !r.byPushedRules && !r.rulesFile) && changingRules.length > 0)
    out.push(
      `This push also changes the policy or the trust root (${changingRules.join(', ')}), but a push is judged by the rules in force on its branch before it: push the rules change on its own first.`,
    );
  if (lines) out.push(REFUSED_LINE);
  else if (content.length === 0 && refusals.some((r) => r.kind === 'ledger rewrite')) out.push(SYNC);
  return out;
}
