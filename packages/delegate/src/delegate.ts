/**
 * One delegation, as the steps of DESIGN 4.3, each failing closed:
 * workspace → contract pinning → context (budget, credential scan) → worker → emission → writes → approval →
 * verification runs → coherence → contract re-hash → redaction → verdict → signed record in the ledger → receipt.
 */
import { createHash } from 'node:crypto';
import { lstatSync } from 'node:fs';
import path from 'node:path';
import { DelegateGitError, InterruptedError } from '@delegate-git/core/errors';
import type { WaitingGit } from '@delegate-git/core/git';
import type { Governance } from '@delegate-git/core/governance';
import { isGovernanceFile } from '@delegate-git/core/governed-paths';
import { relativePosix } from '@delegate-git/core/path-within';
import { isRepositoryPath } from '@delegate-git/core/record';
import { recordStatement } from '@delegate-git/core/recording';
import type { Repository } from '@delegate-git/core/repository';
import { SIGNING_KEY_ENV, type SigningKey } from '@delegate-git/core/signing-key';
import { rfc3339, TOOL, verdictStatement } from '@delegate-git/core/statement';
import { canonicalisePath, entersGitDir, locateReadable, resolveWorkspace } from './containment.js';
import { type InjectedContext, readContext } from './context.js';
import { parseEmission } from './emission.js';
import { type HeldInGit, heldInGit } from './git-held.js';
import { type Interrupt, signalExitCode } from './interruption.js';
import { type InterruptedRun, interruptionNotice } from './interruption-notice.js';
import type { OperatorSettings } from './operator-config.js';
import { buildWorkerMessages } from './prompt.js';
import { type RedactedFailure, redactFailures } from './redaction.js';
import { rememberRetryLocations, retryWindows, takeRetryLocations } from './retry-context.js';
import { parseTestOutput } from './test-output.js';
import type { Unit } from './unit.js';
import { WriteJournal } from './unrecorded-writes.js';
import { resolveVerdict, type Verdict } from './verdict.js';
import { evaluateVerificationPolicy, resolveVerificationRepeats } from './verification-policy.js';
import { runCommand, runPassed, runVerification } from './verification-runner.js';
import { promptSeemsCut } from './worker-advice.js';
import { callWorker, WorkerError, type WorkerProgress } from './worker-client.js';
import {
  type AppliedWrite,
  applyWritePlan,
  type FileBeforeWrite,
  type PlannedFile,
  planWrites,
  putBack,
  type WritePlan,
} from './write-plan.js';
import {
  attributesMayApply,
  ContentHashers,
  checkedOutContent,
  fingerprintOf,
  idKeptAsIs,
  idWithoutLocalEol,
  MAX_WRITTEN_BYTES,
  onlyLineEndingsDiffer,
  rawBlobId,
  regularContent,
  type WrittenContent,
} from './written-content.js';

export interface DelegationOptions {
  repo: Repository;
  governance: Governance;
  settings: OperatorSettings;
  signingKey: SigningKey;
  env?: NodeJS.ProcessEnv;
  /** Asked when approval is `ask`; absent means nobody can answer, which is a refusal. */
  approve?: (command: string) => Promise<boolean>;
  onProgress?: (progress: WorkerProgress) => void;
  /**
   * The signals the command listens for (interruption.ts). An interrupt aborts the worker's request or the running
   * command, puts back the files written and ends the run with an InterruptedError; one that comes while the
   * verdict is recorded waits for the record to be complete.
   */
  interrupt?: Interrupt;
}

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
  };
  coherence: { command: string; exitCode: number; passed: number; failed: number } | null;
  contract: {
    files: Array<{ path: string; sha256: string | null; unchanged: boolean }>;
    violations: string[];
  };
  /**
   * `sent`: our estimate of the prompt's tokens as sent; `cut`: the server counted far fewer (promptSeemsCut), so its
   * context window may have cut the prompt.
   */
  tokens: { prompt: number; completion: number; estimated: boolean; sent: number; cut: boolean };
  worker: { host: string; model: string; durationMs: number; truncated: boolean } | null;
  envelope: string | null;
}

