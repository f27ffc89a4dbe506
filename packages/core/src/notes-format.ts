/**
 * The ledger's notes as git stores them (DESIGN 3.3): the text of a note (lines sorted in byte order, unique, each
 * ending in "\n", exactly what `git notes merge -s cat_sort_uniq` produces), the paths of notes in a fanned-out notes
 * tree, and what in such a tree is no note. Pure: no git here.
 */
import { isAscii } from 'node:buffer';
import { DelegateGitError } from './errors.js';
import type { TreeEntry } from './git.js';

export interface NoteAddition {
  blob: string;
  lines: string[];
}

/** A notes directory with more notes than this is fanned out into 2-hex-digit subdirectories, as git does. */
export const FANOUT_THRESHOLD = 256;

/** UTF-8 byte order (what git's cat_sort_uniq uses); equal to JS string order for ASCII. */
export function compareBytewise(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    if (a.charCodeAt(i) !== b.charCodeAt(i)) return (a.codePointAt(i) ?? 0) - (b.codePointAt(i) ?? 0);
  }
  return a.length - b.length;
}

/**
 * Sorted (byte order) and without duplicates. `ascii`: the caller knows every line is ASCII, where UTF-16 order is
 * byte order and the built-in comparison is far cheaper (two records on one blob share hundreds of leading
 * characters, which compareBytewise walks one by one).
 */
export function sortedUnique(lines: Iterable<string>, ascii = false): string[] {
  const list = Array.isArray(lines) ? lines : [...lines];
  // A note as written (sorted, unique) is returned as it is: a Set would hash every 2 KB line first.
  if (ascii && list.every((line, i) => i === 0 || list[i - 1]! < line)) return list;
  const unique = [...new Set(list)];
  if (unique.length < 2) return unique;
  return ascii ? unique.sort() : unique.sort(compareBytewise);
}

/** The lines of a note: empty lines dropped (git separates concatenated notes with blank lines), sorted, unique. */
export function parseNote(content: Buffer | string): string[] {
  const text = typeof content === 'string' ? content : content.toString('utf8');
  // Checked on the bytes, natively: a scan of the decoded text costs as much as the sort it saves.
  const ascii = typeof content !== 'string' && isAscii(content);
  return sortedUnique(
    text.split('\n').filter((line) => line !== ''),
    ascii,
  );
}

/** A note's bytes: its lines sorted and unique, each terminated by "\n". */
export function serializeNote(lines: Iterable<string>): string {
  return sortedUnique(lines)
    .map((line) => `${line}\n`)
    .join('');
}

const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const SHA1_ID = /^[0-9a-f]{40}$/;
const FANOUT_DIR = /^[0-9a-f]{2}$/;
/** A directory's mode as a tree object stores it. */
export const TREE_MODE = '40000';
/** The mode of every note (git notes writes nothing else), as git prints it and as a tree object stores it. */
export const NOTE_MODE = '100644';
const NOTE_RECORD = `${NOTE_MODE} blob `;
/** A directory's mode as `ls-tree` and `diff-tree` print it (a tree object stores it without the leading zero). */
export const LISTED_TREE_MODE = '040000';
const FANOUT_PATH = /^[0-9a-f]{2}(?:\/[0-9a-f]{2})*$/;

export function isObjectId(value: string): boolean {
  return OBJECT_ID.test(value);
}

/** The annotated object of a notes-tree path (`abcd…` or `ab/cd…`, any depth), or null if the path is no note. */
export function annotatedIdOfPath(notePath: string): string | null {
  // git's own layouts, flat or fanned out one level, answered without splitting (a listing has one per note).
  if (notePath.length === 41 && notePath.charCodeAt(2) === 47) {
    const id = notePath.slice(0, 2) + notePath.slice(3);
    return SHA1_ID.test(id) ? id : null;
  }
  if (notePath.length === 40) return SHA1_ID.test(notePath) ? notePath : null;
  const parts = notePath.split('/');
  const last = parts.pop() ?? '';
  if (!parts.every((part) => FANOUT_DIR.test(part))) return null;
  const id = parts.join('') + last;
  return isObjectId(id) && /^[0-9a-f]+$/.test(last) ? id : null;
}

/**
 * A record of `ls-tree -r -z` ("<6-digit mode> <type> <id>\t<path>") that is a note: its annotated id and blob. Only
 * what git notes writes is a note, a regular file (NOTE_MODE) at a note path; anything else is a foreign entry.
 */
