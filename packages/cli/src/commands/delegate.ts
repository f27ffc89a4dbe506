import path from 'node:path';
import { DelegateGitError } from '@delegate-git/core/errors';
import { Repository } from '@delegate-git/core/repository';
import { shownPath, shownText } from '@delegate-git/core/shown-path';
import { type DelegationReceipt, WHOLE_FILE_OVER_EXISTING } from '@delegate-git/delegate';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';
import { hooksNotRun, hooksWarning } from '../hooks-in-effect.js';

const help = `
Usage: delegate-git delegate <unit.json> [--key <name>] [--json]

Hands a unit (written by the planning model) to the local worker (any OpenAI-compatible server), writes what
it emits inside the unit's bounds, runs the unit's verification command, and records the signed verdict in
refs/notes/delegations on every blob it wrote. Commands decide the verdict, not the model.

The unit: {"taskName", "instruction", "targetFiles", "contextFiles": [{"path","startLine","endLine"}],
"contractFiles", "runVerification", "verificationRepeats", "workspaceDir"}; the worker may write only the
targetFiles (none declared: nothing), and is shown the contextFiles and each target file that exists, whole
(unless contextFiles names it: then only the slices named). The worker endpoint, model, verification approval and allowlist are
operator settings (\`delegate-git config\`), never the unit's.

Exit 0 for UNIT_PASSED (and NO_CHANGES: the worker wrote nothing, and the unit's command, run on the work
tree as it is, passes), 1 for any other verdict, 2 for bad input or setup. Interrupted
(Ctrl-C, SIGTERM, SIGHUP) before the verdict is recorded, it puts back the files the worker wrote and records
nothing (a file it cannot put back is named, with where the copy of what it held is kept); while it is recorded, it
finishes the record first. It says which, and exits 128 + the signal's number. Killed outright (SIGKILL, a crash, a
power cut), it cannot: the next delegate in the worktree puts back what the worker wrote from a copy it kept, each
file only while it still holds what the worker wrote, and says so.
  --key <name>   the delegator key to sign with (default: config signingKey, else your only key, else the
                 only one the trust root lets delegate)
  --json         the receipt as JSON

Example:
  delegate-git config set worker.endpoint http://127.0.0.1:11434/v1
  delegate-git config set worker.model qwen2.5-coder:14b
  delegate-git config set verification.allowlist '["node","npm"]'
  delegate-git delegate units/add-parser.json
`;