export async function delegateUnit(unit: Unit, opts: DelegationOptions): Promise<DelegationReceipt> {
  const delegation = new Delegation(unit, opts);
  try {
    return await delegation.run();
  } finally {
    delegation.writers.dismiss();
  }
}

/**
 * The git processes that end a delegation that wrote files: the one writing the record, started once the worker has
 * the request (its time hides the start-up, a few milliseconds spent after the verification command otherwise), and
 * those hashing what was written, started once the files are (the command's run hides theirs). Dismissed unused
 * when nothing is recorded.
 */
class ClosingWriters {
  recording: WaitingGit | null = null;
  hashers: ContentHashers | null = null;

  constructor(private readonly repo: Repository) {}

  start(): void {
    this.recording ??= this.repo.ledger.startWriter();
  }

  dismiss(): void {
    this.hashers?.dismiss();
    this.recording?.dismiss();
  }
}

/** The context gathered for the worker, and the failure locations this attempt took from the previous one. */
type GatheredContext = Extract<Awaited<ReturnType<typeof gatherContext>>, { ok: true }>;

/**
 * One delegation. `run()` is DESIGN 4.3's steps in order; a step that ends the unit early sets the receipt's verdict
 * and returns null.
 */
class Delegation {
  readonly writers: ClosingWriters;
  private readonly receipt: DelegationReceipt;
  private readonly top: string;
  private readonly gitDirs: string[];
  /** The files written, with what they held before: what an interrupt puts back. */
  private written: AppliedWrite[] = [];
  /** What the files held before the write, on disk until the run ends: what a run that dies is undone from. */
  private journal: WriteJournal | null = null;
  /** The failure locations this attempt took from the previous one: offered again when it ends with no verdict. */
  private taken: string[] = [];

  constructor(
    private readonly unit: Unit,
    private readonly opts: DelegationOptions,
  ) {
    this.writers = new ClosingWriters(opts.repo);
    this.receipt = emptyReceipt(unit);
    this.top = opts.repo.layout.topLevel!;
    this.gitDirs = gitDirsOf(opts.repo);
  }

  async run(): Promise<DelegationReceipt> {
    const asked = await this.beforeWriting(() => this.ask());
    if (asked === null) return this.receipt;
    const { ws, contract, answer, startedAt, ledgerTip } = asked;
    try {
      const plan = await this.write(ws, contract, answer, await ledgerTip);
      await this.whileUnrecorded(async () => {
        await this.judge(ws, contract, plan);
        await this.rememberFailures(ws);
      });
      if (plan.files.length > 0) await this.recording(await startedAt);
      return this.receipt;
    } finally {
      this.journal?.end();
    }
  }

  /** The steps up to the worker's answer; null when one ended the unit (the receipt says why). */
  private async ask(): Promise<{
    ws: string;
    contract: PinnedContract;
    answer: string;
    startedAt: Promise<string | null>;
    ledgerTip: Promise<string | null>;
  } | null> {
    // Before the worker is asked: files written for a verdict the ledger then cannot take stay with no record.
    await this.opts.repo.ledger.assertWritable();
    const apiKey = this.workerApiKey();
    const ws = this.workspace();
    if (ws === null) return null;
    const contract = this.contract(ws);
    if (contract === null) return null;
    const context = await this.context(ws, contract);
    if (context === null) return null;
    this.taken = context.taken;
    // The commit the unit starts from, read while the worker answers: the object reader it starts is the one the
    // record is written through at the end.
    const startedAt = headCommit(this.opts.repo);
    const ledgerTip = this.opts.repo.ledger.tip();
    ledgerTip.catch(() => {}); // waited for once the answer is in
    const answer = await this.askWorker(ws, apiKey, context);
    return answer === null ? null : { ws, contract, answer, startedAt, ledgerTip };
  }

  /** An interrupt before any file is written (it aborts the worker's request) ends the run with nothing to undo. */
  private async beforeWriting<T>(step: () => Promise<T>): Promise<T> {
    try {
      this.opts.interrupt?.signal.throwIfAborted();
      const result = await step();
      if (!this.interrupted()) return result;
    } catch (error) {
      if (!this.interrupted()) throw error;
    }
    await this.offerAgainIfPossible();
    throw this.interruption({ step: 'asking' });
  }

