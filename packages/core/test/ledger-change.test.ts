/**
 * The server gate's reads of the ledger (notes-tree.ts, ledger-change.ts) against NotesLedger's own, on notes
 * commits laid out every way git or a foreign tool leaves them: flat, fanned out one and two levels, a flat
 * duplicate beside a fanned-out note, notes moved by fanout, modified, deleted, and lines dropped.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cleanGitEnv,
  makeTempDir,
  makeTempRepo,
  removeDir,
  type TempRepo,
} from '../../../test/support/git-repo.js';
import { CatFileBatch } from '../src/git.js';
import { changedIds, olderNoteBlobs, parseNotesDiff, readLedgerChange } from '../src/ledger-change.js';
import { NotesLedger } from '../src/notes-ledger.js';
import { NotesTree } from '../src/notes-tree.js';

const env = cleanGitEnv();
type Layout = 'flat' | 'fan1' | 'fan2';

function notePath(id: string, layout: Layout): string {
  if (layout === 'flat') return id;
  if (layout === 'fan1') return `${id.slice(0, 2)}/${id.slice(2)}`;
  return `${id.slice(0, 2)}/${id.slice(2, 4)}/${id.slice(4)}`;
}

describe('reading a ledger update once (the server gate) gives NotesLedger’s answers', () => {
  let r: TempRepo;
  let scratch: string;
  let ledger: NotesLedger;
  let ids: string[];
  const commits: Record<string, string> = {};

  /** A notes commit holding exactly these notes: (id, layout) → lines. Written through a scratch index. */
  function notesCommit(name: string, notes: Array<[id: string, layout: Layout, lines: string[]]>): string {
    const indexFile = path.join(scratch, `${name}.index`);
    const gitEnv = { ...env, GIT_INDEX_FILE: indexFile };
    const info = notes
      .map(
        ([id, layout, lines]) =>
          `100644 ${r.blob(lines.map((l) => `${l}\n`).join(''))}\t${notePath(id, layout)}\n`,
      )
      .join('');
    execFileSync('git', ['update-index', '--add', '--index-info'], { cwd: r.dir, env: gitEnv, input: info });
    const tree = execFileSync('git', ['write-tree'], { cwd: r.dir, env: gitEnv }).toString().trim();
    commits[name] = r.gitText(['commit-tree', tree, '-m', name]);
    return commits[name]!;
  }

  beforeAll(() => {
    r = makeTempRepo();
    scratch = makeTempDir();
    ledger = new NotesLedger({ cwd: r.dir, env });
    ids = Array.from({ length: 30 }, (_, i) => r.blob(`content ${i}\n`));
    const base = (n: number) =>
      ids.slice(0, n).map((id, i): [string, Layout, string[]] => [id, 'flat', [`a${i}`, `b${i}`]]);
    // 0: twenty flat notes.
    notesCommit('flat', base(20));
    // 1: ten more notes, and a line added to five of the first ones.
    notesCommit(
      'grown',
      base(25).map(([id, layout, lines], i) => [id, layout, i < 5 ? [...lines, `c${i}`] : lines]),
    );
    // 2: everything moved one level down (fanned out), one note gains a line on the way.
    notesCommit(
      'fanned',
      base(25).map(([id, , lines], i) => [id, 'fan1', i === 7 ? [...lines, 'moved and grown'] : lines]),
    );
    // 3: a foreign tool's flat duplicate beside a fanned note (one line shared, one new), and a two-level one.
    const [x, y] = [ids[3]!, ids[4]!];
    const fanned: Array<[string, Layout, string[]]> = base(25).map(([id, , lines]) => [id, 'fan1', lines]);
    notesCommit('duplicated', [
      ...fanned,
      [x, 'flat', ['a3', 'from the flat duplicate']],
      [y, 'fan2', ['deep line']],
    ]);
    // 4: the fanned part of x gains the duplicate's line (already in the ledger), a line is dropped, a note deleted.
    notesCommit('rewritten', [
      ...fanned
        .filter(([id]) => id !== ids[10])
        .map(([id, layout, lines]): [string, Layout, string[]] =>
          id === x
            ? [id, layout, [...lines, 'from the flat duplicate']]
            : id === ids[12]
              ? [id, layout, ['a12']]
              : [id, layout, lines],
        ),
      [x, 'flat', ['a3', 'from the flat duplicate']],
      [y, 'fan2', ['deep line', 'deep line 2']],
    ]);
    // 5: the duplicate folded into the fanned note (nothing lost), the deep one moved up.
    notesCommit('folded', [
      ...fanned
        .filter(([id]) => id !== ids[10])
        .map(([id, layout, lines]): [string, Layout, string[]] =>
          id === x
            ? [id, layout, [...lines, 'from the flat duplicate']]
            : id === ids[12]
              ? [id, layout, ['a12']]
              : id === y
                ? [id, layout, [...lines, 'deep line', 'deep line 2']]
                : [id, layout, lines],
        ),
    ]);
  });
  afterAll(() => {
    r.cleanup();
    removeDir(scratch);
  });

  const names = ['flat', 'grown', 'fanned', 'duplicated', 'rewritten', 'folded'];
  const pairs = names.flatMap((a) => names.filter((b) => b !== a).map((b) => [a, b] as const));

  it.each(pairs)('from %s to %s: the same dropped and added lines', async (from, to) => {
    const batch = new CatFileBatch({ cwd: r.dir, env });
    try {
      const change = await readLedgerChange({ cwd: r.dir, env, batch }, commits[from]!, commits[to]!);
      expect(change.dropped).toEqual(await ledger.droppedLines(commits[from]!, commits[to]!));
      expect(change.added).toEqual(await ledger.addedLines(commits[from]!, commits[to]!));
    } finally {
      await batch.close();
    }
  });

  it('the scenarios do exercise drops, duplicates and lines already in the ledger (control)', async () => {
    const dropped = await ledger.droppedLines(commits.duplicated!, commits.rewritten!);
    expect(dropped).toEqual(
      [
        { annotated: ids[10]!, line: 'a10' },
        { annotated: ids[10]!, line: 'b10' },
        { annotated: ids[12]!, line: 'b12' },
      ].sort((a, b) => (a.annotated < b.annotated ? -1 : 1)),
    );
    // The line the fanned note of x gains was already in its flat duplicate: not added.
    const added = await ledger.addedLines(commits.duplicated!, commits.rewritten!);
    expect(added).toEqual([{ annotated: ids[4], lines: ['deep line 2'] }]);
    expect(await ledger.linesOn(ids[3]!, commits.duplicated)).toEqual([
      'a3',
      'b3',
      'from the flat duplicate',
    ]);
  });

  it.each(names)('at %s: the same lines per blob as linesOnMany, walking or listing', async (at) => {
    const batch = new CatFileBatch({ cwd: r.dir, env });
    try {
      const tree = await NotesTree.open(batch, commits[at]!);
      // 30 ids (some without a note) is below linesOnMany's walk limit; with 300 more it lists the tree instead.
      const many = [...ids, ...Array.from({ length: 300 }, () => randomBytes(20).toString('hex'))];
      for (const wanted of [ids, many]) {
        expect(await tree.linesOnMany(wanted)).toEqual(await ledger.linesOnMany(wanted, commits[at]));
      }
    } finally {
      await batch.close();
    }
  });

  it('refuses what is not a notes commit, or not a full blob id, as NotesLedger does', async () => {
    const batch = new CatFileBatch({ cwd: r.dir, env });
    try {
      const missing = '0'.repeat(39) + '1';
      await expect(NotesTree.open(batch, missing)).rejects.toThrow(/is not a notes commit/);
      await expect(ledger.linesOnMany(ids, missing)).rejects.toThrow(/is not a notes commit/);
      const tree = await NotesTree.open(batch, commits.flat!);
      await expect(tree.linesOnMany(['abc'])).rejects.toThrow(/not a full git object id/);
      await expect(ledger.linesOnMany(['abc'], commits.flat)).rejects.toThrow(/not a full git object id/);
    } finally {
      await batch.close();
    }
  });
});

