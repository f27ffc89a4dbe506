import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DelegateGitError } from '@delegate-git/core';
import { describe, expect, it } from 'vitest';
import { MAX_UNIT_BYTES, parseUnit, readUnitFile } from '../src/unit.js';

const minimal = { taskName: 'Add sum', instruction: 'Write sum(a, b) in src/sum.ts' };

function refusal(value: unknown): DelegateGitError {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  try {
    parseUnit(text, 'units/sum.json');
  } catch (error) {
    expect(error).toBeInstanceOf(DelegateGitError);
    expect((error as DelegateGitError).code).toBe('UNIT');
    return error as DelegateGitError;
  }
  throw new Error(`expected ${text} to be refused`);
}

describe('parseUnit: valid units', () => {
  it('accepts the two required fields alone', () => {
    expect(parseUnit(JSON.stringify(minimal), 'u.json')).toEqual(minimal);
  });

  it('accepts every unit field', () => {
    const full = {
      ...minimal,
      targetFiles: ['src/sum.ts', 'src/'],
      contextFiles: [
        { path: 'src/a.ts' },
        { path: 'src/b.ts', startLine: 3, endLine: 3 },
        { path: 'c.ts', endLine: 9 },
      ],
      contractFiles: ['test/sum.test.ts'],
      runVerification: 'node --test',
      verificationRepeats: 20,
      workspaceDir: 'packages/x',
    };
    expect(parseUnit(JSON.stringify(full), 'u.json')).toEqual(full);
    expect(
      parseUnit(JSON.stringify({ ...minimal, verificationRepeats: 1 }), 'u.json').verificationRepeats,
    ).toBe(1);
  });
});

describe('parseUnit: targetFiles left out or empty', () => {
  // Both parse: such a unit may still run its verification. What it may write is scope.ts's answer: nothing,
  // unless the operator set unitScope "off" (scope.test.ts); a blank entry is refused, not read as "no targets".
  it('accepts a unit without targetFiles and one with an empty list; refuses a blank-only list (control)', () => {
    expect(parseUnit(JSON.stringify(minimal), 'u.json').targetFiles).toBeUndefined();
    expect(parseUnit(JSON.stringify({ ...minimal, targetFiles: [] }), 'u.json').targetFiles).toEqual([]);
    expect(refusal({ ...minimal, targetFiles: [' '] }).message).toContain(
      'targetFiles[0]: must not be empty',
    );
  });
});