  /**
   * Verification and what follows it, the worker's files on disk and nothing recorded yet: an interrupt (which
   * ends the running command) puts the files back, so none stays without a verdict to be blamed on the next run.
   */
  private async whileUnrecorded(step: () => Promise<void>): Promise<void> {
    try {
      await step();
      if (!this.interrupted()) return;
    } catch (error) {
      if (!this.interrupted()) throw error;
    }
    throw await this.undo('verifying');
  }

  /**
   * The record is written whole or not at all (one notes commit), so an interrupt waits for it: the files then stay,
   * as recorded. If it could not be written (the interrupt may have reached git too), the files are put back.
   */
  private async recording(baseCommit: string | null): Promise<void> {
    try {
      await this.record(baseCommit);
    } catch (error) {
      if (!this.interrupted()) throw error;
      throw await this.undo('recording', (error as Error).message);
    }
    if (this.interrupted())
      throw this.interruption({
        step: 'recorded',
        verdict: this.receipt.verdict,
        written: this.writtenPaths(),
        recorded: this.receipt.envelope !== null,
      });
  }

  private interrupted(): boolean {
    return (this.opts.interrupt?.received ?? null) !== null;
  }

  /**
   * Puts back every file written, and says which could not be. The journal of a file left as the worker wrote it
   * holds the only copy of what it held: set aside and named, not removed as the run ends.
   */
  private async undo(step: 'verifying' | 'recording', recordFailure?: string): Promise<InterruptedError> {
    const left = putBack(this.written);
    const kept = this.setAside(left.map((u) => u.file.absolute));
    const unrestored = left.map((u) => ({
      path: repositoryPathOf(this.top, u.file.absolute),
      reason: u.reason,
      copy: kept.get(u.file.absolute) ?? null,
    }));
    await this.offerAgainIfPossible();
    return this.interruption({ step, written: this.writtenPaths(), unrestored, recordFailure });
  }

  /** Where what each of `absolutes` held is kept (unrecorded-writes.ts), now that the run leaves them unrestored. */
  private setAside(absolutes: readonly string[]): ReadonlyMap<string, string> {
    return absolutes.length === 0 || this.journal === null ? new Map() : this.journal.setAside(absolutes);
  }

  /** The attempt was void: the failure locations it took stand for the next one. */
  private async offerAgainIfPossible(): Promise<void> {
    if (this.receipt.workspace === null) return;
    try {
      await offerAgain(this.opts.repo, this.receipt.workspace, this.taken);
    } catch {
      // Lost, the offer only leaves the next attempt without that context; what the interrupt did must be said.
    }
  }

  private writtenPaths(): string[] {
    return this.written.map((w) => repositoryPathOf(this.top, w.file.absolute));
  }

  private interruption(run: InterruptedRun): InterruptedError {
    const signal = this.opts.interrupt!.received!;
    return new InterruptedError(signal, signalExitCode(signal), interruptionNotice(signal, run));
  }

  private refuse(verdict: Verdict, message: string, errors: string[] = []): null {
    Object.assign(this.receipt, { verdict, message, errors });
    return null;
  }

  private workerApiKey(): string | undefined {
    const keyName = this.opts.settings.worker.apiKeyEnv;
    const apiKey = keyName ? this.opts.env?.[keyName]?.trim() : undefined;
    if (keyName && !apiKey)
      // Sent without it, the request would come back 401 and read as a worker problem.
      throw new DelegateGitError(
        'CONFIG',
        `worker.apiKeyEnv names the environment variable ${keyName}, which is not set (or empty) here. Set it to the worker's API key, or clear the setting (delegate-git config set worker.apiKeyEnv "") if the server needs none.`,
      );
    return apiKey;
  }

