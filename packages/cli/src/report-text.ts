import type { CheckReport } from '@delegate-git/core';
import { shownPath, shownText } from '@delegate-git/core/shown-path';

/** One line per file, the reason under each refusal, what to do, and a summary line. */
export function renderReport(report: CheckReport): string {
  const out: string[] = [];
  const governed = report.results.filter((r) => r.governed);
  for (const r of report.results) {
    if (!r.governed) out.push(`not governed  ${shownPath(r.path)}`);
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
  const refused = governed.filter((r) => !r.promoted);
  out.push(
    `${governed.length} governed file(s): ${governed.length - refused.length} promoted, ${refused.length} refused` +
      ` (policy and trust root from ${report.source})`,
  );
  if (refused.length > 0) {
    out.push(
      'To promote a refused file: delegate it (`delegate-git delegate <unit.json>`) so a passing verdict covers it,',
      'or have a reviewer approve this exact content: `delegate-git attest --approve <path>`.',
    );
  }
  if (report.deletions.some((d) => d.blocks)) {
    out.push(
      'To keep a file: restore it (`git restore --staged --worktree <path>`). A protected path may be deleted once a',
      'reviewer approves a policy change that turns protectDeletes off; the policy and key files never.',
    );
  }
  return `${out.join('\n')}\n`;
}
