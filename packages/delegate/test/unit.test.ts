import { DelegateGitError } from '@delegate-git/core';
import { describe, expect, it } from 'vitest';
import { parseUnit } from '../src/unit.js';

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
