/** The `report` command's text: the ledger's accounting as tables a terminal shows (report-html.ts draws it). */
import { type LedgerStats, VERDICTS } from '@delegate-git/core';
import { num, SIGNER_HEADERS, signerRows } from './ledger-report-rows.js';

const pct = (rate: number | null) => (rate === null ? '-' : `${(rate * 100).toFixed(1)}%`);

function seconds(ms: number): string {
  const s = ms / 1000;
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** Columns padded to their widest cell; the first column left-aligned, the others right-aligned. */
function textTable(headers: string[], rows: string[][], indent = '  '): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    indent +
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

function bar(value: number, max: number, width = 24): string {
  if (value <= 0 || max <= 0) return '';
  return '█'.repeat(Math.max(1, Math.round((value / max) * width)));
}

export function renderReportText(
  stats: LedgerStats,
  ctx: { repository: string; ledgerTip: string | null; judgedBy: string },
): string {
  const d = stats.delegations;
  const out: string[] = [
    `delegate-git report: ${ctx.repository}, ledger ${ctx.ledgerTip ? ctx.ledgerTip.slice(0, 12) : '(none)'}`,
    `${num(stats.lines)} distinct record line(s): ${num(stats.valid)} valid, ${num(stats.invalid.total)} invalid` +
      (stats.notCounting.total > 0
        ? `, ${num(stats.notCounting.total)} by keys that may not sign them now`
        : '') +
      (stats.first && stats.last ? `; ${stats.first.slice(0, 10)} to ${stats.last.slice(0, 10)}` : '') +
      ` (judged by the trust root in ${ctx.judgedBy})`,
    '',
    `Delegations: ${num(d.total)}   passed ${num(d.passed)} (${pct(d.passRate)})   flaky ${num(d.flaky)} (${pct(d.flakyRate)})`,
  ];
  const maxVerdict = Math.max(0, ...VERDICTS.map((v) => stats.byVerdict[v]));
  const verdictRows = VERDICTS.filter((v) => stats.byVerdict[v] > 0).map((v) => [v, num(stats.byVerdict[v])]);
  if (verdictRows.length > 0) {
    const table = textTable(['verdict', 'count'], verdictRows).split('\n');
    out.push(
      table[0]!,
      ...table
        .slice(1)
        .map(
          (row, i) =>
            `${row}  ${bar(stats.byVerdict[verdictRows[i]![0] as (typeof VERDICTS)[number]], maxVerdict)}`,
        ),
    );
  }
  out.push(`Reviews: ${num(stats.reviews.approve)} approve, ${num(stats.reviews.reject)} reject`);
  if (stats.byModel.length > 0) {
    out.push(
      '',
      'Per model',
      textTable(
        ['model', 'delegations', 'passed', 'pass rate', 'flaky', 'tokens', 'worker time'],
        stats.byModel.map((m) => [
          m.label,
          num(m.delegations),
          num(m.passed),
          pct(m.passRate),
          num(m.flaky),
          num(m.tokens.total),
          seconds(m.tokens.workerMs),
        ]),
      ),
    );
  }
  if (stats.bySigner.length > 0) {
    out.push('', 'Per signer', textTable(SIGNER_HEADERS, signerRows(stats)));
  }
  if (stats.byDay.length > 0) {
    out.push(
      '',
      'Per day (UTC)',
      textTable(
        ['day', 'delegations', 'passed', 'flaky', 'pass rate', 'flaky rate', 'reviews', 'tokens'],
        stats.byDay.map((x) => [
          x.day,
          num(x.delegations),
          num(x.passed),
          num(x.flaky),
          pct(x.passRate),
          pct(x.flakyRate),
          num(x.reviews),
          num(x.tokens),
        ]),
      ),
    );
  }
  const t = stats.tokens;
  const p = stats.promotions;
  out.push(
    '',
    `Tokens spent locally: ${num(t.total)} (${num(t.prompt)} prompt + ${num(t.completion)} completion) over ` +
      `${num(t.delegationsWithUsage)} delegation(s) reporting usage` +
      (t.delegationsEstimated > 0
        ? ` (and ${num(t.delegationsEstimated)} whose server reported none: the client's estimates, not summed)`
        : '') +
      `; worker time ${seconds(t.workerMs)}`,
    `File versions promoted (as the gates judge them now): ${num(p.byVerdict)} by verdict, ${num(p.byReview)} by ` +
      `review, ${num(p.byBoth)} by both; refused: ${num(p.rejected)} rejected, ${num(p.notPromoted)} otherwise` +
      (p.governance > 0
        ? `; and ${num(p.governance)} version(s) of the policy and key files, each judged by the rules in force before it (\`verify\` says whether they are promoted)`
        : ''),
  );
  for (const [title, { reasons }] of [
    ['Invalid lines (counted nowhere else)', stats.invalid],
    ['Lines of keys that may not sign them now (no problem; counted nowhere else)', stats.notCounting],
  ] as const) {
    const rows = Object.entries(reasons);
    if (rows.length > 0)
      out.push(
        '',
        title,
        textTable(
          ['reason', 'lines'],
          rows.map(([r, n]) => [r, num(n)]),
        ),
      );
  }
  return `${out.join('\n')}\n`;
}
