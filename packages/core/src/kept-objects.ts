/**
 * An object reader that keeps the objects it was asked to keep, so that a second reader of the same objects in one
 * run (the server gate hashes the pushed blobs for the ledger check, then judgeFiles reads them again) is answered
 * from memory. Objects never change under their id, so a kept object is the answer git would give again. What is
 * kept is bounded: past the budget, objects are read again instead.
 */
import { CatFileBatch, type GitObject } from './git.js';

const DEFAULT_BUDGET = 64 * 1024 * 1024;

export class KeptObjects extends CatFileBatch {
  private readonly kept = new Map<string, Promise<GitObject | null>>();
  private keptBytes = 0;

  constructor(
    private readonly reader: CatFileBatch,
    opts: { cwd: string; env?: NodeJS.ProcessEnv },
    private readonly budget = DEFAULT_BUDGET,
  ) {
    super(opts);
  }

  /** Reads an object (through the shared reader) and keeps it while the budget allows. */
  keep(object: string): Promise<GitObject | null> {
    const known = this.kept.get(object);
    if (known) return known;
    const read = this.reader.read(object);
    this.kept.set(object, read);
    read.then(
      (o) => {
        this.keptBytes += o?.content.length ?? 0;
        if (this.keptBytes > this.budget) this.kept.delete(object);
      },
      () => this.kept.delete(object),
    );
    return read;
  }

  override read(object: string): Promise<GitObject | null> {
    return this.kept.get(object) ?? this.reader.read(object);
  }

  override readMany(objects: string[]): Promise<Array<GitObject | null>> {
    return Promise.all(objects.map((object) => this.read(object)));
  }

  /** Forgets what was kept; the shared reader is closed by its owner. */
  override async close(): Promise<void> {
    this.kept.clear();
    await super.close();
  }
}
