/**
 * One opened repository: its layout, its ledger, and a lazily started object reader, closed together.
 */
import path from 'node:path';
import { CatFileBatch, type RepositoryLayout, repositoryLayout } from './git.js';
import { NotesLedger } from './notes-ledger.js';

export class Repository {
  private objectReader: CatFileBatch | null = null;
  readonly ledger: NotesLedger;

  private constructor(
    readonly layout: RepositoryLayout,
    readonly env: NodeJS.ProcessEnv | undefined,
  ) {
    this.ledger = new NotesLedger({ cwd: this.cwd, env, objects: () => this.objects });
  }

  static async open(cwd: string, env?: NodeJS.ProcessEnv): Promise<Repository> {
    return new Repository(await repositoryLayout(cwd, env), env);
  }

  /** Where git commands run: the work tree's top level, or the git dir of a bare repository. */
  get cwd(): string {
    return this.layout.topLevel ?? this.layout.gitDir;
  }

  /** Local operator state, per worktree (DESIGN 3.3): never in the work tree. */
  get stateDir(): string {
    return path.join(this.layout.gitDir, 'delegate-git');
  }

  /** Derived caches, shared by all worktrees of the repository. */
  get cacheDir(): string {
    return path.join(this.layout.commonDir, 'delegate-git', 'cache');
  }

  get objects(): CatFileBatch {
    this.objectReader ??= new CatFileBatch({ cwd: this.cwd, env: this.env });
    return this.objectReader;
  }

  async close(): Promise<void> {
    await this.objectReader?.close();
    this.objectReader = null;
  }
}
