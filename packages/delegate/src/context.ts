/**
 * Declared context: the line ranges of workspace files the architect chose to show the worker. Everything here
 * fails closed and whole: one bad request refuses the entire injection (the worker is then not called), the byte
 * budget refuses rather than truncates, and assembled text holding a credential is refused without echoing it.
 * Files are read only as far as the requested range, and a whole-file request over budget is refused from its
 * size alone, before any byte is read.
 */
import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { relativePosix } from '@delegate-git/core/path-within';
import { canonicalisePath, locateReadable } from './containment.js';
import { scanForCredentials } from './credential-scan.js';

export interface ContextRequest {
  path: string;
  /** 1-based, inclusive. */
  startLine?: number;
  /** 1-based, inclusive; clamped to the file's last line. */
  endLine?: number;
}

export interface InjectedContext {
  /** Workspace-relative POSIX path of the file actually read (symlinks resolved). */
  path: string;
  /** The range injected after clamping; null for a whole file. */
  lineRange: [number, number] | null;
  lines: number;
  bytes: number;
  /** SHA-256 (hex) of the injected slice, not of the whole file. */
  sha256: string;
  text: string;
}

export type ContextResult = { ok: true; context: InjectedContext[] } | { ok: false; errors: string[] };

/** The bytes of file content one prompt may show the worker, all context together. */
const CONTEXT_MAX_BYTES = 32768;

const READ_CHUNK_BYTES = 64 * 1024;

export async function readContext(
  requests: ContextRequest[],
  /** `used`: bytes of context already shown beside these, counted against the same budget. */
  opts: { workspace: string; maxBytes?: number; used?: number; gitDirs?: readonly string[] },
): Promise<ContextResult> {
  const maxBytes = opts.maxBytes ?? CONTEXT_MAX_BYTES;
  let workspace: string;
  try {
    workspace = canonicalisePath(path.resolve(opts.workspace));
  } catch {
    return { ok: false, errors: [`workspace ${opts.workspace} cannot be resolved (symbolic link loop)`] };
  }
  if (!(await isDirectory(workspace))) {
    return { ok: false, errors: [`workspace ${opts.workspace} is not a directory`] };
  }

  const errors: string[] = [];
  const context: InjectedContext[] = [];
  // One slice named again (20,000 times in a unit) is read and shown once: repeated, it spent the budget and
  // printed a refusal per copy.
  const seen = new Set<string>();
  let usedBytes = opts.used ?? 0;
  for (const request of requests) {
    const label = typeof request?.path === 'string' ? request.path : String(request?.path);
    const range = validateRange(request);
    if (typeof range === 'string') {
      errors.push(`${label}: ${range}`);
      continue;
    }
    const located = await locateFile(workspace, request.path, opts.gitDirs ?? []);
    if (typeof located === 'string') {
      errors.push(`${label}: ${located}`);
      continue;
    }
    const slot = `${located.absolute}\0${range?.start ?? ''}\0${range?.end ?? ''}`;
    if (seen.has(slot)) continue;
    seen.add(slot);
    const slice = await readSlice(located.absolute, range, maxBytes - usedBytes, located.size).catch(
      (error: NodeJS.ErrnoException) => `cannot be read (${error.code ?? error.message})`,
    );
    if (typeof slice === 'string') {
      errors.push(`${label}: ${slice}`);
      continue;
    }
    if (slice.overBudget) {
      errors.push(
        `${label}: over the context budget: injecting it would bring the total to at least ${usedBytes + slice.bytesSeen} bytes, over the ${maxBytes}-byte limit (context is never truncated; declare a narrower line range)`,
      );
      continue;
    }
    usedBytes += slice.bytes.length;
    const text = decodeText(slice.bytes);
    if (text === null) {
      errors.push(`${label}: not UTF-8 text (binary files cannot be injected)`);
      continue;
    }
    context.push({
      path: located.relative,
      lineRange: slice.lineRange,
      lines: slice.lineCount,
      bytes: slice.bytes.length,
      sha256: createHash('sha256').update(slice.bytes).digest('hex'),
      text,
    });
  }
  if (errors.length > 0) return { ok: false, errors: [...new Set(errors)] };

  const credentialErrors: string[] = [];
  for (const item of context) {
    const firstLine = item.lineRange ? item.lineRange[0] : 1;
    for (const finding of await scanForCredentials(item.text, { source: item.path })) {
      credentialErrors.push(`credential in ${item.path}:${firstLine + finding.line - 1} (${finding.rule})`);
    }
  }
  if (credentialErrors.length > 0) return { ok: false, errors: credentialErrors };
  return { ok: true, context };
}

