/**
 * Whether a unit's verification command may run. The command is chosen by a model and runs with the operator's
 * authority, so the default is to ask, silence is never consent, and the allowlist is the operator's. Allowlisting
 * matches the program only: `node` on the list also allows `node -e "<anything>"` (an accepted, documented trade
 * until the policy can judge arguments). The command runs through `/bin/sh -c`, so a command that can start a
 * second program or redirect (`node --test && curl … | sh`) is never covered by the allowlist: it is asked about.
 */
import path from 'node:path';

export type VerificationApproval = 'ask' | 'allow' | 'deny';

export interface VerificationPolicy {
  approval: VerificationApproval;
  allowlist: string[];
}

export interface VerificationPolicyDecision {
  decision: 'allow' | 'ask' | 'deny';
  /** The normalised program name, or null when there is no command. */
  program: string | null;
  reason: string;
}

const DEFAULT_VERIFICATION_REPEATS = 3;
const MAX_VERIFICATION_REPEATS = 20;

/**
 * Shell syntax that can run another program (`;`, `&`, `|`, a line break, a backtick, `$(`, process substitution) or
 * redirect (`<`, `>`), and parameter expansion (`${`). Judged on the raw text, quotes included: `node -e "a;b"` is
 * asked about although the `;` is quoted, since a false question costs a keystroke and a false allow runs a program
 * nobody approved.
 */
const SHELL_SYNTAX = /[;&|\n\r`<>]|\$[({]/;

/** The first shell operator in `command`, as the operator is shown it, or null when there is none. */
function shellSyntaxIn(command: string): string | null {
  const found = SHELL_SYNTAX.exec(command)?.[0];
  if (found === undefined) return null;
  if (found === '\n') return 'a line break';
  if (found === '\r') return 'a carriage return';
  if (found === '`') return 'a backtick';
  return `\`${found}\``;
}

/**
 * A first word the shell runs as written: quoted whole, or unquoted without an assignment (`X=/npm touch f` runs
 * `touch`), an expansion, a glob, a tilde or a brace, each of which makes the program another word than the one
 * read here (`"/usr/include/node"/../../../bin/sh` is one word, not `node`).
 */
const PLAIN_FIRST_WORD = /^\s*(?:"(?:[^"$`\\]|\\[^"$`\\\n])*"|'[^']*'|[^\s"'$`\\=*?[~{]+)(?=\s|$)/;

/** The first token of a shell command; a quoted first token is taken whole (`"C:\Program Files\node.exe" x`). */
function firstToken(command: string): string {
  const trimmed = command.trimStart();
  const quote = trimmed[0];
  if (quote === '"' || quote === "'") {
    const end = trimmed.indexOf(quote, 1);
    return end === -1 ? trimmed.slice(1) : trimmed.slice(1, end);
  }
  return trimmed.split(/\s/, 1)[0] ?? '';
}

/**
 * The program name used for allowlist matching: basename (either separator, so a Windows path reads the same on
 * any host), lowercased, without a Windows launcher extension. `/usr/bin/Node.EXE` → `node`.
 */
export function programName(commandOrProgram: string): string {
  return path.win32
    .basename(firstToken(commandOrProgram))
    .toLowerCase()
    .replace(/\.(?:exe|cmd|bat|ps1)$/, '');
}

export function evaluateVerificationPolicy(
  command: string | undefined,
  policy: VerificationPolicy,
): VerificationPolicyDecision {
  if (command === undefined || command.trim() === '') {
    return { decision: 'deny', program: null, reason: 'the unit declares no verification command' };
  }
  const program = programName(command);
  if (policy.approval === 'deny') {
    return {
      decision: 'deny',
      program,
      reason: 'verification approval is set to "deny" in the operator settings',
    };
  }
  if (policy.approval === 'allow') {
    return {
      decision: 'allow',
      program,
      reason: 'verification approval is set to "allow" in the operator settings',
    };
  }
  const allowlisted = policy.allowlist.some((entry) => entry.trim() !== '' && programName(entry) === program);
  const syntax = shellSyntaxIn(command);
  if (allowlisted && !PLAIN_FIRST_WORD.test(command)) {
    return {
      decision: 'ask',
      program,
      reason:
        `the command does not start with a plain program name (it starts with an assignment, an expansion or a word ` +
        `the shell builds), so the allowlist, which matches one program, does not cover it, and running it needs ` +
        "the operator's approval",
    };
  }
  if (allowlisted && syntax !== null) {
    return {
      decision: 'ask',
      program,
      reason:
        `\`${program}\` is on the verification allowlist, but the command chains or redirects (it holds ` +
        `${syntax}) and runs through a shell; the allowlist matches one program, so it does not cover this ` +
        "command, and running it needs the operator's approval",
    };
  }
  if (allowlisted) {
    return { decision: 'allow', program, reason: `\`${program}\` is on the verification allowlist` };
  }
  return {
    decision: 'ask',
    program,
    reason: `\`${program}\` is not on the verification allowlist, so running it needs the operator's approval`,
  };
}

/**
 * How many times the command runs: the unit's `verificationRepeats` or the operator's `verification.repeats`,
 * whichever is larger. Repeats are the operator's guard against a flaky contract, so a unit (model input) may ask
 * for more runs, never fewer. Each value that is not a positive whole number is ignored (the operator's falls back
 * to 3), and both are capped at 20.
 */
export function resolveVerificationRepeats(
  unitValue: unknown,
  operatorValue: unknown = DEFAULT_VERIFICATION_REPEATS,
): number {
  const operator = isPositiveInteger(operatorValue)
    ? Math.min(operatorValue, MAX_VERIFICATION_REPEATS)
    : DEFAULT_VERIFICATION_REPEATS;
  if (!isPositiveInteger(unitValue)) return operator;
  return Math.max(operator, Math.min(unitValue, MAX_VERIFICATION_REPEATS));
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}
