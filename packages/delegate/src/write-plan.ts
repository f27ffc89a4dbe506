/**
 * From an Emission to writes. Planning reads the files it must (patch targets, existence) and writes nothing,
 * so every refusal is known before the first byte lands; applying writes each file atomically and, if one write
 * fails, puts back the ones already written. The per-file order is the plugin's (2.2), so the operator reads
 * the rule that really applied: containment (and a name a record can hold), then contract files, then unit scope,
 * then duplicates, then a file and a directory under one name, then patch-or-create.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DelegateGitError } from '@delegate-git/core/errors';
import { relativePosix } from '@delegate-git/core/path-within';
import { isRepositoryPath } from '@delegate-git/core/record';
import { canonicalisePath, checkEmissionPath, isPathWithin } from './containment.js';
import type { Emission } from './emission.js';
import {
  applySearchReplace,
  DIVIDER_MARKER,
  parseSearchReplace,
  REPLACE_MARKER,
  SEARCH_MARKER,
} from './patch.js';
import { evaluateUnitScope, type UnitScopeMode } from './scope.js';
import { type Existing, errorCode, existingEntry, PlannedNames } from './write-target.js';

export interface PlannedFile {
  /** Workspace-relative, POSIX separators (`../` for a file in an emitAllowlist root outside the workspace). */
  path: string;
  /** Canonical absolute path: where the bytes really go. */
  absolute: string;
  mode: 'created' | 'patched';
  content: Buffer;
  /** Patch blocks applied; 0 for a created file. */
  hunks: number;
  /** Newline count, plus one for a last line without a newline. */
  lines: number;
  bytes: number;
}

export interface WritePlan {
  files: PlannedFile[];
  /** One per refused file, naming it. */
  errors: string[];
  /** Later occurrences of an already planned path (by spelling or by canonical path); ignored, not errors. */
  duplicates: string[];
}

export interface WritePlanOptions {
  workspace: string;
  /** Canonical absolute paths of the unit's contract files. */
  contractFiles: string[];
  targetFiles: string[];
  unitScope: UnitScopeMode;
  emitAllowlist: string[];
  /** The repository's top level, where the policy and keys directory are (governanceFile). */
  repositoryTop?: string;
  /** The repository's git directories (canonical): nothing under them is written, whatever their names. */
  gitDirs?: readonly string[];
  /** Whether a path (relative to repositoryTop, `/`-separated) is the policy or a key file: reviewers' to change. */
  governanceFile?: (path: string) => boolean;
}

function countLines(content: string): number {
  if (content === '') return 0;
  const newlines = content.split('\n').length - 1;
  return content.endsWith('\n') ? newlines : newlines + 1;
}

function planned(
  workspace: string,
  absolute: string,
  mode: PlannedFile['mode'],
  text: string,
  hunks: number,
): PlannedFile {
  const content = Buffer.from(text, 'utf8');
  return {
    path: relativePosix(workspace, absolute),
    absolute,
    mode,
    content,
    hunks,
    lines: countLines(text),
    bytes: content.length,
  };
}

type FileOutcome = { file: PlannedFile } | { error: string };

function planPatch(
  shown: string,
  absolute: string,
  entry: Existing,
  body: string,
  workspace: string,
): FileOutcome {
  const blocks = parseSearchReplace(body)!;
  if (blocks.length === 0) {
    return {
      error:
        `${shown}: a \`${SEARCH_MARKER}\` block was opened and never closed with \`${DIVIDER_MARKER}\` and ` +
        `\`${REPLACE_MARKER}\`; the patch was refused and nothing written (the reply may have been cut off)`,
    };
  }
  if (entry === null) {
    return {
      error:
        `${shown} does not exist; a search/replace block edits a file rather than creating one. To create it, ` +
        'emit the whole file in a fenced block instead',
    };
  }
  if (entry === 'other') return { error: `${shown} is not a regular file; a patch can only edit a file` };
  let original: Buffer;
  try {
    original = fs.readFileSync(absolute);
  } catch (error) {
    return { error: `${shown} could not be read to apply the patch: ${(error as Error).message}` };
  }
  const text = original.toString('utf8');
  // Decoding invalid UTF-8 would replace the bad bytes, so writing back would alter lines the patch never touched.
  if (!Buffer.from(text, 'utf8').equals(original)) {
    return { error: `${shown} is not UTF-8 text; it cannot be patched without altering its bytes` };
  }
  const result = applySearchReplace(text, blocks);
  if (!result.ok) return { error: `${shown}: patch refused, the file left as it was: ${result.reason}` };
  return { file: planned(workspace, absolute, 'patched', result.content, result.hunks) };
}

