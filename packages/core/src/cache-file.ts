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
