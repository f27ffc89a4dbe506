/**
 * The verdict of a delegated unit, decided from what commands did, never from what the worker claimed.
 * CONTEXT_REFUSED and WORKER_ERROR end a unit before anything is written, so the orchestrator sets them
 * directly; `resolveVerdict` decides the rest once files are written and commands have run.
 *
 * Decision (the plugin contradicted itself here, 2.12): a unit whose verification command was refused approval
 * records VERIFICATION_NOT_APPROVED, not UNIT_FAILED (nothing failed) and not UNIT_UNVERIFIED (that means "no
 * command was declared", while here one was declared and deliberately not run). It never promotes: only
 * UNIT_PASSED does. Its files are still recorded, because the ledger is an audit trail of what was written.
 */
import type { VerdictName } from '@delegate-git/core/statement';

/** The verdict names are the ledger's (core's statement.ts): one list for the writer and every reader. */
export type Verdict = VerdictName;

export interface VerdictInputs {
  contractViolations: string[];
  verificationNotApproved: boolean;
  /** A verification command ran. */
  ran: boolean;
  /** The runs disagreed. */
  flaky: boolean;
  /** Failed count of the unit's own runs. */
  unitFailed: number;
  /** The operator's coherence (whole-project) command ran and failed. */
  coherenceFailed: boolean;
  filesWritten: number;
  /** Files the worker named that were refused (containment, contract, scope, patch, create-only). */
  emissionErrors: number;
  /** The files written changed during the last verification run or the coherence check after it. */
  changedWhileVerified?: boolean;
}

/**
 * Precedence (DESIGN 4.4, plugin 2.12), first match wins:
 * CONTRACT_MODIFIED > VERIFICATION_NOT_APPROVED > UNIT_FLAKY > coherence failed (INCOHERENT if the unit itself
 * passed or was unverified, else UNIT_FAILED) > NO_CHANGES (nothing written, nothing refused, and the command, if
 * any, passed on the work tree as it is; else UNIT_FAILED) > UNIT_FAILED
 * (any emission error: a unit that was only partly written did not do what it was asked) > UNIT_UNVERIFIED (no
 * command ran) > UNIT_FAILED (a run failed) > UNIT_UNVERIFIED (the files changed while the last run verified them)
 * > UNIT_PASSED.
 */
export function resolveVerdict(i: VerdictInputs): Verdict {
  if (i.contractViolations.length > 0) return 'CONTRACT_MODIFIED';
  if (i.verificationNotApproved) return 'VERIFICATION_NOT_APPROVED';
  if (i.flaky) return 'UNIT_FLAKY';
  if (i.coherenceFailed) {
    const unitHeld = i.emissionErrors === 0 && (!i.ran || i.unitFailed === 0);
    return unitHeld ? 'INCOHERENT' : 'UNIT_FAILED';
  }
  // Nothing written is NO_CHANGES only when the command, if there is one, passes on the work tree as it is.
  if (i.filesWritten === 0 && i.emissionErrors === 0) return i.unitFailed > 0 ? 'UNIT_FAILED' : 'NO_CHANGES';
  if (i.emissionErrors > 0) return 'UNIT_FAILED';
  if (!i.ran) return 'UNIT_UNVERIFIED';
  if (i.unitFailed > 0) return 'UNIT_FAILED';
  // What would be recorded is not what the last run verified.
  if (i.changedWhileVerified) return 'UNIT_UNVERIFIED';
  return 'UNIT_PASSED';
}

/** 0 for UNIT_PASSED and NO_CHANGES (nothing went wrong), 1 for every other verdict. */
export function verdictExitCode(v: Verdict): 0 | 1 {
  return v === 'UNIT_PASSED' || v === 'NO_CHANGES' ? 0 : 1;
}
