/**
 * The journal a delegation keeps before the worker's files are written (unrecorded-writes.ts): what names the run,
 * so that the next delegate tells its record from others, and what each file and git held before, so that a run
 * that dies is undone from it.
 */
import { DelegateGitError } from '@delegate-git/core/errors';
import { isRepositoryPath } from '@delegate-git/core/record';
import type { Repository } from '@delegate-git/core/repository';
import type { SigningKey } from '@delegate-git/core/signing-key';
import type { HeldInGit } from './git-held.js';
import { repositoryPathOf } from './repository-paths.js';
import type { Unit } from './unit.js';
import { WriteJournal } from './unrecorded-writes.js';
import type { FileBeforeWrite } from './write-plan.js';
import { sha256Of } from './written-hashes.js';

export function keepJournal(
  run: { repo: Repository; top: string; unit: Unit; signingKey: SigningKey },
  files: readonly FileBeforeWrite[],
  createdDirs: readonly string[],
  ledgerTip: string | null,
  held: (path: string) => HeldInGit,
): WriteJournal {
  const { repo, top, unit, signingKey } = run;
  try {
    return WriteJournal.keep(
      repo.stateDir,
      top,
      {
        taskName: unit.taskName,
        // What the verdict statement says of the run: the next delegate tells its record from others by them.
        instructionSha256: sha256Of(Buffer.from(unit.instruction, 'utf8')),
        keyid: signingKey.publicKey.keyid,
        ledgerTip,
      },
      files.map(({ file, previous }) => {
        const inTop = repositoryPathOf(top, file.absolute);
        const inRepository = isRepositoryPath(inTop);
        return {
          path: inRepository ? inTop : file.absolute,
          absolute: file.absolute,
          inRepository,
          content: file.content,
          previous,
          heldBefore: inRepository ? held(inTop) : null,
        };
      }),
      createdDirs,
    );
  } catch (error) {
    throw new DelegateGitError(
      'IO',
      `could not keep what the worker's files held before its write (under ${repo.stateDir}): ${(error as Error).message}. Nothing was written; free the space or fix the permissions there and run the unit again.`,
      { cause: error },
    );
  }
}
