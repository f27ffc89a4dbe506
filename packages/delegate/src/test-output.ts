/**
 * Turns a verification command's raw output into counts and structured failures. Recognisers, in order:
 *   1. TAP (node:test, vitest/jest TAP reporters) through tap-parser; nested subtests count as their leaves only;
 *   2. summary lines of common runners (vitest, jest, mocha, pytest), summed when a command runs several;
 *   3. TypeScript compiler errors (both `tsc` formats), each one a failure, in any mode;
 *   4. line heuristics (check marks and crosses) when nothing above matched.
 * The exit code is authoritative: a non-zero exit always means at least one failure, whatever the text says.
 * This module only parses; deciding what may leave the machine is redaction.ts's job.
 *
 * tap-parser (with the YAML parser it brings) is loaded only when the output looks like TAP: it is half of the
 * delegate command's code, and a delegation whose command prints no TAP should not pay for loading it.
 */
import { fileURLToPath } from 'node:url';
import type { Parser, Result } from 'tap-parser';

export interface TestFailure {
  name?: string;
  /** `file:line[:col]` */
  location?: string;
  /** An error code such as `TS2322` or `ERR_ASSERTION`. */
  code?: string;
}

export interface ParsedTestOutput {
  passed: number;
  failed: number;
  failures: TestFailure[];
}

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;

export async function parseTestOutput(output: string, exitCode: number): Promise<ParsedTestOutput> {
  const text = output.replace(ANSI, '').replace(/\r\n?/g, '\n');
  if (text.trim() === '') {
    return exitCode !== 0 ? { passed: 0, failed: 1, failures: [] } : { passed: 0, failed: 0, failures: [] };
  }

  const lines = text.split('\n');
  const compile = parseCompilerErrors(lines);
  const tests = looksLikeTap(text)
    ? parseTap(text, (await import('tap-parser')).Parser)
    : parseSummaries(lines);

  let passed = tests?.passed ?? 0;
  let failed = (tests?.failed ?? 0) + compile.length;
  const failures = [...(tests?.failures ?? []), ...compile];

  if (!tests && compile.length === 0) {
    const heuristic = countByHeuristics(lines);
    passed = heuristic.passed;
    failed = heuristic.failed;
    if (passed === 0 && failed === 0 && exitCode === 0) {
      // Nothing recognised: words that signal trouble still fail the run (the plugin once scored tsc errors as
      // success because it looked only for test shapes).
      if (/AssertionError|Error:|FAIL/.test(text) || /\berror\b/i.test(text)) failed = 1;
      else passed = 1;
    }
  }
  if (exitCode !== 0 && failed === 0) failed = 1;
  return { passed, failed, failures };
}

// --- TAP ------------------------------------------------------------------------------------------------------

const TAP_TEST_POINT = /^\s*(?:not )?ok \d+\b/m;

function looksLikeTap(text: string): boolean {
  return TAP_TEST_POINT.test(text);
}

type Counts = ParsedTestOutput;

/**
 * A test point that closes a subtest whose child parser emitted test points is a parent (node:test "group",
 * vitest suite): its result is derived from the children, so only leaves are counted.
 */
function parseTap(text: string, TapParser: typeof Parser): Counts {
  const counts: Counts = { passed: 0, failed: 0, failures: [] };
  const yamlFallback = new TapYamlScanner(text.split('\n'));
  const root = new TapParser();
  const childAssertsSince = new Map<Parser, number>();
  const watch = (parser: Parser) => {
    childAssertsSince.set(parser, 0);
    parser.on('child', (child: Parser) => {
      childAssertsSince.set(parser, 0);
      watch(child);
      child.on('assert', () => childAssertsSince.set(parser, (childAssertsSince.get(parser) ?? 0) + 1));
    });
    parser.on('assert', (result: Result) => {
      const isParent = (childAssertsSince.get(parser) ?? 0) > 0;
      childAssertsSince.set(parser, 0);
      if (isParent || result.skip || result.todo) return;
      if (result.ok) {
        counts.passed += 1;
        return;
      }
      counts.failed += 1;
      counts.failures.push(failureFromTap(result, yamlFallback));
    });
  };
  watch(root);
  root.end(text);
  return counts;
}

