/**
 * The server gate's reads of the ledger (notes-tree.ts, ledger-change.ts) against NotesLedger's own, on notes
 * commits laid out every way git or a foreign tool leaves them: flat, fanned out one and two levels, a flat
 * duplicate beside a fanned-out note, notes moved by fanout, modified, deleted, lines dropped, and entries that are
 * no notes (which every reader skips alike, and which the diff and the listing name).
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
import {
  changedIds,
  olderNoteBlobs,
  parseNotesDiff,
  readLedgerChange,
  readNotesDiff,
} from '../src/ledger-change.js';
import { ForeignEntries } from '../src/notes-format.js';
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

  /**
   * A notes commit holding exactly these notes: (id, layout) → lines, and `others` (`git update-index --index-info`
   * lines). Written through a scratch index.
   */
  function notesCommit(
    name: string,
    notes: Array<[id: string, layout: Layout, lines: string[]]>,
    others: string[] = [],
  ): string {
    const indexFile = path.join(scratch, `${name}.index`);
    const gitEnv = { ...env, GIT_INDEX_FILE: indexFile };
    const info = [
      ...notes.map(
        ([id, layout, lines]) =>
          `100644 ${r.blob(lines.map((l) => `${l}\n`).join(''))}\t${notePath(id, layout)}\n`,
      ),
      ...others.map((line) => `${line}\n`),
    ].join('');
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
    const folded = fanned
      .filter(([id]) => id !== ids[10])
      .map(([id, layout, lines]): [string, Layout, string[]] =>
        id === x
          ? [id, layout, [...lines, 'from the flat duplicate']]
          : id === ids[12]
            ? [id, layout, ['a12']]
            : id === y
              ? [id, layout, [...lines, 'deep line', 'deep line 2']]
              : [id, layout, lines],
      );
    notesCommit('folded', folded);
    // 6: the same notes, and beside them what a pusher can add that is no note: a file and a directory named by no
    // id, and at note paths a submodule (one beside a note on the same id), an executable file and a symbolic link.
    notesCommit('foreign', folded, foreignEntries());
  });

  /** The entries of the `foreign` commit that are no notes, as `update-index --index-info` lines. */
  function foreignEntries(): string[] {
    const flat = commits.flat!;
    return [
      `100644 ${r.blob('a line\n')}\tREADME`,
      `100644 ${r.blob('in a directory\n')}\tzz/foo`,
      `160000 ${flat}\t${ids[5]}`,
      `100755 ${r.blob('an executable line\n')}\t${ids[26]}`,
      `120000 ${r.blob('a link line\n')}\t${notePath(ids[27]!, 'fan1')}`,
      `160000 ${flat}\t${ids[28]}`,
    ];
  }

  /** What the `foreign` commit holds besides notes, sorted by path (the directory zz/ named once). */
  const foreignListed = () =>
    [
      { path: 'README', mode: '100644' },
      { path: 'zz', mode: '040000' },
      { path: ids[5]!, mode: '160000' },
      { path: ids[26]!, mode: '100755' },
      { path: notePath(ids[27]!, 'fan1'), mode: '120000' },
      { path: ids[28]!, mode: '160000' },
    ].sort(byPath);
  afterAll(() => {
    r.cleanup();
    removeDir(scratch);
  });

  const names = ['flat', 'grown', 'fanned', 'duplicated', 'rewritten', 'folded', 'foreign'];
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

  it('reads no note from an entry that is no regular file, on an id that has a note beside it or none', async () => {
    const batch = new CatFileBatch({ cwd: r.dir, env });
    try {
      const tree = await NotesTree.open(batch, commits.foreign!);
      expect(await tree.linesOn(ids[5]!)).toEqual(['a5', 'b5']);
      for (const id of [ids[26]!, ids[27]!, ids[28]!]) {
        expect(await tree.linesOn(id)).toEqual([]);
        expect(await ledger.linesOn(id, commits.foreign)).toEqual([]);
      }
      // Control: the same ids read at a commit where they hold notes.
      expect(await ledger.linesOn(ids[5]!, commits.folded)).toEqual(['a5', 'b5']);
    } finally {
      await batch.close();
    }
  });

  it('names every entry that is no note, from the diff of an update and from a listing of the tree', async () => {
    const added = await readNotesDiff({ cwd: r.dir, env }, commits.folded!, commits.foreign!);
    expect(added.notes).toEqual([]);
    expect([...added.foreign].sort(byPath)).toEqual(foreignListed());
    // Removing them adds nothing that is no note.
    expect((await readNotesDiff({ cwd: r.dir, env }, commits.foreign!, commits.folded!)).foreign).toEqual([]);

    const listed = new ForeignEntries();
    const notes: string[] = [];
    for await (const { annotated } of ledger.entries(commits.foreign, listed)) notes.push(annotated);
    expect([...listed.found].sort(byPath)).toEqual(foreignListed());
    // Control: every note is still read, and a tree without such entries lists none.
    expect(notes).toEqual([...(await ledger.list(commits.folded)).keys()]);
    const none = new ForeignEntries();
    for await (const _ of ledger.entries(commits.folded, none));
    expect(none.found).toEqual([]);
  });

  it('reads the notes of a fanout directory named twice (a malformed tree) as git does: both', async () => {
    const id = r.blob('twice\n');
    const raw = (entries: Array<[mode: string, name: string, oid: string]>) =>
      Buffer.concat(
        entries.map(([mode, name, oid]) =>
          Buffer.concat([Buffer.from(`${mode} ${name}\0`), Buffer.from(oid, 'hex')]),
        ),
      );
    const literally = (content: Buffer) =>
      execFileSync('git', ['hash-object', '-t', 'tree', '-w', '--literally', '--stdin'], {
        cwd: r.dir,
        env,
        input: content,
      })
        .toString()
        .trim();
    const half = (line: string) => literally(raw([['100644', id.slice(2), r.blob(`${line}\n`)]]));
    const root = literally(
      raw([
        ['40000', id.slice(0, 2), half('approved')],
        ['40000', id.slice(0, 2), half('rejected')],
      ]),
    );
    const commit = r.gitText(['commit-tree', root, '-m', 'a fanout directory named twice']);
    r.git(['update-ref', 'refs/notes/twice', commit]);
    const byGit = r.gitText(['notes', '--ref', 'twice', 'show', id]).split('\n').filter(Boolean).sort();
    expect(byGit).toEqual(['approved', 'rejected']);

    const batch = new CatFileBatch({ cwd: r.dir, env });
    try {
      expect(await (await NotesTree.open(batch, commit)).linesOn(id)).toEqual(byGit);
    } finally {
      await batch.close();
    }
    // Walked (a few ids) and listed (many), as the other readers read it.
    const many = [id, ...Array.from({ length: 300 }, () => randomBytes(20).toString('hex'))];
    for (const wanted of [[id], many])
      expect((await ledger.linesOnMany(wanted, commit)).get(id)).toEqual(byGit);
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
  const modes: Record<string, string> = { A: '000000 100644', M: '100644 100644', D: '100644 000000' };
  const diffOf = (status: string, p: string, oldOid: string, newOid: string) =>
    parseNotesDiff([`:${modes[status]} ${oldOid} ${newOid} ${status}`, p]).notes;

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
    expect(diff.notes.map((d) => [d.annotated, d.status])).toEqual([
      [id, 'M'],
      ['cd'.repeat(20), 'D'],
    ]);
    expect(changedIds(diff.notes)).toEqual({ forDropped: [id, 'cd'.repeat(20)].sort(), forAdded: [id] });
    expect(diff.foreign).toEqual([{ path: 'not-a-note.txt', mode: '100644' }]);
  });
});

