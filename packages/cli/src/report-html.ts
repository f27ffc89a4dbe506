/**
 * The ledger report as ONE self-contained HTML file: inline CSS, inline SVG charts drawn here (no script, no font,
 * no image, no URL to fetch), light and dark through prefers-color-scheme. Every string that comes from a record
 * (model names, signer names, reasons) is escaped: the ledger is data written by others.
 */
import type { LedgerStats, VerdictCounts, VerdictName } from '@delegate-git/core';
import { shownText } from '@delegate-git/core/shown-path';
import { num, SIGNER_HEADERS, signerRows } from './ledger-report-rows.js';

export interface ReportContext {
  /** What the report is about, e.g. the repository directory's name. */
  repository: string;
  ledgerTip: string | null;
  /** Where the trust root that judged the records was read from. */
  judgedBy: string;
  generatedAt: string;
  toolVersion: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Text helpers.

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/**
 * Text for HTML content and quoted attribute values alike: escaped, and with the characters that would show it other
 * than it is (a bidi override) as `\uXXXX`.
 */
export function esc(value: unknown): string {
  return shownText(String(value)).replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });

function short(n: number): string {
  return n < 10_000 ? integer.format(n) : compact.format(n);
}

function pct(rate: number | null): string {
  return rate === null ? '–' : `${(rate * 100).toFixed(rate === 0 || rate === 1 ? 0 : 1)}%`;
}

function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s - m * 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** SVG coordinates: two decimals are plenty and keep the file small. */
function f(n: number): string {
  return String(Math.round(n * 100) / 100);
}

// ---------------------------------------------------------------------------------------------------------------
// Verdict vocabulary for the eye.

const VERDICT_LABEL: Record<VerdictName, string> = {
  UNIT_PASSED: 'passed',
  UNIT_FAILED: 'failed',
  UNIT_FLAKY: 'flaky',
  UNIT_UNVERIFIED: 'unverified',
  INCOHERENT: 'incoherent',
  CONTRACT_MODIFIED: 'contract modified',
  VERIFICATION_NOT_APPROVED: 'not approved',
  CONTEXT_REFUSED: 'context refused',
  WORKER_ERROR: 'worker error',
  NO_CHANGES: 'no changes',
};

/** Bars stack in this order: what promotes first, then failures, then the rest. */
const STACK_ORDER: readonly VerdictName[] = [
  'UNIT_PASSED',
  'UNIT_FLAKY',
  'UNIT_FAILED',
  'INCOHERENT',
  'CONTRACT_MODIFIED',
  'UNIT_UNVERIFIED',
  'VERIFICATION_NOT_APPROVED',
  'CONTEXT_REFUSED',
  'WORKER_ERROR',
  'NO_CHANGES',
];

function verdictsPresent(counts: VerdictCounts): VerdictName[] {
  return STACK_ORDER.filter((v) => counts[v] > 0);
}

// ---------------------------------------------------------------------------------------------------------------
// Chart primitives. Each chart is an inline <svg> with a <title>, a viewBox and no fixed size, so it scales
// with its card; colours come from CSS classes, so one drawing serves the light and the dark theme.

const W = 560;

/** An axis for values up to `max`: a step of 1, 2 or 5 times a power of ten, about four steps, whole ticks. */
function niceAxis(max: number, steps = 4): { max: number; step: number } {
  if (max <= 0) return { max: 1, step: 1 };
  const raw = max / steps;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = Math.max(1, ([1, 2, 5, 10].find((m) => m * power >= raw) ?? 10) * power);
  return { max: Math.ceil(max / step) * step, step };
}

function svgOpen(id: string, height: number, title: string, description: string): string {
  return (
    `<svg id="${esc(id)}" class="chart" viewBox="0 0 ${W} ${height}" role="img" ` +
    `aria-labelledby="${esc(id)}-title ${esc(id)}-desc" preserveAspectRatio="xMidYMid meet">` +
    `<title id="${esc(id)}-title">${esc(title)}</title><desc id="${esc(id)}-desc">${esc(description)}</desc>`
  );
}

