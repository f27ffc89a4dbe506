import path from 'node:path';

/**
 * Replaces a cache file whole (a temporary file renamed over it), so a reader sees the old or the new content,
 * never part of one. Returns false when it could not be written (a read-only git dir): a cache only saves time.
 */
export async function replaceCacheFile(file: string, data: string | Buffer): Promise<boolean> {
  // Loaded when first written (about 2 ms): the pre-commit hook's quick answer mostly only reads its caches.
  const { mkdir, rename, rm, writeFile } = await import('node:fs/promises');
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(tmp, data);
    await rename(tmp, file);
    return true;
  } catch {
    await rm(tmp, { force: true }).catch(() => {});
    return false;
  }
}

/** The file of the recorded paths at a ledger tip (path-index.ts writes it; the pre-commit hook's quick path reads it). */
export function pathsName(tip: string): string {
  return `recorded-paths-${tip}`;
}

/**
 * The recorded paths file: a first line saying how many paths follow and in how many bytes, then the paths joined by
 * NUL (no path holds one). An empty or cut file must not read as "fewer paths recorded": a path governed only because
 * the ledger recorded it would pass every gate that asked this file (a write cut short by a power loss, say).
 */
const PATHS_HEADER = /^delegate-git recorded paths (\d+) (\d+)\n/;

export function recordedPathsText(paths: readonly string[]): string {
  const body = paths.join('\0');
  return `delegate-git recorded paths ${paths.length} ${Buffer.byteLength(body)}\n${body}`;
}

/** The NUL-joined paths of a recorded paths file, or null when it is not whole. */
export function recordedPathsBody(text: string): string | null {
  const header = PATHS_HEADER.exec(text);
  if (!header) return null;
  const body = text.slice(header[0].length);
  const count = Number(header[1]);
  if (Buffer.byteLength(body) !== Number(header[2])) return null;
  let separators = 0;
  for (let i = body.indexOf('\0'); i !== -1; i = body.indexOf('\0', i + 1)) separators++;
  return (body === '' ? count === 0 : separators + 1 === count) ? body : null;
}
