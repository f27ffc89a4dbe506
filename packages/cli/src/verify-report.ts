/**
 * What `verify` prints: the text report, the Markdown job summary (bounded: GitHub drops a summary over 1 MiB), and
 * the GitHub Actions annotations, each from the one LedgerVerification.
 */
import { createHash } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import { decodeRecord, type LedgerVerification, whyNotANote } from '@delegate-git/core';
import { shownPath, shownPathStart, shownText } from '@delegate-git/core/shown-path';
import type { Io } from './command.js';

function counts(v: LedgerVerification) {
  const refused = v.files.filter((f) => !f.promoted);
  return { refused, promoted: v.files.length - refused.length };
}

/** Lines removed that were no record signed here: said, since someone removed them, but no violation. */
function unsignedRemoved(v: LedgerVerification): string {
  const n = v.appendOnly.unsignedRemoved ?? 0;
  return n === 0 ? '' : `; ${n} line(s) removed that no key of the trust root signed (no record lost)`;
}

export function renderText(v: LedgerVerification, exitCode: number): string {
  const { refused, promoted } = counts(v);
  const out: string[] = [];
  for (const p of v.invalid) out.push(`INVALID LINE  blob ${p.blob}${about(p)} line ${p.line}: ${p.reason}`);
  for (const e of v.foreignEntries) out.push(`NOT A NOTE    ${shownPath(e.path)}: ${whyNotANote(e)}`);
  for (const f of refused) out.push(`NOT PROMOTED  ${shownPath(f.path)}: ${f.reason}`);
  if (v.since?.problem) out.push(`NOT FROM VERIFIED  ${v.since.problem}`);
  for (const r of v.since?.refusals ?? []) out.push(`REFUSED SINCE ${sinceRefusal(r)}`);
  if (v.appendOnly.problem) out.push(`LEDGER REWRITTEN  ${v.appendOnly.problem}`);
  for (const r of v.appendOnly.removed)
    out.push(
      `LINE REMOVED  in notes commit ${r.commit.slice(0, 12)} from blob ${r.blob}: ${describeLine(r.line, r.signer)}`,
    );
  for (const p of v.revoked)
    out.push(`revoked       blob ${p.blob}${about(p)} line ${p.line}: ${p.reason} (no longer counts)`);
  for (const p of v.disallowed)
    out.push(`disallowed    blob ${p.blob}${about(p)} line ${p.line}: ${p.reason} (counts for nothing)`);
  out.push(
    `ledger ${v.ledgerTip ? v.ledgerTip.slice(0, 12) : '(none)'}: ${v.records} valid record(s) in ${v.lines} line(s) on ${v.notes} blob(s) (a record on several blobs is a line on each); of the lines, ${v.invalid.length} invalid, ${notCounting(v, ', ')}${foreignCount(v, ', ')}`,
    `${v.rev} (${v.commit.slice(0, 12)}): ${v.files.length} governed file(s), ${promoted} promoted, ${refused.length} refused`,
    ...(v.since ? [`since ${v.since.commit.slice(0, 12)}: ${sinceSummary(v.since)}`] : []),
    `append-only (${v.appendOnly.checked}): ${v.appendOnly.problem || v.appendOnly.removed.length ? 'VIOLATED' : 'ok'}${unsignedRemoved(v)}`,
    exitCode === 0 ? 'verify: ok' : 'verify: FAILED',
  );
  // A clone has no ledger until it is fetched: every file would read as unrecorded, and the cause go unsaid.
  const hint =
    !v.ledgerTip && refused.length > 0
      ? 'There is no ledger here (refs/notes/delegations): `git clone` does not fetch it. Fetch it (`delegate-git sync`, or `git fetch origin refs/notes/delegations:refs/notes/delegations`) and run verify again.'
      : unrecordedHint(v);
  if (hint) out.push(hint);
  if (v.appendOnly.removed.length > 0) out.push(RESTORE_ADVICE);
  const advice = promoteAdvice(v);
  if (advice) out.push(advice);
  // Each entry is one line, whatever a reason quotes: a line break in it would start a line of its own (under
  // GitHub Actions, a workflow command).
  return `${out.map(shownText).join('\n')}\n`;
}

/** The paths a problem line names on its blob (what it counted for), shown after the blob. */
function about(p: LedgerVerification['invalid'][number]): string {
  return p.paths?.length ? ` (${p.paths.map(shownPath).join(', ')})` : '';
}

