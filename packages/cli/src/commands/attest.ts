import path from 'node:path';
import {
  assertKeyMaySign,
  checkStaged,
  DelegateGitError,
  git,
  gitSnapshot,
  gitTry,
  type Governance,
  judgeFiles,
  loadGovernance,
  loadPathIndex,
  loadSigningKey,
  recordStatement,
  Repository,
  reviewStatement,
  rfc3339,
  stagedFiles,
  toRepositoryPath,
  worktreeSnapshot,
} from '@delegate-git/core';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';

const help = `
Usage: delegate-git attest (--approve | --reject) [<path>... | --staged] [-m <comment>] [--key <name>] [--yes] [--json]

Signs a review (urn:delegate-git:review:v1) of the exact content of each path with your reviewer key and
records it in the ledger on that content's blob. An approval promotes exactly that content; any later change
makes it stale. A rejection refuses that content whatever else is recorded, until you approve it yourself.
  --staged       review the staged content of every staged governed file (otherwise the work-tree content)
  -m <comment>   a comment carried in the record
  --key <name>   which of your signing keys to use
  --yes          do not ask for confirmation (it is asked on a terminal only)

Example:
  delegate-git attest --approve src/parser.ts -m "read it; tests cover the edge cases"
  delegate-git attest --approve --staged --yes
`;

interface Target {
  path: string;
  blob: string;
}

export default {
  summary: "sign a reviewer's approval or rejection of exact content",
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values, positionals } = parseCommandArgs('attest', argv, {
      approve: { type: 'boolean' },
      reject: { type: 'boolean' },
      staged: { type: 'boolean' },
      message: { type: 'string', short: 'm' },
      key: { type: 'string' },
      yes: { type: 'boolean', short: 'y' },
      json: { type: 'boolean' },
    });
    if (Boolean(values.approve) === Boolean(values.reject)) throw usageError('attest', 'Give exactly one of --approve or --reject.');
    if (values.staged && positionals.length > 0) throw usageError('attest', 'Give paths or --staged, not both.');
    if (!values.staged && positionals.length === 0) throw usageError('attest', 'Name the paths to review, or use --staged.');
    const decision = values.approve ? 'approve' : 'reject';
    const repo = await Repository.open(io.cwd, io.env);
    try {
      const top = repo.layout.topLevel;
      if (top === null) throw new DelegateGitError('USAGE', 'Run `delegate-git attest` in a clone with a work tree.');
      const snapshot = values.staged ? gitSnapshot(top, repo.objects, null, repo.env) : worktreeSnapshot(top);
      const governance = await loadGovernance(snapshot);
      const { key } = loadSigningKey(values.key, io.env);
      const reviewer = assertKeyMaySign(governance.trustRoot, key, 'reviewer', governance.policy.keysDir);
      const trusted = governance.trustRoot.byKeyid(key.publicKey.keyid)!;
      const targets = values.staged ? await stagedTargets(repo) : await worktreeTargets(repo, top, io.cwd, positionals);
      if (targets.length === 0) {
        io.out('Nothing to review: no staged governed file.\n');
        return 0;
      }
      const shown = await describe(repo, governance, targets);
      if (!values.json) io.out(shown.text);
      if (io.interactive && !values.yes) {
        const answer = await io.prompt(`Sign this ${decision === 'approve' ? 'APPROVAL' : 'REJECTION'} as ${reviewer}? [y/N] `);
        if (!/^y(es)?$/i.test(answer.trim())) {
          io.err('Nothing recorded.\n');
          return 1;
        }
      }
      const statement = reviewStatement(
        shown.files.map((f) => ({ path: f.path, sha256: f.sha256, gitBlob: f.blob })),
        {
          decision,
          reviewer: { name: trusted.name, email: trusted.email },
          ...(values.message ? { comment: values.message } : {}),
          repository: { id: governance.policy.repositoryId },
          createdAt: rfc3339(),
        },
      );
      const { line, commit } = await recordStatement(
        repo.ledger,
        statement,
        key,
        `delegate-git attest --${decision}: ${shown.files.map((f) => f.path).join(', ')}`,
      );
      if (values.json) io.out(json({ decision, reviewer, files: shown.files, envelope: line, notesCommit: commit }));
      else io.out(`Recorded ${decision === 'approve' ? 'approval' : 'rejection'} by ${reviewer} of ${shown.files.length} file(s) in refs/notes/delegations.\n`);
      return 0;
    } finally {
      await repo.close();
    }
  },
} satisfies CommandModule;

async function worktreeTargets(repo: Repository, top: string, cwd: string, paths: string[]): Promise<Target[]> {
  const rel = paths.map((p) => toRepositoryPath(top, cwd, p));
  for (const p of rel) {
    if ((await worktreeSnapshot(top).readFile(p)) === null) {
      throw new DelegateGitError('USAGE', `${p} does not exist in the work tree; there is no content to review.`);
    }
  }
  const out = await git(['hash-object', '-w', '--', ...rel.map((p) => path.join(top, p))], { cwd: top, env: repo.env });
  const ids = out.toString('utf8').split('\n').filter(Boolean);
  return rel.map((p, i) => ({ path: p, blob: ids[i]! }));
}

async function stagedTargets(repo: Repository): Promise<Target[]> {
  const report = await checkStaged(repo);
  const staged = new Map((await stagedFiles(repo.cwd, [], repo.env)).map((f) => [f.path, f.blob]));
  return report.results.filter((r) => r.governed && staged.has(r.path)).map((r) => ({ path: r.path, blob: r.blob }));
}

/** What the reviewer is about to sign: each path, its sha256, records already on it, and the diff since it was last promoted. */
async function describe(repo: Repository, governance: Governance, targets: Target[]) {
  const notesAt = await repo.ledger.tip();
  const index = await loadPathIndex(repo.ledger, notesAt, repo.cacheDir);
  const ctx = { governance, ledger: repo.ledger, notesAt, index, batch: repo.objects };
  const now = await judgeFiles(targets, ctx);
  const parts: string[] = [];
  for (const j of now) {
    parts.push(`${j.path}\n  sha256 ${j.sha256}\n  now: ${j.promoted ? 'promoted' : 'not promoted'} (${j.reason})\n`);
    const earlier = [...new Set(index.earlierBlobs(j.path, j.blob))];
    const previous = (await judgeFiles(earlier.map((blob) => ({ path: j.path, blob })), ctx)).find((p) => p.promoted);
    if (previous) {
      const diff = await gitTry(['diff', '--no-color', previous.blob, j.blob], { cwd: repo.cwd, env: repo.env });
      parts.push(`  changes since the last promoted version (${previous.blob.slice(0, 12)}):\n${indent(diff.stdout.toString('utf8'))}`);
    }
  }
  return { files: now, text: parts.join('') };
}

function indent(text: string): string {
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => `    ${l}\n`)
    .join('');
}
