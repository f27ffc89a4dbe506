/**
 * The written files' bytes after verification, read once, and the blobs git stores for exactly those bytes. The
 * verification command runs the worker's code, which can leave a process behind (one in a session of its own
 * outlives the command's process group): each read of a path could then see other bytes, or a pipe that answers
 * each reader differently. So each file is opened once, must be a regular file, and its bytes are what is
 * fingerprinted and what git hashes (`hash-object --stdin`), never the path again.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, existsSync, fstatSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { git, gitFailure, WaitingGit } from '@delegate-git/core/git';
import type { Repository } from '@delegate-git/core/repository';
import { stagedIds } from '@delegate-git/core/worktree-blobs';

/**
 * Larger than any source file a unit writes, and read twice for each verification run; a command can still grow a
 * file past it (Node reads nothing past 2 GiB into one buffer at all).
 */
export const MAX_WRITTEN_BYTES = 256 * 1024 * 1024;

/** What is at a written path after a run: its bytes, or why they are not read. */
export type WrittenContent = Buffer | { unread: 'not regular' } | { unread: 'too large'; size: number };

/** The content of a regular file at `file`; nothing is read from a link, a pipe, a directory or a huge file. */
export function regularContent(file: string): WrittenContent {
  let fd: number;
  try {
    // Not through a link; and a pipe opens at once rather than waiting for a writer.
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return { unread: 'not regular' };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { unread: 'not regular' };
    if (stat.size > MAX_WRITTEN_BYTES) return { unread: 'too large', size: stat.size };
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The files' contents (as regularContent reads them) and paths, as one digest, to see whether a command changed them. */
export function fingerprintOf(
  files: ReadonlyArray<{ absolute: string }>,
  contents: ReadonlyArray<WrittenContent> = files.map((f) => regularContent(f.absolute)),
): string {
  const hash = createHash('sha256');
  files.forEach((f, i) => {
    hash.update(f.absolute).update('\0');
    const content = contents[i]!;
    hash.update(Buffer.isBuffer(content) ? content : `\0${JSON.stringify(content)}`).update('\0');
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
 * What a checkout writes for `blob` at its path (`cat-file --filters`: smudge filters and the tree's line-ending
 * attributes applied): the verified bytes must be what a clone checks out, which a smudge-only change (`ident`
 * expanding `$Id$`) breaks though git stores the bytes unchanged. This clone's own line-ending settings are left
 * out (LOCAL_EOL_NEUTRAL): other clones do not share them. One git per file: in `--batch` mode git 2.39 gives the
 * size before the filters, so the content could not be cut out of a batch.
 */
export async function checkedOutContent(
  repo: Repository,
  repositoryPath: string,
  blob: string,
): Promise<Buffer> {
  return git([...LOCAL_EOL_NEUTRAL, 'cat-file', '--filters', `--path=${repositoryPath}`, blob], {
    cwd: repo.layout.topLevel!,
    env: repo.env,
  });
}

/**
 * Whether any attributes file could apply to `repositoryPath`: a `.gitattributes` in its directory or one above it in
 * the work tree, the repository's `info/attributes`, or the user's default attributes file. Without one, a checkout
 * writes a blob stored as it was as it is, so it need not be compared (a git each, about 20 ms a delegation, against
 * a goal of 100 ms for all of it). A `core.attributesFile` elsewhere is the operator's own and is not looked for.
 */
export function attributesMayApply(
  repo: Repository,
  repositoryPath: string,
  env: NodeJS.ProcessEnv,
): boolean {
  const top = repo.layout.topLevel!;
  const dirs = repositoryPath.split('/').slice(0, -1);
  const candidates = dirs.map((_, i) => path.join(top, ...dirs.slice(0, i + 1), '.gitattributes'));
  candidates.push(path.join(top, '.gitattributes'), path.join(repo.layout.commonDir, 'info', 'attributes'));
  const configHome = env.XDG_CONFIG_HOME || (env.HOME ? path.join(env.HOME, '.config') : null);
  if (configHome) candidates.push(path.join(configHome, 'git', 'attributes'));
  return candidates.some((file) => existsSync(file));
}

const LOCAL_EOL_NEUTRAL = ['-c', 'core.autocrlf=false', '-c', 'core.eol=lf'];

/**
 * Whether line-ending conversion alone (CRLF to LF) turns `verified` into `stored`: the one change of stored bytes
 * a checkout undoes everywhere the tree's attributes ask for it. A filter driver, `ident` or an encoding is not.
 */
export function onlyLineEndingsDiffer(verified: Buffer, stored: Buffer): boolean {
  return Buffer.from(verified.toString('latin1').replace(/\r\n/g, '\n'), 'latin1').equals(stored);
}

/**
 * The blob id these bytes get at this path with the local line-ending settings neutral (`core.autocrlf` false,
 * `core.eol` lf): equal to the stored one when the tree's attributes, which every clone shares, made the conversion.
 */
export async function idWithoutLocalEol(
  repo: Repository,
  repositoryPath: string,
  content: Buffer,
): Promise<string> {
  const args = [...LOCAL_EOL_NEUTRAL, 'hash-object', '--stdin', `--path=${repositoryPath}`];
  return (await git(args, { cwd: repo.layout.topLevel!, env: repo.env, input: content }))
    .toString('utf8')
    .trim();
}

/** The id git gives these bytes stored as they are (no filter): equal to the stored blob's when no filter changed them. */
export function rawBlobId(content: Buffer, like: string): string {
  const algorithm = like.length === 64 ? 'sha256' : 'sha1';
  return createHash(algorithm).update(`blob ${content.length}\0`).update(content).digest('hex');
}

/**
 * `content`'s own blob id when `git add` would store these bytes as they are though hashing them at their path
 * converts their line endings: git's "safer autocrlf" leaves a file alone whose indexed blob already has CRLF. Only
 * the index knows that, and `hash-object` reads none, so the path is staged into a scratch index; that reads the
 * file again, so its answer counts only when it is exactly the bytes verified. Else null.
 */
export async function idKeptAsIs(
  repo: Repository,
  repositoryPath: string,
  content: Buffer,
  hashedId: string,
): Promise<string | null> {
  const own = rawBlobId(content, hashedId);
  const [staged] = await stagedIds(repo.layout.topLevel!, [repositoryPath], repo.env).catch(() => [null]);
  return staged === own ? own : null;
}