  private workspace(): string | null {
    const { unit, opts, top } = this;
    const workspace = resolveWorkspace(unit.workspaceDir ? path.resolve(top, unit.workspaceDir) : undefined, {
      sessionRoot: top,
      emitAllowlist: this.emitAllowlist(),
      gitDirs: this.gitDirs,
    });
    if (!workspace.ok) return this.refuse('CONTEXT_REFUSED', workspace.reason);
    this.receipt.workspace = workspace.dir;
    // Every write would be refused (scope.ts): the model's time would be spent for nothing.
    if ((unit.targetFiles ?? []).length === 0 && opts.settings.unitScope !== 'off')
      return this.refuse(
        'CONTEXT_REFUSED',
        'The unit declares no targetFiles, so nothing the worker wrote could be kept; the worker was not called. ' +
          'Declare the files it may write in the unit\'s targetFiles, or an operator can set unitScope: "off" to lift the check.',
      );
    return workspace.dir;
  }

  private contract(ws: string): PinnedContract | null {
    const pinned = pinContract(ws, this.unit.contractFiles ?? [], this.gitDirs);
    if ('errors' in pinned)
      return this.refuse(
        'CONTEXT_REFUSED',
        'The declared contract files were refused; the worker was not called.',
        pinned.errors,
      );
    return pinned;
  }

  private async context(ws: string, contract: PinnedContract): Promise<GatheredContext | null> {
    const { unit, opts } = this;
    const context = await gatherContext(unit, ws, contract.canonical, opts.settings, opts.repo, this.receipt);
    if (!context.ok)
      return this.refuse(
        'CONTEXT_REFUSED',
        'The declared context was refused; the worker was not called.',
        context.errors,
      );
    return context;
  }

  /** The worker's answer, or null when it gave none that can be parsed (the receipt says why). */
  private async askWorker(
    ws: string,
    apiKey: string | undefined,
    context: GatheredContext,
  ): Promise<string | null> {
    const { settings, repo } = this.opts;
    let reply: Awaited<ReturnType<typeof callWorker>>;
    try {
      reply = await callWorker(
        {
          endpoint: settings.worker.endpoint,
          model: settings.worker.model,
          apiKey,
          timeoutMs: settings.worker.timeoutMs,
          idleTimeoutMs: settings.worker.idleTimeoutMs,
          maxTokens: settings.worker.maxTokens,
          messages: buildWorkerMessages(this.unit, context.context, context.retry),
          onProgress: this.opts.onProgress,
          onSent: () => this.writers.start(),
        },
        this.opts.interrupt?.signal,
      );
    } catch (error) {
      if (!(error instanceof WorkerError)) throw error;
      await offerAgain(repo, ws, context.taken);
      return this.refuse(
        'WORKER_ERROR',
        `The worker failed (${error.kind}): ${error.message.replace(/\.$/, '')}. Nothing was written.`,
      );
    }
    const tokens = { ...reply.usage, sent: reply.promptSent };
    this.receipt.tokens = { ...tokens, cut: promptSeemsCut(tokens) };
    this.receipt.worker = {
      host: reply.endpointHost,
      model: reply.model,
      durationMs: reply.durationMs,
      truncated: reply.truncated,
    };
    if (reply.truncated) {
      await offerAgain(repo, ws, context.taken);
      return this.refuse(
        'WORKER_ERROR',
        `The worker's reply was cut by its token limit (finish_reason "length") after ${reply.usage.completion} tokens, so it is incomplete and was not parsed. Nothing was written. Raise worker.maxTokens or split the unit.`,
      );
    }
    return reply.content;
  }