describe('parseUnit: refusals name the source and the field', () => {
  const cases: Array<[string, unknown, string]> = [
    ['missing taskName', { instruction: 'x' }, 'taskName: is required'],
    ['missing instruction', { taskName: 'x' }, 'instruction: is required'],
    ['blank taskName', { ...minimal, taskName: '  ' }, 'taskName: must not be empty'],
    ['instruction not a string', { ...minimal, instruction: 42 }, 'instruction: must be a string'],
    ['targetFiles as a string', { ...minimal, targetFiles: 'src/a.ts' }, 'targetFiles: must be an array'],
    ['blank target entry', { ...minimal, targetFiles: ['a.ts', ' '] }, 'targetFiles[1]: must not be empty'],
    [
      'non-string contract entry',
      { ...minimal, contractFiles: [1] },
      'contractFiles[0]: must be a path string',
    ],
    ['context not an array', { ...minimal, contextFiles: {} }, 'contextFiles: must be an array'],
    [
      'context entry not an object',
      { ...minimal, contextFiles: ['a.ts'] },
      'contextFiles[0]: must be an object',
    ],
    [
      'context without path',
      { ...minimal, contextFiles: [{ startLine: 1 }] },
      'contextFiles[0].path: is required',
    ],
    [
      'startLine 0',
      { ...minimal, contextFiles: [{ path: 'a', startLine: 0 }] },
      'contextFiles[0].startLine: must be 1 or more',
    ],
    [
      'fractional endLine',
      { ...minimal, contextFiles: [{ path: 'a', endLine: 2.5 }] },
      'contextFiles[0].endLine: must be a whole line number',
    ],
    [
      'end before start',
      { ...minimal, contextFiles: [{ path: 'a' }, { path: 'b', startLine: 5, endLine: 4 }] },
      'contextFiles[1].endLine: endLine must not be before startLine',
    ],
    [
      'unknown key in a context entry',
      { ...minimal, contextFiles: [{ path: 'a', lines: 3 }] },
      'contextFiles[0].lines: `lines` is not a unit field',
    ],
    [
      'repeats 0',
      { ...minimal, verificationRepeats: 0 },
      'verificationRepeats: must be a whole number from 1 to 20',
    ],
    [
      'repeats 21',
      { ...minimal, verificationRepeats: 21 },
      'verificationRepeats: must be a whole number from 1 to 20',
    ],
    [
      'repeats 2.5',
      { ...minimal, verificationRepeats: 2.5 },
      'verificationRepeats: must be a whole number from 1 to 20',
    ],
    [
      'repeats as text',
      { ...minimal, verificationRepeats: '3' },
      'verificationRepeats: must be a whole number from 1 to 20',
    ],
    ['blank command', { ...minimal, runVerification: ' ' }, 'runVerification: must not be empty'],
    ['blank workspaceDir', { ...minimal, workspaceDir: '' }, 'workspaceDir: must not be empty'],
    [
      'unknown field',
      { ...minimal, prompt: 'x' },
      'prompt: `prompt` is not a unit field (a unit has: taskName, instruction',
    ],
    ['not an object', [minimal], '(unit): a unit must be a JSON object'],
  ];
  it.each(cases)('%s', (_name, value, expected) => {
    const error = refusal(value);
    expect(error.message.startsWith('unit units/sum.json: ')).toBe(true);
    expect(error.message).toContain(expected);
  });

  it('reports every problem, not only the first', () => {
    const error = refusal({ taskName: 1, verificationRepeats: 0 });
    expect(error.message).toContain('taskName: must be a string');
    expect(error.message).toContain('instruction: is required');
    expect(error.message).toContain('verificationRepeats:');
  });

  it('refuses text that is not JSON, naming the source', () => {
    const error = refusal('{"taskName": "x",');
    expect(error.message).toMatch(/^unit units\/sum\.json: not valid JSON \(.+\); fix the syntax$/);
  });

  it('refuses a duplicate key instead of silently keeping the last one', () => {
    const error = refusal('{"taskName":"x","instruction":"y","targetFiles":["a.ts"],"targetFiles":[]}');
    expect(error.message).toContain('duplicate key "targetFiles"');
    expect(error.message).not.toContain('Records must be');
  });
});

describe('parseUnit: operator settings are refused with where to set them', () => {
  const operatorFields: Array<[string, unknown, string]> = [
    ['endpoint', 'http://evil.example/v1', 'worker.endpoint'],
    ['model', 'big', 'worker.model'],
    ['approval', 'allow', 'verification.approval'],
    ['allowlist', ['sh'], 'verification.allowlist'],
    ['timeoutMs', 1, 'worker.timeoutMs'],
    ['emitAllowlist', ['/'], 'emitAllowlist'],
    ['unitScope', 'off', 'unitScope'],
    ['verificationPolicy', { mode: 'allow' }, 'verification.approval'],
  ];
  it.each(operatorFields)('%s', (field, value, setting) => {
    const error = refusal({ ...minimal, [field]: value });
    expect(error.message).toBe(
      `unit units/sum.json: ${field}: \`${field}\` is an operator setting; a unit cannot set it. ` +
        `Use \`delegate-git config set ${setting} …\``,
    );
  });

  it('the exact message for endpoint', () => {
    expect(refusal({ ...minimal, endpoint: 'x' }).message).toContain(
      '`endpoint` is an operator setting; a unit cannot set it. Use `delegate-git config set worker.endpoint …`',
    );
  });

  it("the plugin's attestation fields point to `attest`", () => {
    expect(refusal({ ...minimal, attestTargets: ['a.ts'] }).message).toContain(
      "attestTargets: `attestTargets` is not a unit field; attestation is a reviewer's act: use `delegate-git attest`",
    );
  });
});

