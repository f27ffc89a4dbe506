/**
 * One delegation, as the steps of DESIGN 4.3, each failing closed:
 * workspace → contract pinning → context (budget, credential scan) → worker → emission → writes → approval →
 * verification runs → coherence → contract re-hash → redaction → verdict → signed record in the ledger → receipt.
 */
import path from 'node:path';
import { writeFileAtomic } from '@delegate-git/core/atomic-file';
import { DelegateGitError, InterruptedError } from '@delegate-git/core/errors';
import { isGovernanceFile } from '@delegate-git/core/governed-paths';
import { isRepositoryPath } from '@delegate-git/core/record';
import { recordStatement } from '@delegate-git/core/recording';
import { verdictStatement } from '@delegate-git/core/statement';
import { ClosingWriters } from './closing-writers.js';
import { resolveWorkspace } from './containment.js';
import { type GatheredContext, gatherContext, offerAgain, retryStore } from './context-gather.js';
import { type PinnedContract, pinContract, recheckContract } from './contract-pin.js';
import { keepJournal } from './delegation-journal.js';
import type { DelegationOptions } from './delegation-options.js';
import { parseEmission } from './emission.js';
import { heldInGit } from './git-held.js';
import { signalExitCode } from './interruption.js';
import { type InterruptedRun, interruptionNotice } from './interruption-notice.js';
import { buildWorkerMessages } from './prompt.js';
import { type DelegationReceipt, emptyReceipt } from './receipt.js';
import { gitDirsOf, repositoryPathOf } from './repository-paths.js';
import { NO_OFFER, type RetryOffer, rememberRetryOffer } from './retry-context.js';
import { unreachableTargets } from './target-check.js';
import type { Unit } from './unit.js';
import type { WriteJournal } from './unrecorded-writes.js';
import { resolveVerdict, type Verdict } from './verdict.js';
import { headCommit, verdictPredicate } from './verdict-predicate.js';
import { coherenceStep, verificationStep } from './verification-steps.js';
import { promptSeemsCut } from './worker-advice.js';
import { callWorker, WorkerError } from './worker-client.js';
import { type AppliedWrite, applyWritePlan, planWrites, putBack, type WritePlan } from './write-plan.js';
import { ContentHashers, fingerprintOf, regularContent } from './written-content.js';
import { hashWritten } from './written-hashes.js';

export async function delegateUnit(unit: Unit, opts: DelegationOptions): Promise<DelegationReceipt> {
  const delegation = new Delegation(unit, opts);
  try {
    return await delegation.run();
  } finally {
    delegation.writers.dismiss();
  }
}

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
  private taken: RetryOffer = NO_OFFER;

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
    const left = putBack(this.written, { keepChanged: true });
    const kept = this.setAside(left.map((u) => u.file.absolute));
    const unrestored = left.map((u) => ({
      path: repositoryPathOf(this.top, u.file.absolute),
      reason: u.reason,
      copy: kept.get(u.file.absolute) ?? null,
      ...(u.changed ? { changed: true as const } : {}),
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
    const unreachable = unreachableTargets(unit.targetFiles ?? [], {
      workspace: workspace.dir,
      emitAllowlist: this.emitAllowlist(),
      gitDirs: this.gitDirs,
      top,
      governanceFile: (p) => isGovernanceFile(opts.governance.policy, p),
    });
    if (unreachable.length > 0)
      return this.refuse(
        'CONTEXT_REFUSED',
        'The unit names targetFiles no write may reach, so the worker was not called: fix the unit.',
        unreachable,
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
        'The context the worker would be shown was refused; the worker was not called.',
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
          messages: buildWorkerMessages(this.unit, context, context.retry),
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
      reply: await this.keepReply(reply.content),
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

  /**
   * The worker's answer, kept beside the verification log: a refusal quotes none of it, and the operator may need
   * to read what the model said instead of code (ux57 f10). Best effort: a reply that cannot be kept is not a failure.
   */
  private async keepReply(content: string): Promise<string | null> {
    const file = path.join(this.opts.repo.stateDir, 'last-worker-reply.md');
    try {
      await writeFileAtomic(file, content, 0o600);
      return file;
    } catch {
      return null;
    }
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
          this.journal = keepJournal(
            { repo: opts.repo, top, unit, signingKey: opts.signingKey },
            files,
            createdDirs,
            ledgerTip,
            held,
          );
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

  /** Verification, coherence, the contract re-hashed and the written files hashed: the verdict. */
  private async judge(ws: string, contract: PinnedContract, plan: WritePlan): Promise<void> {
    const { receipt, opts, unit } = this;
    const refused = receipt.errors.length > 0;
    const { ran, notApproved, unitFailed, flaky, verifiedAs } = await verificationStep(unit, opts, receipt, {
      workspace: ws,
      files: plan.files,
      refused,
    });
    // The project-wide check judges a change; a worker that wrote nothing made none.
    const coherenceFailed =
      plan.files.length > 0 && !refused && (await coherenceStep(opts, receipt, this.top));
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
    if (plan.files.length === 0 && ran && !refused)
      receipt.message =
        receipt.verdict === 'NO_CHANGES'
          ? 'The worker wrote nothing, and the verification passes on the work tree as it is.'
          : "The worker wrote nothing, and the verification does not pass on the work tree as it is: the worker's word that nothing needed changing is not borne out. Nothing was recorded (there is no written file to record it on).";
    else if (receipt.verdict === 'UNIT_UNVERIFIED' && ran)
      receipt.message = changedByLastRun
        ? 'The files written changed during the last verification run (or the coherence check after it), so what ' +
          'would be recorded is not what was verified. A command that formats files must find them formatted when run ' +
          'again (verificationRepeats of 2 or more).'
        : `What would be recorded is not what was verified: ${stored.problems.join(' ')}`;
  }

  /** The failures, redacted, and their locations, offered to the next attempt in this workspace (retryContext "auto"). */
  private async rememberFailures(ws: string): Promise<void> {
    const { receipt, opts } = this;
    if (opts.settings.retryContext !== 'auto') return;
    const { failures, runs } = receipt.verification;
    const failing = runs.find((r) => r.exitCode !== 0 || r.failed > 0);
    const offer =
      receipt.verdict === 'UNIT_PASSED' || failing === undefined
        ? NO_OFFER
        : {
            locations: failures.flatMap((f) => (f.location ? [f.location] : [])),
            failures:
              failures.length > 0
                ? failures.map((f) =>
                    [f.name, f.location && `at ${f.location}`, f.code && `(${f.code})`]
                      .filter(Boolean)
                      .join(' '),
                  )
                : [
                    `its command exited ${failing.exitCode}${failing.timedOut ? ' (stopped at the time limit)' : ''}`,
                  ],
          };
    await rememberRetryOffer(retryStore(opts.repo), ws, offer);
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
