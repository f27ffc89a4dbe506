/**
 * The context the worker is shown: the unit's declared context files and, with retryContext "auto", the
 * surroundings of where the previous attempt failed (retry-context.ts). The receipt keeps what was shown, the
 * widened part apart, because the record signs it; locations taken by an attempt that gave no answer are offered
 * again.
 */
import path from 'node:path';
import type { Repository } from '@delegate-git/core/repository';
import { canonicalisePath, entersGitDir } from './containment.js';
import { readContext } from './context.js';
import type { OperatorSettings } from './operator-config.js';
import type { DelegationReceipt } from './receipt.js';
import { gitDirsOf } from './repository-paths.js';
import { rememberRetryLocations, retryWindows, takeRetryLocations } from './retry-context.js';
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
export async function offerAgain(repo: Repository, ws: string, taken: string[]): Promise<void> {
  if (taken.length > 0) await rememberRetryLocations(retryStore(repo), ws, taken);
}

export function retryStore(repo: Repository): string {
  return path.join(repo.stateDir, 'retry-context.json');
}
