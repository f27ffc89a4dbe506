/**
 * The written files as the record names them: the digests of the bytes verified, as git stores them, and why what
 * would be recorded may not be what was verified (a file gone, a filter, a line-ending conversion, a checkout that
 * gives back other bytes). A record must sign the bytes that were verified, or say it cannot.
 */
import { createHash } from 'node:crypto';
import { DelegateGitError } from '@delegate-git/core/errors';
import type { Repository } from '@delegate-git/core/repository';
import type { ReceiptFile } from './receipt.js';
import { repositoryPathOf } from './repository-paths.js';
import type { PlannedFile } from './write-plan.js';
import {
  attributesMayApply,
  type ContentHashers,
  checkedOutContent,
  idKeptAsIs,
  idWithoutLocalEol,
  MAX_WRITTEN_BYTES,
  onlyLineEndingsDiffer,
  rawBlobId,
  type WrittenContent,
} from './written-content.js';

/**
 * The receipt's files, hashed from the contents read after verification (`contents`, in the order of `files`),
 * and why what would be recorded is not what was verified: a file that is no regular file any more (nothing
 * verified can be recorded for it); one git stores changed by more than line endings (a filter driver, `ident`, an
 * encoding), or by line endings only this clone's config converts (`core.autocrlf`: another clone checks out other
 * bytes); or one a checkout here does not give back as verified (a smudge filter).
 */
export async function hashWritten(
  repo: Repository,
  files: readonly PlannedFile[],
  contents: ReadonlyArray<WrittenContent>,
  hashers: ContentHashers,
): Promise<{ files: ReceiptFile[]; problems: string[] }> {
  const top = repo.layout.topLevel!;
  const problems: string[][] = files.map(() => []);
  const hashed = await Promise.all(
    files.map(async (f, i): Promise<ReceiptFile | null> => {
      const rel = repositoryPathOf(top, f.absolute);
      const content = contents[i]!;
      if (!Buffer.isBuffer(content)) {
        problems[i]!.push(
          content.unread === 'too large'
            ? `\`${rel}\` is ${content.size} bytes after verification, more than delegate-git reads to record a file (${MAX_WRITTEN_BYTES}).`
            : `\`${rel}\` is no regular file after verification (a link, a pipe, or gone).`,
        );
        return null;
      }
      let gitBlob = await hashers.hash(i, content);
      // DESIGN 3.2: both digests are of the content as stored.
      let stored = rawBlobId(content, gitBlob) === gitBlob ? content : await storedContent(repo, gitBlob);
      const keptAsIs = stored !== content && onlyLineEndingsDiffer(content, stored);
      const ownId = keptAsIs ? await idKeptAsIs(repo, rel, content, gitBlob) : null;
      if (ownId) {
        gitBlob = ownId;
        stored = content;
      }
      if (stored !== content) {
        if (!onlyLineEndingsDiffer(content, stored))
          problems[i]!.push(
            `git stores \`${rel}\` changed by a clean filter (.gitattributes filter, ident or working-tree-encoding), so the blob recorded is not the bytes verified.`,
          );
        else if ((await idWithoutLocalEol(repo, rel, content)) !== gitBlob)
          problems[i]!.push(
            `this clone's core.autocrlf or core.eol converts the line endings of \`${rel}\` as git stores it, so another clone would check out other bytes than those verified. Set the line endings in .gitattributes, or write the file with the stored ones.`,
          );
      }
      // A checkout must give back the bytes verified (a smudge filter may change what git stored as it was). With
      // no checkout attribute on the path and the bytes stored as they are, it writes them as they are.
      const compare = stored !== content || attributesMayApply(repo, rel, repo.env ?? process.env);
      if (
        problems[i]!.length === 0 &&
        compare &&
        !(await checkedOutContent(repo, rel, gitBlob)).equals(content)
      )
        problems[i]!.push(
          `a checkout of \`${rel}\` does not give back the bytes verified (a smudge filter or line-ending attribute changes it: .gitattributes filter, ident, eol or working-tree-encoding).`,
        );
      return {
        path: rel,
        mode: f.mode,
        hunks: f.hunks,
        lines: f.lines,
        bytes: content.length,
        sha256: createHash('sha256').update(stored).digest('hex'),
        gitBlob,
      };
    }),
  );
  return { files: hashed.filter((f): f is ReceiptFile => f !== null), problems: problems.flat() };
}

async function storedContent(repo: Repository, gitBlob: string): Promise<Buffer> {
  const blob = await repo.objects.read(gitBlob);
  if (!blob)
    throw new DelegateGitError('GIT', `git hash-object -w wrote ${gitBlob}, but it cannot be read back.`);
  return blob.content;
}

export function sha256Of(content: Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}
