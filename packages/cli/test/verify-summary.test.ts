// verify's job summary stays far below the 1 MiB GitHub takes from a step (a larger one is dropped whole, and the
// failed job's explanation with it), whatever a pusher makes of the lists and names in it. The renderer is pure, so
// inputs no repository of a test's size would hold are given directly; test/e2e/output-injection.test.ts runs the
// same end to end on a few long names.
import type { CheckResult, LedgerVerification } from '@delegate-git/core';
import { describe, expect, it } from 'vitest';
import { annotations, cappedSummary, renderMarkdown } from '../src/verify-report.js';

const NO_VERDICT = 'no verdict: no delegated unit is recorded as writing it';

function verification(more: Partial<LedgerVerification> = {}): LedgerVerification {
  return {
    rev: 'HEAD',
    commit: 'c'.repeat(40),
    ledgerTip: 'f'.repeat(40),
    records: 1,
    lines: 1,
    notes: 1,
    byVerdict: { UNIT_PASSED: 1 },
    bySigner: { alice: 1 },
    invalid: [],
    revoked: [],
    disallowed: [],
    foreignEntries: [],
    files: [],
    governanceChanges: [],
    appendOnly: { checked: 'whole history', removed: [] },
    ...more,
  };
}

function refused(path: string, reason = NO_VERDICT): CheckResult {
  return {
    path,
    promoted: false,
    reason,
    by: [],
    governed: true,
    blob: 'b'.repeat(40),
    sha256: '0'.repeat(64),
  };
}

describe('the job summary', () => {
  it('of a pusher’s worst: every list and every quoted text bounded, far below 1 MiB', () => {
    // Astral characters take 4 bytes, and a byte order mark is C-quoted as 12 characters (\357\273\277).
    const long = `src/${'\u{1f600}\ufeff'.repeat(20_000)}.ts`;
    const junk = `not a valid record: subject ${'A'.repeat(1_200_000)} has no sha256 digest`;
    const many = 2_000;
    const v = verification({
      files: Array.from({ length: many }, (_, i) => refused(`${long}${i}`, junk)),
      invalid: Array.from({ length: many }, (_, i) => ({
        blob: 'a'.repeat(40),
        line: i + 1,
        sha256: '0'.repeat(64),
        reason: junk,
        paths: Array.from({ length: 100 }, (_, j) => `${long}${j}`),
      })),
      foreignEntries: Array.from({ length: many }, (_, i) => ({ path: `${long}${i}`, mode: '100644' })),
      since: {
        commit: 'd'.repeat(40),
        commits: 1,
        refusals: Array.from({ length: many }, (_, i) => ({
          commit: 'e'.repeat(40),
          path: `${long}${i}`,
          reason: junk,
        })),
        wholeHistory: false,
      },
      bySigner: Object.fromEntries(
        Array.from({ length: 100 }, (_, i) => [`${'signer'.repeat(1_000)}${i}`, 1]),
      ),
    });
    const md = renderMarkdown(v, 1);
    // About 350 KB: the bounds alone keep it there, before cappedSummary would cut anything.
    expect(Buffer.byteLength(md)).toBeLessThan(400_000);
    expect(md).not.toContain('This summary was cut here');
    // Each list: its first 50, then how many more.
    expect(md.match(/ is not promoted: /g)).toHaveLength(50);
    expect(md).toContain(`- … and ${many - 50} more files not promoted (see \`--json\`)`);
    expect(md).toContain(`- … and ${many - 50} more invalid lines (see \`--json\`)`);
    expect(md).toContain(
      `- … and ${many - 50} more refusals since the commit verified last (see \`--json\`)`,
    );
    expect(md).toContain(`- … and ${many - 50} more entries that are not notes (see \`--json\`)`);
    expect(md).toContain('| … and 50 more signers (see `--json`) | |');
    expect(md).toContain(', and 95 more) line 1: ');
    // A long path: its start as code, and how long it is; never cut inside an escape.
    const first = md.split('\n').find((l) => l.includes(' is not promoted: '))!;
    expect(first).toMatch(
      /^- `"src\/(\u{1f600}\\357\\273\\277)+\u{1f600}?`… \(140008 bytes\) is not promoted: not a valid record: subject A+… \(1200049 bytes\)$/u,
    );
    expect(first.length).toBeLessThan(1100);
  });

  it('is cut as a last resort at the last whole line that fits, and says so; control: one that fits is as it was', () => {
    const md = `${Array.from({ length: 100 }, (_, i) => `- line ${i}`).join('\n')}\n`;
    expect(cappedSummary(md, 10_000)).toBe(md);
    const cut = cappedSummary(md, 300);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(300);
    expect(cut).toMatch(/^- line 0\n- line 1\n/);
    expect(cut).toMatch(
      /\n- line \d+\n\n\*\*This summary was cut here: it would have been too long for GitHub\.\*\*/,
    );
    expect(cut.endsWith('The job log and `delegate-git verify --json` have all of it.\n')).toBe(true);
  });

  it('control: a short one lists every entry in full, with no “more” line and nothing cut', () => {
    const path = `src/${'d'.repeat(290)}.ts`;
    const md = renderMarkdown(
      verification({ files: Array.from({ length: 50 }, (_, i) => refused(`${path}${i}`)) }),
      1,
    );
    expect(md.match(/ is not promoted: /g)).toHaveLength(50);
    expect(md).toContain(`- \`${path}0\` is not promoted: ${NO_VERDICT}`);
    expect(md).not.toContain('…');
    expect(md).not.toContain('cut here');
  });
});

describe('the annotations', () => {
  it('quote a path of a few kilobytes by its start and its length, attached only up to PATH_MAX; control: a short one', () => {
    const long = `src/${'d'.repeat(250)}/${'x'.repeat(3500)}.ts`;
    const longer = `src/${'e'.repeat(250)}/${'x'.repeat(4000)}.ts`;
    const [short, cut, unattached] = annotations(
      verification({ files: [refused('src/a.ts'), refused(long), refused(longer)] }),
    );
    expect(short).toBe(`::error file=src/a.ts::src/a.ts is not promoted: ${NO_VERDICT}\n`);
    expect(cut!.startsWith(`::error file=${long}::src/${'d'.repeat(250)}/xxx`)).toBe(true);
    expect(unattached!.startsWith(`::error::src/${'e'.repeat(250)}/xxx`)).toBe(true);
    expect(cut).toMatch(
      new RegExp(`x… \\(${Buffer.byteLength(`${long} is not promoted: ${NO_VERDICT}`)} bytes\\)\\n$`),
    );
    expect(cut!.length - `::error file=${long}::`.length).toBeLessThan(2100);
  });
});
