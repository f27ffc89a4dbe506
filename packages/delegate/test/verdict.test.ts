import { VERDICTS } from '@delegate-git/core';
import { describe, expect, it } from 'vitest';
import { resolveVerdict, type Verdict, type VerdictInputs, verdictExitCode } from '../src/verdict.js';

/** A unit that wrote one file and passed every run: UNIT_PASSED. Each row changes what it names. */
const passing: VerdictInputs = {
  contractViolations: [],
  verificationNotApproved: false,
  ran: true,
  flaky: false,
  unitFailed: 0,
  coherenceFailed: false,
  filesWritten: 1,
  emissionErrors: 0,
};

const violation = ['test/a.test.ts was modified while the unit ran'];

describe('resolveVerdict precedence', () => {
  const rows: Array<[string, Partial<VerdictInputs>, Verdict]> = [
    ['control: everything passed', {}, 'UNIT_PASSED'],
    // CONTRACT_MODIFIED outranks everything.
    ['contract violation over a pass', { contractViolations: violation }, 'CONTRACT_MODIFIED'],
    [
      'contract violation over every other signal',
      {
        contractViolations: violation,
        verificationNotApproved: true,
        flaky: true,
        coherenceFailed: true,
        unitFailed: 2,
        emissionErrors: 1,
      },
      'CONTRACT_MODIFIED',
    ],
    [
      'contract violation with nothing written',
      { contractViolations: violation, filesWritten: 0 },
      'CONTRACT_MODIFIED',
    ],
    // VERIFICATION_NOT_APPROVED next.
    ['not approved', { verificationNotApproved: true, ran: false }, 'VERIFICATION_NOT_APPROVED'],
    [
      'not approved over flaky, coherence and emission errors',
      { verificationNotApproved: true, ran: false, flaky: true, coherenceFailed: true, emissionErrors: 2 },
      'VERIFICATION_NOT_APPROVED',
    ],
    // UNIT_FLAKY next.
    ['flaky', { flaky: true, unitFailed: 1 }, 'UNIT_FLAKY'],
    ['flaky over coherence failure', { flaky: true, unitFailed: 1, coherenceFailed: true }, 'UNIT_FLAKY'],
    // Coherence.
    ['coherence failed, unit passed', { coherenceFailed: true }, 'INCOHERENT'],
    ['coherence failed, unit unverified', { coherenceFailed: true, ran: false }, 'INCOHERENT'],
    ['coherence failed, unit failed', { coherenceFailed: true, unitFailed: 1 }, 'UNIT_FAILED'],
    ['coherence failed, emission errors', { coherenceFailed: true, emissionErrors: 1 }, 'UNIT_FAILED'],
    // NO_CHANGES.
    ['nothing written, nothing refused, no command', { filesWritten: 0, ran: false }, 'NO_CHANGES'],
    ['nothing written, nothing refused, runs passed', { filesWritten: 0 }, 'NO_CHANGES'],
    // The worker's word that nothing needed changing, which the command does not bear out (ux57 f09).
    ['nothing written, nothing refused, a failing run', { filesWritten: 0, unitFailed: 3 }, 'UNIT_FAILED'],
    // Emission errors.
    ['nothing written because everything was refused', { filesWritten: 0, emissionErrors: 2 }, 'UNIT_FAILED'],
    ['partly written, runs passed', { emissionErrors: 1 }, 'UNIT_FAILED'],
    ['partly written, no command', { emissionErrors: 1, ran: false }, 'UNIT_FAILED'],
    // Unverified, failed, passed.
    ['written, no command ran', { ran: false }, 'UNIT_UNVERIFIED'],
    ['written, a run failed', { unitFailed: 1 }, 'UNIT_FAILED'],
    ['written, all runs failed', { unitFailed: 3 }, 'UNIT_FAILED'],
  ];

  it.each(rows)('%s → %s', (_name, change, expected) => {
    expect(resolveVerdict({ ...passing, ...change })).toBe(expected);
  });

  it('every verdict name is one of DESIGN 4.4', () => {
    for (const [, change] of rows) expect(VERDICTS).toContain(resolveVerdict({ ...passing, ...change }));
    expect(VERDICTS).toHaveLength(10);
  });
});

describe('verdict consequences', () => {
  it.each(VERDICTS.map((v) => [v] as const))('%s', (verdict) => {
    const succeeds = verdict === 'UNIT_PASSED' || verdict === 'NO_CHANGES';
    expect(verdictExitCode(verdict)).toBe(succeeds ? 0 : 1);
  });
});
