/**
 * One opened repository: its layout, its ledger, and a lazily started object reader, closed together. Opening it
 * also recalls the public keys an earlier run found sound (key-checks.ts), and closing it keeps the new ones.
 */
import path from 'node:path';
import { CatFileBatch, type RepositoryLayout, repositoryLayout } from './git.js';
import { keepKeyChecks, recallKeyChecks } from './key-checks.js';
import { NotesLedger } from './notes-ledger.js';

export class Repository {
  private objectReader: CatFileBatch | null = null;
  private recalledKeys = 0;
  readonly ledger: NotesLedger;

  private constructor(
    readonly layout: RepositoryLayout,
    readonly env: NodeJS.ProcessEnv | undefined,
    say: ((line: string) => void) | undefined,
  ) {
    this.ledger = new NotesLedger({
      cwd: this.cwd,
      env,
      objects: () => this.objects,
      commonDir: layout.commonDir,
      say,
    });
  }

  /** `say`: where a line for the person waiting goes (the CLI's stderr); a library caller may leave it out. */
  static async open(cwd: string, env?: NodeJS.ProcessEnv, say?: (line: string) => void): Promise<Repository> {
    const repo = new Repository(await repositoryLayout(cwd, env), env, say);
    repo.recalledKeys = recallKeyChecks(repo.cacheDir);
    return repo;
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
    // The reader stays, closed: a read still under way elsewhere (the other half of a Promise.all that failed) is
    // refused by it, where a new reader would start a git nobody closes, and the process would never exit.
    this.objectReader ??= new CatFileBatch({ cwd: this.cwd, env: this.env });
    await this.objectReader.close();
    await keepKeyChecks(this.cacheDir, this.recalledKeys);
  }
}
