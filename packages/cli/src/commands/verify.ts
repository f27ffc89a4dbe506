import { appendFile } from 'node:fs/promises';
import { type LedgerVerification, Repository, verificationExitCode, verifyLedger } from '@delegate-git/core';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';
import { annotations, renderMarkdown, renderText, reportNoAnswer } from '../verify-report.js';

const help = `
Usage: delegate-git verify [--rev <rev>] [--baseline <notes-commit>] [--since <commit>] [--revocations-of <rev>]
                           [--json | --markdown]

The ledger job for CI. Checks that every line of every note in refs/notes/delegations parses and verifies
against the trust root at <rev> (default HEAD), and that the ledger's tree holds nothing but notes; that every
governed file in <rev>'s tree is promoted; and that the ledger is append-only (since --baseline, which must be an
ancestor of the current ledger, or else across its whole history). Exit 0 all good, 1 a problem (each listed),
2 could not answer.
Records of revoked keys, and records a key may not sign (without the role, or dated outside its validity: a role
removed or a notAfter set after they were made), are reported but are not problems by themselves: they count for
nothing.
  --since <commit>  the commit verified last on the protected branch: every commit <rev> adds beyond it is
               judged as a push onto it would be at the server (by the policy and trust root in force there, each
               commit's files as well as the tips' difference), and the history up to it is taken as verified.
               <rev> must contain it. Without it, each change of the policy or keys is judged by the rules of its
               own parent, which cannot tell the protected line from a branch merged into it.
  --revocations-of <rev>  the protected branch's tip (or the commit verified last there): a key its trust root
               revokes counts for nothing at <rev> either, as the server judges every branch. Without it, a branch
               made before a revocation is judged by its own keys, which still trust the revoked one.
  --markdown   print the summary for a job page (with or without it, the summary is appended to
               $GITHUB_STEP_SUMMARY when that is set: run verify once per job)
  --json       the full result for machines
Under GitHub Actions (GITHUB_ACTIONS=true) refused files are also printed as ::error annotations (GitHub shows 10
of a step: past 10, the tenth says how many more there are), and so is why verify could not answer (exit 2), which
the job summary then says too. The job summary lists the first 50 entries of each kind.

Example:
  git fetch origin refs/notes/delegations:refs/notes/delegations
  delegate-git verify --rev HEAD --baseline "$LAST_VERIFIED_LEDGER"
`;

export default {
  summary: 'CI: verify every ledger line, every governed file, and append-only history',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values } = parseCommandArgs(
      'verify',
      argv,
      {
        rev: { type: 'string' },
        baseline: { type: 'string' },
        since: { type: 'string' },
        'revocations-of': { type: 'string' },
        json: { type: 'boolean' },
        markdown: { type: 'boolean' },
      },
      false,
    );
    if (values.json && values.markdown) throw usageError('verify', 'Choose one of --json or --markdown.');
    let result: LedgerVerification;
    try {
      const repo = await Repository.open(io.cwd, io.env, io.err);
      try {
        result = await verifyLedger(repo, {
          rev: values.rev,
          baseline: values.baseline,
          since: values.since,
          revocationsOf: values['revocations-of'],
        });
      } finally {
        await repo.close();
      }
    } catch (error) {
      await reportNoAnswer(error, io, values.json === true);
      throw error;
    }
    const exitCode = verificationExitCode(result);
    const markdown = renderMarkdown(result, exitCode);
    if (io.env.GITHUB_STEP_SUMMARY) await appendFile(io.env.GITHUB_STEP_SUMMARY, markdown);
    if (io.env.GITHUB_ACTIONS === 'true') {
      // The runner reads workflow commands from both streams; with --json they go to stderr so stdout stays JSON.
      const annotate = values.json ? io.err : io.out;
      for (const line of annotations(result)) annotate(line);
    }
    if (values.json) io.out(json({ ...result, exitCode }));
    else if (values.markdown) io.out(markdown);
    else io.out(renderText(result, exitCode));
    return exitCode;
  },
} satisfies CommandModule;
