/**
 * The receipt: what a delegation reports, to the operator (the CLI renders it) and to the signed verdict
 * (verdict-predicate.ts). The steps fill it in as they run, so a unit that ends early still says how far it came.
 */
import type { InjectedContext } from './context.js';
import type { RedactedFailure } from './redaction.js';
import type { Unit } from './unit.js';
import type { Verdict } from './verdict.js';

export interface ReceiptFile {
  path: string;
  mode: 'created' | 'patched';
  hunks: number;
  lines: number;
  bytes: number;
  sha256: string;
  gitBlob: string;
}

export interface DelegationReceipt {
  verdict: Verdict;
  taskName: string;
  workspace: string | null;
  message: string | null;
  files: ReceiptFile[];
  errors: string[];
  /** Paths the worker emitted again after a block for the same file: ignored, the first block was used. */
  duplicates: string[];
  context: Array<Omit<InjectedContext, 'text'>>;
  /** The target files that existed, shown whole beside the declared context (unless it named them). */
  contextTargets: Array<Omit<InjectedContext, 'text'>>;
  /** What the retry context added beyond the unit's declared context (shown to the worker, recorded as signed). */
  contextWidened: Array<Omit<InjectedContext, 'text'>>;
  verification: {
    command: string | null;
    skipped: string | null;
    runs: Array<{ exitCode: number; passed: number; failed: number; durationMs: number; timedOut: boolean }>;
    flaky: boolean;
    failures: RedactedFailure[];
    omittedFailures: number;
    rawLog: string | null;
    /** The limit each run had (verification.timeoutMs), when one ran. */
    timeoutMs: number | null;
  };
  /** `rawLog`: where its output is kept (local only, never signed). */
  coherence: {
    command: string;
    exitCode: number;
    passed: number;
    failed: number;
    rawLog: string | null;
  } | null;
  contract: {
    files: Array<{ path: string; sha256: string | null; unchanged: boolean }>;
    violations: string[];
  };
  /**
   * `sent`: our estimate of the prompt's tokens as sent; `cut`: the server counted far fewer (promptSeemsCut), so its
   * context window may have cut the prompt.
   */
  tokens: { prompt: number; completion: number; estimated: boolean; sent: number; cut: boolean };
  /** `reply`: where the worker's answer is kept (local only), for the operator to read what was refused or why. */
  worker: {
    host: string;
    model: string;
    durationMs: number;
    truncated: boolean;
    reply: string | null;
  } | null;
  envelope: string | null;
}

/** A receipt before anything happened: what a unit that ends early reports. */
export function emptyReceipt(unit: Pick<Unit, 'taskName'>): DelegationReceipt {
  return {
    verdict: 'NO_CHANGES',
    taskName: unit.taskName,
    workspace: null,
    message: null,
    files: [],
    errors: [],
    duplicates: [],
    context: [],
    contextTargets: [],
    contextWidened: [],
    verification: {
      command: null,
      skipped: null,
      runs: [],
      flaky: false,
      failures: [],
      omittedFailures: 0,
      rawLog: null,
      timeoutMs: null,
    },
    coherence: null,
    contract: { files: [], violations: [] },
    tokens: { prompt: 0, completion: 0, estimated: false, sent: 0, cut: false },
    worker: null,
    envelope: null,
  };
}
