import { lstatSync } from 'node:fs';
import path from 'node:path';
import {
  decodeRecord,
  gitTry,
  Repository,
  toRepositoryPath,
  verifyRecord,
  worktreeBlobs,
} from '@delegate-git/core';
import { shownPath, shownText } from '@delegate-git/core/shown-path';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';
import { governanceInForce } from '../governance-in-force.js';

const help = `
Usage: delegate-git show <path | blob> [--json]

Decodes every record in the ledger on that content (the work-tree content of a path, or a blob named as git
names one: its id, abbreviated or not, or a name such as HEAD~2:src/parser.ts) and
verifies each one against the trust root in the work tree (or HEAD's in a bare repository):
who signed, what kind of record, which verdict or decision, when, and whether it counts.

Example:
  delegate-git show src/parser.ts
  delegate-git show 3b18e512dba79e4c8300dd08aeb37f8e728b8dad --json
  delegate-git show main:src/parser.ts
`;

export default {
  summary: 'show the verified records on a file or blob',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values, positionals } = parseCommandArgs('show', argv, { json: { type: 'boolean' } });
    const [target, ...extra] = positionals;
    if (!target || extra.length > 0) throw usageError('show', 'Name exactly one path or blob id.');
    const repo = await Repository.open(io.cwd, io.env, io.err);
    try {
      const { blob, label } = await shownBlob(repo, io.cwd, target);
      const governance = await governanceInForce(repo);
      const lines = await repo.ledger.linesOn(blob);
      const records = lines.map((line) => {
        const decoded = decodeRecord(line);
        if (!decoded.ok) return { valid: false, reason: `not a valid record: ${decoded.reason}`, line };
        const r = decoded.record;
        const trust = verifyRecord(r, governance.trustRoot, governance.policy.repositoryId);
        return {
          valid: trust.ok,
          // As verify lists it: a key of the trust root that may not sign it now, not a bad line.
          notCounted: !trust.ok && trust.verified === true,
          reason: trust.ok ? 'signature verified' : trust.reason,
          signer: trust.signer?.name ?? null,
          kind: r.kind,
          outcome: r.kind === 'verdict' ? r.verdict : r.decision,
          createdAt: r.createdAtText,
          subjects: r.subjects,
          predicate: r.predicate,
        };
      });
      if (values.json) io.out(json({ target: label, blob, records }));
      else {
        io.out(`${label} (blob ${blob}): ${records.length} record(s)\n`);
        for (const r of records) {
          if (!('kind' in r)) {
            io.out(`  INVALID  ${shownText(r.reason)}\n`);
            continue;
          }
          io.out(
            `  ${r.valid ? 'valid  ' : r.notCounted ? 'not counted' : 'INVALID'}  ${r.kind} ${r.outcome}  by ${r.signer ?? 'unknown key'}  at ${r.createdAt}\n`,
          );
          io.out(
            `           ${shownText(r.reason)}; subjects: ${(r.subjects ?? []).map((s) => shownPath(s.path)).join(', ')}\n`,
          );
        }
      }
      return 0;
    } finally {
      await repo.close();
    }
  },
} satisfies CommandModule;

/** Whether something is at `file`; a name the file system cannot hold (too long, under a file) is for git to resolve. */
function inWorkTree(file: string): boolean {
  try {
    return lstatSync(file, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false;
  }
}

const FULL_ID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

/**
 * The blob `target` names: a full blob id; else a file in the work tree (its content as `git add` would store it);
 * else whatever git resolves to a blob (an abbreviated id, `HEAD:src/a.ts`), as `git show` takes it.
 */
async function shownBlob(
  repo: Repository,
  cwd: string,
  target: string,
): Promise<{ blob: string; label: string }> {
  const opts = { cwd: repo.cwd, env: repo.env };
  if (FULL_ID.test(target) && (await gitTry(['cat-file', '-e', `${target}^{blob}`], opts)).code === 0)
    return { blob: target, label: target };
  const top = repo.layout.topLevel;
  if (top !== null && inWorkTree(path.resolve(cwd, target))) {
    const label = toRepositoryPath(top, cwd, target);
    // Staged as `git add` would (the blob stored, as check --path does); hashed where the store is read-only.
    const [id] = await worktreeBlobs(top, [label], { env: repo.env, write: true }).catch(() =>
      worktreeBlobs(top, [label], { env: repo.env, write: false }),
    );
    if (!id) throw usageError('show', `${label} is not a file (a directory?); name a file or a blob.`);
    return { blob: id, label };
  }
  // One line of input names one object: a name holding a line break is none git would resolve.
  if (!target.includes('\n')) {
    // From where the user stands: git reads `HEAD:./a.ts` and `:./a.ts` relative to it.
    const found = await gitTry(['cat-file', '--batch-check=%(objecttype) %(objectname)'], {
      cwd,
      env: repo.env,
      input: `${target}\n`,
    });
    const [type, id] = found.stdout.toString().trim().split(' ');
    if (found.code === 0 && type === 'blob' && id !== undefined) return { blob: id, label: target };
  }
  throw usageError(
    'show',
    `${target} is neither a file in the work tree nor a blob git knows here (a blob id, abbreviated or not, or a name such as HEAD:src/a.ts). Name one of those; \`git ls-files\` lists the files.`,
  );
}