/**
 * Whether a block is a diff rather than a file: it begins as one (`diff --git`, `---` then `+++`, a hunk header `@@`,
 * apply_patch's `*** Begin Patch`). A file that only quotes one further down (a doc, a test fixture) is a file.
 */
function isDiff(body: string): boolean {
  const [first = '', second = ''] = body
    .slice(0, 4096)
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => line !== '');
  return (
    /^(?:diff --git |\*\*\* Begin Patch|@@(?: |$))/.test(first) ||
    (first.startsWith('--- ') && second.startsWith('+++ '))
  );
}

/** The refusal of a whole file sent for one that exists (its words are the original plugin's rule 2.3.1). */
export const WHOLE_FILE_OVER_EXISTING = 'already exists; a whole-file block may only create a new file';

function planWholeFile(
  shown: string,
  absolute: string,
  entry: Existing,
  body: string,
  workspace: string,
): FileOutcome {
  if (entry !== null) {
    return {
      error:
        `${shown} ${WHOLE_FILE_OVER_EXISTING}. To change an existing file, ` +
        `emit a search/replace patch: \`${SEARCH_MARKER}\` / exact current text / \`${DIVIDER_MARKER}\` / new ` +
        `text / \`${REPLACE_MARKER}\``,
    };
  }
  return { file: planned(workspace, absolute, 'created', body, 0) };
}

export function planWrites(emission: Emission, opts: WritePlanOptions): WritePlan {
  const files: PlannedFile[] = [];
  const errors: string[] = [];
  const duplicates = [...emission.duplicates];
  const seen = new Set<string>();
  const names = new PlannedNames();
  const workspace = canonicalisePath(opts.workspace);
  const top = opts.repositoryTop === undefined ? null : canonicalisePath(opts.repositoryTop);

  for (const emitted of emission.files) {
    const shown = `\`${emitted.path}\``;
    const contained = checkEmissionPath(emitted.path, {
      workspace,
      emitAllowlist: opts.emitAllowlist,
      gitDirs: opts.gitDirs ?? [],
    });
    if (!contained.ok) {
      errors.push(contained.reason);
      continue;
    }
    const absolute = contained.absolute;
    // record() leaves out what isRepositoryPath refuses: written, such a file would read as recorded and never be.
    if (top !== null && isPathWithin(top, absolute) && !isRepositoryPath(relativePosix(top, absolute))) {
      errors.push(
        `${shown}: no record can name it (a repository path holds no backslash, and no empty, \`.\` or \`..\` ` +
          'segment), so it could never be recorded nor promoted. Not written.',
      );
      continue;
    }
    if (top !== null && opts.governanceFile && isPathWithin(top, absolute)) {
      if (opts.governanceFile(relativePosix(top, absolute))) {
        errors.push(
          `${shown} is the policy or a key file of the trust root; only reviewers change those (a unit's ` +
            'verdict never promotes them). Not written.',
        );
        continue;
      }
    }
    // Before scope, so a contract file that is also a target reads as what it is.
    if (opts.contractFiles.some((contract) => isPathWithin(contract, absolute))) {
      errors.push(
        `${shown} is a contract file declared by the architect; the worker may not write it (the contract is ` +
          'what the unit is verified against). Not written.',
      );
      continue;
    }
    const scope = evaluateUnitScope(absolute, {
      workspace,
      targetFiles: opts.targetFiles,
      unitScope: opts.unitScope,
    });
    if (!scope.ok) {
      errors.push(scope.reason);
      continue;
    }
    if (seen.has(absolute)) {
      duplicates.push(emitted.path);
      continue;
    }
    seen.add(absolute);
    const collision = names.collision(shown, absolute);
    if (collision !== null) {
      errors.push(collision);
      continue;
    }
    const existing = existingEntry(shown, absolute, workspace);
    if ('error' in existing) {
      errors.push(existing.error);
      continue;
    }

    // A unified diff in a block is a form models often send and delegate-git does not apply: written as the file, it
    // was source no one wrote (ux57 f05). A file that is a diff by name (fix.patch) is content like any other.
    const patch = parseSearchReplace(emitted.body);
    if (patch === null && isDiff(emitted.body) && !/\.(?:diff|patch)$/i.test(emitted.path)) {
      errors.push(
        `${shown}: the block is a unified diff (\`---\`, \`+++\`, \`@@\` lines), which delegate-git does not apply; not ` +
          'written. To create the file, send all of it in a fenced block; to change it, send SEARCH/REPLACE pairs',
      );
      continue;
    }
    const outcome =
      patch === null
        ? planWholeFile(shown, absolute, existing.entry, emitted.body, workspace)
        : planPatch(shown, absolute, existing.entry, emitted.body, workspace);
    if ('error' in outcome) {
      errors.push(outcome.error);
      continue;
    }
    files.push(outcome.file);
    names.add(emitted.path, absolute);
  }
  return { files, errors, duplicates };
}