  /** Parses the answer and writes what the unit may write; the receipt keeps what was refused. */
  private async write(
    ws: string,
    contract: PinnedContract,
    answer: string,
    ledgerTip: string | null,
  ): Promise<WritePlan> {
    const { unit, opts, top } = this;
    const emission = parseEmission(answer, { targetFiles: unit.targetFiles ?? [] });
    const plan = planWrites(emission, {
      workspace: ws,
      contractFiles: contract.canonical,
      targetFiles: unit.targetFiles ?? [],
      unitScope: opts.settings.unitScope,
      emitAllowlist: this.emitAllowlist(),
      repositoryTop: top,
      gitDirs: this.gitDirs,
      governanceFile: (p) => isGovernanceFile(opts.governance.policy, p),
    });
    this.receipt.errors = [...emission.errors, ...plan.errors];
    this.receipt.duplicates = plan.duplicates;
    if (plan.files.length > 0) {
      // What git holds at the paths before the write, kept in the journal: after a kill, only what changed since is
      // the user's stage or commit of the worker's files (journal-rules.ts, whyLeft).
      const held = await heldInGit(
        opts.repo,
        plan.files.map((f) => repositoryPathOf(top, f.absolute)).filter(isRepositoryPath),
      );
      this.written = applyWritePlan(plan, {
        beforeWriting: (files, createdDirs) => {
          this.journal = this.keepJournal(files, createdDirs, ledgerTip, held);
        },
        setAside: (absolutes) => this.setAside(absolutes),
      });
      this.writers.hashers = new ContentHashers(
        opts.repo,
        plan.files.map((f) => repositoryPathOf(top, f.absolute)),
      );
    }
    return plan;
  }

  private keepJournal(
    files: readonly FileBeforeWrite[],
    createdDirs: readonly string[],
    ledgerTip: string | null,
    held: (path: string) => HeldInGit,
  ): WriteJournal {
    const { repo } = this.opts;
    try {
      return WriteJournal.keep(
        repo.stateDir,
        this.top,
        {
          taskName: this.unit.taskName,
          // What the verdict statement says of the run: the next delegate tells its record from others by them.
          instructionSha256: sha256Of(Buffer.from(this.unit.instruction, 'utf8')),
          keyid: this.opts.signingKey.publicKey.keyid,
          ledgerTip,
        },
        files.map(({ file, previous }) => {
          const inTop = repositoryPathOf(this.top, file.absolute);
          const inRepository = isRepositoryPath(inTop);
          return {
            path: inRepository ? inTop : file.absolute,
            absolute: file.absolute,
            inRepository,
            content: file.content,
            previous,
            heldBefore: inRepository ? held(inTop) : null,
          };
        }),
        createdDirs,
      );
    } catch (error) {
      throw new DelegateGitError(
        'IO',
        `could not keep what the worker's files held before its write (under ${repo.stateDir}): ${(error as Error).message}. Nothing was written; free the space or fix the permissions there and run the unit again.`,
        { cause: error },
      );
    }
  }

  /** Verification, coherence, the contract re-hashed and the written files hashed: the verdict. */
  private async judge(ws: string, contract: PinnedContract, plan: WritePlan): Promise<void> {
    const { receipt, opts, unit } = this;
    const wroteCleanly = plan.files.length > 0 && receipt.errors.length === 0;
    const { ran, notApproved, unitFailed, flaky, verifiedAs } = await verificationStep(unit, opts, receipt, {
      workspace: ws,
      files: plan.files,
      wroteCleanly,
    });
    const coherenceFailed = wroteCleanly && (await coherenceStep(opts, receipt, this.top));
    receipt.contract = recheckContract(contract);
    // Read once: what is fingerprinted is what is hashed and recorded (written-content.ts).
    const contents = plan.files.map((f) => regularContent(f.absolute));
    const changedByLastRun = ran && verifiedAs !== fingerprintOf(plan.files, contents);
    const stored =
      plan.files.length > 0
        ? await hashWritten(opts.repo, plan.files, contents, this.writers.hashers!)
        : { files: [], problems: [] };
    receipt.files = stored.files;
    receipt.verdict = resolveVerdict({
      contractViolations: receipt.contract.violations,
      verificationNotApproved: notApproved,
      ran,
      flaky,
      unitFailed,
      coherenceFailed,
      filesWritten: plan.files.length,
      emissionErrors: receipt.errors.length,
      changedWhileVerified: changedByLastRun || (ran && stored.problems.length > 0),
    });
    if (receipt.verdict === 'UNIT_UNVERIFIED' && ran)
      receipt.message = changedByLastRun
        ? 'The files written changed during the last verification run (or the coherence check after it), so what ' +
          'would be recorded is not what was verified. A command that formats files must find them formatted when run ' +
          'again (verificationRepeats of 2 or more).'
        : `What would be recorded is not what was verified: ${stored.problems.join(' ')}`;
  }

