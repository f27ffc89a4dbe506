import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanGitEnv, makeTempRepo, type TempRepo } from '../../../test/support/git-repo.js';
import { notesOf } from '../src/ledger-pass.js';
import { Repository } from '../src/repository.js';

const env = cleanGitEnv();
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const idOf = (i: number) => createHash('sha1').update(String(i)).digest('hex');

/** A tree built with mktree from `entries` (name → blob id, or a nested tree as an object). */
function tree(r: TempRepo, entries: Record<string, string | object>): string {
  const lines = Object.entries(entries).map(([name, value]) =>
    typeof value === 'string'
      ? `100644 blob ${value}\t${name}`
      : `040000 tree ${tree(r, value as Record<string, string | object>)}\t${name}`,
  );
  return r.gitText(['mktree'], `${lines.join('\n')}\n`);
}

async function listed(r: TempRepo, root: string): Promise<Array<[string, string[]]>> {
  const commit = r.gitText(['commit-tree', '-m', 'notes', root]);
  const repo = await Repository.open(r.dir, env);
  try {
    const out: Array<[string, string[]]> = [];
    for await (const note of notesOf(repo, commit)) out.push(note);
    return out;
  } finally {
    await repo.close();
  }
}

describe('notesOf: the notes of a notes commit, streamed in annotated-id order', () => {
  it('lists every layout in order, a flat entry beside a fanned-out one as one note of two blobs', async () => {
    const r = makeTempRepo();
    cleanups.push(r.cleanup);
    const blobs = [0, 1, 2, 3, 4, 5].map((i) => r.blob(`note ${i}\n`));
    // Annotated ids chosen so that fanned-out and flat entries interleave within a first character.
    const ids = Array.from({ length: 300 }, (_, i) => idOf(i));
    const a = ids.find((id) => id.startsWith('a'))!;
    const b = ids.filter((id) => id.startsWith('a') && id !== a)[0]!;
    const c = ids.find((id) => id.startsWith('0'))!;
    const d = ids.find((id) => id.startsWith('f'))!;
    const root = tree(r, {
      // fanned out: a and b under their two-character directories
      [a.slice(0, 2)]: { [a.slice(2)]: blobs[0]! },
      [b.slice(0, 2)]: { [b.slice(2)]: blobs[1]! },
      // a again, flat (a tool that does not honour fanout wrote it beside the fanned-out one)
      [a]: blobs[2]!,
      // deeper fanout, and a flat one
      [c.slice(0, 2)]: { [c.slice(2, 4)]: { [c.slice(4)]: blobs[3]! } },
      [d]: blobs[4]!,
      // not notes: ignored
      'README.md': blobs[5]!,
    });
    const notes = await listed(r, root);
    const expected: Array<[string, string[]]> = [
      [c, [blobs[3]!]],
      [a, [blobs[0]!, blobs[2]!].sort()],
      [b, [blobs[1]!]],
      [d, [blobs[4]!]],
    ];
    expected.sort((x, y) => (x[0] < y[0] ? -1 : 1));
    expect(notes.map(([id, oids]) => [id, [...oids].sort()])).toEqual(expected);
  });

  it('keeps order across many notes and every first character (control: the sorted list of all of them)', async () => {
    const r = makeTempRepo();
    cleanups.push(r.cleanup);
    const blob = r.blob('line\n');
    const ids = Array.from({ length: 160 }, (_, i) => idOf(i));
    const fanned: Record<string, Record<string, string>> = {};
    const flat: Record<string, string> = {};
    ids.forEach((id, i) => {
      if (i % 3 === 0) flat[id] = blob;
      else fanned[id.slice(0, 2)] = { ...fanned[id.slice(0, 2)], [id.slice(2)]: blob };
    });
    const notes = await listed(r, tree(r, { ...fanned, ...flat }));
    expect(notes.map(([id]) => id)).toEqual([...ids].sort());
  });
});
