import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normaliseLocation, parseTestOutput, summaryCounts } from '../src/test-output.js';

describe('parseTestOutput: TAP from node:test (generated for real)', () => {
  let dir: string;
  let tap: string;
  let exitCode: number;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dg-tap-'));
    fs.writeFileSync(
      path.join(dir, 'sample.test.mjs'),
      [
        "import test from 'node:test';",
        "import assert from 'node:assert';",
        "test('adds numbers', () => { assert.equal(1 + 1, 2); });",
        "test('subtracts numbers', () => { assert.equal(2 - 1, 3); });",
        "test('group', async (t) => {",
        "  await t.test('inner passes', () => {});",
        "  await t.test('inner fails', () => { throw new TypeError('boom'); });",
        '});',
        "test('skipped one', { skip: true }, () => {});",
        '',
      ].join('\n'),
    );
    const run = spawnSync(process.execPath, ['--test', '--test-reporter=tap', 'sample.test.mjs'], {
      cwd: dir,
      encoding: 'utf8',
    });
    tap = run.stdout;
    exitCode = run.status ?? -1;
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('counts leaf tests only (the failing parent "group" is not a test of its own) and ignores skips', async () => {
    expect(exitCode).toBe(1);
    expect(tap).toMatch(/^not ok \d+ - group/m); // the parent really is reported as a test point
    const parsed = await parseTestOutput(tap, exitCode);
    expect(parsed.passed).toBe(2);
    expect(parsed.failed).toBe(2);
  });

  it('keeps names, file:line:col locations and error codes of failures', async () => {
    const parsed = await parseTestOutput(tap, exitCode);
    expect(parsed.failures).toEqual([
      { name: 'subtracts numbers', location: `${dir}/sample.test.mjs:4:1`, code: 'ERR_ASSERTION' },
      { name: 'group > inner fails', location: `${dir}/sample.test.mjs:7:11`, code: 'ERR_TEST_FAILURE' },
    ]);
  });

  it('an all-passing TAP stream with exit 0 has no failures', async () => {
    const parsed = await parseTestOutput('TAP version 13\nok 1 - a\nok 2 - b\n1..2\n', 0);
    expect(parsed).toEqual({ passed: 2, failed: 0, failures: [] });
  });
});

describe('parseTestOutput: TAP from the vitest reporter (brace subtests, unparseable YAML)', () => {
  // Captured from `vitest run --reporter=tap`: the multi-line actual/expected strings are not valid YAML, so
  // tap-parser drops the diagnostic block and the location must be read from the lines.
  const vitestTap = [
    'TAP version 13',
    '1..1',
    'not ok 1 - a.test.ts # time=18.36ms {',
    '    1..2',
    '    not ok 1 - suite # time=16.55ms {',
    '        1..2',
    '        ok 1 - passes # time=3.09ms',
    '        not ok 2 - fails # time=12.38ms',
    '            ---',
    '            error:',
    '                name: "AssertionError"',
    `                message: "expected { a: 'CANARY_ACTUAL' } to deeply equal { a: 'CANARY_EXPECTED' }"`,
    '            at: "/tmp/vt/a.test.ts:4:81"',
    '            actual: "{',
    '  \\"a\\": \\"CANARY_ACTUAL\\",',
    '}"',
    '            ...',
    '    }',
    '    ok 2 - top ok # time=0.26ms',
    '}',
    '',
  ].join('\n');

  it('counts the two passing and one failing leaf, not the file or suite test points', async () => {
    const parsed = await parseTestOutput(vitestTap, 1);
    expect(parsed.passed).toBe(2);
    expect(parsed.failed).toBe(1);
    expect(parsed.failures).toEqual([
      { name: 'a.test.ts > suite > fails', location: '/tmp/vt/a.test.ts:4:81' },
    ]);
  });
});

describe('parseTestOutput: TypeScript compiler errors', () => {
  it('reads both tsc formats and the location-less form, each a failure, even with no test output', async () => {
    const output = [
      "src/a.ts(12,5): error TS2322: Type 'string' is not assignable to type 'number'.",
      "\u001b[96msrc/b.ts\u001b[0m:\u001b[93m3\u001b[0m:\u001b[93m14\u001b[0m - \u001b[91merror\u001b[0m\u001b[90m TS2304: \u001b[0mCannot find name 'x'.",
      '',
      '3 const y = x;',
      '               ~',
      "error TS5058: The specified path does not exist: 'nope.json'.",
      'Found 3 errors.',
    ].join('\n');
    const parsed = await parseTestOutput(output, 2);
    expect(parsed.failed).toBe(3);
    expect(parsed.passed).toBe(0);
    expect(parsed.failures).toEqual([
      { location: 'src/a.ts:12:5', code: 'TS2322' },
      { location: 'src/b.ts:3:14', code: 'TS2304' },
      { code: 'TS5058' },
    ]);
  });

  it('tsc errors are failures even when the exit code says 0 (control: clean tsc output passes)', async () => {
    expect((await parseTestOutput('src/a.ts(1,1): error TS1005: ";" expected.', 0)).failed).toBe(1);
    expect(await parseTestOutput('', 0)).toEqual({ passed: 0, failed: 0, failures: [] });
  });
});

