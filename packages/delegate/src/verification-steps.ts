/**
 * The verification and coherence steps of a delegation (DESIGN 4.3): whether each command may run (the operator's
 * policy, or the operator asked), the environment it runs in, and what the receipt says of its runs. The commands run
 * code a model wrote, so they run only as allowed and without the operator's secrets.
 */
import path from 'node:path';
import { writeFileAtomic } from '@delegate-git/core/atomic-file';
import { SIGNING_KEY_ENV } from '@delegate-git/core/signing-key';
import type { DelegationOptions } from './delegation-options.js';
import type { DelegationReceipt } from './receipt.js';
import { redactFailures } from './redaction.js';
import { parseTestOutput } from './test-output.js';
import type { Unit } from './unit.js';
import { evaluateVerificationPolicy, resolveVerificationRepeats } from './verification-policy.js';
import { runCommand, runPassed, runVerification } from './verification-runner.js';
import type { PlannedFile } from './write-plan.js';
import { fingerprintOf } from './written-content.js';

/**
 * The environment verification and coherence commands run with. The unit's command is chosen by a model, so the
 * operator's secrets must not go along: the signing key (in CI it lives only in this variable; a command that
 * could read it could sign its own UNIT_PASSED) and the worker's API key.
 */
function commandEnvironment(env: NodeJS.ProcessEnv | undefined, apiKeyEnv: string | null): NodeJS.ProcessEnv {
  const copy = { ...(env ?? process.env) };
  delete copy[SIGNING_KEY_ENV];
  if (apiKeyEnv) delete copy[apiKeyEnv];
  return copy;
}

/** What the verification runs decided (DESIGN 4.3): run, refused, or not run, and how the runs went. */
export interface VerificationOutcome {
  ran: boolean;
  notApproved: boolean;
  /** Failing tests over all runs (a failing run with no parsed failure counts one). */
  unitFailed: number;
  flaky: boolean;
  /** The written files as the last run left them, when it did not change them itself (null: it did, or none ran). */
  verifiedAs: string | null;
}

/**
 * The unit's verification command, run when nothing the worker sent was refused and the operator's policy allows it
 * (or the operator, asked, does); the receipt's `verification` says what happened and why. It runs when the worker
 * wrote nothing too: its word that nothing needed changing is a claim, and the command decides it.
 */
export async function verificationStep(
  unit: Unit,
  opts: DelegationOptions,
  receipt: DelegationReceipt,
  written: { workspace: string; files: readonly PlannedFile[]; refused: boolean },
): Promise<VerificationOutcome> {
  const { repo, settings } = opts;
  const outcome: VerificationOutcome = {
    ran: false,
    notApproved: false,
    unitFailed: 0,
    flaky: false,
    verifiedAs: null,
  };
  const command = unit.runVerification ?? null;
  receipt.verification.command = command;
  if (!command) return outcome;
  if (written.refused) {
    receipt.verification.skipped = 'the emission had refused files';
    return outcome;
  }
  const policy = evaluateVerificationPolicy(command, settings.verification);
  const approved =
    policy.decision === 'allow' ||
    (policy.decision === 'ask' && opts.approve !== undefined && (await opts.approve(command)));
  if (!approved) {
    receipt.verification.skipped =
      policy.decision === 'deny'
        ? policy.reason
        : opts.approve
          ? 'the operator declined to run it'
          : `${policy.reason}; no terminal to ask on, so it was refused`;
    return { ...outcome, notApproved: true };
  }
  const rawLog = path.join(repo.stateDir, 'last-verification.log');
  const result = await runVerification(command, {
    cwd: written.workspace,
    timeoutMs: settings.verification.timeoutMs,
    repeats: resolveVerificationRepeats(unit.verificationRepeats, settings.verification.repeats),
    logPath: rawLog,
    env: commandEnvironment(opts.env, settings.worker.apiKeyEnv),
    fingerprint: () => fingerprintOf(written.files),
    onRun: opts.onVerifying,
    interrupt: opts.interrupt?.signal,
  });
  receipt.verification.rawLog = rawLog;
  receipt.verification.timeoutMs = settings.verification.timeoutMs;
  receipt.verification.flaky = result.flaky;
  receipt.verification.runs = result.runs.map(({ exitCode, passed, failed, durationMs, timedOut }) => ({
    exitCode,
    passed,
    failed,
    durationMs,
    timedOut,
  }));
  const failing = result.runs.find((r) => !runPassed(r));
  if (failing) {
    const redacted = await redactFailures(await parseTestOutput(failing.output, failing.exitCode), {
      workspace: written.workspace,
    });
    receipt.verification.failures = redacted.failures;
    receipt.verification.omittedFailures = redacted.omittedFailures;
  }
  return {
    ran: true,
    notApproved: false,
    unitFailed: result.runs.reduce((n, r) => n + (runPassed(r) ? 0 : Math.max(1, r.failed)), 0),
    flaky: result.flaky,
    verifiedAs: result.changedByLastRun ? null : fingerprintOf(written.files),
  };
}

/**
 * The operator's project-wide check, run from the top level after the unit's own verification (never where the
 * operator denies commands); whether it failed.
 */
export async function coherenceStep(
  opts: DelegationOptions,
  receipt: DelegationReceipt,
  top: string,
): Promise<boolean> {
  const { settings } = opts;
  if (!settings.coherence || settings.verification.approval === 'deny') return false;
  const run = await runCommand(settings.coherence, {
    cwd: top,
    timeoutMs: settings.verification.timeoutMs,
    env: commandEnvironment(opts.env, settings.worker.apiKeyEnv),
    interrupt: opts.interrupt?.signal,
  });
  // Kept as the unit's runs are: a receipt that says INCOHERENT and nothing of why helps no one (ux57 f14).
  const rawLog = path.join(opts.repo.stateDir, 'last-coherence.log');
  const kept = await writeFileAtomic(rawLog, `$ ${settings.coherence}\n${run.output}\n`, 0o600).then(
    () => rawLog,
    () => null,
  );
  receipt.coherence = {
    command: settings.coherence,
    exitCode: run.exitCode,
    passed: run.passed,
    failed: run.failed,
    rawLog: kept,
  };
  return !runPassed(run);
}
