/**
 * The context the worker is shown: the unit's declared context files, the target files that exist (whole, unless
 * contextFiles names them), and, with retryContext "auto", the surroundings of where the previous attempt failed
 * (retry-context.ts). The receipt keeps what was shown, each part apart, because the record signs it; locations
 * taken by an attempt that gave no answer are offered again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { gitTry } from '@delegate-git/core/git';
import { relativePosix } from '@delegate-git/core/path-within';
import type { Repository } from '@delegate-git/core/repository';
import { canonicalisePath, entersGitDir, isPathWithin, locateReadable } from './containment.js';
import { type InjectedContext, readContext } from './context.js';
import type { OperatorSettings } from './operator-config.js';
import type { DelegationReceipt } from './receipt.js';
import { gitDirsOf } from './repository-paths.js';
import {
  isEmptyOffer,
  NO_OFFER,
  type RetryOffer,
  rememberRetryOffer,
  retryWindows,
  takeRetryOffer,
} from './retry-context.js';
import type { Unit } from './unit.js';

/** The context gathered for the worker, and the failure locations this attempt took from the previous one. */
export type GatheredContext = Extract<Awaited<ReturnType<typeof gatherContext>>, { ok: true }>;

export async function gatherContext(
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
  receipt.context = withoutText(declared.context);
  // Each file is shown once: a target or a retry location the unit already shows (or pins as contract) is left out.
  const shownPaths = new Set([
    ...(unit.contextFiles ?? []).map((c) => canonicalisePath(path.resolve(ws, c.path))),
    ...contractFiles,
  ]);
  const existing = await existingTargets(unit.targetFiles ?? [], ws, repo, { gitDirs, contractFiles });
  const targetFiles = existing.filter((t) => !shownPaths.has(t.absolute));
  for (const t of targetFiles) shownPaths.add(t.absolute);
  const targets = await readContext(
    targetFiles.map((t) => ({ path: t.path })),
    { workspace: ws, gitDirs, used: bytesOf(declared.context) },
  );
  if (!targets.ok) return { ok: false as const, errors: targets.errors.map(asTargetError) };
  receipt.contextTargets = withoutText(targets.context);
  const shown = {
    ok: true as const,
    context: declared.context,
    targets: targets.context,
    existing: existing.map((t) => t.path),
  };
  if (settings.retryContext !== 'auto') return { ...shown, retry: undefined, taken: NO_OFFER };
  const taken = await takeRetryOffer(retryStore(repo), ws);
  // A git directory is never read for the worker (readContext refuses it): such a location is dropped, not the rest.
  const windows = retryWindows(taken.locations, (rel) => {
    const abs = canonicalisePath(path.resolve(ws, rel));
    return shownPaths.has(abs) || entersGitDir(abs, gitDirs);
  });
  // Best effort: widened context that cannot be read (budget, missing file) is dropped, never a refusal.
  const widened =
    windows.length === 0
      ? null
      : await readContext(windows, {
          workspace: ws,
          gitDirs,
          used: bytesOf(declared.context) + bytesOf(targets.context),
        });
  const context = widened?.ok ? widened.context : [];
  receipt.contextWidened = withoutText(context);
  // The failures are said even when no code around them is shown (it is shown above already, or was not readable):
  // without them a retry's prompt was the first attempt's, word for word (ux57 f11).
  if (taken.failures.length === 0 && context.length === 0) return { ...shown, retry: undefined, taken };
  return { ...shown, retry: { note: retryNote(taken), context }, taken };
}

function retryNote(taken: RetryOffer): string {
  const failures = taken.failures.map((f) => `- ${f}`).join('\n');
  return (
    `The previous attempt in this workspace did not pass its verification${failures ? `:\n${failures}` : '.'}\n` +
    'Files it wrote hold its code as it left them; the failures are where to look first.'
  );
}

/**
 * The unit's target files that exist in the workspace, as the unit spells them: the worker changes an existing file
 * only with a patch whose SEARCH text is copied from it, so it is shown the file. Left out: a directory; a path outside
 * the workspace, in a git directory or a contract file (where the write is refused); and a file git ignores or that
 * lies outside the repository, such as `.env`, whose secrets a unit naming it as a target must not send to the worker
 * (rt58 f04: a password is no credential the scan knows). The caller leaves out what the unit shows already (a range
 * of it in contextFiles: the architect's choice stands); one file spelled twice is read once.
 */
async function existingTargets(
  targetFiles: readonly string[],
  ws: string,
  repo: Repository,
  { gitDirs, contractFiles }: { gitDirs: readonly string[]; contractFiles: readonly string[] },
): Promise<Array<{ path: string; absolute: string }>> {
  const workspace = canonicalisePath(path.resolve(ws));
  const top = repo.layout.topLevel === null ? null : canonicalisePath(repo.layout.topLevel);
  const found = targetFiles.flatMap((spelled) => {
    const target = spelled.trim();
    if (target === '' || top === null) return [];
    const located = locateReadable(workspace, target, gitDirs);
    return typeof located !== 'string' &&
      isPathWithin(top, located.absolute) &&
      !contractFiles.includes(located.absolute) &&
      isRegularFile(located.absolute)
      ? [{ path: target, absolute: located.absolute }]
      : [];
  });
  if (found.length === 0) return found;
  const relative = found.map((t) => relativePosix(top!, t.absolute));
  const ignored = await gitTry(['check-ignore', '-z', '--stdin'], {
    cwd: top!,
    env: repo.env,
    input: `${relative.join('\0')}\0`,
  });
  // 0: some are ignored, 1: none is; anything else (git failed) shows none, rather than maybe a secret.
  if (ignored.code !== 0 && ignored.code !== 1) return [];
  const out = new Set(ignored.stdout.toString('utf8').split('\0'));
  return found.filter((_, i) => !out.has(relative[i]!));
}

function isRegularFile(absolute: string): boolean {
  try {
    return fs.statSync(absolute).isFile();
  } catch {
    return false;
  }
}

/** readContext names a refused request by its path: a target's says why it was read at all, and what to do. */
function asTargetError(error: string): string {
  const why = 'a target file that exists is shown to the worker whole, so that it can patch it';
  if (error.startsWith('credential in ')) return `${error}: ${why}; take it out of targetFiles`;
  if (error.includes('not UTF-8 text'))
    return `target ${error}: ${why}, and a binary file cannot be; take it out of targetFiles`;
  if (error.includes('over the context budget'))
    return `target ${error}. ${why[0]!.toUpperCase()}${why.slice(1)}: name a line range of it in contextFiles to show only that range, or split the unit.`;
  return `target ${error} (${why})`;
}

function withoutText(context: readonly InjectedContext[]): Array<Omit<InjectedContext, 'text'>> {
  return context.map(({ text: _text, ...meta }) => meta);
}

function bytesOf(context: readonly InjectedContext[]): number {
  return context.reduce((sum, c) => sum + c.bytes, 0);
}

/**
 * A failed unit's locations are offered to the next attempt once; an attempt whose worker gave no answer did not use
 * the offer, so it stands for the attempt after.
 */
export async function offerAgain(repo: Repository, ws: string, taken: RetryOffer): Promise<void> {
  if (!isEmptyOffer(taken)) await rememberRetryOffer(retryStore(repo), ws, taken);
}

export function retryStore(repo: Repository): string {
  return path.join(repo.stateDir, 'retry-context.json');
}
