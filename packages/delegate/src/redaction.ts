/**
 * What of a verification run may travel to the architect (and into a signed, shared receipt): counts, test names,
 * `file:line:col` locations and error codes. Source lines, diffs, expected/actual values, messages and stack
 * frames are never in the parsed structure to begin with, so they cannot leak by a missed pattern; the raw
 * output stays in the local log. Every kept string is credential-scanned (a hit replaces the whole value) and
 * bounded, and the number of failures is capped.
 */
import path from 'node:path';
import { relativeWithin } from '@delegate-git/core/path-within';
import { scanForCredentials } from './credential-scan.js';
import type { ParsedTestOutput, TestFailure } from './test-output.js';

export interface RedactedFailure {
  name?: string;
  location?: string;
  code?: string;
}

export interface RedactedTestResults {
  passed: number;
  failed: number;
  failures: RedactedFailure[];
  /** Failures beyond the cap, counted but not listed. */
  omittedFailures: number;
}

export const REDACTION_LIMITS = { name: 200, location: 300, code: 40, failures: 50 } as const;

/** Characters scanned beyond a field's bound, so a secret straddling the cut is still seen whole. */
const SCAN_MARGIN = 256;

type Field = keyof RedactedFailure;
const FIELDS: Field[] = ['name', 'location', 'code'];

export async function redactFailures(
  parsed: ParsedTestOutput,
  opts: { workspace?: string } = {},
): Promise<RedactedTestResults> {
  const candidates = parsed.failures
    .map((failure) => prepare(failure, opts.workspace))
    .filter((failure) => FIELDS.some((field) => failure[field] !== undefined));
  const kept = candidates.slice(0, REDACTION_LIMITS.failures);

  // One scan over all fields, one per line: the finding's line says which field it hit.
  const slots: Array<{ failure: RedactedFailure; field: Field }> = [];
  for (const failure of kept) {
    for (const field of FIELDS) if (failure[field] !== undefined) slots.push({ failure, field });
  }
  const corpus = slots.map(({ failure, field }) => failure[field]).join('\n');
  const hitRules = new Map<number, Set<string>>();
  for (const finding of await scanForCredentials(corpus, { source: 'test-failures.txt' })) {
    const rules = hitRules.get(finding.line - 1) ?? new Set<string>();
    rules.add(finding.rule);
    hitRules.set(finding.line - 1, rules);
  }

  slots.forEach(({ failure, field }, index) => {
    const rules = hitRules.get(index);
    failure[field] = rules
      ? `[REDACTED:${[...rules].sort().join(',')}]`
      : bound(failure[field] as string, REDACTION_LIMITS[field]);
  });

  return {
    passed: parsed.passed,
    failed: parsed.failed,
    failures: kept,
    omittedFailures: candidates.length - kept.length,
  };
}

/** Whitespace collapsed, empty fields removed, locations made workspace-relative, pre-cut for scanning. */
function prepare(failure: TestFailure, workspace: string | undefined): RedactedFailure {
  const prepared: RedactedFailure = {};
  for (const field of FIELDS) {
    const raw = failure[field];
    if (typeof raw !== 'string') continue;
    let value = raw.replace(/\s+/g, ' ').trim();
    if (field === 'location' && workspace) value = relativeToWorkspace(value, workspace);
    if (value) prepared[field] = value.slice(0, REDACTION_LIMITS[field] + SCAN_MARGIN);
  }
  return prepared;
}

/** `/ws/src/a.ts:3:1` → `src/a.ts:3:1` when inside the workspace; anything else is kept as it is. */
function relativeToWorkspace(location: string, workspace: string): string {
  const position = /:\d+(?::\d+)?$/.exec(location);
  const file = position ? location.slice(0, position.index) : location;
  if (!path.isAbsolute(file)) return location;
  const relative = relativeWithin(path.resolve(workspace), file);
  if (!relative) return location;
  return relative.split(path.sep).join('/') + (position?.[0] ?? '');
}

function bound(value: string, limit: number): string {
  return value.length <= limit ? value : `${value.slice(0, limit - 1)}…`;
}
