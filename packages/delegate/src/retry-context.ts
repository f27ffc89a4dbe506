/**
 * Retry context (plugin 2.11): a failed unit's failures (their redacted names, and the locations around which code is
 * shown) are offered once to the next delegation in the same workspace. Kept in the per-worktree state dir, consumed
 * on read whether used or not.
 */
import { existsSync, readFileSync } from 'node:fs';
import { writeFileAtomic } from '@delegate-git/core/atomic-file';
import type { ContextRequest } from './context.js';

const RETRY_CONTEXT_WINDOW_LINES = 10;

/** What a failed attempt leaves the next one: where it failed (`file:line[:col]`), and each failure in one line. */
export interface RetryOffer {
  locations: string[];
  failures: string[];
}

export const NO_OFFER: RetryOffer = { locations: [], failures: [] };

/** Per workspace; a list alone is what an earlier version kept (locations only). */
type Store = Record<string, RetryOffer | string[]>;

function offerOf(value: RetryOffer | string[] | undefined): RetryOffer {
  if (Array.isArray(value)) return { locations: value.filter(isText), failures: [] };
  if (typeof value !== 'object' || value === null) return NO_OFFER;
  const list = (x: unknown) => (Array.isArray(x) ? x.filter(isText) : []);
  return { locations: list(value.locations), failures: list(value.failures) };
}

function isText(x: unknown): x is string {
  return typeof x === 'string';
}

export function isEmptyOffer(offer: RetryOffer): boolean {
  return offer.locations.length === 0 && offer.failures.length === 0;
}

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

/** Takes (and forgets) the pending offer of a workspace. */
export async function takeRetryOffer(file: string, workspace: string): Promise<RetryOffer> {
  const store = read(file);
  const offer = offerOf(store[workspace]);
  if (workspace in store) {
    delete store[workspace];
    await write(file, store);
  }
  return offer;
}

/** Remembers a failed unit's offer; an empty one (a pass) clears what was pending. */
export async function rememberRetryOffer(file: string, workspace: string, offer: RetryOffer): Promise<void> {
  const store = read(file);
  if (isEmptyOffer(offer)) {
    // Nothing pending and nothing to clear (every passing unit): no write.
    if (!(workspace in store)) return;
    delete store[workspace];
  } else store[workspace] = offer;
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