function failureFromTap(result: Result, yamlFallback: TapYamlScanner): TestFailure {
  const failure: TestFailure = {};
  const name = (result.fullname || result.name || '').trim();
  if (name) failure.name = name;
  // Leaves are emitted in text order, so the line scanner can follow along even when tap-parser dropped a
  // diagnostic block it could not parse as YAML (vitest writes multi-line strings unquoted).
  const raw = yamlFallback.next(result.id, result.name ?? '');
  const diag = (result.diag ?? {}) as Record<string, unknown>;
  const location = tapLocation(diag) ?? (raw.location ? normaliseLocation(raw.location) : undefined);
  if (location) failure.location = location;
  const code = typeof diag.code === 'string' ? diag.code.trim() : (raw.code ?? '');
  if (code) failure.code = code;
  return failure;
}

/** Finds a failing test point's line and reads the `location:`/`at:`/`code:` keys of its diagnostic block. */
class TapYamlScanner {
  private cursor = 0;
  constructor(private readonly lines: string[]) {}

  next(id: number | undefined, name: string): { location?: string; code?: string } {
    const found: { location?: string; code?: string } = {};
    const point = new RegExp(`^\\s*not ok ${id ?? '\\d+'}\\b`);
    let index = this.cursor;
    while (
      index < this.lines.length &&
      !(point.test(this.lines[index]!) && this.lines[index]!.includes(name))
    ) {
      index += 1;
    }
    if (index >= this.lines.length) return found;
    this.cursor = index + 1;
    for (let i = index + 1; i < this.lines.length; i++) {
      const line = this.lines[i]!;
      if (TAP_TEST_POINT_LINE.test(line) || /^\s*\.\.\.\s*$/.test(line)) break;
      const key = /^\s*(location|at|code):\s*(.+?)\s*$/.exec(line);
      if (!key) continue;
      const value = key[2]!.replace(/^['"]|['"]$/g, '');
      if (key[1] === 'code') found.code ??= value;
      else found.location ??= value;
    }
    return found;
  }
}

const TAP_TEST_POINT_LINE = /^\s*(?:not )?ok \d+\b/;

/** node:test writes `location: 'file:line:col'`; vitest and tap write `at`, as a string or `{file,line,column}`. */
function tapLocation(diag: Record<string, unknown>): string | undefined {
  for (const key of ['location', 'at']) {
    const value = diag[key];
    if (typeof value === 'string') {
      const location = normaliseLocation(value);
      if (location) return location;
    } else if (typeof value === 'object' && value !== null) {
      const at = value as { file?: unknown; line?: unknown; column?: unknown };
      if (typeof at.file === 'string' && typeof at.line === 'number') {
        return normaliseLocation(
          `${at.file}:${at.line}${typeof at.column === 'number' ? `:${at.column}` : ''}`,
        );
      }
    }
  }
  return undefined;
}

/** Accepts `path:line` or `path:line:col` (the last numeric segments, so `C:\a.ts:3:1` keeps its drive). */
export function normaliseLocation(value: string): string | undefined {
  let location = value.trim().replace(/^['"]|['"]$/g, '');
  const position = /:(\d+)(?::\d+)?$/.exec(location);
  if (!position || Number(position[1]) < 1 || position.index === 0) return undefined;
  if (location.startsWith('file://')) {
    try {
      location = fileURLToPath(location.slice(0, position.index)) + position[0];
    } catch {
      return undefined;
    }
  }
  return location;
}

// --- summary lines --------------------------------------------------------------------------------------------

function parseSummaries(lines: string[]): Counts | null {
  let recognised = false;
  const counts: Counts = { passed: 0, failed: 0, failures: [] };
  const seenNames = new Set<string>();
  const addFailure = (name: string) => {
    const trimmed = name.trim();
    if (trimmed && !seenNames.has(trimmed)) {
      seenNames.add(trimmed);
      counts.failures.push({ name: trimmed });
    }
  };
  for (const line of lines) {
    const summary = summaryCounts(line);
    if (summary) {
      recognised = true;
      counts.passed += summary.passed;
      counts.failed += summary.failed;
      continue;
    }
    // Failure headings that name a test: vitest `FAIL  file > suite > test`, jest `● suite › test`,
    // pytest `FAILED path::test - message` (the message is dropped).
    const vitest = /^\s*FAIL\s+\S+\s+>\s+(.+?)\s*$/.exec(line);
    if (vitest?.[1]) addFailure(vitest[1]);
    const jest = /^\s*\u25CF\s+(.+?)\s*$/.exec(line);
    if (jest?.[1] && !/^Console\b/.test(jest[1])) addFailure(jest[1]);
    const pytest = /^(?:FAILED|ERROR)\s+(\S+::\S+)/.exec(line);
    if (pytest?.[1]) addFailure(pytest[1]);
  }
  return recognised ? counts : null;
}

function number(line: string, word: string): number {
  const match = new RegExp(`(\\d+) ${word}\\b`).exec(line);
  return match ? Number(match[1]) : 0;
}

/** One runner's end-of-run summary line, or null. */
export function summaryCounts(line: string): { passed: number; failed: number } | null {
  // vitest: " Tests  2 failed | 3 passed (5)" (not "Test Files  …")
  if (/^\s*Tests\s+\d+ (?:failed|passed|skipped|todo)\b/.test(line)) {
    return { passed: number(line, 'passed'), failed: number(line, 'failed') };
  }
  // jest: "Tests:       1 failed, 4 passed, 5 total"
  if (/^\s*Tests:\s+.*\d+ total\b/.test(line)) {
    return { passed: number(line, 'passed'), failed: number(line, 'failed') };
  }
  // mocha: "  3 passing (12ms)" and "  1 failing"
  const mochaPassing = /^\s*(\d+) passing\b/.exec(line);
  if (mochaPassing) return { passed: Number(mochaPassing[1]), failed: 0 };
  const mochaFailing = /^\s*(\d+) failing\s*$/.exec(line);
  if (mochaFailing) return { passed: 0, failed: Number(mochaFailing[1]) };
  // pytest: "==== 1 failed, 2 passed, 1 warning in 0.12s ====" (errors are failures too)
  if (
    /^[=\s]*\d+ (?:failed|passed|errors?|skipped|xfailed|xpassed|deselected|warnings?)\b.* in \d+(?:\.\d+)?s\b/.test(
      line,
    )
  ) {
    return {
      passed: number(line, 'passed'),
      failed: number(line, 'failed') + number(line, 'errors?'),
    };
  }
  return null;
}

// --- TypeScript compiler ------------------------------------------------------------------------------------

const TSC_PAREN = /^(.+?)\((\d+),(\d+)\): error (TS\d+):/;
const TSC_PRETTY = /^(.+?):(\d+):(\d+) - error (TS\d+):/;
const TSC_BARE = /^error (TS\d+):/;

function parseCompilerErrors(lines: string[]): TestFailure[] {
  const failures: TestFailure[] = [];
  for (const raw of lines) {
    const line = raw.trim();
    const located = TSC_PAREN.exec(line) ?? TSC_PRETTY.exec(line);
    if (located) {
      failures.push({ location: `${located[1]}:${located[2]}:${located[3]}`, code: located[4]! });
      continue;
    }
    const bare = TSC_BARE.exec(line);
    if (bare) failures.push({ code: bare[1]! });
  }
  return failures;
}

// --- heuristics ---------------------------------------------------------------------------------------------

function countByHeuristics(lines: string[]): { passed: number; failed: number } {
  let passed = 0;
  let failed = 0;
  for (const line of lines) {
    if (/[\u2715\u2716\u2717\u00D7]|\bFAILED\b|AssertionError|\bError:/.test(line)) failed += 1;
    else if (/[\u2713\u2714]|\bPASSED\b/.test(line) && !/not ok/.test(line)) passed += 1;
  }
  return { passed, failed };
}