/**
 * The job summary. Text from the ledger or the repository (paths, reasons, signer names) is written so that Markdown
 * shows it as it is: a path as code, other text with the characters that would make a link, an image, HTML, emphasis
 * or a table cell escaped. GitHub drops a step summary over 1 MiB whole, and with it the explanation of a failed job,
 * while a pusher chooses how many files are refused and how long their names are, and anyone who can push the ledger
 * how long a junk line is: so each list shows its first MAX_LISTED entries and each quoted text its first MAX_QUOTED
 * characters (the text output and --json keep all of it), and cappedSummary bounds the whole.
 */
export function renderMarkdown(v: LedgerVerification, exitCode: number): string {
  const { refused, promoted } = counts(v);
  const md: string[] = [
    `## delegate-git ledger: ${exitCode === 0 ? '✅ verified' : '❌ problems found'}`,
    '',
  ];
  if (exitCode !== 0) {
    md.push('### Problems', '');
    md.push(
      ...listed(
        v.invalid,
        (p) =>
          `- invalid record on blob \`${p.blob.slice(0, 12)}\`${mdAbout(p)} line ${p.line}: ${mdQuoted(p.reason)}`,
        (n) => `- … and ${n} more invalid lines (see \`--json\`)`,
      ),
      ...listed(
        v.foreignEntries,
        (e) => `- ${mdPath(e.path)} in the ledger's tree is ${whyNotANote(e)}`,
        (n) => `- … and ${n} more entries that are not notes (see \`--json\`)`,
      ),
      ...listed(
        refused,
        (f) => `- ${mdPath(f.path)} is not promoted: ${mdQuoted(f.reason)}`,
        (n) => `- … and ${n} more files not promoted (see \`--json\`)`,
      ),
    );
    if (v.since?.problem) md.push(`- not judged from the commit verified last: ${mdQuoted(v.since.problem)}`);
    md.push(
      ...listed(
        v.since?.refusals ?? [],
        (r) => `- refused since the commit verified last: ${sinceRefusal(r, mdPath, mdQuoted)}`,
        (n) => `- … and ${n} more refusals since the commit verified last (see \`--json\`)`,
      ),
    );
    if (v.appendOnly.problem) md.push(`- ledger rewritten: ${mdQuoted(v.appendOnly.problem)}`);
    if (v.appendOnly.removed.length)
      md.push(`- ${v.appendOnly.removed.length} record line(s) removed from the ledger:`);
    md.push(
      ...listed(
        v.appendOnly.removed,
        (r) =>
          `  - from blob \`${r.blob.slice(0, 12)}\` in notes commit \`${r.commit.slice(0, 12)}\`: ${mdQuoted(describeLine(r.line, r.signer))}`,
        (n) => `  - … and ${n} more (see \`--json\`)`,
      ),
    );
    const hint = unrecordedHint(v);
    if (hint) md.push('', hint);
    const advice = promoteAdvice(v);
    if (advice) md.push('', advice);
    md.push('');
  }
  md.push(
    '| | |',
    '|---|---|',
    `| revision | ${mdCode(v.rev, true)} (${v.commit.slice(0, 12)}) |`,
    `| ledger tip | ${v.ledgerTip ? `\`${v.ledgerTip.slice(0, 12)}\`` : 'none'} |`,
    `| records | ${v.records} valid in ${v.lines} line(s) on ${v.notes} blob(s); of the lines, ${v.invalid.length} invalid; ${notCounting(v, '; ')}${foreignCount(v, '; ')} |`,
    `| governed files | ${v.files.length}: ${promoted} promoted, ${refused.length} refused |`,
    ...(v.since ? [`| since \`${v.since.commit.slice(0, 12)}\` | ${sinceSummary(v.since)} |`] : []),
    `| append-only | ${v.appendOnly.problem || v.appendOnly.removed.length ? 'violated' : 'ok'} (${v.appendOnly.checked})${unsignedRemoved(v)} |`,
    '',
    '### Records by verdict',
    '',
    '| verdict | records |',
    '|---|---|',
    ...Object.entries(v.byVerdict)
      .sort()
      // Verdict names and review decisions: a closed set, checked when the record was read.
      .map(([k, n]) => `| ${k} | ${n} |`),
    '',
    '### Records by signer',
    '',
    '| signer | records |',
    '|---|---|',
    ...listed(
      Object.entries(v.bySigner).sort(),
      ([k, n]) => `| ${mdQuoted(k)} | ${n} |`,
      (n) => `| … and ${n} more signers (see \`--json\`) | |`,
    ),
    '',
  );
  return cappedSummary(`${md.map(shownText).join('\n')}\n`);
}