  /** The failures' locations, offered to the next attempt at this unit (retryContext "auto"). */
  private async rememberFailures(ws: string): Promise<void> {
    const { receipt, opts } = this;
    if (opts.settings.retryContext !== 'auto') return;
    const locations =
      receipt.verdict === 'UNIT_PASSED'
        ? []
        : receipt.verification.failures.flatMap((f) => (f.location ? [f.location] : []));
    await rememberRetryLocations(retryStore(opts.repo), ws, locations);
  }

  /** The signed verdict on the written files inside the repository, in the ledger. */
  private async record(baseCommit: string | null): Promise<void> {
    const { receipt, opts, unit } = this;
    const recordable = receipt.files.filter((f) => isRepositoryPath(f.path));
    if (recordable.length === 0) return;
    const statement = verdictStatement(
      recordable.map((f) => ({ path: f.path, sha256: f.sha256, gitBlob: f.gitBlob })),
      verdictPredicate(unit, receipt, opts.governance, opts.settings.worker.model, baseCommit),
    );
    const { line } = await recordStatement(
      opts.repo.ledger,
      statement,
      opts.signingKey,
      `delegate-git delegate: ${receipt.verdict} ${unit.taskName}`,
      this.writers.recording ?? undefined,
    );
    receipt.envelope = line;
  }

  private emitAllowlist(): string[] {
    return this.opts.settings.emitAllowlist.map((p) => path.resolve(this.top, p));
  }
}

/** The repository's git directories, canonical: a gitfile, a symbolic link or GIT_DIR may put them anywhere. */
function gitDirsOf(repo: Repository): string[] {
  return [
    ...new Set([repo.layout.gitDir, repo.layout.commonDir].map((d) => canonicalisePath(path.resolve(d)))),
  ];
}

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
    contextWidened: [],
    verification: {
      command: null,
      skipped: null,
      runs: [],
      flaky: false,
      failures: [],
      omittedFailures: 0,
      rawLog: null,
    },
    coherence: null,
    contract: { files: [], violations: [] },
    tokens: { prompt: 0, completion: 0, estimated: false, sent: 0, cut: false },
    worker: null,
    envelope: null,
  };
}

interface PinnedContract {
  workspace: string;
  canonical: string[];
  before: Map<string, string | null>;
}

/**
 * The contract files' digests before the worker is called, or why they cannot be pinned: each must be where a context
 * file may be (locateReadable) and a regular file delegate-git reads whole. A device or a pipe hung the run, and a
 * file outside the repository had its path and digest signed into the ledger. A file that does not exist is pinned
 * as missing: that is a contract violation once the run ends, as it always was.
 */
function pinContract(
  ws: string,
  files: string[],
  gitDirs: readonly string[],
): PinnedContract | { errors: string[] } {
  const errors: string[] = [];
  const before = new Map<string, string | null>();
  for (const file of files) {
    const located = locateReadable(ws, file, gitDirs);
    if (typeof located === 'string') {
      errors.push(`${file}: ${located}`);
      continue;
    }
    if (before.has(located.absolute)) continue;
    const content = regularContent(located.absolute);
    if (Buffer.isBuffer(content)) before.set(located.absolute, sha256Of(content));
    else if (content.unread === 'too large')
      errors.push(
        `${file}: ${content.size} bytes, more than delegate-git reads to pin a contract file (${MAX_WRITTEN_BYTES})`,
      );
    else if (existsWithoutFollowing(located.absolute)) errors.push(`${file}: not a regular file`);
    else before.set(located.absolute, null);
  }
  if (errors.length > 0) return { errors };
  return { workspace: ws, canonical: [...before.keys()], before };
}

function existsWithoutFollowing(file: string): boolean {
  return lstatSync(file, { throwIfNoEntry: false }) !== undefined;
}

