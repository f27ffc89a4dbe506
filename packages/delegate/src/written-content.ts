/**
 * The written files' bytes after verification, read once, and the blobs git stores for exactly those bytes. The
 * verification command runs the worker's code, which can leave a process behind (one in a session of its own
 * outlives the command's process group): each read of a path could then see other bytes, or a pipe that answers
 * each reader differently. So each file is opened once, must be a regular file, and its bytes are what is
 * fingerprinted and what git hashes (`hash-object --stdin`), never the path again.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import { git, gitFailure, WaitingGit } from '@delegate-git/core/git';
import type { Repository } from '@delegate-git/core/repository';

/** The content of a regular file at `file`, or null when nothing regular is there (a link, a pipe, a directory). */
export function regularContent(file: string): Buffer | null {
  let fd: number;
  try {
    // Not through a link; and a pipe opens at once rather than waiting for a writer.
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    return fstatSync(fd).isFile() ? readFileSync(fd) : null;
  } finally {
    closeSync(fd);
  }
}

/** The files' contents (as regularContent reads them) and paths, as one digest, to see whether a command changed them. */
export function fingerprintOf(
  files: ReadonlyArray<{ absolute: string }>,
  contents: ReadonlyArray<Buffer | null> = files.map((f) => regularContent(f.absolute)),
): string {
  const hash = createHash('sha256');
  files.forEach((f, i) => {
    hash.update(f.absolute).update('\0');
    const content = contents[i];
    hash.update(content ?? '\0not a regular file').update('\0');
  });
  return hash.digest('hex');
}

/** Most units write a few files: that many hashing processes are started while the command runs. */
const STARTED_AHEAD = 16;

/**
 * `git hash-object -w --stdin --path=<path>` for each written file: the bytes given, with the clean filters and
 * line-ending conversion of that path applied, as staging applies them (DESIGN 3.2). Started before verification so
 * that their start-up is hidden by the command's run.
 */
export class ContentHashers {
  private readonly started: Array<WaitingGit | null>;

  constructor(
    private readonly repo: Repository,
    private readonly paths: readonly string[],
  ) {
    this.started = paths.map((p, i) =>
      i < STARTED_AHEAD ? new WaitingGit(argsFor(p), this.options()) : null,
    );
  }

  /** The blob id git stores for `content` at path `i`. */
  async hash(i: number, content: Buffer): Promise<string> {
    const waiting = this.started[i] ?? new WaitingGit(argsFor(this.paths[i]!), this.options());
    this.started[i] = null;
    const result = await waiting.run(content);
    if (result.code !== 0) throw gitFailure(waiting.args, result);
    return result.stdout.toString('utf8').trim();
  }

  dismiss(): void {
    for (const waiting of this.started) waiting?.dismiss();
    this.started.fill(null);
  }

  private options() {
    return { cwd: this.repo.layout.topLevel!, env: this.repo.env };
  }
}

function argsFor(repositoryPath: string): string[] {
  return ['hash-object', '-w', '--stdin', `--path=${repositoryPath}`];
}

/**
 * The bytes a checkout writes for `blob` at `repositoryPath` (its smudge filters and line-ending conversion applied):
 * where a clean filter changed what git stored, the verified bytes are still what a checkout gives back when this
 * round trip returns them (`eol=crlf`), and are not when it does not (`ident`, a filter that drops a line).
 */
export async function checkedOutContent(
  repo: Repository,
  repositoryPath: string,
  blob: string,
): Promise<Buffer> {
  return git(['cat-file', '--filters', `--path=${repositoryPath}`, blob], {
    cwd: repo.layout.topLevel!,
    env: repo.env,
  });
}

/** The id git gives these bytes stored as they are (no filter): equal to the stored blob's when no filter changed them. */
export function rawBlobId(content: Buffer, like: string): string {
  const algorithm = like.length === 64 ? 'sha256' : 'sha1';
  return createHash(algorithm).update(`blob ${content.length}\0`).update(content).digest('hex');
}