describe('parseUnit: names that are no unit field, whatever Object.prototype holds', () => {
  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])('%s', (field) => {
    const error = refusal(`{"${field}":{},"taskName":"t","instruction":"i"}`);
    expect(error.message).toContain(
      `${field}: \`${field}\` is not a unit field (a unit has: taskName, instruction`,
    );
    expect(error.message).not.toMatch(/operator setting|object Object|function/);
  });

  it('control: an operator setting is still named as one', () => {
    expect(refusal({ ...minimal, model: 'big' }).message).toContain('`model` is an operator setting');
  });
});

describe('parseUnit: the encoding', () => {
  const json = JSON.stringify(minimal);

  it('a UTF-8 byte order mark is refused by name, as policy and key files refuse one, and shown nowhere', () => {
    const error = refusal(`\ufeff${json}`);
    expect(error.message).toBe(
      'unit units/sum.json starts with a byte order mark; save it as UTF-8 without one',
    );
  });

  it.each([
    ['UTF-16LE with its BOM', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(json, 'utf16le')])],
    [
      'UTF-16BE with its BOM',
      Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(json, 'utf16le').swap16()]),
    ],
    ['UTF-16LE without one', Buffer.from(json, 'utf16le')],
    ['UTF-16BE without one', Buffer.from(json, 'utf16le').swap16()],
  ])('%s is named as UTF-16', (_name, bytes) => {
    const error = refusal(bytes.toString('utf8'));
    expect(error.message).toBe('unit units/sum.json is not UTF-8 (it looks like UTF-16); save it as UTF-8');
  });

  it('a syntax error quoting an invisible or control character shows it escaped', () => {
    const error = refusal('\u200b\u202e{"taskName":"t","instruction":"i"}');
    expect(error.message).toMatch(/^unit units\/sum\.json: not valid JSON \(.*\\u200b.*\); fix the syntax$/);
    expect(error.message).not.toMatch(/[\u200b\u202e\ufeff]/);
  });

  it('control: the same unit as UTF-8 is accepted', () => {
    expect(parseUnit(json, 'u.json')).toEqual(minimal);
  });
});

describe('the size of a unit', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'unit-size-'));
  const write = (name: string, text: string) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return file;
  };
  const big = JSON.stringify({ ...minimal, instruction: 'x'.repeat(MAX_UNIT_BYTES) });

  it('a unit file over MAX_UNIT_BYTES is refused in one sentence before it is read whole', async () => {
    const file = write('big.json', big);
    await expect(readUnitFile(file, 'big.json')).rejects.toThrow(
      new RegExp(
        `^unit big\\.json is ${big.length} bytes, over the ${MAX_UNIT_BYTES}-byte limit for a unit; `,
      ),
    );
  });

  it('text over the limit is refused by parseUnit too, and text nested too deep without being parsed', () => {
    expect(refusal(big).message).toContain(`over the ${MAX_UNIT_BYTES}-byte limit for a unit`);
    expect(refusal('['.repeat(100_000)).message).toBe(
      'unit units/sum.json: Not strict JSON: arrays and objects nested more than 64 deep',
    );
  });

  it('control: a unit at the limit is read and parsed', async () => {
    const unit = { ...minimal, instruction: 'y' };
    const text = JSON.stringify(unit);
    const padded = text + ' '.repeat(MAX_UNIT_BYTES - text.length);
    const file = write('at-limit.json', padded);
    expect(parseUnit(await readUnitFile(file, 'at-limit.json'), 'at-limit.json')).toEqual(unit);
  });

  it('a file that cannot be read says which and why', async () => {
    await expect(readUnitFile(path.join(dir, 'missing.json'), 'missing.json')).rejects.toThrow(
      'Cannot read the unit file missing.json (ENOENT).',
    );
  });
});
