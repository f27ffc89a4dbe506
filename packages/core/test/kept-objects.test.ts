import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanGitEnv, makeTempRepo, type TempRepo } from '../../../test/support/git-repo.js';
import { CatFileBatch } from '../src/git.js';
import { KeptObjects } from '../src/kept-objects.js';

const env = cleanGitEnv();

describe('KeptObjects', () => {
  let r: TempRepo;
  let small: string;
  let large: string;
  beforeAll(() => {
    r = makeTempRepo();
    small = r.blob('small\n');
    large = r.blob('x'.repeat(4096));
  });
  afterAll(() => r.cleanup());

  it('answers a kept object from memory: the shared reader is closed, the object is still there', async () => {
    const shared = new CatFileBatch({ cwd: r.dir, env });
    const kept = new KeptObjects(shared, { cwd: r.dir, env });
    expect((await kept.keep(small))?.content.toString()).toBe('small\n');
    await shared.close();
    expect((await kept.read(small))?.content.toString()).toBe('small\n');
    expect((await kept.readMany([small]))[0]?.oid).toBe(small);
    // Control: what was not kept goes to the shared reader, which is closed now.
    await expect(kept.read(large)).rejects.toThrow(/after close/);
    await kept.close();
  });

  it('keeps nothing past its budget: those objects are read again', async () => {
    const shared = new CatFileBatch({ cwd: r.dir, env });
    const kept = new KeptObjects(shared, { cwd: r.dir, env }, 100);
    expect((await kept.keep(small))?.oid).toBe(small);
    expect((await kept.keep(large))?.content.length).toBe(4096);
    await shared.close();
    expect((await kept.read(small))?.oid).toBe(small);
    await expect(kept.read(large)).rejects.toThrow(/after close/);
    await kept.close();
  });
});
