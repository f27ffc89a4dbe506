/**
 * Contract pinning: the digests of the files the unit declares as its contract (the tests its code must pass),
 * taken before the worker is called and again once the verification has run. A contract changed in between, by the
 * worker's writes or by the command, voids the verdict (CONTRACT_MODIFIED): code that passes by changing its own
 * tests has passed nothing.
 */
import { lstatSync } from 'node:fs';
import { relativePosix } from '@delegate-git/core/path-within';
import { locateReadable } from './containment.js';
import type { DelegationReceipt } from './receipt.js';
import { MAX_WRITTEN_BYTES, regularContent } from './written-content.js';
import { sha256Of } from './written-hashes.js';

export interface PinnedContract {
  workspace: string;
  canonical: string[];
  before: Map<string, string>;
}

/**
 * The contract files' digests before the worker is called, or why they cannot be pinned: each must be where a context
 * file may be (locateReadable) and a regular file delegate-git reads whole. A device or a pipe hung the run, and a
 * file outside the repository had its path and digest signed into the ledger. A file that does not exist is refused
 * too: it is a unit's mistake (a misspelled path), known before a worker call is spent on it (ux57 f07), and a
 * contract nobody wrote verifies nothing.
 */
export function pinContract(
  ws: string,
  files: string[],
  gitDirs: readonly string[],
): PinnedContract | { errors: string[] } {
  const errors: string[] = [];
  const before = new Map<string, string>();
  for (const file of files) {
    const located = locateReadable(ws, file, gitDirs);
    if (typeof located === 'string') {
      errors.push(`${file}: ${located}`);
      continue;
    }
    if (before.has(located.absolute)) continue;
    const content = regularContent(located.absolute);
    if (Buffer.isBuffer(content)) before.set(located.absolute, sha256Of(content));
    else if (content.unread === 'too large')
      errors.push(
        `${file}: ${content.size} bytes, more than delegate-git reads to pin a contract file (${MAX_WRITTEN_BYTES})`,
      );
    else if (existsWithoutFollowing(located.absolute)) errors.push(`${file}: not a regular file`);
    else
      errors.push(
        `${file}: no such file (a contract file is a test the worker's code must pass unchanged: name one that exists)`,
      );
  }
  if (errors.length > 0) return { errors };
  return { workspace: ws, canonical: [...before.keys()], before };
}

function existsWithoutFollowing(file: string): boolean {
  return lstatSync(file, { throwIfNoEntry: false }) !== undefined;
}

export function recheckContract(c: PinnedContract): DelegationReceipt['contract'] {
  const files: DelegationReceipt['contract']['files'] = [];
  const violations: string[] = [];
  for (const [file, before] of c.before) {
    // As pinned: a contract replaced by a pipe while the unit ran must not hang the check.
    const content = regularContent(file);
    const after = Buffer.isBuffer(content) ? sha256Of(content) : null;
    const rel = relativePosix(c.workspace, file);
    if (after === null) violations.push(`${rel} was deleted while the unit ran`);
    else if (after !== before) violations.push(`${rel} was modified while the unit ran`);
    files.push({ path: rel, sha256: after, unchanged: before === after });
  }
  return { files, violations };
}