export function noteOfTreeRecord(
  record: string,
): { annotated: string; oid: string; notePath: string } | null {
  if (!record.startsWith(NOTE_RECORD)) return null;
  const tab = record.indexOf('\t');
  const oid = record.slice(12, tab);
  const notePath = record.slice(tab + 1);
  const annotated = annotatedIdOfPath(notePath);
  return annotated && isObjectId(oid) ? { annotated, oid, notePath } : null;
}

/** An entry of a notes tree that is neither a note nor a fanout directory: git notes never writes one. */
export interface ForeignEntry {
  /** From the notes tree's root. */
  path: string;
  /** As git prints it (`100755`, `120000`, `160000`, `040000`, ...). */
  mode: string;
}

/** Whether an entry of a notes tree listing (mode as git prints it) is foreign: neither a note nor a fanout directory. */
export function isForeignEntry(mode: string, path: string): boolean {
  if (mode === LISTED_TREE_MODE) return !FANOUT_PATH.test(path);
  return mode !== NOTE_MODE || annotatedIdOfPath(path) === null;
}

const MODE_NAMES: Record<string, string> = {
  '040000': 'a directory',
  '100755': 'an executable file',
  '120000': 'a symbolic link',
  '160000': 'a submodule',
};

/** Why a foreign entry is no note, in words that follow "which is". */
export function whyNotANote(entry: ForeignEntry): string {
  if (annotatedIdOfPath(entry.path) === null) return 'not a note on a full object id';
  const what = MODE_NAMES[entry.mode] ?? 'an entry';
  return `${what} (mode ${entry.mode}), not a note file (mode ${NOTE_MODE})`;
}

/**
 * The foreign entries of a listing of a notes tree that names directories as well as what they hold (`ls-tree -r -t`,
 * `diff-tree -r -t`: an empty directory shows only so), in git's order, where a directory comes just before its
 * contents: what lies in a foreign directory is part of it, so only the directory is named.
 */
export class ForeignEntries {
  readonly found: ForeignEntry[] = [];
  private within: string | null = null;

  /** Takes one entry of the listing. */
  see(mode: string, path: string): void {
    if (this.within !== null && path.startsWith(this.within)) return;
    this.within = null;
    if (!isForeignEntry(mode, path)) return;
    this.found.push({ path, mode });
    if (mode === LISTED_TREE_MODE) this.within = `${path}/`;
  }

  /** Takes a record of `ls-tree -r -t -z` ("<mode> <type> <id>\t<path>"). */
  seeRecord(record: string): void {
    this.see(record.slice(0, record.indexOf(' ')), record.slice(record.indexOf('\t') + 1));
  }
}

/** True when a notes directory is fanned out: it holds at least one 2-hex-digit subdirectory. */
export function isFannedOut(entries: readonly TreeEntry[]): boolean {
  return entries.some((entry) => entry.mode === TREE_MODE && FANOUT_DIR.test(entry.name));
}

/** Entries of a directory at `consumed` hex digits deep that are notes (blob named by the rest of an id). */
export function noteEntriesAt(
  entries: readonly TreeEntry[],
  consumed: number,
  idLength: number,
): TreeEntry[] {
  return entries.filter(
    (entry) =>
      entry.mode === NOTE_MODE && entry.name.length === idLength - consumed && /^[0-9a-f]+$/.test(entry.name),
  );
}

export function assertRevision(value: string, what: string): void {
  if (value === '' || value.startsWith('-') || /[\s\0]/.test(value)) {
    throw new DelegateGitError('LEDGER', `${JSON.stringify(value)} is not a valid ${what}.`);
  }
}

export function assertObjectId(blob: string): void {
  if (!isObjectId(blob)) {
    throw new DelegateGitError(
      'LEDGER',
      `${JSON.stringify(blob)} is not a full git object id (40 or 64 lowercase hex digits); notes are keyed by the full blob id.`,
    );
  }
}

/** Additions grouped per blob (lines deduplicated), after checking every blob id and line. */
export function groupAdditions(additions: readonly NoteAddition[]): Map<string, Set<string>> {
  const grouped = new Map<string, Set<string>>();
  for (const { blob, lines } of additions) {
    assertObjectId(blob);
    const target = grouped.get(blob) ?? new Set<string>();
    for (const line of lines) {
      if (typeof line !== 'string' || line === '' || line.includes('\n')) {
        throw new DelegateGitError(
          'LEDGER',
          `a ledger line for blob ${blob} is empty or contains a newline; each record must be one non-empty line.`,
        );
      }
      target.add(line);
    }
    grouped.set(blob, target);
  }
  return grouped;
}
