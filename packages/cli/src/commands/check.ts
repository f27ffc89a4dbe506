import {
  type CheckReport,
  checkRevision,
  checkStaged,
  checkWorktreePaths,
  LEDGER_REF,
  Repository,
  reportExitCode,
} from '@delegate-git/core';
import { renderCheckReport } from '../check-report-text.js';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';
import { forcedLedger } from '../ledger-restore.js';

const help = `
Usage: delegate-git check [--staged | --rev <rev> | --path <p>...] [--json]

Asks the promotion rule about governed files. Exit 0: every governed file asked about is promoted;
1: at least one is not (each listed with its reason); 2: the question could not be answered (with --path, a
path where the work tree holds no file).
  --staged       the index: what the next commit would contain, changed against HEAD (the default)
  --rev <rev>    every governed file in that commit's tree, by that commit's policy and trust root, as verify
                 judges it (each change in the history of the policy and keys approved by the rules then)
  --path <p>     the work-tree content of each named path (repeatable; also bare arguments)
  --json         {"results":[{"path","promoted","reason","by","governed"}],"deletions":[...],"exitCode"}
A key revoked on origin's default branch as last fetched (refs/remotes/origin/HEAD) counts for nothing here
either, as the server judges a push of any branch.

Example:
  delegate-git check --path src/parser.ts
  delegate-git check --rev HEAD --json
`;

export default {
  summary: 'judge files against the ledger (exit 0 promoted, 1 refused, 2 could not answer)',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values, positionals } = parseCommandArgs('check', argv, {
      staged: { type: 'boolean' },
      rev: { type: 'string' },
      path: { type: 'string', multiple: true },
      json: { type: 'boolean' },
    });
    const paths = [...(values.path ?? []), ...positionals];
    const modes = [values.staged, values.rev !== undefined, paths.length > 0].filter(Boolean).length;
    if (modes > 1) throw usageError('check', 'Choose one of --staged, --rev or --path.');
    const repo = await Repository.open(io.cwd, io.env, io.err);
    let report: CheckReport;
    try {
      if (values.rev !== undefined) report = await checkRevision(repo, values.rev);
      else if (paths.length > 0) report = await checkWorktreePaths(repo, io.cwd, paths);
      else report = await checkStaged(repo);
      // check only reads: a ledger a fetch moved is said, for sync to put back, where it may be why a file is refused.
      if (reportExitCode(report) === 1) {
        const forced = await forcedLedger(repo);
        if (forced)
          io.err(
            `delegate-git: a fetch (reflog: "${forced.how}") moved ${LEDGER_REF} to ${forced.moved.slice(0, 12)}, dropping records made here, which may promote what is refused below: \`delegate-git sync\` puts it back (the next commit's hook does too).\n`,
          );
      }
    } finally {
      await repo.close();
    }
    // A path with no file has no content to judge: not an answer about it, whatever else is promoted.
    const exitCode = report.results.some((r) => r.absent) ? 2 : reportExitCode(report);
    // The staged content is approved with --staged: what the work tree holds may differ (`git add -p`).
    const judged = values.rev === undefined && paths.length === 0 ? 'index' : 'paths';
    if (values.json) io.out(json(toJson(report, exitCode)));
    else io.out(report.notice ? `${report.notice}\n` : renderCheckReport(report, judged));
    return exitCode;
  },
} satisfies CommandModule;

export function toJson(report: CheckReport, exitCode: number) {
  return {
    results: report.results.map(({ path, promoted, reason, by, governed, sha256, blob, absent, kind }) => ({
      path,
      promoted,
      reason,
      by,
      governed,
      sha256,
      gitBlob: blob,
      ...(absent ? { absent } : {}),
      ...(kind ? { kind } : {}),
    })),
    deletions: report.deletions,
    mode: report.mode,
    ...(report.notice ? { notice: report.notice } : {}),
    ...(report.rulesChange ? { rulesChange: report.rulesChange } : {}),
    exitCode,
  };
}