describe('a diff of the ledger split into notes and entries that are no notes', () => {
  const zero = '0'.repeat(40);
  const oid = (c: string) => c.repeat(40);
  const note = (n: number) => `${n}`.repeat(40);
  const record = (
    oldMode: string,
    newMode: string,
    status: string,
    p: string,
    from = zero,
    to = oid('9'),
  ) => [`:${oldMode} ${newMode} ${from} ${to} ${status}`, p];

  it('keeps notes apart, and names each entry added or changed that is no note once', () => {
    const diff = parseNotesDiff([
      ...record('000000', '100644', 'A', note(1)), // a note
      ...record('000000', '040000', 'A', '22'), // a fanout directory and a note in it
      ...record('000000', '100644', 'A', `22/${'2'.repeat(38)}`),
      ...record('000000', '100644', 'A', 'README'),
      ...record('000000', '040000', 'A', 'zz'), // a directory of no id: named, not what is in it
      ...record('000000', '100644', 'A', 'zz/foo'),
      ...record('000000', '040000', 'A', 'zz/sub'),
      ...record('000000', '100644', 'A', 'zz/sub/bar'),
      ...record('000000', '040000', 'A', 'zz-empty'), // an empty directory shows only with -t
      ...record('000000', '160000', 'A', note(3)), // a submodule where a note would be
      ...record('100644', '100755', 'M', note(4), oid('a')), // a note made executable: gone as a note
      ...record('100644', '120000', 'T', note(5), oid('b')), // a note made a link
      ...record('100755', '100644', 'M', note(6), oid('c')), // an executable file made a note
      ...record('100644', '000000', 'D', 'old-junk', oid('d'), zero), // a deletion adds nothing
      ...record('040000', '000000', 'D', 'yy', oid('e'), zero),
    ]);
    expect(diff.foreign).toEqual([
      { path: 'README', mode: '100644' },
      { path: 'zz', mode: '040000' },
      { path: 'zz-empty', mode: '040000' },
      { path: note(3), mode: '160000' },
      { path: note(4), mode: '100755' },
      { path: note(5), mode: '120000' },
    ]);
    expect(diff.notes.map((d) => [d.path, d.status, d.oldMode, d.newMode])).toEqual([
      [note(1), 'A', '000000', '100644'],
      [`22/${'2'.repeat(38)}`, 'A', '000000', '100644'],
      [note(4), 'M', '100644', '100755'],
      [note(5), 'T', '100644', '120000'],
      [note(6), 'M', '100755', '100644'],
    ]);
  });

  it('a note turned into something else loses its lines; a file turned into a note had none before', () => {
    const { notes } = parseNotesDiff([
      ...record('100644', '120000', 'T', note(5), oid('b')),
      ...record('100755', '100644', 'M', note(6), oid('c')),
    ]);
    expect(olderNoteBlobs([], notes.slice(0, 1))).toEqual([oid('b')]);
    expect(olderNoteBlobs([{ path: note(6), oid: oid('9') }], notes.slice(1))).toEqual([]);
  });
});

function byPath(a: { path: string }, b: { path: string }): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}