function recheckContract(c: PinnedContract): DelegationReceipt['contract'] {
  const files: DelegationReceipt['contract']['files'] = [];
  const violations: string[] = [];
  for (const [file, before] of c.before) {
    // As pinned: a contract replaced by a pipe while the unit ran must not hang the check.
    const content = regularContent(file);
    const after = Buffer.isBuffer(content) ? sha256Of(content) : null;
    const rel = relativePosix(c.workspace, file);
    if (before === null) violations.push(`${rel} was declared as a contract file but does not exist`);
    else if (after === null) violations.push(`${rel} was deleted while the unit ran`);
    else if (after !== before) violations.push(`${rel} was modified while the unit ran`);
    files.push({ path: rel, sha256: after, unchanged: before !== null && before === after });
  }
  return { files, violations };
}

async function gatherContext(
  unit: Unit,
  ws: string,
  contractFiles: string[],
  settings: OperatorSettings,
  repo: Repository,
  receipt: DelegationReceipt,
) {
  const gitDirs = gitDirsOf(repo);
  const declared = await readContext(unit.contextFiles ?? [], { workspace: ws, gitDirs });
  if (!declared.ok) return declared;
  receipt.context = declared.context.map(({ text: _text, ...meta }) => meta);
  if (settings.retryContext !== 'auto') return { ...declared, retry: undefined, taken: [] };
  const locations = await takeRetryLocations(retryStore(repo), ws);
  const declaredPaths = new Set(
    (unit.contextFiles ?? []).map((c) => canonicalisePath(path.resolve(ws, c.path))),
  );
  // A git directory is never read for the worker (readContext refuses it): such a location is dropped, not the rest.
  const windows = retryWindows(locations, (rel) => {
    const abs = canonicalisePath(path.resolve(ws, rel));
    return declaredPaths.has(abs) || contractFiles.includes(abs) || entersGitDir(abs, gitDirs);
  });
  if (windows.length === 0) return { ...declared, retry: undefined, taken: locations };
  // Best effort: widened context that cannot be read (budget, missing file) is dropped, never a refusal.
  const widened = await readContext([...(unit.contextFiles ?? []), ...windows], { workspace: ws, gitDirs });
  if (!widened.ok) return { ...declared, retry: undefined, taken: locations };
  const extra = widened.context.slice(declared.context.length);
  receipt.contextWidened = extra.map(({ text: _text, ...meta }) => meta);
  return {
    ...declared,
    retry: { note: 'The previous attempt at this unit failed at the locations shown below.', context: extra },
    taken: locations,
  };
}

/**
 * A failed unit's locations are offered to the next attempt once; an attempt whose worker gave no answer did not use
 * the offer, so it stands for the attempt after.
 */
async function offerAgain(repo: Repository, ws: string, taken: string[]): Promise<void> {
  if (taken.length > 0) await rememberRetryLocations(retryStore(repo), ws, taken);
}

/** What the verification runs decided (DESIGN 4.3): run, refused, or not run, and how the runs went. */
interface VerificationOutcome {
  ran: boolean;
  notApproved: boolean;
  /** Failing tests over all runs (a failing run with no parsed failure counts one). */
  unitFailed: number;
  flaky: boolean;
  /** The written files as the last run left them, when it did not change them itself (null: it did, or none ran). */
  verifiedAs: string | null;
}

/**
 * The unit's verification command, run only when the files were written cleanly and the operator's policy allows it
 * (or the operator, asked, does); the receipt's `verification` says what happened and why.
 */
async function verificationStep(
  unit: Unit,
  opts: DelegationOptions,
  receipt: DelegationReceipt,
  written: { workspace: string; files: readonly PlannedFile[]; wroteCleanly: boolean },
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
  if (!written.wroteCleanly) {
    receipt.verification.skipped =
      written.files.length === 0 ? 'nothing was written' : 'the emission had refused files';
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
    interrupt: opts.interrupt?.signal,
  });
  receipt.verification.rawLog = rawLog;
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
async function coherenceStep(
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
  receipt.coherence = {
    command: settings.coherence,
    exitCode: run.exitCode,
    passed: run.passed,
    failed: run.failed,
  };
  return !runPassed(run);
}

function retryStore(repo: Repository): string {
  return path.join(repo.stateDir, 'retry-context.json');
}