/** One file an applied plan wrote, with what `putBack` needs to undo it. */
export interface AppliedWrite {
  file: PlannedFile;
  /** The bytes and permission bits the file had, or null if this write created it. */
  previous: { content: Buffer; mode: number } | null;
  /** Directories created for it, deepest last. */
  createdDirs: string[];
}

/** Writes `content` to a temp file beside `absolute`, then renames it over: readers see old bytes or new. */
export function writeAtomically(absolute: string, content: Buffer, mode: number | undefined): void {
  const temp = path.join(
    path.dirname(absolute),
    `.${path.basename(absolute)}.delegate-git-${process.pid}-${randomBytes(6).toString('hex')}.tmp`,
  );
  try {
    const fd = fs.openSync(temp, 'wx', mode ?? 0o666);
    try {
      fs.writeFileSync(fd, content);
      if (mode !== undefined) fs.fchmodSync(fd, mode); // the umask must not narrow an existing file's bits
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temp, absolute);
  } catch (error) {
    fs.rmSync(temp, { force: true });
    throw error;
  }
}

function readPrevious(absolute: string): AppliedWrite['previous'] {
  try {
    const content = fs.readFileSync(absolute);
    return { content, mode: fs.statSync(absolute).mode & 0o7777 };
  } catch (error) {
    // ENOTDIR: something on its way is a file, so there is no file here either (writing it then fails, and says so).
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return null;
    throw error;
  }
}

/** Lists the directories `mkdir -p` created, from `first` (returned by fs.mkdir) down to `dir`. */
function directoriesCreated(first: string | undefined, dir: string): string[] {
  if (first === undefined) return [];
  const created = [first];
  for (let current = dir; current !== first && current.startsWith(first); current = path.dirname(current)) {
    created.splice(1, 0, current);
  }
  return created;
}

function restore(write: AppliedWrite): void {
  if (write.previous === null) fs.rmSync(write.file.absolute, { force: true });
  else writeAtomically(write.file.absolute, write.previous.content, write.previous.mode);
  for (const dir of [...write.createdDirs].reverse()) removeIfEmpty(dir);
}

export function removeIfEmpty(dir: string): void {
  try {
    fs.rmdirSync(dir);
  } catch {
    // Not empty (or gone): kept.
  }
}

/** Why putBack left a file that no longer holds what the worker wrote. */
export const CHANGED_SINCE_WRITTEN = 'changed since the worker wrote it, so left as it is';

/**
 * Puts back what `writes` changed, the last first: a file's previous bytes and mode, or the file removed when the
 * write created it, then the directories made for it when they are left empty. Every file is tried whatever the
 * others do; those that could not be put back are returned, with why, so the caller can name them. With
 * `keepChanged`, a file that no longer holds what the worker wrote (the user edited it meanwhile, during a long
 * verification) is left as it is, as a stopped run's recovery leaves it: putting it back would lose that edit.
 */
export function putBack(
  writes: readonly AppliedWrite[],
  opts: { keepChanged?: boolean } = {},
): Array<{ file: PlannedFile; reason: string; changed?: true }> {
  const unrestored: Array<{ file: PlannedFile; reason: string; changed?: true }> = [];
  for (const write of [...writes].reverse()) {
    try {
      if (opts.keepChanged && !holdsWritten(write)) {
        unrestored.push({ file: write.file, reason: CHANGED_SINCE_WRITTEN, changed: true });
        continue;
      }
      restore(write);
    } catch (error) {
      unrestored.push({ file: write.file, reason: (error as Error).message });
    }
  }
  return unrestored;
}