function rect(cls: string, x: number, y: number, width: number, height: number, tip: string, rx = 0): string {
  return (
    `<rect class="${cls}" x="${f(x)}" y="${f(y)}" width="${f(width)}" height="${f(height)}"` +
    `${rx ? ` rx="${rx}"` : ''}><title>${esc(tip)}</title></rect>`
  );
}

function svgText(x: number, y: number, content: string, cls = '', anchor = 'middle'): string {
  return `<text x="${f(x)}" y="${f(y)}" text-anchor="${anchor}"${cls ? ` class="${cls}"` : ''}>${esc(content)}</text>`;
}

function yAxis(
  left: number,
  right: number,
  top: number,
  bottom: number,
  axis: { max: number; step: number },
  format: (v: number) => string,
) {
  const parts: string[] = [];
  for (let value = 0; value <= axis.max + axis.step / 2; value += axis.step) {
    const y = bottom - ((bottom - top) * value) / axis.max;
    parts.push(`<line class="grid" x1="${f(left)}" x2="${f(right)}" y1="${f(y)}" y2="${f(y)}"/>`);
    parts.push(svgText(left - 6, y + 4, format(value), 'tick', 'end'));
  }
  return parts.join('');
}

function empty(message: string): string {
  return `<p class="empty">${esc(message)}</p>`;
}

// ---------------------------------------------------------------------------------------------------------------
// The charts.

function verdictChart(stats: LedgerStats): string {
  const present = verdictsPresent(stats.byVerdict);
  if (present.length === 0) return empty('No delegation has been recorded yet.');
  const height = 280;
  const [left, right, top, bottom] = [44, W - 8, 24, height - 46];
  const axis = niceAxis(Math.max(...present.map((v) => stats.byVerdict[v])));
  const max = axis.max;
  const slot = (right - left) / present.length;
  const barWidth = Math.min(64, slot * 0.62);
  const total = stats.delegations.total;
  const bars = present.map((v, i) => {
    const count = stats.byVerdict[v];
    const h = ((bottom - top) * count) / max;
    const x = left + slot * i + (slot - barWidth) / 2;
    const cx = x + barWidth / 2;
    const [line1, line2] = labelLines(VERDICT_LABEL[v]);
    return (
      `<g class="column">` +
      rect(
        `bar v-${v}`,
        x,
        bottom - h,
        barWidth,
        h,
        `${v}: ${num(count)} of ${num(total)} (${pct(count / total)})`,
        3,
      ) +
      svgText(cx, bottom - h - 6, num(count), 'value') +
      svgText(cx, bottom + 17, line1, 'label') +
      (line2 ? svgText(cx, bottom + 31, line2, 'label') : '') +
      `</g>`
    );
  });
  return (
    svgOpen(
      'chart-verdicts',
      height,
      'Delegations by verdict',
      `${num(total)} delegations, counted by verdict.`,
    ) +
    yAxis(left, right, top, bottom, axis, short) +
    bars.join('') +
    `<line class="axis" x1="${left}" x2="${right}" y1="${bottom}" y2="${bottom}"/></svg>`
  );
}

/** A label under a column, on two lines when it has two words. */
function labelLines(label: string): [string, string | null] {
  const space = label.indexOf(' ');
  return space < 0 ? [label, null] : [label.slice(0, space), label.slice(space + 1)];
}

const DAY_MS = 86_400_000;

function dayTime(day: string): number {
  return Date.parse(`${day}T00:00:00Z`);
}

/** At most `count` evenly spread indices of `length` items, always the first and the last. */
function spread(length: number, count: number): number[] {
  if (length <= count) return [...Array(length).keys()];
  const out = new Set<number>();
  for (let i = 0; i < count; i++) out.add(Math.round((i * (length - 1)) / (count - 1)));
  return [...out];
}

