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

describe('evaluateVerificationPolicy: a first word the shell builds is not the program the allowlist read', () => {
  // red-team round 19, f01: `X=/npm touch f` ran touch under an allowlist of npm.
  it.each([
    ['X=/npm touch PWNED', ['npm']],
    ['"/usr/include/node"/../../../bin/sh -c id', ['node']],
    ['~/bin/node x', ['node']],
    ["'/x/node'/../sh x", ['node']],
  ])('%j → ask', (command, allowlist) => {
    const decision = evaluateVerificationPolicy(command, ask(allowlist));
    expect(decision.decision).toBe('ask');
    expect(decision.reason).toContain('does not start with a plain program name');
  });
  it.each([
    ['node --test test/a.test.js', ['node']],
    ['/usr/bin/node --test', ['node']],
    ['"C:\\Program Files\\nodejs\\node.exe" --test', ['node']],
    ["'node' --test", ['node']],
  ])('control: %j → allow', (command, allowlist) => {
    expect(evaluateVerificationPolicy(command, ask(allowlist)).decision).toBe('allow');
  });
});

describe('evaluateVerificationPolicy: a command that chains or redirects is not covered by the allowlist', () => {
  // `sh -c` runs every program in the command; the allowlist judged only the first (red-team round 18, f10).
  it.each([
    ['node --test test/a.test.js && touch RAN-UNASKED', '`&`'],
    ['node --test test/a.test.js & touch RAN-UNASKED', '`&`'],
    ['node --test test/a.test.js; touch RAN-UNASKED', '`;`'],
    ['node --test test/a.test.js || touch RAN-UNASKED', '`|`'],
    ['node --test test/a.test.js | sh', '`|`'],
    ['node --test test/a.test.js\ntouch RAN-UNASKED', 'a line break'],
    ['node --test test/a.test.js\rtouch RAN-UNASKED', 'a carriage return'],
    ['node --test `touch RAN-UNASKED`', 'a backtick'],
    ['node --test $(touch RAN-UNASKED)', '`$(`'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's own `${`, not a template placeholder
    ['node --test ${X:=x}', '`${`'],
    ['node --test test/a.test.js > ~/.bashrc', '`>`'],
    ['node --test < /etc/passwd', '`<`'],
    ['node --test <(touch RAN-UNASKED)', '`<`'],
    ['node -e "a;b"', '`;`'], // quoted, still asked about: a false question is the safe mistake
  ])('%j → ask, naming %s', (command, shown) => {
    expect(evaluateVerificationPolicy(command, ask(['node']))).toEqual({
      decision: 'ask',
      program: 'node',
      reason:
        `\`node\` is on the verification allowlist, but the command chains or redirects (it holds ${shown}) and ` +
        'runs through a shell; the allowlist matches one program, so it does not cover this command, and running ' +
        "it needs the operator's approval",
    });
  });

  it.each([
    'node --test test/a.test.js',
    'npm test',
    '"/opt/my tools/node" --test "test/a b.test.js"',
    "node --test 'test/with space.test.js' --test-reporter=spec",
    'npx vitest run -t "adds two numbers"',
  ])('control: %j is allowed (no shell operator)', (command) => {
    expect(evaluateVerificationPolicy(command, ask(['node', 'npm', 'npx'])).decision).toBe('allow');
  });

  it('the operator\'s "allow" and "deny" are unchanged by shell syntax', () => {
    const chained = 'node --test && touch RAN';
    expect(evaluateVerificationPolicy(chained, { approval: 'allow', allowlist: [] }).decision).toBe('allow');
    expect(evaluateVerificationPolicy(chained, { approval: 'deny', allowlist: ['node'] }).decision).toBe(
      'deny',
    );
  });

  it('a chained command whose program is not allowlisted asks for that reason', () => {
    expect(evaluateVerificationPolicy('make && node --test', ask(['node'])).reason).toBe(
      "`make` is not on the verification allowlist, so running it needs the operator's approval",
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
    [1, 3],
    [2, 3],
    [3, 3],
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
    expect(resolveVerificationRepeats('x', 7)).toBe(7);
  });

  it('a unit may ask for more runs than the operator set, never fewer (red-team round 18, f11)', () => {
    expect(resolveVerificationRepeats(1, 5)).toBe(5);
    expect(resolveVerificationRepeats(4, 9)).toBe(9);
    expect(resolveVerificationRepeats(6, 3)).toBe(6); // control: more is honoured
    expect(resolveVerificationRepeats(3, 3)).toBe(3);
    expect(resolveVerificationRepeats(50, 3)).toBe(20);
    expect(resolveVerificationRepeats(2, 50)).toBe(20);
    expect(resolveVerificationRepeats(-1, 5)).toBe(5);
  });
});
