/**
 * The blob each work-tree path would be staged as: what a record about that path's content must name. A regular
 * file is staged into a scratch index that holds its current index entry (`git update-index --add`), so that every
 * rule of `git add` applies, the ones that depend on the index too: a file whose indexed blob has CRLF line endings
 * is not converted again under `core.autocrlf` or `text=auto` ("safer autocrlf"), which `git hash-object`, reading no
 * index, would do, naming a blob the commit never holds. A symbolic link is staged as its target's text, unfiltered;
 * `hash-object <path>` would read the file the link points to instead, so a reviewer's approval of a link would name
 * content the commit never holds.
 */
import { lstatSync, readlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DelegateGitError } from './errors.js';
import { git, gitText } from './git.js';
import { splitZ } from './git-fields.js';
import { shownPath } from './shown-path.js';

/**
 * Per path (repository-relative, in order): the blob id, or null when nothing is at that path (a dangling link is
 * something: git stages it). `write`: store the blobs in the object store, staging them as `git add` does; without
 * it (or where staging fails) they are hashed (`hash-object`), the index's rules aside.
 */
export async function worktreeBlobs(
  top: string,
  paths: readonly string[],
  opts: { env?: NodeJS.ProcessEnv; write: boolean },
): Promise<Array<string | null>> {
  const kinds = paths.map((p) => kindAt(path.join(top, p)));
  const write = opts.write ? ['-w'] : [];
  const files = paths.filter((_, i) => kinds[i] === 'file');
  const hashed = async () =>
    (await git(['hash-object', ...write, '--', ...files], { cwd: top, env: opts.env }))
      .toString('utf8')
      .split('\n')
      .filter(Boolean);
  // Staged as `git add` would where it can be (a read-only object store, or a name git lists in other bytes than
  // given, is hashed instead).
  const fileIds =
    files.length === 0
      ? []
      : opts.write
        ? await stagedIds(top, files, opts.env).catch(hashed)
        : await hashed();
  let next = 0;
  const ids: Array<string | null> = [];
  for (const [i, p] of paths.entries()) {
    if (kinds[i] === 'file') ids.push(fileIds[next++]!);
    else if (kinds[i] === 'link')
      ids.push(
        await gitText(['hash-object', ...write, '--no-filters', '--stdin'], {
          cwd: top,
          env: opts.env,
          input: readlinkSync(path.join(top, p), { encoding: 'buffer' }),
        }),
      );
    else ids.push(null);
  }
  return ids;
}

function kindAt(file: string): 'file' | 'link' | null {
  try {
    const stat = lstatSync(file);
    return stat.isSymbolicLink() ? 'link' : stat.isFile() ? 'file' : null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
}

/**
 * The blobs `git add` would stage for these files, staged into a scratch index seeded with their entries in the
 * index in use (GIT_INDEX_FILE's during a commit): the real one is neither touched nor locked. The blobs are stored.
 */
export async function stagedIds(
  top: string,
  files: readonly string[],
  env: NodeJS.ProcessEnv | undefined,
): Promise<string[]> {
  const literal = { ...(env ?? process.env), GIT_LITERAL_PATHSPECS: '1' };
  const current = splitZ(await git(['ls-files', '-s', '-z', '--', ...files], { cwd: top, env: literal }))
    // "<mode> <id> <stage>\t<path>": only a merged entry (stage 0) is one git add compares against.
    .filter((entry) => / 0\t/.test(entry))
    .map((entry) => entry.replace(/ 0\t/, '\t'));
  const dir = await mkdtemp(path.join(tmpdir(), 'delegate-git-stage-'));
  try {
    const scratch = { ...literal, GIT_INDEX_FILE: path.join(dir, 'index') };
    // No hook runs for an index only this process sees (git runs post-index-change for every index it writes).
    const run = (args: string[], input?: string) =>
      git([...NO_HOOKS, ...args], { cwd: top, env: scratch, input });
    if (current.length > 0) await run(['update-index', '-z', '--index-info'], `${current.join('\0')}\0`);
    await run(['update-index', '--add', '-z', '--stdin'], `${files.join('\0')}\0`);
    const staged = new Map(
      splitZ(await run(['ls-files', '-s', '-z'])).map((entry) => {
        const tab = entry.indexOf('\t');
        return [entry.slice(tab + 1), entry.split(' ')[1]!] as const;
      }),
    );
    return files.map((f) => {
      const id = staged.get(f);
      // Staged under another name (core.ignorecase folding it, say): no answer for this one.
      if (id === undefined)
        throw new DelegateGitError(
          'GIT',
          `git update-index did not stage ${shownPath(f)} in a scratch index under that name.`,
        );
      return id;
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** For a git that writes a scratch index: the repository's hooks are not asked (post-index-change). */
export const NO_HOOKS = ['-c', 'core.hooksPath=/dev/null'];
