/**
 * The signed verdict's predicate: what the record says beside the files' digests (the unit, the context shown, the
 * contract, the runs, the worker, the commit the unit started from), all taken from the receipt, so what is signed
 * is what the operator was told.
 */
import { createHash } from 'node:crypto';
import type { Governance } from '@delegate-git/core/governance';
import type { Repository } from '@delegate-git/core/repository';
import { rfc3339, TOOL } from '@delegate-git/core/statement';
import type { InjectedContext } from './context.js';
import type { DelegationReceipt } from './receipt.js';
import type { Unit } from './unit.js';

export async function headCommit(repo: Repository): Promise<string | null> {
  try {
    const head = await repo.objects.read('HEAD');
    return head?.type === 'commit' ? head.oid : null;
  } catch {
    return null;
  }
}

function contextEntry(c: Omit<InjectedContext, 'text'>) {
  return { path: c.path, lineRange: c.lineRange, sha256: c.sha256 };
}

export function verdictPredicate(
  unit: Unit,
  r: DelegationReceipt,
  governance: Governance,
  configuredModel: string,
  baseCommit: string | null,
) {
  const sha = (text: string) => createHash('sha256').update(text).digest('hex');
  return {
    verdict: r.verdict,
    unit: {
      name: unit.taskName,
      instructionSha256: sha(unit.instruction),
      targetFiles: unit.targetFiles ?? [],
      contextFiles: r.context.map(contextEntry),
      // The worker was also shown these: the target files as they were (the record says what it changed from)...
      ...(r.contextTargets.length > 0 ? { targetContextFiles: r.contextTargets.map(contextEntry) } : {}),
      // ...and the previous failure's surroundings.
      ...(r.contextWidened.length > 0 ? { retryContextFiles: r.contextWidened.map(contextEntry) } : {}),
      contractFiles: r.contract.files.map((c) => ({ path: c.path, sha256: c.sha256 })),
      runVerification: unit.runVerification ?? null,
      repeats: r.verification.runs.length,
    },
    verification: {
      runs: r.verification.runs,
      flaky: r.verification.flaky,
      skipped: r.verification.skipped,
      failures: r.verification.failures,
    },
    coherence: r.coherence && {
      command: r.coherence.command,
      exitCode: r.coherence.exitCode,
      passed: r.coherence.passed,
      failed: r.coherence.failed,
    },
    contract: r.contract.violations.length ? { violations: r.contract.violations } : { unchanged: true },
    files: r.files.map((f) => ({
      path: f.path,
      mode: f.mode,
      hunks: f.hunks,
      lines: f.lines,
      bytes: f.bytes,
    })),
    worker: r.worker && {
      endpointHost: r.worker.host,
      // The operator's setting; the name the server gave is its own claim, kept apart when it differs.
      model: configuredModel,
      ...(r.worker.model !== configuredModel ? { reportedModel: r.worker.model } : {}),
      promptTokens: r.tokens.prompt,
      completionTokens: r.tokens.completion,
      // The server sent no usage: these are the client's estimate, and say so.
      ...(r.tokens.estimated ? { tokensEstimated: true } : {}),
      durationMs: r.worker.durationMs,
    },
    repository: { id: governance.policy.repositoryId, ...(baseCommit ? { baseCommit } : {}) },
    createdAt: rfc3339(),
    tool: { ...TOOL },
  };
}
