import { type CheckReport, type CheckResult, isGovernanceFile, type Policy } from '@delegate-git/core';
import { shownPath, shownText } from '@delegate-git/core/shown-path';

/** Which content a report judged: the paths' (work tree or revision), the index's, or a commit's temporary index's. */
export type Judged = 'paths' | 'index' | 'temporary index';

/**
 * One line per file, the reason under each refusal, what to do, and a summary line. The advice approves the content
 * judged: the staged content for the index; for the temporary index `git commit -a` or `git commit <path>` stages
 * (dropped once the commit is refused), the work tree's, which those commits take.
 */
export function renderReport(report: CheckReport, judged: Judged = 'paths'): string {
  const out: string[] = [];
  const governed = report.results.filter((r) => r.governed);
  for (const r of report.results) {
    if (r.absent) out.push(`NO FILE       ${shownPath(r.path)}\n    ${shownText(r.reason)}`);
    else if (!r.governed) out.push(`not governed  ${shownPath(r.path)}`);
    else if (r.promoted)
      out.push(
        `PROMOTED      ${shownPath(r.path)}\n    ${shownText(r.reason)}${r.by.length ? ` (${shownText(r.by.join(', '))})` : ''}`,
      );
    else out.push(`NOT PROMOTED  ${shownPath(r.path)}\n    ${shownText(r.reason)}`);
  }
  for (const d of report.deletions) {
    out.push(
      `${d.blocks ? 'DELETION REFUSED' : 'deleted (governed)'}  ${shownPath(d.path)}${d.reason ? `\n    ${shownText(d.reason)}` : ''}`,
    );
  }
  const refused = governed.filter((r) => !r.promoted && !r.absent);
  out.push(
    `${governed.length} governed file(s): ${governed.length - refused.length} promoted, ${refused.length} refused` +
      ` (policy and trust root from ${report.source})`,
  );
  if (refused.length > 0) out.push(...promotionAdvice(refused, report.policy, judged));
  if (report.deletions.some((d) => d.blocks)) {
    out.push(
      'To keep a file: restore it (`git restore --staged --worktree <path>`). A protected path may be deleted once a',
      'reviewer approves a policy change that turns protectDeletes off; the policy and key files never.',
    );
  }
  return `${out.join('\n')}\n`;
}

/** What promotes the refused files: only what can (a verdict never promotes a governance file, nor under requireReview). */
function promotionAdvice(refused: CheckResult[], policy: Policy | null, judged: Judged): string[] {
  const approve = {
    paths: '`delegate-git attest --approve <path>`',
    index: '`delegate-git attest --approve --staged` (the staged content, as it will be committed)',
    'temporary index':
      '`delegate-git attest --approve <path>` (the work-tree content a commit with paths or -a takes; what it takes ' +
      'from the index, `--staged`)',
  }[judged];
  const verdictPromotes =
    policy === null || (!policy.requireReview && refused.some((r) => !isGovernanceFile(policy, r.path)));
  // The threshold applies under requireReview and to the governance files; otherwise one approval promotes.
  const counted = policy !== null && (policy.requireReview || !verdictPromotes);
  const reviewers =
    counted && policy.reviewThreshold > 1
      ? `${policy.reviewThreshold} reviewers approve`
      : 'a reviewer approve';
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
