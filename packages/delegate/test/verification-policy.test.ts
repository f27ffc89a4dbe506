import { describe, expect, it } from 'vitest';
import {
  evaluateVerificationPolicy,
  programName,
  resolveVerificationRepeats,
  type VerificationPolicy,
} from '../src/verification-policy.js';

const ask = (allowlist: string[] = []): VerificationPolicy => ({ approval: 'ask', allowlist });

describe('programName', () => {
  it.each([
    ['npm test', 'npm'],
    ['  node --test', 'node'],
    ['/usr/local/bin/node --test', 'node'],
    ['NODE.EXE -e 1', 'node'],
    ['npx.cmd vitest run', 'npx'],
    ['build.BAT', 'build'],
    ['./scripts/check.ps1 -All', 'check'],
    ['"C:\\Program Files\\nodejs\\node.exe" --test', 'node'],
    ["'/opt/my tools/run tests.sh' --fast", 'run tests.sh'],
    ['"/opt/unterminated quote/pytest', 'pytest'],
    ['C:\\tools\\pytest.exe -q', 'pytest'],
    ['python3\t-m pytest', 'python3'],
    ['node.js', 'node.js'],
  ])('%j → %j', (command, expected) => {
    expect(programName(command)).toBe(expected);
  });
});

describe('evaluateVerificationPolicy', () => {
  it.each([undefined, '', '   '])('no command (%j) → deny, no program', (command) => {
    expect(evaluateVerificationPolicy(command, { approval: 'allow', allowlist: ['node'] })).toEqual({
      decision: 'deny',
      program: null,
      reason: 'the unit declares no verification command',
    });
  });

  it('approval "deny" refuses even an allowlisted program', () => {
    expect(evaluateVerificationPolicy('node --test', { approval: 'deny', allowlist: ['node'] })).toEqual({
      decision: 'deny',
      program: 'node',
      reason: 'verification approval is set to "deny" in the operator settings',
    });
  });

  it('approval "allow" runs anything', () => {
    expect(
      evaluateVerificationPolicy('rm -rf build && make test', { approval: 'allow', allowlist: [] }),
    ).toEqual({
      decision: 'allow',
      program: 'rm',
      reason: 'verification approval is set to "allow" in the operator settings',
    });
  });

  it('an allowlisted program runs without asking, matched by its normalised name', () => {
    expect(evaluateVerificationPolicy('"C:\\Program Files\\nodejs\\node.exe" --test', ask(['Node']))).toEqual(
      {
        decision: 'allow',
        program: 'node',
        reason: '`node` is on the verification allowlist',
      },
    );
    expect(evaluateVerificationPolicy('/usr/bin/npm test', ask(['/opt/bin/npm.cmd'])).decision).toBe('allow');
  });

  it('allowlisting matches the program only (the documented trade)', () => {
    expect(evaluateVerificationPolicy("node -e \"require('fs').rmSync('x')\"", ask(['node'])).decision).toBe(
      'allow',
    );
  });

  it('anything else asks', () => {
    expect(evaluateVerificationPolicy('nodejs --test', ask(['node']))).toEqual({
      decision: 'ask',
      program: 'nodejs',
      reason: "`nodejs` is not on the verification allowlist, so running it needs the operator's approval",
    });
    expect(evaluateVerificationPolicy('node --test', ask([' ', '']))).toMatchObject({ decision: 'ask' });
  });

  it('a quoted path with spaces is one program, not its first word', () => {
    // The plugin split `"C:\Program Files\tool.exe"` at the space and matched `"c:\program`.
    expect(evaluateVerificationPolicy('"/opt/Program Files/pytest" -q', ask(['program'])).decision).toBe(
      'ask',
    );
    expect(evaluateVerificationPolicy('"/opt/Program Files/pytest" -q', ask(['pytest'])).decision).toBe(
      'allow',
    );
  });
});

describe('resolveVerificationRepeats', () => {
  it.each([
    [undefined, 3],
    [null, 3],
    [0, 3],
    [-2, 3],
    [2.5, 3],
    ['5', 3],
    [Number.NaN, 3],
    [Number.POSITIVE_INFINITY, 3],
    [1, 1],
    [7, 7],
    [20, 20],
    [21, 20],
    [1000, 20],
  ])('%j → %j with the default operator setting', (value, expected) => {
    expect(resolveVerificationRepeats(value)).toBe(expected);
  });

  it('uses the operator default, itself coerced', () => {
    expect(resolveVerificationRepeats(undefined, 5)).toBe(5);
    expect(resolveVerificationRepeats(0, 50)).toBe(20);
    expect(resolveVerificationRepeats(undefined, 0)).toBe(3);
    expect(resolveVerificationRepeats(4, 9)).toBe(4);
  });
});