/** The summary lines of the first MAX_LISTED `items`, then one saying how many more there are. */
function listed<T>(items: readonly T[], line: (item: T) => string, more: (n: number) => string): string[] {
  const lines = items.slice(0, MAX_LISTED).map(line);
  if (items.length > MAX_LISTED) lines.push(more(items.length - MAX_LISTED));
  return lines;
}

/** The paths an invalid line names on its blob, as `about` shows them: a blob can be at thousands of paths. */
function mdAbout(p: LedgerVerification['invalid'][number]): string {
  if (!p.paths?.length) return '';
  const shown = p.paths.slice(0, MAX_PATHS_ABOUT).map(mdPath);
  if (p.paths.length > MAX_PATHS_ABOUT) shown.push(`and ${p.paths.length - MAX_PATHS_ABOUT} more`);
  return ` (${shown.join(', ')})`;
}

/** A path as code; one longer than MAX_QUOTED characters as its start, then `…` and how long the path is in bytes. */
function mdPath(path: string): string {
  const head = shownPathStart(path, MAX_QUOTED);
  return head === null ? mdCode(shownPath(path)) : `${mdCode(head)}… (${Buffer.byteLength(path)} bytes)`;
}

/** Text from a ledger line or a refusal; one longer than MAX_QUOTED characters as its start, `…` and its length. */
function mdQuoted(text: string): string {
  const shown = shownText(text);
  const head = textStart(shown);
  return head === null ? mdText(shown) : `${mdText(head)}… (${Buffer.byteLength(text)} bytes)`;
}

/** An escape shownText writes, or one character: a shortened text never ends inside an escape. */
const SHOWN_UNIT = /\\u[0-9a-f]{4}|[\s\S]/gu;

/** The start of shown text that fits `max` characters, or null when all of it does. */
function textStart(shown: string, max = MAX_QUOTED): string | null {
  if (shown.length <= max) return null;
  let head = '';
  for (const [unit] of shown.matchAll(SHOWN_UNIT)) {
    if (head.length + unit.length > max) break;
    head += unit;
  }
  return head;
}

/**
 * The summary as GitHub keeps it: a step summary over 1 MiB is dropped whole. Bounded lists and quoted texts keep it
 * far below that; should they add up anyway, it ends at the last whole line that fits, and says so.
 */
export function cappedSummary(markdown: string, limit = MAX_SUMMARY_BYTES): string {
  if (Buffer.byteLength(markdown) <= limit) return markdown;
  const cut =
    '\n**This summary was cut here: it would have been too long for GitHub.** The job log and ' +
    '`delegate-git verify --json` have all of it.\n';
  let room = limit - Buffer.byteLength(cut);
  const kept: string[] = [];
  for (const line of markdown.split('\n')) {
    room -= Buffer.byteLength(line) + 1;
    if (room < 0) break;
    kept.push(line);
  }
  return `${kept.join('\n')}\n${cut}`;
}