describe('parseTestOutput: runner summary lines', () => {
  it('vitest (with colours) and its FAIL headings', async () => {
    const output = [
      '\u001b[41m\u001b[1m FAIL \u001b[22m\u001b[49m a.test.ts\u001b[2m > \u001b[22msuite\u001b[2m > \u001b[22mfails',
      'AssertionError: expected 1 to be 2',
      '\u001b[2m Test Files \u001b[22m \u001b[1m\u001b[31m1 failed\u001b[39m\u001b[22m\u001b[90m (1)\u001b[39m',
      '\u001b[2m      Tests \u001b[22m \u001b[1m\u001b[31m2 failed\u001b[39m\u001b[22m\u001b[2m | \u001b[22m\u001b[1m\u001b[32m3 passed\u001b[39m\u001b[22m\u001b[90m (5)\u001b[39m',
    ].join('\n');
    const parsed = await parseTestOutput(output, 1);
    expect(parsed).toMatchObject({ passed: 3, failed: 2 });
    expect(parsed.failures).toEqual([{ name: 'suite > fails' }]);
  });

  it('jest', async () => {
    const output =
      '  ● math › adds\n\n    expect(received).toBe(expected)\n\nTests:       1 failed, 4 passed, 5 total';
    const parsed = await parseTestOutput(output, 1);
    expect(parsed).toMatchObject({ passed: 4, failed: 1 });
    expect(parsed.failures).toEqual([{ name: 'math › adds' }]);
  });

  it('mocha', async () => {
    expect(
      await parseTestOutput('  3 passing (12ms)\n  1 failing\n\n  1) suite\n       test:\n', 1),
    ).toMatchObject({
      passed: 3,
      failed: 1,
    });
    expect(await parseTestOutput('  5 passing (3ms)\n', 0)).toEqual({ passed: 5, failed: 0, failures: [] });
  });

  it('pytest, errors counting as failures', async () => {
    const output = [
      'FAILED tests/test_a.py::test_sum - assert 1 == 2',
      '=========== 1 failed, 2 passed, 1 error, 1 warning in 0.12s ===========',
    ].join('\n');
    const parsed = await parseTestOutput(output, 1);
    expect(parsed).toMatchObject({ passed: 2, failed: 2 });
    expect(parsed.failures).toEqual([{ name: 'tests/test_a.py::test_sum' }]);
    expect(summaryCounts('2 passed in 0.01s')).toEqual({ passed: 2, failed: 0 });
  });

  it('"Test Files" and prose mentioning tests are not summaries', () => {
    expect(summaryCounts(' Test Files  1 failed (1)')).toBeNull();
    expect(summaryCounts('Tests are great')).toBeNull();
  });
});

describe('parseTestOutput: heuristics and exit-code authority', () => {
  it('empty output: a non-zero exit is one failure, exit 0 is nothing', async () => {
    expect(await parseTestOutput('', 3)).toEqual({ passed: 0, failed: 1, failures: [] });
    expect(await parseTestOutput('  \n', 0)).toEqual({ passed: 0, failed: 0, failures: [] });
  });

  it('a non-zero exit forces a failure whatever the text claims', async () => {
    expect(await parseTestOutput('TAP version 13\nok 1 - fine\n1..1\n', 1)).toMatchObject({
      passed: 1,
      failed: 1,
    });
    expect(await parseTestOutput('everything is fine', 2)).toMatchObject({ failed: 1 });
  });

  it('check marks and crosses are counted when no runner format matched', async () => {
    const output = ' ✓ adds\n ✓ subtracts\n ✕ divides\n';
    expect(await parseTestOutput(output, 1)).toMatchObject({ passed: 2, failed: 1 });
  });

  it('exit 0 with unrecognised output: trouble words fail, anything else is one pass', async () => {
    expect(await parseTestOutput('Something went wrong: error reading config', 0)).toMatchObject({
      passed: 0,
      failed: 1,
    });
    expect(await parseTestOutput('built in 42ms', 0)).toEqual({ passed: 1, failed: 0, failures: [] });
  });
});

describe('normaliseLocation', () => {
  it('accepts file:line[:col], file URLs and drive letters; refuses the rest', () => {
    expect(normaliseLocation("'/w/a.ts:3:1'")).toBe('/w/a.ts:3:1');
    expect(normaliseLocation('file:///w/my%20dir/a.ts:3:1')).toBe('/w/my dir/a.ts:3:1');
    expect(normaliseLocation('C:\\src\\a.ts:12:5')).toBe('C:\\src\\a.ts:12:5');
    expect(normaliseLocation('a.ts:7')).toBe('a.ts:7');
    expect(normaliseLocation('a.ts:0:1')).toBeUndefined();
    expect(normaliseLocation('somewhere')).toBeUndefined();
  });
});