function shortDay(day: string): string {
  const date = new Date(`${day}T00:00:00Z`);
  return date.toLocaleDateString('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });
}

function rateChart(stats: LedgerStats): string {
  const days = stats.byDay.filter((d) => d.delegations > 0);
  if (days.length === 0) return empty('No delegation has been recorded yet, so there is no rate to draw.');
  const height = 280;
  const [left, right, top, bottom] = [48, W - 16, 34, height - 34];
  const t0 = dayTime(days[0]!.day);
  const t1 = dayTime(days[days.length - 1]!.day);
  const x = (day: string) =>
    t1 === t0 ? (left + right) / 2 : left + ((right - left) * (dayTime(day) - t0)) / (t1 - t0);
  const y = (rate: number) => bottom - (bottom - top) * rate;
  const series = (key: 'passRate' | 'flakyRate', cls: string, name: string) => {
    const points = days.map((d) => [x(d.day), y(d[key] ?? 0)] as const);
    const path = points.map(([px, py], i) => `${i === 0 ? 'M' : 'L'}${f(px)} ${f(py)}`).join(' ');
    const dots = days
      .map((d, i) => {
        const [px, py] = points[i]!;
        const part = key === 'passRate' ? d.passed : d.flaky;
        const tip = `${d.day}: ${name} ${pct(d[key])} (${num(part)} of ${num(d.delegations)})`;
        return `<circle class="dot ${cls}" cx="${f(px)}" cy="${f(py)}" r="4"><title>${esc(tip)}</title></circle>`;
      })
      .join('');
    const area =
      key === 'passRate' && points.length > 1
        ? `<path class="area ${cls}" d="${path} L${f(points[points.length - 1]![0])} ${bottom} L${f(points[0]![0])} ${bottom} Z"/>`
        : '';
    return `${area}<path class="line ${cls}" d="${path}"/>${dots}`;
  };
  const ticks = spread(days.length, t1 - t0 > 6 * DAY_MS ? 6 : days.length)
    .map((i) => svgText(x(days[i]!.day), bottom + 18, shortDay(days[i]!.day), 'tick'))
    .join('');
  const legend =
    `<g class="legend"><circle class="key pass" cx="${left + 4}" cy="14" r="5"/>` +
    svgText(left + 14, 18, 'pass rate', 'label', 'start') +
    `<circle class="key flaky" cx="${left + 104}" cy="14" r="5"/>` +
    svgText(left + 114, 18, 'flaky rate', 'label', 'start') +
    `</g>`;
  return (
    svgOpen(
      'chart-rates',
      height,
      'Pass and flaky rate per day',
      `Share of each day's delegations that passed, and that were flaky, over ${days.length} day(s).`,
    ) +
    yAxis(left, right, top, bottom, { max: 1, step: 0.25 }, (v) => `${Math.round(v * 100)}%`) +
    legend +
    series('passRate', 'pass', 'pass rate') +
    series('flakyRate', 'flaky', 'flaky rate') +
    ticks +
    `</svg>`
  );
}

function tokenChart(stats: LedgerStats): string {
  const days = stats.byDay.filter((d) => d.tokens > 0);
  if (days.length === 0) return empty('No record reports token usage.');
  const height = 280;
  const [left, right, top, bottom] = [56, W - 8, 34, height - 34];
  const axis = niceAxis(Math.max(...days.map((d) => d.tokens)));
  const max = axis.max;
  const slot = (right - left) / days.length;
  const barWidth = Math.max(2, Math.min(44, slot * 0.7));
  const scale = (v: number) => ((bottom - top) * v) / max;
  const bars = days
    .map((d, i) => {
      const xPos = left + slot * i + (slot - barWidth) / 2;
      const prompt = scale(d.promptTokens);
      const completion = scale(d.completionTokens);
      return (
        rect(
          'bar prompt',
          xPos,
          bottom - prompt,
          barWidth,
          prompt,
          `${d.day}: ${num(d.promptTokens)} prompt tokens`,
        ) +
        rect(
          'bar completion',
          xPos,
          bottom - prompt - completion,
          barWidth,
          completion,
          `${d.day}: ${num(d.completionTokens)} completion tokens`,
        )
      );
    })
    .join('');
  const ticks = spread(days.length, 6)
    .map((i) => svgText(left + slot * i + slot / 2, bottom + 18, shortDay(days[i]!.day), 'tick'))
    .join('');
  const t = stats.tokens;
  const legend =
    `<g class="legend"><rect class="key prompt" x="${left}" y="8" width="11" height="11" rx="2"/>` +
    svgText(left + 17, 18, `prompt ${short(t.prompt)}`, 'label', 'start') +
    `<rect class="key completion" x="${left + 130}" y="8" width="11" height="11" rx="2"/>` +
    svgText(left + 147, 18, `completion ${short(t.completion)}`, 'label', 'start') +
    `</g>`;
  return (
    svgOpen(
      'chart-tokens',
      height,
      'Tokens spent locally per day',
      `${num(t.total)} tokens over ${days.length} day(s).`,
    ) +
    yAxis(left, right, top, bottom, axis, short) +
    legend +
    bars +
    ticks +
    `<line class="axis" x1="${left}" x2="${right}" y1="${bottom}" y2="${bottom}"/></svg>`
  );
}

interface Segment {
  cls: string;
  value: number;
  tip: string;
}

interface BarRow {
  label: string;
  note: string;
  total: number;
  segments: Segment[];
}

const MAX_ROWS = 12;

function stackedRows(id: string, title: string, description: string, rows: BarRow[]): string {
  const shown = rows.slice(0, MAX_ROWS);
  const rowHeight = 64;
  const height = shown.length * rowHeight + 4;
  const [left, right] = [2, W - 48];
  const max = Math.max(1, ...shown.map((r) => r.total));
  const body = shown
    .map((r, i) => {
      const y = 4 + i * rowHeight;
      let x = left;
      const segments = r.segments
        .filter((s) => s.value > 0)
        .map((s) => {
          const width = ((right - left) * s.value) / max;
          const out = rect(`bar ${s.cls}`, x, y + 20, width, 18, s.tip);
          x += width;
          return out;
        })
        .join('');
      return (
        `<g class="row"><title>${esc(r.label)}</title>` +
        svgText(left, y + 13, truncate(r.label, 64), 'label strong', 'start') +
        `<rect class="track" x="${left}" y="${y + 20}" width="${right - left}" height="18" rx="3"/>` +
        segments +
        svgText(x + 6, y + 34, num(r.total), 'value', 'start') +
        svgText(left, y + 54, r.note, 'tick', 'start') +
        `</g>`
      );
    })
    .join('');
  const more =
    rows.length > MAX_ROWS
      ? `<p class="note">${esc(`${rows.length - MAX_ROWS} more in the table below.`)}</p>`
      : '';
  return `${svgOpen(id, height, title, description)}${body}</svg>${more}`;
}

function verdictSegments(counts: VerdictCounts, who: string): Segment[] {
  return verdictsPresent(counts).map((v) => ({
    cls: `v-${v}`,
    value: counts[v],
    tip: `${who}: ${num(counts[v])} ${v}`,
  }));
}

function modelChart(stats: LedgerStats): string {
  if (stats.byModel.length === 0) return empty('No delegation has been recorded yet.');
  const rows = stats.byModel.map((m) => ({
    label: m.label,
    total: m.delegations,
    note: `pass ${pct(m.passRate)} · ${short(m.tokens.total)} tokens · ${duration(m.tokens.workerMs)} of worker time`,
    segments: verdictSegments(m.byVerdict, m.label),
  }));
  return stackedRows(
    'chart-models',
    'Delegations per model',
    'Delegations per worker model, by verdict.',
    rows,
  );
}

function signerChart(stats: LedgerStats): string {
  if (stats.bySigner.length === 0) return empty('No valid record yet.');
  const rows = stats.bySigner.map((s) => ({
    label: s.signer,
    total: s.delegations + s.approvals + s.rejections,
    note: `${num(s.delegations)} delegation(s), ${num(s.approvals)} approval(s), ${num(s.rejections)} rejection(s)`,
    segments: [
      ...verdictSegments(s.byVerdict, s.signer),
      { cls: 'approve', value: s.approvals, tip: `${s.signer}: ${num(s.approvals)} approval(s)` },
      { cls: 'reject', value: s.rejections, tip: `${s.signer}: ${num(s.rejections)} rejection(s)` },
    ],
  }));
  return stackedRows(
    'chart-signers',
    'Records per signer',
    'Records per signer: verdicts and reviews.',
    rows,
  );
}

/** The SVG path of a ring segment between two angles (radians, clockwise from 12 o'clock). */
function ringSegment(cx: number, cy: number, outer: number, inner: number, from: number, to: number): string {
  // A full circle cannot be one arc: stop just short of it.
  const end = to - from >= 2 * Math.PI ? from + 2 * Math.PI - 1e-4 : to;
  const point = (r: number, a: number) => `${f(cx + r * Math.sin(a))} ${f(cy - r * Math.cos(a))}`;
  const large = end - from > Math.PI ? 1 : 0;
  return (
    `M${point(outer, from)} A${outer} ${outer} 0 ${large} 1 ${point(outer, end)} ` +
    `L${point(inner, end)} A${inner} ${inner} 0 ${large} 0 ${point(inner, from)} Z`
  );
}

function promotionChart(stats: LedgerStats): string {
  const p = stats.promotions;
  if (p.total === 0) return empty('No record is about a file version yet.');
  const parts = [
    {
      cls: 'v-UNIT_PASSED',
      value: p.byVerdict,
      name: 'by verdict',
      detail: 'a passing delegation, no review',
    },
    { cls: 'both', value: p.byBoth, name: 'by verdict and review', detail: 'passed and approved' },
    { cls: 'approve', value: p.byReview, name: 'by review', detail: 'approved by a reviewer' },
    { cls: 'reject', value: p.rejected, name: 'rejected', detail: 'a reviewer refused it' },
    // Grey, apart from every colour that promotes: the one slice that reads "not yet".
    {
      cls: 'unpromoted',
      value: p.notPromoted,
      name: 'not promoted',
      detail: 'failing, or too few approvals',
    },
  ];
  const height = 272;
  const [cx, cy, outer, inner] = [112, 136, 100, 64];
  let angle = 0;
  const slices = parts
    .filter((s) => s.value > 0)
    .map((s) => {
      const sweep = (2 * Math.PI * s.value) / p.total;
      const d = ringSegment(cx, cy, outer, inner, angle, angle + sweep);
      angle += sweep;
      const tip = `${num(s.value)} file version(s) ${s.name} (${pct(s.value / p.total)})`;
      return `<path class="slice ${s.cls}" d="${d}"><title>${esc(tip)}</title></path>`;
    })
    .join('');
  const center = svgText(cx, cy + 4, num(p.total), 'big') + svgText(cx, cy + 24, 'file versions', 'tick');
  const legend = parts
    .map((s, i) => {
      const ly = 44 + i * 48;
      return (
        `<rect class="key ${s.cls}" x="252" y="${ly - 12}" width="14" height="14" rx="3"/>` +
        svgText(276, ly, `${num(s.value)} ${s.name}`, 'label strong', 'start') +
        svgText(276, ly + 18, `${pct(s.value / p.total)} · ${s.detail}`, 'tick', 'start')
      );
    })
    .join('');
  return (
    svgOpen(
      'chart-promotions',
      height,
      'File versions promoted by verdict and by review',
      `${num(p.total)} distinct file versions (path and content) a valid record is about, judged by the promotion rule under the policy in force` +
        (p.governance > 0
          ? `; ${num(p.governance)} version(s) of the policy and key files are left out, each judged by the rules in force before it (verify says whether they are promoted).`
          : '.'),
    ) +
    slices +
    center +
    legend +
    `</svg>`
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Page.

function kpi(label: string, value: string, detail: string, cls = ''): string {
  return `<div class="kpi ${cls}"><div class="kpi-label">${esc(label)}</div><div class="kpi-value">${esc(value)}</div><div class="kpi-detail">${esc(detail)}</div></div>`;
}

function table(headers: string[], rows: Array<Array<string | number>>): string {
  const head = headers.map((h, i) => `<th${i > 0 ? ' class="n"' : ''}>${esc(h)}</th>`).join('');
  const body = rows
    .map((r) => `<tr>${r.map((c, i) => `<td${i > 0 ? ' class="n"' : ''}>${esc(c)}</td>`).join('')}</tr>`)
    .join('');
  return `<div class="table-wrap"><table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table></div>`;
}

function legendHtml(stats: LedgerStats): string {
  const present = verdictsPresent(stats.byVerdict);
  const items = [
    ...present.map((v) => `<li><span class="swatch v-${v}"></span>${esc(VERDICT_LABEL[v])}</li>`),
    ...(stats.reviews.approve ? ['<li><span class="swatch approve"></span>approval</li>'] : []),
    ...(stats.reviews.reject ? ['<li><span class="swatch reject"></span>rejection</li>'] : []),
  ];
  return items.length ? `<ul class="legend-list">${items.join('')}</ul>` : '';
}

function card(id: string, title: string, subtitle: string, content: string, wide = false): string {
  return (
    `<section class="card${wide ? ' wide' : ''}" id="${esc(id)}"><h2>${esc(title)}</h2>` +
    `<p class="sub">${esc(subtitle)}</p>${content}</section>`
  );
}

const CSS = `
:root{color-scheme:light dark;--bg:#f4f6f9;--card:#fff;--ink:#18202a;--muted:#5d6875;--line:#e2e7ee;--track:#eef1f5;
--pass:#1f9d55;--flaky:#e0a100;--failed:#d64545;--incoherent:#e07a5f;--contract:#9b2c5f;--unverified:#5b8bd0;
--notapproved:#8c6bb1;--refused:#b07d48;--workererror:#7a8793;--nochanges:#b5bfca;--approve:#2b6fd6;--reject:#c2416b;
--both:#0f8a8a;--tokens:#5a67d8;--prompt:#5a67d8;--completion:#38b2c9;--accent:#2b6fd6}
@media (prefers-color-scheme:dark){:root{--bg:#0f141a;--card:#171e27;--ink:#e7edf3;--muted:#9aa7b5;--line:#2a3440;
--track:#222b36;--pass:#3ecf7a;--flaky:#f5c04a;--failed:#ff6b6b;--incoherent:#ff9a76;--contract:#d06099;
--unverified:#7fa8e6;--notapproved:#b497dc;--refused:#d4a373;--workererror:#95a3b1;--nochanges:#5d6a78;
--approve:#5b9bff;--reject:#ff7aa2;--both:#2fc4c4;--tokens:#8b95ff;--prompt:#8b95ff;--completion:#5fd3e8;--accent:#5b9bff}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;-webkit-font-smoothing:antialiased}
main{max-width:1180px;margin:0 auto;padding:32px 24px 48px}
header{margin-bottom:24px}
.eyebrow{font-size:12px;letter-spacing:.08em;text-transform:uppercase;color:var(--muted);margin:0 0 4px}
h1{font-size:30px;line-height:1.2;margin:0 0 6px;font-weight:700;letter-spacing:-.01em}
h2{font-size:17px;margin:0;font-weight:650}
.meta{color:var(--muted);margin:0;font-size:14px}
.meta code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
.kpis{display:grid;grid-template-columns:repeat(auto-fit,minmax(170px,1fr));gap:14px;margin:0 0 18px}
.kpi{background:var(--card);border:1px solid var(--line);border-radius:14px;padding:14px 16px;border-top:4px solid var(--accent)}
.kpi.pass{border-top-color:var(--pass)}.kpi.flaky{border-top-color:var(--flaky)}.kpi.tokens{border-top-color:var(--tokens)}
.kpi.review{border-top-color:var(--approve)}.kpi.bad{border-top-color:var(--failed)}
.kpi-label{font-size:12px;text-transform:uppercase;letter-spacing:.06em;color:var(--muted)}
.kpi-value{font-size:28px;font-weight:700;font-variant-numeric:tabular-nums;line-height:1.25}
.kpi-detail{font-size:13px;color:var(--muted)}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:18px}
.card{background:var(--card);border:1px solid var(--line);border-radius:14px;padding:18px 20px 16px;min-width:0}
.card.wide{grid-column:1/-1}
.card .sub{color:var(--muted);font-size:13px;margin:2px 0 10px}
.chart{display:block;width:100%;height:auto;font-family:inherit}
.chart text{fill:var(--muted);font-size:12px;font-variant-numeric:tabular-nums}
.chart text.value{fill:var(--ink);font-weight:650;font-size:12.5px}
.chart text.label{fill:var(--ink);font-size:12.5px}
.chart text.strong{font-weight:600}
.chart text.big{fill:var(--ink);font-size:30px;font-weight:700}
.chart .slice{stroke:var(--card);stroke-width:2}
.chart .grid{stroke:var(--line);stroke-width:1}
.chart .axis{stroke:var(--muted);stroke-width:1}
.chart .track{fill:var(--track)}
.chart .line{fill:none;stroke-width:2.5;stroke-linejoin:round;stroke-linecap:round}
.chart .line.pass{stroke:var(--pass)}.chart .line.flaky{stroke:var(--flaky);stroke-dasharray:6 4}
.chart .area.pass{fill:var(--pass);opacity:.12}
.chart .dot{stroke:var(--card);stroke-width:1.5}
.chart circle.pass{fill:var(--pass)}.chart circle.flaky{fill:var(--flaky)}
.chart .bar:hover{opacity:.82}
.v-UNIT_PASSED{fill:var(--pass);background:var(--pass)}.v-UNIT_FLAKY{fill:var(--flaky);background:var(--flaky)}
.v-UNIT_FAILED{fill:var(--failed);background:var(--failed)}.v-INCOHERENT{fill:var(--incoherent);background:var(--incoherent)}
.v-CONTRACT_MODIFIED{fill:var(--contract);background:var(--contract)}.v-UNIT_UNVERIFIED{fill:var(--unverified);background:var(--unverified)}
.v-VERIFICATION_NOT_APPROVED{fill:var(--notapproved);background:var(--notapproved)}
.v-CONTEXT_REFUSED{fill:var(--refused);background:var(--refused)}.v-WORKER_ERROR{fill:var(--workererror);background:var(--workererror)}
.v-NO_CHANGES{fill:var(--nochanges);background:var(--nochanges)}
.approve{fill:var(--approve);background:var(--approve)}.reject{fill:var(--reject);background:var(--reject)}
.both{fill:var(--both);background:var(--both)}.unpromoted{fill:var(--nochanges);background:var(--nochanges)}.prompt{fill:var(--prompt)}.completion{fill:var(--completion)}
.legend-list{list-style:none;display:flex;flex-wrap:wrap;gap:6px 16px;margin:0 0 16px;padding:0;font-size:13px;color:var(--muted)}
.legend-list li{display:flex;align-items:center;gap:6px}
.swatch{display:inline-block;width:11px;height:11px;border-radius:3px}
.empty{color:var(--muted);font-style:italic;margin:24px 0}
.note{color:var(--muted);font-size:13px;margin:6px 0 0}
details{margin-top:18px;background:var(--card);border:1px solid var(--line);border-radius:14px;padding:12px 20px}
summary{cursor:pointer;font-weight:650}
.table-wrap{overflow-x:auto;margin-top:10px}
table{border-collapse:collapse;width:100%;font-size:13.5px;font-variant-numeric:tabular-nums}
th,td{padding:6px 10px;border-bottom:1px solid var(--line);text-align:left;white-space:nowrap}
th{color:var(--muted);font-weight:600}
.n{text-align:right}
footer{color:var(--muted);font-size:12.5px;margin-top:24px;line-height:1.6}
@media print{body{background:#fff}.card,.kpi,details{break-inside:avoid}}
`;

/** How a report says it is delegate-git's, near its top: `report --html` replaces only a file that holds it. */
export const GENERATOR_MARK = '<meta name="generator" content="delegate-git ';

export function renderReportHtml(stats: LedgerStats, ctx: ReportContext): string {
  const d = stats.delegations;
  const period =
    stats.first && stats.last
      ? `${stats.first.slice(0, 10)} to ${stats.last.slice(0, 10)}`
      : 'no valid record yet';
  const kpis = [
    kpi('Delegations', num(d.total), `${num(stats.valid)} valid record(s) in all`),
    kpi('Pass rate', pct(d.passRate), `${num(d.passed)} passed`, 'pass'),
    kpi('Flaky rate', pct(d.flakyRate), `${num(d.flaky)} flaky`, 'flaky'),
    kpi(
      'Reviews',
      num(stats.reviews.approve + stats.reviews.reject),
      `${num(stats.reviews.approve)} approve · ${num(stats.reviews.reject)} reject`,
      'review',
    ),
    kpi(
      'Local tokens',
      short(stats.tokens.total),
      `${duration(stats.tokens.workerMs)} of worker time`,
      'tokens',
    ),
    kpi(
      'Invalid lines',
      num(stats.invalid.total),
      stats.invalid.total ? 'not counted anywhere' : 'every line verifies',
      stats.invalid.total ? 'bad' : '',
    ),
  ].join('');
  const charts = [
    card(
      'verdicts',
      'Delegations by verdict',
      'Every delegation ends in a verdict; only UNIT_PASSED promotes.',
      verdictChart(stats),
    ),
    card(
      'rates',
      'Pass and flaky rate over time',
      'Per UTC day, among that day’s delegations.',
      rateChart(stats),
    ),
    card('models', 'Per model', 'Delegations per worker model, by verdict.', modelChart(stats)),
    card(
      'signers',
      'Per signer',
      'Verdicts signed as delegator, reviews signed as reviewer.',
      signerChart(stats),
    ),
    card(
      'tokens',
      'Tokens spent locally',
      'Prompt and completion tokens reported by the workers, per day.',
      tokenChart(stats),
    ),
    card(
      'promotions',
      'Files promoted: by verdict versus by review',
      'Distinct file versions (path and content) promoted by a passing verdict, by an approval, or both.',
      promotionChart(stats),
    ),
  ].join('');
  const details = [
    `<details><summary>Per day</summary>${table(
      [
        'day (UTC)',
        'delegations',
        'passed',
        'failed',
        'flaky',
        'pass rate',
        'flaky rate',
        'reviews',
        'tokens',
      ],
      stats.byDay.map((x) => [
        x.day,
        num(x.delegations),
        num(x.passed),
        num(x.failed),
        num(x.flaky),
        pct(x.passRate),
        pct(x.flakyRate),
        num(x.reviews),
        num(x.tokens),
      ]),
    )}</details>`,
    `<details><summary>Per model</summary>${table(
      [
        'model',
        'delegations',
        'passed',
        'flaky',
        'pass rate',
        'prompt tokens',
        'completion tokens',
        'worker time',
      ],
      stats.byModel.map((m) => [
        m.label,
        num(m.delegations),
        num(m.passed),
        num(m.flaky),
        pct(m.passRate),
        num(m.tokens.prompt),
        num(m.tokens.completion),
        duration(m.tokens.workerMs),
      ]),
    )}</details>`,
    `<details><summary>Per signer</summary>${table(SIGNER_HEADERS, signerRows(stats))}</details>`,
    ...(
      [
        ['Invalid lines', stats.invalid],
        ['Lines of keys that may not sign them now', stats.notCounting],
      ] as const
    ).map(([title, { total, reasons }]) =>
      total
        ? `<details><summary>${title} (${num(total)})</summary>${table(
            ['reason', 'lines'],
            Object.entries(reasons).map(([reason, n]) => [reason, num(n)]),
          )}</details>`
        : '',
    ),
  ].join('');
  const tip = ctx.ledgerTip ? ctx.ledgerTip.slice(0, 12) : 'none';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
${GENERATOR_MARK}${esc(ctx.toolVersion)}">
<title>${esc(`Ledger report · ${ctx.repository}`)}</title>
<style>${CSS}</style>
</head>
<body>
<main>
<header>
<p class="eyebrow">delegate-git ledger report</p>
<h1>${esc(ctx.repository)}</h1>
<p class="meta">${esc(period)} · ledger <code>${esc(tip)}</code> · ${esc(num(stats.lines))} distinct record line(s) · judged by the trust root in ${esc(ctx.judgedBy)} · generated ${esc(ctx.generatedAt)}</p>
</header>
<section class="kpis">${kpis}</section>
${legendHtml(stats)}
<div class="grid">${charts}</div>
${details}
<footer>Pass rate: UNIT_PASSED verdicts among all delegations. Flaky: a UNIT_FLAKY verdict, or verification runs that disagreed under a verdict that outranks it. Each record line is counted once, however many files it covers; lines that do not verify against the trust root are listed apart and counted nowhere else. Generated by delegate-git ${esc(ctx.toolVersion)}; this file needs no network.</footer>
</main>
</body>
</html>
`;
}