type LineRange = { start: number; end: number | null } | null;

/** Pure: the requested range, or the reason it is invalid. null = whole file. */
function validateRange(request: ContextRequest): LineRange | string {
  if (typeof request?.path !== 'string' || request.path.trim() === '')
    return 'path must be a non-empty string';
  const { startLine, endLine } = request;
  if (startLine === undefined && endLine === undefined) return null;
  const start = startLine ?? 1;
  if (!Number.isInteger(start) || start < 1)
    return `startLine must be an integer >= 1 (got ${String(startLine)})`;
  if (endLine === undefined) return { start, end: null };
  if (!Number.isInteger(endLine) || endLine < start) {
    return `endLine must be an integer >= startLine (got ${String(endLine)})`;
  }
  return { start, end: endLine };
}

/** Resolves against the (canonical) workspace, follows symlinks, and refuses anything that lands outside it. */
async function locateFile(
  workspace: string,
  requested: string,
  gitDirs: readonly string[],
): Promise<{ absolute: string; relative: string; size: number } | string> {
  const located = locateReadable(workspace, requested, gitDirs);
  if (typeof located === 'string') return located;
  const { absolute } = located;
  let stat: Stats;
  try {
    stat = await fs.stat(absolute);
  } catch {
    return 'no such file';
  }
  if (!stat.isFile()) return 'not a regular file';
  return {
    absolute,
    relative: relativePosix(workspace, absolute),
    size: stat.size,
  };
}

interface Slice {
  bytes: Buffer;
  lineRange: [number, number] | null;
  lineCount: number;
  overBudget: boolean;
  /** Bytes of the slice seen before reading stopped (the whole slice unless over budget). */
  bytesSeen: number;
}

/**
 * Reads lines [start, end] (bytes as on disk, terminators included), stopping at the end of the range or as soon
 * as the slice exceeds the remaining budget. A whole-file request is refused from its size before reading.
 */
async function readSlice(
  file: string,
  range: LineRange,
  budget: number,
  size: number,
): Promise<Slice | string> {
  if (range === null && size > budget) {
    return { bytes: Buffer.alloc(0), lineRange: null, lineCount: 0, overBudget: true, bytesSeen: size };
  }
  const start = range?.start ?? 1;
  const end = range?.end ?? Number.POSITIVE_INFINITY;
  const handle = await fs.open(file, 'r');
  try {
    const parts: Buffer[] = [];
    let sliceBytes = 0;
    let line = 1; // line number of the next byte read
    let lastLineSeen = 0; // highest line that has at least one byte
    const chunk = Buffer.alloc(READ_CHUNK_BYTES);
    reading: while (true) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      const view = chunk.subarray(0, bytesRead);
      let offset = 0;
      while (offset < bytesRead) {
        if (line > end) break reading;
        const newline = view.indexOf(0x0a, offset);
        const stop = newline === -1 ? bytesRead : newline + 1;
        lastLineSeen = line;
        if (line >= start) {
          parts.push(Buffer.from(view.subarray(offset, stop)));
          sliceBytes += stop - offset;
          if (sliceBytes > budget) {
            return {
              bytes: Buffer.alloc(0),
              lineRange: null,
              lineCount: 0,
              overBudget: true,
              bytesSeen: sliceBytes,
            };
          }
        }
        if (newline !== -1) line += 1;
        offset = stop;
      }
    }
    if (range === null) {
      return {
        bytes: Buffer.concat(parts),
        lineRange: null,
        lineCount: lastLineSeen,
        overBudget: false,
        bytesSeen: sliceBytes,
      };
    }
    if (start > lastLineSeen) {
      return `startLine ${start} is beyond the end of the file (${lastLineSeen} line(s))`;
    }
    const clampedEnd = Math.min(end, lastLineSeen);
    return {
      bytes: Buffer.concat(parts),
      lineRange: [start, clampedEnd],
      lineCount: clampedEnd - start + 1,
      overBudget: false,
      bytesSeen: sliceBytes,
    };
  } finally {
    await handle.close();
  }
}

async function isDirectory(p: string): Promise<boolean> {
  try {
    return (await fs.stat(p)).isDirectory();
  } catch {
    return false;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function decodeText(bytes: Buffer): string | null {
  if (bytes.includes(0)) return null;
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}