/**
 * The receipt's files, hashed from the contents read after verification (`contents`, in the order of `files`),
 * and why what would be recorded is not what was verified: a file that is no regular file any more (nothing
 * verified can be recorded for it); one git stores changed by more than line endings (a filter driver, `ident`, an
 * encoding), or by line endings only this clone's config converts (`core.autocrlf`: another clone checks out other
 * bytes); or one a checkout here does not give back as verified (a smudge filter).
 */
async function hashWritten(
  repo: Repository,
  files: readonly PlannedFile[],
  contents: ReadonlyArray<WrittenContent>,
  hashers: ContentHashers,
): Promise<{ files: ReceiptFile[]; problems: string[] }> {
  const top = repo.layout.topLevel!;
  const problems: string[][] = files.map(() => []);
  const hashed = await Promise.all(
    files.map(async (f, i): Promise<ReceiptFile | null> => {
      const rel = repositoryPathOf(top, f.absolute);
      const content = contents[i]!;
      if (!Buffer.isBuffer(content)) {
        problems[i]!.push(
          content.unread === 'too large'
            ? `\`${rel}\` is ${content.size} bytes after verification, more than delegate-git reads to record a file (${MAX_WRITTEN_BYTES}).`
            : `\`${rel}\` is no regular file after verification (a link, a pipe, or gone).`,
        );
        return null;
      }
      let gitBlob = await hashers.hash(i, content);
      // DESIGN 3.2: both digests are of the content as stored.
      let stored = rawBlobId(content, gitBlob) === gitBlob ? content : await storedContent(repo, gitBlob);
      const keptAsIs = stored !== content && onlyLineEndingsDiffer(content, stored);
      const ownId = keptAsIs ? await idKeptAsIs(repo, rel, content, gitBlob) : null;
      if (ownId) {
        gitBlob = ownId;
        stored = content;
      }
      if (stored !== content) {
        if (!onlyLineEndingsDiffer(content, stored))
          problems[i]!.push(
            `git stores \`${rel}\` changed by a clean filter (.gitattributes filter, ident or working-tree-encoding), so the blob recorded is not the bytes verified.`,
          );
        else if ((await idWithoutLocalEol(repo, rel, content)) !== gitBlob)
          problems[i]!.push(
            `this clone's core.autocrlf or core.eol converts the line endings of \`${rel}\` as git stores it, so another clone would check out other bytes than those verified. Set the line endings in .gitattributes, or write the file with the stored ones.`,
          );
      }
      // A checkout must give back the bytes verified (a smudge filter may change what git stored as it was). With
      // no checkout attribute on the path and the bytes stored as they are, it writes them as they are.
      const compare = stored !== content || attributesMayApply(repo, rel, repo.env ?? process.env);
      if (
        problems[i]!.length === 0 &&
        compare &&
        !(await checkedOutContent(repo, rel, gitBlob)).equals(content)
      )
        problems[i]!.push(
          `a checkout of \`${rel}\` does not give back the bytes verified (a smudge filter or line-ending attribute changes it: .gitattributes filter, ident, eol or working-tree-encoding).`,
        );
      return {
        path: rel,
        mode: f.mode,
        hunks: f.hunks,
        lines: f.lines,
        bytes: content.length,
        sha256: createHash('sha256').update(stored).digest('hex'),
        gitBlob,
      };
    }),
  );
  return { files: hashed.filter((f): f is ReceiptFile => f !== null), problems: problems.flat() };
}

async function storedContent(repo: Repository, gitBlob: string): Promise<Buffer> {
  const blob = await repo.objects.read(gitBlob);
  if (!blob)
    throw new DelegateGitError('GIT', `git hash-object -w wrote ${gitBlob}, but it cannot be read back.`);
  return blob.content;
}

function repositoryPathOf(top: string, absolute: string): string {
  return relativePosix(top, absolute);
}

function sha256Of(content: Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

async function headCommit(repo: Repository): Promise<string | null> {
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

function verdictPredicate(
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
      // The worker was also shown these (the previous failure's surroundings): the record says so.
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
    coherence: r.coherence,
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