describe('the note blobs an id had before, from the diff and its notes after', () => {
  const id = 'ab'.repeat(20);
  const diffOf = (status: string, p: string, oldOid: string, newOid: string) =>
    parseNotesDiff([`:100644 100644 ${oldOid} ${newOid} ${status}`, p]);

  it('keeps unchanged paths, drops added ones, and takes the old blob of modified and deleted ones', () => {
    const flat = { path: id, oid: 'f'.repeat(40) };
    const fanned = { path: `ab/${id.slice(2)}`, oid: 'e'.repeat(40) };
    expect(olderNoteBlobs([flat, fanned], diffOf('A', fanned.path, '0'.repeat(40), fanned.oid))).toEqual([
      flat.oid,
    ]);
    expect(olderNoteBlobs([flat, fanned], diffOf('M', fanned.path, 'd'.repeat(40), fanned.oid))).toEqual([
      flat.oid,
      'd'.repeat(40),
    ]);
    expect(olderNoteBlobs([fanned], diffOf('D', id, 'c'.repeat(40), '0'.repeat(40)))).toEqual([
      fanned.oid,
      'c'.repeat(40),
    ]);
  });

  it('reads only note paths from the diff, and which ids each question compares', () => {
    const diff = parseNotesDiff([
      `:100644 100644 ${'1'.repeat(40)} ${'2'.repeat(40)} M`,
      id,
      `:000000 100644 ${'0'.repeat(40)} ${'3'.repeat(40)} A`,
      'not-a-note.txt',
      `:100644 000000 ${'4'.repeat(40)} ${'0'.repeat(40)} D`,
      `cd/${'cd'.repeat(19)}`,
    ]);
    expect(diff.map((d) => [d.annotated, d.status])).toEqual([
      [id, 'M'],
      ['cd'.repeat(20), 'D'],
    ]);
    expect(changedIds(diff)).toEqual({ forDropped: [id, 'cd'.repeat(20)].sort(), forAdded: [id] });
  });
});
