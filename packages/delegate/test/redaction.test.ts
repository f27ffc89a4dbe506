import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDACTION_LIMITS, redactFailures } from '../src/redaction.js';
import { parseTestOutput } from '../src/test-output.js';
import { type RunResult, runCommand } from '../src/verification-runner.js';

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const randomFrom = (alphabet: string, length: number) =>
  Array.from(randomBytes(length), (byte) => alphabet[byte % alphabet.length]).join('');
const shuffled = (alphabet: string) =>
  [...alphabet]
    .map((char) => ({ char, key: randomBytes(4).readUInt32LE() }))
    .sort((a, b) => a.key - b.key)
    .map(({ char }) => char)
    .join('');

describe('redactFailures on real node:test output', () => {
  let dir: string;
  let run: RunResult;
  // Built at runtime: a realistic token, so no secret-shaped literal lives in the repository.
  const token = ['ghp', randomFrom(ALNUM, 36)].join('_');

  beforeAll(async () => {
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'dg-redact-')));
    fs.writeFileSync(
      path.join(dir, 'leaky.test.mjs'),
      [
        "import test from 'node:test';",
        "import assert from 'node:assert';",
        "test('passes quietly', () => {});",
        `test('uses token ${token} to call the API', () => {`,
        "  const CANARY_SOURCE_LINE = 'CANARY_SOURCE_TEXT';",
        "  assert.deepStrictEqual({ v: 'CANARY_ACTUAL_VALUE' }, { v: 'CANARY_EXPECTED_VALUE' });",
        '});',
        "test('plain failure', () => { assert.equal(1, 2); });",
        '',
      ].join('\n'),
    );
    run = await runCommand('node --test --test-reporter=tap leaky.test.mjs', { cwd: dir, timeoutMs: 20_000 });
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('the raw output keeps everything: token, source line, expected/actual values, stack frames', () => {
    expect(run.exitCode).not.toBe(0);
    for (const raw of [token, 'CANARY_ACTUAL_VALUE', 'CANARY_EXPECTED_VALUE', 'leaky.test.mjs:6']) {
      expect(run.output).toContain(raw);
    }
    expect(run.output).toMatch(/stack: \|-/);
  });

  it('the redacted structure carries counts, names, locations and codes, with the token redacted', async () => {
    const redacted = await redactFailures(await parseTestOutput(run.output, run.exitCode), {
      workspace: dir,
    });
    expect(redacted).toEqual({
      passed: 1,
      failed: 2,
      failures: [
        { name: '[REDACTED:github]', location: 'leaky.test.mjs:4:1', code: 'ERR_ASSERTION' },
        { name: 'plain failure', location: 'leaky.test.mjs:8:1', code: 'ERR_ASSERTION' },
      ],
      omittedFailures: 0,
    });
  });

  it('nothing but the structure survives: no token, no source, no values, no stack frames', async () => {
    const text = JSON.stringify(await redactFailures(await parseTestOutput(run.output, run.exitCode)));
    expect(text).not.toContain(token.slice(4));
    for (const canary of [
      'CANARY_SOURCE',
      'CANARY_ACTUAL',
      'CANARY_EXPECTED',
      'deepStrictEqual',
      'node:internal',
    ]) {
      expect(text).not.toContain(canary);
    }
  });
});

describe('redactFailures: bounds and scanning of every field', async () => {
  it('bounds names, locations and codes, keeping short ones intact (control)', async () => {
    const redacted = await redactFailures({
      passed: 0,
      failed: 2,
      failures: [
        { name: 'n'.repeat(500), location: `${'d/'.repeat(200)}a.ts:1:1`, code: 'E'.repeat(100) },
        { name: 'adds two numbers', location: 'src/a.test.ts:3:5', code: 'ERR_ASSERTION' },
      ],
    });
    const [long, short] = redacted.failures;
    expect(long!.name).toHaveLength(REDACTION_LIMITS.name);
    expect(long!.name!.endsWith('…')).toBe(true);
    expect(long!.location).toHaveLength(REDACTION_LIMITS.location);
    expect(long!.code).toHaveLength(REDACTION_LIMITS.code);
    expect(short).toEqual({ name: 'adds two numbers', location: 'src/a.test.ts:3:5', code: 'ERR_ASSERTION' });
  });

  it('keeps at most 50 failures and counts the rest', async () => {
    const failures = Array.from({ length: 63 }, (_, i) => ({ name: `test ${i}` }));
    const redacted = await redactFailures({ passed: 0, failed: 63, failures });
    expect(redacted.failures).toHaveLength(50);
    expect(redacted.failures[49]).toEqual({ name: 'test 49' });
    expect(redacted.omittedFailures).toBe(13);
    expect(redacted.failed).toBe(63);
  });

  it('scans every field: an entropy hit in a location or a code is redacted, the other fields stay', async () => {
    // Distinct characters in random order: always random-looking (log2(40) ≈ 5.3 bits/char), never by chance less.
    const secret = shuffled(ALNUM).slice(0, 40);
    const redacted = await redactFailures({
      passed: 0,
      failed: 1,
      failures: [{ name: 'reads config', location: `/srv/${secret}/a.ts:1:1`, code: secret.slice(0, 30) }],
    });
    expect(redacted.failures).toEqual([
      { name: 'reads config', location: '[REDACTED:entropy]', code: '[REDACTED:entropy]' },
    ]);
  });

  it('a secret straddling the bound is still found (the scan looks past the cut)', async () => {
    const token = ['ghp', randomFrom(ALNUM, 36)].join('_');
    const name = `${'x '.repeat(95)}${token}`; // the token starts at char 190 of a 200-char bound
    const redacted = await redactFailures({ passed: 0, failed: 1, failures: [{ name }] });
    expect(redacted.failures).toEqual([{ name: '[REDACTED:github]' }]);
  });

  it('drops failures with no field left and collapses whitespace', async () => {
    const redacted = await redactFailures({
      passed: 0,
      failed: 2,
      failures: [{ name: '   ' }, { name: 'a\n\tb   c' }],
    });
    expect(redacted.failures).toEqual([{ name: 'a b c' }]);
  });
});
