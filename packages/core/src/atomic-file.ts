import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';

/**
 * A temporary file in the same directory, then a rename: a reader sees the old file or the new one, never half of
 * one, and a failed write leaves nothing behind. The temporary name is the writer's own, so two processes writing
 * the same file at once each rename a whole file. `content` may be given in parts (a large cache, streamed).
 */
export async function writeFileAtomic(
  file: string,
  content: string | Buffer | Iterable<string>,
  mode?: number,
): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const data = typeof content === 'string' || Buffer.isBuffer(content) ? content : Readable.from(content);
  try {
    await writeFile(tmp, data, mode === undefined ? undefined : { mode });
    await rename(tmp, file);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
}
