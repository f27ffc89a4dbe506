/**
 * The git processes a delegation that wrote files ends with, started ahead of need so that their start-up is hidden
 * in time spent waiting anyway (docs/performance.md); their bookkeeping kept out of the delegation's steps.
 */
import type { WaitingGit } from '@delegate-git/core/git';
import type { Repository } from '@delegate-git/core/repository';
import type { ContentHashers } from './written-content.js';

/**
 * The git processes that end a delegation that wrote files: the one writing the record, started once the worker has
 * the request (its time hides the start-up, a few milliseconds spent after the verification command otherwise), and
 * those hashing what was written, started once the files are (the command's run hides theirs). Dismissed unused
 * when nothing is recorded.
 */
export class ClosingWriters {
  recording: WaitingGit | null = null;
  hashers: ContentHashers | null = null;

  constructor(private readonly repo: Repository) {}

  start(): void {
    this.recording ??= this.repo.ledger.startWriter();
  }

  dismiss(): void {
    this.hashers?.dismiss();
    this.recording?.dismiss();
  }
}