export default {
  summary: 'hand a unit to the local worker and record the signed verdict',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values, positionals } = parseCommandArgs('delegate', argv, {
      key: { type: 'string' },
      json: { type: 'boolean' },
    });
    const [unitFile, ...extra] = positionals;
    if (!unitFile || extra.length > 0) throw usageError('delegate', 'Name exactly one unit file.');
    // Opened first, and waited for only after the unit parsed, so a bad unit is still the error reported: while
    // git answers (its `rev-parse`), the rest of the command loads (its modules are most of what a delegation
    // loads, node:crypto and node:http among them) and the unit is read. An opened repository holds nothing open yet.
    const opening = Repository.open(io.cwd, io.env, io.err);
    opening.catch(() => {});
    const [
      {
        createProgressLine,
        delegateUnit,
        InterruptListener,
        loadSettings,
        parseUnit,
        readUnitFile,
        recoverStoppedDelegations,
        stoppedNotice,
        verdictExitCode,
      },
      { loadGovernance },
      { assertKeyMaySign, signingKeyFor },
      { checkoutSnapshot },
    ] = await Promise.all([
      import('@delegate-git/delegate'),
      import('@delegate-git/core/governance'),
      import('@delegate-git/core/recording'),
      import('@delegate-git/core/snapshot'),
    ]);
    const unit = parseUnit(await readUnitFile(path.resolve(io.cwd, unitFile), unitFile), unitFile);
    const repo = await opening;
    try {
      if (repo.layout.topLevel === null)
        throw new DelegateGitError('USAGE', 'Run `delegate-git delegate` in a clone with a work tree.');
      const settings = loadSettings(path.join(repo.stateDir, 'config.json'), io.env);
      // A delegate that was killed left the worker's files with no verdict: put back before anything else is written.
      // The settings first: a journal naming a file outside the work tree is acted on only in an emitAllowlist root.
      for (const found of await recoverStoppedDelegations(repo, { emitAllowlist: settings.emitAllowlist }))
        io.err(stoppedNotice(found));
      await (await import('../ledger-restore.js')).restoreBeforeWriting(repo, 'delegate', io.err);
      const governance = await loadGovernance(
        checkoutSnapshot(repo.layout.topLevel, repo.layout.gitDir, repo.objects, repo.env),
      );
      const fromConfig = values.key === undefined ? (settings.signingKey ?? undefined) : undefined;
      const { key } = (() => {
        try {
          return signingKeyFor(governance.trustRoot, 'delegator', values.key ?? fromConfig, io.env);
        } catch (error) {
          // A name the config gave: say so, or the user looks for a --key they never passed.
          if (fromConfig === undefined || !(error instanceof DelegateGitError)) throw error;
          throw new DelegateGitError(
            error.code,
            `The signing key comes from config signingKey ("${fromConfig}"): ${error.message} Or change it (\`delegate-git config set signingKey <name>\`).`,
            { cause: error },
          );
        }
      })();
      assertKeyMaySign(governance.trustRoot, key, 'delegator', governance.policy.keysDir);
      // Asked while the worker writes; said after the receipt, where the user looks next.
      const hooks = hooksNotRun(repo);
      const progress = values.json ? null : createProgressLine(process.stderr);
      // From here a signal no longer ends the process at once: the delegation ends at its next safe point and says
      // what it did with the worker's files (an InterruptedError), and the listeners go with the command.
      const interrupt = new InterruptListener();
      let receipt: DelegationReceipt;
      try {
        receipt = await delegateUnit(unit, {
          repo,
          governance,
          settings,
          signingKey: key,
          env: io.env,
          approve: io.interactive
            ? async (command) =>
                /^y(es)?$/i.test(
                  // On one line, every control character shown: line breaks must not scroll a part of it away.
                  (
                    await io.prompt(
                      `Run the verification command \`${shownText(command)}\`? [y/N] `,
                      interrupt.signal,
                    )
                  ).trim(),
                )
            : undefined,
          onProgress: progress ? (p) => progress.update(p) : undefined,
          // On a terminal only, as the worker's progress: the runs may take minutes (ux57 f16).
          onVerifying:
            progress && process.stderr.isTTY
              ? (run, of) => {
                  progress.done();
                  io.err(`delegate-git: verifying, run ${run} of ${of}…\n`);
                }
              : undefined,
          interrupt,
        });
      } finally {
        interrupt.close();
        // Ended, so that the interrupt's notice starts a line of its own.
        progress?.done();
      }
      io.out(
        values.json ? json(receiptJson(receipt)) : renderReceipt(receipt, settings.verification.allowlist),
      );
      io.err(hooksWarning('delegate', await hooks));
      return verdictExitCode(receipt.verdict);
    } finally {
      await repo.close();
    }
  },
} satisfies CommandModule;

function receiptJson(r: DelegationReceipt) {
  return {
    taskName: r.taskName,
    verdict: r.verdict,
    message: r.message,
    files: r.files.map(({ path: p, mode, hunks, bytes, lines, sha256, gitBlob }) => ({
      path: p,
      mode,
      hunks,
      bytes,
      lines,
      sha256,
      gitBlob,
    })),
    errors: r.errors,
    duplicates: r.duplicates,
    workspace: r.workspace,
    context: r.context,
    contextTargets: r.contextTargets,
    contextWidened: r.contextWidened,
    verification: r.verification,
    coherence: r.coherence,
    contract: r.contract,
    tokens: {
      prompt: r.tokens.prompt,
      completion: r.tokens.completion,
      // The server reported no usage: these are the client's estimates (the text receipt says so too).
      ...(r.tokens.estimated ? { estimated: true } : {}),
      // Said only when so (promptSeemsCut): the server's context window may have cut the prompt.
      ...(r.tokens.cut ? { promptCut: true, promptSent: r.tokens.sent } : {}),
    },
    worker: r.worker,
    envelope: r.envelope,
  };
}

/** Refusals listed at most: a unit or a reply can name thousands of files, and the rest are counted. */
const REFUSALS_SHOWN = 20;

