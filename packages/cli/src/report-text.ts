import { type CheckReport, type CheckResult, isGovernanceFile, type Policy } from '@delegate-git/core';
import { shownPath, shownText } from '@delegate-git/core/shown-path';

/**
 * One line per file, the reason under each refusal, what to do, and a summary line. `staged`: the report judged the
 * index, so an approval must be of the staged content.
 */
export function renderReport(report: CheckReport, opts: { staged?: boolean } = {}): string {
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
  if (refused.length > 0) out.push(...promotionAdvice(refused, report.policy, opts.staged === true));
  if (report.deletions.some((d) => d.blocks)) {
    out.push(
      'To keep a file: restore it (`git restore --staged --worktree <path>`). A protected path may be deleted once a',
      'reviewer approves a policy change that turns protectDeletes off; the policy and key files never.',
    );
  }
  return `${out.join('\n')}\n`;
}

/** What promotes the refused files: only what can (a verdict never promotes a governance file, nor under requireReview). */
function promotionAdvice(refused: CheckResult[], policy: Policy | null, staged: boolean): string[] {
  const approve = staged
    ? '`delegate-git attest --approve --staged` (the staged content, as it will be committed)'
    : '`delegate-git attest --approve <path>`';
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