const MARKDOWN_SIGNIFICANT = /[\\`*_[\]<>|~&]/g;

/**
 * Text Markdown shows as it is, on one line and in a table cell too. GitHub also links a bare `https://…` or
 * `www.…`; an escaped `/` or `.` there, invisible once rendered, keeps it text.
 */
function mdText(text: string): string {
  return shownText(text)
    .replace(MARKDOWN_SIGNIFICANT, (c) => `\\${c}`)
    .replace(/:\/\//g, ':\\/\\/')
    .replace(/\bwww\./gi, (w) => `${w.slice(0, 3)}\\.`);
}

/**
 * A code span that holds `text` as it is: fenced by more backticks than any run in it. In a table cell a `|` still
 * ends the cell, so there it is escaped (GitHub drops that backslash inside a code span of a table).
 */
function mdCode(text: string, inTable = false): string {
  const shown = inTable ? shownText(text).replace(/\|/g, '\\|') : shownText(text);
  const fence = '`'.repeat(Math.max(0, ...(shown.match(/`+/g) ?? []).map((run) => run.length)) + 1);
  const pad = shown.startsWith('`') || shown.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${shown}${pad}${fence}`;
}

/**
 * Said when refused files have no note on their content at all: the refusal reasons speak of approvals and verdicts,
 * while the likely cause is records made in another ledger (a fork's pull request runs against the base's ledger).
 */
function unrecordedHint(v: LedgerVerification): string | null {
  const count = v.files.filter((f) => f.unrecorded).length;
  if (count === 0 || !v.ledgerTip) return null;
  return (
    `${count} refused file(s) have no record on their content in this ledger. If they were delegated or approved in ` +
    "another clone, run `delegate-git sync` there; a fork's pull request keeps its records in the fork's ledger, and " +
    'someone who can push here takes them in (`delegate-git sync fork`, then `delegate-git sync`; see ' +
    'ledger-tools/README.md, "Pull requests from forks"). If none ever was (a path the policy has newly protected), ' +
    'promote it as below.'
  );
}

/** PROMOTE_ADVICE when a refused file is one a record can promote (a submodule is not), which unrecordedHint points to. */
function promoteAdvice(v: LedgerVerification): string | null {
  return v.ledgerTip && v.files.some((f) => !f.promoted && f.kind !== 'submodule') ? PROMOTE_ADVICE : null;
}

/** What clears a removed record: the line itself, back on its blob (a new approval is another line). */
const RESTORE_ADVICE =
  'To restore a removed record, put its exact line back on its blob: `delegate-git sync` in a clone whose ledger ' +
  'still holds it takes the two ledgers together and pushes the union, or by hand `git notes --ref=delegations append ' +
  "-m '<line>' <blob>` (each line is in `verify --json`, appendOnly.removed) and push the ledger. A new approval is a " +
  'record of its own and leaves the removal standing.';

/** What promotes a refused file: the content at the revision, on a branch of one's own, and the ledger pushed with it. */
const PROMOTE_ADVICE =
  'To promote a refused file: delegate it, or have reviewers approve the content at this revision ' +
  '(`delegate-git attest --approve <path>` in a checkout of it), and push the ledger with it ' +
  '(`git push --atomic <remote> <branch> refs/notes/delegations`).';

/** A refusal since the commit verified last, its path and reason shown as the output needs (the summary: as code). */
function sinceRefusal(
  r: NonNullable<LedgerVerification['since']>['refusals'][number],
  showPath: (path: string) => string = shownPath,
  showReason: (reason: string) => string = (reason) => reason,
): string {
  const at = r.commit === undefined ? '' : `commit ${r.commit.slice(0, 12)} `;
  return `${at}${r.path === undefined ? '' : `${showPath(r.path)}: `}${showReason(r.reason)}`;
}

function sinceSummary(since: NonNullable<LedgerVerification['since']>): string {
  if (since.problem) return 'NOT CONTAINED';
  if (since.wholeHistory)
    return 'holds no policy yet (from before the adoption): the whole history was judged';
  const refused = since.refusals.length;
  return `${since.commits} commit(s) judged as a push onto it, ${refused === 0 ? 'none refused' : `${refused} refusal(s)`}`;
}

/** The lines that count for nothing but are no problem; disallowed ones named only when there are some. */
function notCounting(v: LedgerVerification, separator: string): string {
  const revoked = `${v.revoked.length} by revoked keys`;
  const n = v.disallowed.length;
  return n === 0 ? revoked : `${revoked}${separator}${n} their key may not sign`;
}

/** Entries of the ledger's tree that are no notes, counted beside the records when there are any. */
function foreignCount(v: LedgerVerification, separator: string): string {
  const n = v.foreignEntries.length;
  if (n === 0) return '';
  return `${separator}${n === 1 ? '1 tree entry that is not a note' : `${n} tree entries that are not notes`}`;
}

/** Entries of a list shown one by one in the job summary; the rest are counted (all of them are in --json). */
const MAX_LISTED = 50;
/** Paths an invalid line names on its blob that the job summary shows. */
const MAX_PATHS_ABOUT = 5;
/** Error annotations GitHub shows of a step; it drops the rest. */
const MAX_ANNOTATIONS = 10;
/** Characters of one path or quoted text that the job summary shows. */
const MAX_QUOTED = 500;
/** An annotation's message (a path and a reason): a path of a thousand characters still in full. */
const MAX_ANNOTATED = 2_000;
/** The longest path an annotation is attached to: PATH_MAX on Linux, so no checkout holds a longer one. */
const MAX_ATTACHED = 4096;
/**
 * The job summary's size at most, in bytes: half the 1 MiB GitHub takes from a step. The bounds above keep the worst a
 * pusher can make of it near 350 KB; this is for what they do not foresee.
 */
const MAX_SUMMARY_BYTES = 512 * 1024;

/**
 * A removed line in words, so a reviewer can tell which record went: every record line starts with the same
 * characters (the envelope's base64 payload of a Statement), so a prefix of the line would not say.
 */
function describeLine(line: string, signer?: string): string {
  const digest = createHash('sha256').update(line).digest('hex').slice(0, 16);
  const decoded = decodeRecord(line);
  if (!decoded.ok) return `a line that is no record (line sha256 ${digest})`;
  const r = decoded.record;
  const what = r.kind === 'verdict' ? `verdict ${r.verdict}` : `review ${r.decision}`;
  const key = shownText(r.envelope.signatures[0]!.keyid.slice(0, 12));
  const by = signer && signer !== `key ${key}` ? `${shownText(signer)} (key ${key})` : `key ${key}`;
  return `${what} of ${r.subjects.map((s) => shownPath(s.path)).join(', ')} made ${r.createdAtText}, signed by ${by} (line sha256 ${digest})`;
}

/**
 * Under GitHub Actions, why verify could not answer (main writes it to stderr and exits 2): on the job page that would
 * be in the raw log only, under a failed step with no summary or annotation. Said before main reports it; a summary
 * that cannot be written leaves that report as it is.
 */
export async function reportNoAnswer(error: unknown, io: Io, annotationsToStderr: boolean): Promise<void> {
  const reason = error instanceof Error ? error.message : String(error);
  if (io.env.GITHUB_STEP_SUMMARY) {
    const md = [
      '## delegate-git ledger: ❌ could not answer',
      '',
      `verify could not answer (exit 2), so nothing was judged: ${mdQuoted(reason)}`,
      '',
    ];
    await appendFile(io.env.GITHUB_STEP_SUMMARY, `${md.map(shownText).join('\n')}\n`).catch(() => {});
  }
  if (io.env.GITHUB_ACTIONS === 'true')
    (annotationsToStderr ? io.err : io.out)(
      `::error::${escapeAnnotation(`delegate-git verify could not answer: ${reason}`)}\n`,
    );
}

/**
 * The ::error annotations: one per refused file, and one per refusal since the commit verified last. GitHub shows 10
 * error annotations of a step (50 of a job) and drops the rest unsaid, so past 10 the tenth says how many more there
 * are and where they are listed.
 */
export function annotations(v: LedgerVerification): string[] {
  const lines: string[] = [];
  const annotated = new Set<string>();
  for (const f of v.files.filter((x) => !x.promoted)) {
    annotated.add(f.path);
    lines.push(
      `::error${fileProperty(f.path)}::${escapeAnnotation(`${shownPath(f.path)} is not promoted: ${f.reason}`)}\n`,
    );
  }
  // One annotation per file: a file refused at the revision is not annotated again for a commit since.
  for (const r of v.since?.refusals ?? []) {
    if (r.path !== undefined && annotated.has(r.path)) continue;
    lines.push(
      `::error${r.path === undefined ? '' : fileProperty(r.path)}::${escapeAnnotation(sinceRefusal(r))}\n`,
    );
  }
  if (lines.length <= MAX_ANNOTATIONS) return lines;
  const more = lines.length - (MAX_ANNOTATIONS - 1);
  return [
    ...lines.slice(0, MAX_ANNOTATIONS - 1),
    `::error::${escapeAnnotation(`… and ${more} more refusals, not annotated (GitHub shows ${MAX_ANNOTATIONS} annotations of a step): the step's log lists them all`)}\n`,
  ];
}

/**
 * An annotation's text on one line, as the text output shows it: the runner decodes `%0A` in a message into a line
 * break, so an escaped line break from a pushed name would still add a line of the pusher's to the annotation.
 */
function escapeAnnotation(text: string): string {
  const shown = shownText(text);
  const head = textStart(shown, MAX_ANNOTATED);
  return (head === null ? shown : `${head}… (${Buffer.byteLength(text)} bytes)`).replace(/%/g, '%25');
}

/**
 * ` file=<path>` for an annotation; workflow command properties also end at ":" and ",". Nothing for a path the text
 * output quotes or rewrites (a line break, a control or invisible character, a quote, a backslash, `##[`): GitHub
 * would show it raw, attached to a file that does not exist, where `src/a\u200b.js` reads as the promoted `src/a.js`.
 * Nor for a path no checkout can hold. The message names the file either way, as the text output does (a path past
 * MAX_ANNOTATED characters by its start and its length).
 */
function fileProperty(path: string): string {
  if (shownPath(path) !== path || Buffer.byteLength(path) > MAX_ATTACHED) return '';
  return ` file=${path.replace(/%/g, '%25').replace(/:/g, '%3A').replace(/,/g, '%2C')}`;
}