/** The seed's receipt shape: files, workspace, verification, coherence, contract, then the verdict. */
export function renderReceipt(r: DelegationReceipt, allowlist: readonly string[] = []): string {
  const out: string[] = [`Unit: ${r.taskName}`];
  if (r.message) out.push(r.message);
  for (const e of r.errors.slice(0, REFUSALS_SHOWN)) out.push(`  refused: ${e}`);
  if (r.errors.length > REFUSALS_SHOWN)
    out.push(`  … and ${r.errors.length - REFUSALS_SHOWN} more refused (--json lists them all)`);
  for (const d of r.duplicates)
    out.push(`  ignored: a second block for ${shownPath(d)} (the first one was used)`);
  if (r.files.length > 0) {
    out.push(`Files written (${r.files.length}):`);
    for (const f of r.files) {
      const how = f.mode === 'patched' ? `patched in place with ${f.hunks} hunk(s)` : 'created';
      out.push(`  ${shownPath(f.path)}: ${f.lines} line(s), ${f.bytes} bytes, ${how}`);
    }
  }
  if (r.workspace) out.push(`Workspace: ${r.workspace}`);
  if (r.contextTargets.length)
    out.push(`Target files shown to the worker as they were: ${r.contextTargets.map(where).join(', ')}.`);
  if (r.contextWidened.length) {
    out.push(
      `Context widened with the previous failure at ${r.contextWidened.map(where).join(', ')}. The worker was shown code the architect did not name.`,
    );
  }
  const v = r.verification;
  if (v.skipped) out.push(`Verification was NOT run: ${v.skipped}.`);
  else if (v.runs.length > 0) {
    const outcome = (x: (typeof v.runs)[number]) =>
      x.exitCode === 0 && x.failed === 0 && !x.timedOut ? 'PASS' : x.timedOut ? 'TIMEOUT' : 'FAIL';
    // Runs that disagree each say what they counted: the last run's counts alone would stand for all (ux57 f19).
    out.push(
      v.flaky
        ? `Verification (${v.runs.length} run(s)): ${v.runs.map((x, i) => `run ${i + 1} ${outcome(x)} (${testCounts(x)})`).join(', ')}. The runs disagreed: the contract is flaky.`
        : `Verification (${v.runs.length} run(s): ${v.runs.map(outcome).join(' ')}): ${testCounts(v.runs.at(-1)!)}.`,
    );
    const stopped = v.runs.filter((x) => x.timedOut).length;
    // A run stopped at the limit reads as a failure of the code; the limit may be what is wrong (ux57 f16).
    if (stopped > 0)
      out.push(
        `  ${stopped} run(s) stopped at the ${v.timeoutMs ?? '?'} ms limit (verification.timeoutMs): if the command needs longer, raise it (\`delegate-git config set verification.timeoutMs <ms>\`) and run the unit again.`,
      );
    for (const f of v.failures)
      out.push(`  failure: ${[f.name, f.location, f.code].filter(Boolean).join(' at ')}`);
    if (v.omittedFailures) out.push(`  (${v.omittedFailures} more failure(s) not listed)`);
    if (v.rawLog) out.push(`Raw output (local only): ${v.rawLog}`);
  } else if (!v.command && r.files.length > 0)
    out.push('No verification command was supplied; the contract is unchecked.');
  if (r.coherence) {
    out.push(
      `Coherence check (${r.coherence.command}): exit ${r.coherence.exitCode}, ${counts(r.coherence)}.`,
    );
    if (r.coherence.rawLog && r.verdict === 'INCOHERENT')
      out.push(`Coherence output (local only): ${r.coherence.rawLog}`);
  }
  if (r.contract.violations.length)
    out.push(`CONTRACT MODIFIED, verdict void: ${r.contract.violations.join('; ')}.`);
  else if (r.contract.files.length)
    out.push(`Contract: ${r.contract.files.length} declared file(s), unchanged.`);
  if (r.worker)
    out.push(
      `Worker: ${r.worker.model} at ${r.worker.host}, ${r.tokens.prompt} prompt + ${r.tokens.completion} completion token(s)${r.tokens.estimated ? ' (estimated locally)' : ''}, ${r.worker.durationMs} ms.`,
    );
  // What the model said, when it did not pass: a refusal or NO_CHANGES quotes none of it (ux57 f10).
  if (r.worker?.reply && r.verdict !== 'UNIT_PASSED')
    out.push(`Worker's reply (local only): ${r.worker.reply}`);
  if (r.tokens.cut)
    out.push(
      `Warning: the server counted ${r.tokens.prompt} prompt token(s) for about ${r.tokens.sent} sent: its context window (Ollama's num_ctx) may have cut the prompt, so the model may not have read the whole unit. Raise the server's context length.`,
    );
  // A verdict with no file to record it on leaves no trace in the ledger or in `report`: said, not implied (ux57 f12).
  out.push(
    `Verdict: ${r.verdict}${r.envelope ? ' (signed and recorded in refs/notes/delegations)' : r.files.length === 0 ? ' (not recorded: no file was written to record it on)' : ''}`,
  );
  // A file that exists is changed only by a patch; the worker is shown the targets, not other files it may write.
  const existing = r.errors.filter((e) => e.includes(WHOLE_FILE_OVER_EXISTING)).length;
  if (existing > 0) {
    const [it, them] =
      existing === 1
        ? ['it', 'a whole file for a file that exists']
        : ['them', `whole files for ${existing} files that exist`];
    out.push(
      `Next: the worker sent ${them} (an earlier run's, or yours), which only a patch may change: run the unit again (the worker is shown each target file of the repository as it is, unless git ignores it, or the slices of it contextFiles names, and may patch ${it} next time; name ${it} in targetFiles if ${it} is not there), or delete ${it} to have ${it} written anew.`,
    );
  }
  // The run leaves a changed contract as it is; committed, it would pass for the architect's (ux57 f13).
  const changed = r.contract.files
    .filter((f) => !f.unchanged && f.sha256 !== null)
    .map((f) => shownPath(f.path));
  if (r.verdict === 'CONTRACT_MODIFIED' && changed.length > 0)
    out.push(
      `Next: the contract is left as the run changed it: see how (\`git diff -- ${changed.join(' ')}\`), put it back (\`git restore -- ${changed.join(' ')}\`), and look at the code the worker wrote, which changed it when verified.`,
    );
  // Half a unit is on disk, unverified (ux57 f03): the ledger records it failed, the work tree does not say so.
  if (r.files.length > 0 && r.verification.skipped === 'the emission had refused files')
    out.push(
      'Next: the files above were written though the reply was refused for others, and were not verified, so the unit is half done: put them back (`git restore <path>`, or delete a created one) and run the unit again.',
    );
  if (r.verdict === 'UNIT_FLAKY')
    out.push(
      `Next: the same code passed some runs and failed others, so the unit's command is not deterministic: make it so (or raise verificationRepeats to see how often it fails), then run the unit again${r.files.length > 0 ? '; the files above are left as the worker wrote them' : ''}.`,
    );
  // Unlike an interrupted run, the worker's files stay: the user decides about the program, then runs the unit again.
  if (r.verdict === 'VERIFICATION_NOT_APPROVED')
    out.push(
      `Next: ${r.files.length > 0 ? 'the files above are left as the worker wrote them, unverified; ' : ''}${approvalAdvice(r.verification.skipped ?? '', allowlist)}${r.files.length > 0 ? ', then put those files back (`git restore <path>`, or delete a created one) and run the unit again: the worker writes them afresh' : ', and run the unit again'}.`,
    );
  return `${out.map(shownText).join('\n')}\n`;
}

