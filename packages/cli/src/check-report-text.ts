import type { CheckReport, CheckResult } from '@delegate-git/core/checks';
import { isGovernanceFile } from '@delegate-git/core/governed-paths';
import type { Policy } from '@delegate-git/core/policy';
import type { RulesChange } from '@delegate-git/core/rules-change';
import { shownPath, shownText } from '@delegate-git/core/shown-path';
import { RULES_ADVICE } from './refusal-advice.js';

/** Which content a report judged: the paths' (work tree or revision), the index's, or a commit's temporary index's. */
export type Judged = 'paths' | 'index' | 'temporary index';

/**
 * One line per file, the reason under each refusal, what to do, and a summary line. The advice approves the content
 * judged: the staged content for the index; for the temporary index `git commit -a` or `git commit <path>` stages
 * (dropped once the commit is refused), the work tree's, which those commits take.
 */
export function renderCheckReport(report: CheckReport, judged: Judged = 'paths'): string {
  const out: string[] = [];
  const governed = report.results.filter((r) => r.governed);
  for (const r of report.results) {
    if (r.absent) out.push(`NO FILE       ${shownPath(r.path)}\n    ${shownText(r.reason)}`);
    else if (!r.governed) out.push(`not governed  ${shownPath(r.path)}`);
    else if (r.promoted) {
      // Who promoted it, when the reason does not name them already ("approved by alice, bob and unchanged since").
      const by = r.by.filter((name) => !r.reason.includes(name));
      out.push(
        `PROMOTED      ${shownPath(r.path)}\n    ${shownText(r.reason)}${by.length ? ` (${shownText(by.join(', '))})` : ''}`,
      );
    } else out.push(`NOT PROMOTED  ${shownPath(r.path)}\n    ${shownText(r.reason)}`);
  }
  for (const d of report.deletions) {
    out.push(
      `${d.blocks ? 'DELETION REFUSED' : 'deleted (governed)'}  ${shownPath(d.path)}${d.reason ? `\n    ${shownText(d.reason)}` : ''}`,
    );
  }
  const refused = governed.filter((r) => !r.promoted && !r.absent);
  // A path asked about that holds no file is neither: counted apart, never as promoted (rt50 f03).
  const absent = governed.filter((r) => r.absent).length;
  const blocking = report.deletions.filter((d) => d.blocks);
  out.push(
    `${governed.length} governed file(s): ${governed.filter((r) => r.promoted).length} promoted, ${refused.length} refused` +
      `${absent > 0 ? `, ${absent} not there` : ''}` +
      `${blocking.length > 0 ? `; ${blocking.length} deletion(s) refused` : ''} (policy and trust root from ${report.source})`,
  );
  // "0 governed file(s)" right after a commit read as "nothing here is governed" (ux57 f15).
  if (judged === 'index' && governed.length === 0 && report.deletions.length === 0)
    out.push(
      'Nothing governed is staged (check judges the staged changes by default): `check --rev HEAD` judges the last commit, `check --path <file>` a file as the work tree holds it.',
    );
  // A submodule is never promoted by a record: its refusal says what keeps it.
  const promotable = refused.filter((r) => r.kind !== 'submodule');
  if (promotable.length > 0)
    out.push(...promotionAdvice(promotable, report.policy, judged, report.policyInForce));
  if (blocking.length > 0) out.push(...deletionAdvice(blocking));
  out.push(...rulesChangeText(report.rulesChange));
  return `${out.join('\n')}\n`;
}

/** What keeps or allows the refused deletions: a governance file is never deleted; a protected path after a rules change. */
function deletionAdvice(blocking: CheckReport['deletions']): string[] {
  const kinds = new Set(blocking.map((d) => d.kind));
  return [
    'To keep a file: restore it (`git restore --staged --worktree <path>`).',
    ...(['protected deletion', 'governance deletion'] as const).flatMap((kind) =>
      kinds.has(kind) ? [RULES_ADVICE[kind]] : [],
    ),
  ];
}

/** What promotes the refused files: only what can (a verdict never promotes a governance file, nor under requireReview). */
function promotionAdvice(
  refused: CheckResult[],
  policy: Policy | null,
  judged: Judged,
  policyInForce?: Policy,
): string[] {
  const approve = {
    paths: '`delegate-git attest --approve <path>`',
    index: '`delegate-git attest --approve --staged` (the staged content, as it will be committed)',
    'temporary index':
      '`delegate-git attest --approve <path>` (the work-tree content a commit with paths or -a takes; what it takes ' +
      'from the index, `--staged`; for the hunks `git commit -p` picks, neither: stage them with `git add -p`, ' +
      'approve with `--staged`, then `git commit`)',
  }[judged];
  const verdictPromotes =
    policy === null || (!policy.requireReview && refused.some((r) => !isGovernanceFile(policy, r.path)));
  // The threshold applies under requireReview and to the governance files; otherwise one approval promotes.
  const counted = policy !== null && (policy.requireReview || !verdictPromotes);
  // A change to the policy or a key file is judged by the rules in force, not by the ones it stages.
  const threshold = Math.max(
    ...refused.map((r) =>
      policy === null
        ? 1
        : isGovernanceFile(policy, r.path)
          ? (policyInForce ?? policy).reviewThreshold
          : policy.reviewThreshold,
    ),
  );
  const reviewers = counted && threshold > 1 ? `${threshold} reviewers approve` : 'a reviewer approve';
  const advice = verdictPromotes
    ? [
        'To promote a refused file: delegate it (`delegate-git delegate <unit.json>`) so a passing verdict covers it,',
        `or have ${reviewers} this exact content: ${approve}.`,
      ]
    : [`To promote a refused file: have ${reviewers} this exact content: ${approve}.`];
  if (refused.some((r) => r.reason.startsWith('rejected by ')))
    advice.push(
      'A rejection stands until the reviewer who made it approves the same content, whatever others approve; or change the content.',
    );
  return advice;
}

/** Listed at most, each kind: the rest is counted. */
const SHOWN = 10;

/** The lines a user reads about a rules change (none when it changes nothing beyond its files). */
export function rulesChangeText(change: RulesChange | undefined): string[] {
  if (!change) return [];
  const out: string[] = [];
  const list = (items: RulesChange['aheadOfRules']) => [
    ...items.slice(0, SHOWN).map((i) => `    ${shownPath(i.path)}: ${shownText(i.reason)}`),
    ...(items.length > SHOWN ? [`    and ${items.length - SHOWN} more`] : []),
  ];
  if (change.aheadOfRules.length > 0)
    out.push(
      `This commit changes the policy or the trust root, and ${change.aheadOfRules.length} of its other change(s) pass only under the new rules:`,
      ...list(change.aheadOfRules),
      'A push is judged by the rules already in force on its branch, so the server and CI refuse these until the rules',
      'change is there: commit and push the rules change on its own first, then these.',
    );
  if (change.unpromoted.length > 0) {
    out.push(
      `Under the rules this commit stages, ${change.unpromoted.length} governed file(s) it leaves unchanged are no longer promoted:`,
      ...list(change.unpromoted),
    );
    if (change.unpromoted.some((i) => i.kind !== 'submodule'))
      out.push(
        '`delegate-git verify` refuses them once this is on the branch: have them approved again',
        '(`delegate-git attest --approve <path>`), in this push or before it.',
      );
    if (change.unpromoted.some((i) => i.kind === 'submodule'))
      out.push(
        'No record promotes a submodule: remove it, or leave its path out of governance in this rules change.',
      );
  }
  return out;
}
