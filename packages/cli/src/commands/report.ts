import { closeSync, existsSync, lstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import { collectLedgerStats, type LedgerStats, Repository, rulesFor, TOOL } from '@delegate-git/core';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';
import { writeFileAtomic } from '../fs.js';
import { governanceInForce } from '../governance-in-force.js';
import { renderReportText } from '../ledger-report-text.js';
import { GENERATOR_MARK, renderReportHtml } from '../report-html.js';

const help = `
Usage: delegate-git report [--json] [--html <file>]

The ledger as an accounting: delegations by verdict, per model and per signer; pass and flaky rates per day;
tokens spent on local workers; file versions promoted by a passing verdict versus by a review. Every record line
is counted once and only if it verifies against the trust root in the work tree (HEAD's in a bare repository);
the others are counted apart, with their reasons.
  --json          the aggregation, for machines
  --html <file>   also write a self-contained HTML report with charts (no network needed to view it); an
                  existing file is replaced only when it is such a report

Example:
  delegate-git report
  delegate-git report --html ledger-report.html
`;

export default {
  summary: 'the ledger as an accounting (text, JSON, or an HTML page with charts)',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values } = parseCommandArgs(
      'report',
      argv,
      { json: { type: 'boolean' }, html: { type: 'string' } },
      false,
    );
    const repo = await Repository.open(io.cwd, io.env, io.err);
    let stats: LedgerStats;
    let ledgerTip: string | null;
    let judgedBy: string;
    let repository: string;
    try {
      const governance = await governanceInForce(repo);
      judgedBy = governance.source;
      ledgerTip = await repo.ledger.tip();
      repository = path.basename(repo.layout.topLevel ?? repo.layout.gitDir);
      // Read at the tip just resolved, so the numbers and the tip they are reported with agree.
      stats = await collectLedgerStats(ledgerTip ? repo.ledger.entries(ledgerTip) : noEntries(), {
        trustRoot: governance.trustRoot,
        repositoryId: governance.policy.repositoryId,
        // File versions counted as the gates judge them. The policy and key files are not: each change of them was
        // judged by the rules in force before it (a threshold raised since does not unpromote what it admitted).
        rulesOf: (file) => {
          const { governanceFile, rules } = rulesFor(file, governance);
          return governanceFile ? null : rules;
        },
      });
    } finally {
      await repo.close();
    }
    if (values.html !== undefined) {
      // `--html "$OUT"` with OUT unset must not end in silence and no report.
      if (values.html === '')
        throw usageError('report', '--html needs a file name; it was given an empty one.');
      const file = path.resolve(io.cwd, values.html);
      // As any tool writing a file: into a directory that exists (a typo must not make a tree of directories).
      if (!existsSync(path.dirname(file)))
        throw usageError(
          'report',
          `The directory ${path.dirname(file)} does not exist; --html writes into an existing one.`,
        );
      // A mistyped name (`--html README.md`) must not replace a file of the user's: only a report written before is.
      if (!replaceable(file))
        throw usageError(
          'report',
          `${file} exists and is not an HTML report delegate-git wrote, so --html leaves it as it is. Name another file, or move that one away first.`,
        );
      const html = renderReportHtml(stats, {
        repository,
        ledgerTip,
        judgedBy,
        generatedAt: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
        toolVersion: TOOL.version,
      });
      await writeFileAtomic(file, html);
      if (!values.json) io.err(`Wrote the HTML report to ${file}.\n`);
    }
    if (values.json) io.out(json({ ledgerTip, judgedBy, ...stats }));
    else io.out(renderReportText(stats, { repository, ledgerTip, judgedBy }));
    return 0;
  },
} satisfies CommandModule;

/** Whether --html may write `file`: nothing is there, or a report of ours is (a regular file whose head has our mark). */
function replaceable(file: string): boolean {
  const stat = lstatSync(file, { throwIfNoEntry: false });
  if (stat === undefined) return true;
  if (!stat.isFile()) return false;
  const head = Buffer.alloc(1024);
  const fd = openSync(file, 'r');
  try {
    return head
      .subarray(0, readSync(fd, head, 0, head.length, 0))
      .toString('utf8')
      .includes(GENERATOR_MARK);
  } finally {
    closeSync(fd);
  }
}

async function* noEntries(): AsyncIterable<{ annotated: string; lines: string[] }> {}
