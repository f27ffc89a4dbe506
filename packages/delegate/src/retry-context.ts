/**
 * Retry context (plugin 2.11): a failed unit's failure locations are offered once to the next delegation in the
 * same workspace. Kept in the per-worktree state dir, consumed on read whether used or not.
 */
import { existsSync, readFileSync } from 'node:fs';
import { writeFileAtomic } from '@delegate-git/core/atomic-file';
import type { ContextRequest } from './context.js';

const RETRY_CONTEXT_WINDOW_LINES = 10;

type Store = Record<string, string[]>;

function read(file: string): Store {
  if (!existsSync(file)) return {};
  try {
    const value = JSON.parse(readFileSync(file, 'utf8'));
    return typeof value === 'object' && value !== null ? (value as Store) : {};
  } catch {
    return {};
  }
}

async function write(file: string, store: Store): Promise<void> {
  await writeFileAtomic(file, JSON.stringify(store));
}

/** Takes (and forgets) the pending failure locations of a workspace. */
export async function takeRetryLocations(file: string, workspace: string): Promise<string[]> {
  const store = read(file);
  const locations = store[workspace] ?? [];
  if (workspace in store) {
    delete store[workspace];
    await write(file, store);
  }
  return locations;
}

/** Remembers a failed unit's locations; an empty list (a pass, or no usable location) clears them. */
export async function rememberRetryLocations(
  file: string,
  workspace: string,
  locations: string[],
): Promise<void> {
  const store = read(file);
  if (locations.length === 0) {
    // Nothing pending and nothing to clear (every passing unit): no write.
    if (!(workspace in store)) return;
    delete store[workspace];
  } else store[workspace] = locations;
  await write(file, store);
}

/**
 * One window per file around the reported lines (`file:line[:col]`, the last numeric segments taken so a drive
 * letter stays in the path), skipping files already declared or under contract.
 */
export function retryWindows(
  locations: string[],
  exclude: (relativePath: string) => boolean,
): ContextRequest[] {
  const byFile = new Map<string, number[]>();
  for (const location of locations) {
    const match = /^(.*?):(\d+)(?::\d+)?$/.exec(location);
    if (!match) continue;
    const line = Number(match[2]);
    if (!Number.isInteger(line) || line < 1) continue;
    const file = match[1]!;
    if (exclude(file)) continue;
    byFile.set(file, [...(byFile.get(file) ?? []), line]);
  }
  return [...byFile].map(([file, lines]) => ({
    path: file,
    startLine: Math.max(1, Math.min(...lines) - RETRY_CONTEXT_WINDOW_LINES),
    endLine: Math.max(...lines) + RETRY_CONTEXT_WINDOW_LINES,
  }));
}