/** Whether the file still holds the bytes the worker wrote (a file gone, or no regular file now, does not). */
function holdsWritten(write: AppliedWrite): boolean {
  try {
    const stat = fs.lstatSync(write.file.absolute);
    return (
      stat.isFile() &&
      stat.size === write.file.content.length &&
      fs.readFileSync(write.file.absolute).equals(write.file.content)
    );
  } catch {
    return false;
  }
}

/** A planned file with what it holds now: what `applyWritePlan` shows its caller before the first write. */
export interface FileBeforeWrite {
  file: PlannedFile;
  previous: AppliedWrite['previous'];
}

/** What `applyWritePlan` tells its caller, and asks of it, around the writes. */
export interface WriteHooks {
  /**
   * Given every file with what it holds, and the directories the writes will create (outermost first), before the
   * first byte is written: a journal that outlives the process (unrecorded-writes.ts). If it throws, nothing is
   * written.
   */
  beforeWriting?: (files: readonly FileBeforeWrite[], createdDirs: readonly string[]) => void;
  /**
   * Given the files (absolute paths) a failed write could not put back: where what each held is kept, so that the
   * error can say so (a copy held only in memory would go with the process).
   */
  setAside?: (absolutes: readonly string[]) => ReadonlyMap<string, string>;
}

/**
 * Writes every planned file atomically, creating parent directories, and returns what it wrote (for `putBack`).
 * If any write fails, the files already written are put back and the error is thrown: a unit's files land
 * together or not at all.
 */
export function applyWritePlan(plan: WritePlan, hooks: WriteHooks = {}): AppliedWrite[] {
  const before = plan.files.map((file) => {
    try {
      return { file, previous: readPrevious(file.absolute) };
    } catch (error) {
      throw couldNotWrite(file, error, 'nothing was changed');
    }
  });
  hooks.beforeWriting?.(before, missingDirectories(plan.files.map((f) => path.dirname(f.absolute))));
  const applied: AppliedWrite[] = [];
  for (const { file, previous } of before) {
    let createdDirs: string[] = [];
    try {
      const dir = path.dirname(file.absolute);
      createdDirs = directoriesCreated(fs.mkdirSync(dir, { recursive: true }), dir);
      writeAtomically(file.absolute, file.content, previous?.mode);
      applied.push({ file, previous, createdDirs });
    } catch (error) {
      for (const dir of createdDirs.reverse()) removeIfEmpty(dir);
      const unrestored = putBack(applied);
      const kept =
        unrestored.length > 0 ? hooks.setAside?.(unrestored.map((u) => u.file.absolute)) : undefined;
      throw couldNotWrite(file, error, partialWriteOutcome(applied.length, unrestored, kept ?? new Map()));
    }
  }
  return applied;
}

/** What became of the files a failed `applyWritePlan` had written before the write that failed. */
export function partialWriteOutcome(
  written: number,
  unrestored: ReadonlyArray<{ file: Pick<PlannedFile, 'path' | 'absolute'>; reason: string }>,
  kept: ReadonlyMap<string, string>,
): string {
  if (unrestored.length === 0)
    return `the ${written} file(s) already written were restored; nothing was changed`;
  const named = unrestored.map((u) => {
    const copy = kept.get(u.file.absolute);
    return `${u.file.path} (${u.reason}${copy ? `; what it held before is kept in ${copy}` : ''})`;
  });
  return `restoring these files also failed, check them by hand: ${named.join(', ')}`;
}

function couldNotWrite(file: PlannedFile, error: unknown, outcome: string): DelegateGitError {
  return new DelegateGitError('IO', `could not write ${file.path}: ${(error as Error).message}; ${outcome}`, {
    cause: error,
  });
}

/** The directories among `dirs` and their ancestors that do not exist, outermost first. */
function missingDirectories(dirs: readonly string[]): string[] {
  const missing = new Set<string>();
  for (const dir of dirs) {
    for (let d = dir; !missing.has(d) && !fs.existsSync(d); d = path.dirname(d)) missing.add(d);
  }
  return [...missing].sort((a, b) => a.length - b.length);
}