/**
 * What lets a refused verification command run, for the reason it was refused (verification-policy.ts): the
 * allowlist is the way only for a plain command (one program, no shell syntax); the command `config set` would
 * replace the whole list, so the list offered is the current one with the program added (ux57 f08).
 */
export function approvalAdvice(skipped: string, allowlist: readonly string[]): string {
  if (skipped.includes('approval is set to "deny"'))
    return 'verification approval is "deny" in this clone\'s settings: set it to ask or allow (`delegate-git config set verification.approval ask`)';
  if (skipped === 'the operator declined to run it')
    return "you declined to run the unit's command: change the unit's runVerification if it is not one to run, or approve it when asked";
  const terminal = skipped.includes('no terminal to ask on')
    ? ', or run delegate on a terminal to approve it once'
    : '';
  const unlisted = /`([^`]+)` is not on the verification allowlist/.exec(skipped);
  if (unlisted) {
    const list = JSON.stringify([...allowlist, unlisted[1]!]);
    return `allow the program (\`delegate-git config set verification.allowlist '${list}'\`)${terminal}`;
  }
  // Chained, redirected or built by the shell: no allowlist entry covers it.
  return `no allowlist entry covers this command: make it one program the allowlist can name (a script file, say), or let every command run (\`delegate-git config set verification.approval allow\`)${terminal}`;
}

// Each receipt line goes through shownText: the worker and its server chose much of this text (paths, the model's
// name, failure names), and a line break or an escape sequence in it could draw a verdict line of its own. Paths are
// also C-quoted (shownPath), as log, show and check quote them: `src/\u200ba.js` must not read as `src/a.js`.

function where(c: { path: string; lineRange: [number, number] | null }): string {
  const shown = shownPath(c.path);
  return c.lineRange ? `${shown} (lines ${c.lineRange[0]}-${c.lineRange[1]})` : shown;
}

/** What a run's output said of its tests; a command that prints no test summary says nothing of them (not "0 passed"). */
/**
 * A run's counts, and its exit code whenever it failed: a command that printed no counts and failed is counted as one
 * failure (test-output.ts), which the exit code explains.
 */
function testCounts(run: { passed: number; failed: number; exitCode: number }): string {
  const counted = run.passed + run.failed > 0;
  return `${counted && run.exitCode === 0 ? '' : `exit ${run.exitCode}, `}${counts(run)}`;
}

function counts(run: { passed: number; failed: number }): string {
  return run.passed + run.failed > 0
    ? `Passed ${run.passed}, Failed ${run.failed}`
    : 'no test counts in its output';
}
