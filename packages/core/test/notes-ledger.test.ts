import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { bundleModule } from '../../../test/support/bundle.js';
import {
  cleanGitEnv,
  cloneTempRepo,
  makeTempDir,
  makeTempRepo,
  removeDir,
  type TempRepo,
} from '../../../test/support/git-repo.js';
import { repoRoot } from '../../../test/support/paths.js';
import { CatFileBatch } from '../src/git.js';
import { readNotesDiff } from '../src/ledger-change.js';
import {
  annotatedIdOfPath,
  compareBytewise,
  type ForeignEntry,
  isForeignEntry,
  noteOfTreeRecord,
  parseNote,
  serializeNote,
  whyNotANote,
} from '../src/notes-format.js';
import { LEDGER_REF, NotesLedger } from '../src/notes-ledger.js';

const env = cleanGitEnv();
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function repo(): TempRepo {
  const created = makeTempRepo();
  cleanups.push(created.cleanup);
  return created;
}

/**
 * Runs test/support/append-worker.mjs in a process of its own, against this checkout's NotesLedger bundled once:
 * `args` are its arguments after the module (repository, name, rounds, shared blob, own blob).
 */
async function appendWorkers(): Promise<
  (args: string[], opts: { env: NodeJS.ProcessEnv }) => Promise<{ stdout: string }>
> {
  const buildDir = makeTempDir();
  cleanups.push(() => removeDir(buildDir));
  const moduleFile = await bundleModule(
    'packages/core/src/notes-ledger.ts',
    path.join(buildDir, 'notes-ledger.mjs'),
  );
  const workerScript = path.join(repoRoot, 'test/support/append-worker.mjs');
  const run = promisify(execFile);
  return (args, opts) => run(process.execPath, [workerScript, moduleFile, ...args], opts);
}

function ledgerOf(r: TempRepo): NotesLedger {
  return new NotesLedger({ cwd: r.dir, env });
}

/** Writes `count` distinct blobs with one git process and returns their ids. */
function writeBlobs(r: TempRepo, count: number, label = 'blob'): string[] {
  const dir = makeTempDir();
  try {
    const files = Array.from({ length: count }, (_, i) => {
      const file = path.join(dir, `${i}`);
      fs.writeFileSync(file, `${label} ${i}\n`);
      return file;
    });
    return r
      .git(['hash-object', '-w', ...files])
      .trim()
      .split('\n');
  } finally {
    removeDir(dir);
  }
}

function notesPaths(r: TempRepo): string[] {
  return r.git(['ls-tree', '-r', '--name-only', LEDGER_REF]).trim().split('\n');
}

function gitNotesShow(r: TempRepo, blob: string): string {
  return r.git(['notes', `--ref=${LEDGER_REF}`, 'show', blob]);
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

describe('note text', () => {
  it('serializes a note as sorted, unique, newline-terminated lines and parses it back', () => {
    expect(serializeNote(['b', 'a', 'b', 'C'])).toBe('C\na\nb\n');
    expect(parseNote('b\n\na\nb\n')).toEqual(['a', 'b']);
    expect(parseNote('')).toEqual([]);
  });

  it('sorts in UTF-8 byte order, like git’s cat_sort_uniq (not UTF-16 order)', () => {
    // U+FF01 sorts before U+1F600 in UTF-16 code units but after it in UTF-8 bytes.
    const lines = ['\u{1F600}', '\uFF01', 'z', 'A'];
    const byBytes = [...lines].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect([...lines].sort(compareBytewise)).toEqual(byBytes);
    expect([...lines].sort()).not.toEqual(byBytes);
    // A note read as bytes: the built-in order only when every byte is ASCII.
    expect(parseNote(Buffer.from(`${lines.join('\n')}\n`))).toEqual(byBytes);
    const ascii = ['{"payload":"b"}', '{"payload":"a"}', 'Z', '{"payload":"a"}'];
    expect(parseNote(Buffer.from(ascii.join('\n')))).toEqual(['Z', '{"payload":"a"}', '{"payload":"b"}']);
  });

  it('recognizes note paths at any fanout depth and nothing else', () => {
    const id = '0123456789abcdef0123456789abcdef01234567';
    expect(annotatedIdOfPath(id)).toBe(id);
    expect(annotatedIdOfPath(`01/${id.slice(2)}`)).toBe(id);
    expect(annotatedIdOfPath(`01/23/${id.slice(4)}`)).toBe(id);
    expect(annotatedIdOfPath(`012/${id.slice(3)}`)).toBeNull();
    expect(annotatedIdOfPath('README')).toBeNull();
    expect(annotatedIdOfPath(id.slice(1))).toBeNull();
  });

  it('takes only a regular file at a note path for a note (what git notes writes); anything else is foreign', () => {
    const id = '0123456789abcdef0123456789abcdef01234567';
    const oid = 'f'.repeat(40);
    expect(noteOfTreeRecord(`100644 blob ${oid}\t01/${id.slice(2)}`)).toEqual({
      annotated: id,
      oid,
      notePath: `01/${id.slice(2)}`,
    });
    for (const [mode, type] of [
      ['100755', 'blob'],
      ['120000', 'blob'],
      ['160000', 'commit'],
    ])
      expect(noteOfTreeRecord(`${mode} ${type} ${oid}\t${id}`)).toBeNull();
    expect(isForeignEntry('100644', id)).toBe(false);
    expect(isForeignEntry('040000', '01')).toBe(false);
    expect(isForeignEntry('040000', '01/23')).toBe(false);
    for (const [mode, p] of [
      ['100755', id],
      ['120000', id],
      ['160000', id],
      ['040000', id],
      ['100644', 'README'],
      ['040000', 'zz'],
      ['040000', '012'],
      ['100644', '01/README'],
    ])
      expect(isForeignEntry(mode!, p!), `${mode} ${p}`).toBe(true);
    expect(whyNotANote({ path: 'zz', mode: '040000' })).toBe('not a note on a full object id');
    expect(whyNotANote({ path: id, mode: '160000' })).toBe(
      'a submodule (mode 160000), not a note file (mode 100644)',
    );
  });
});

describe('NotesLedger basics', () => {
  it('has no tip and no notes before the first append', async () => {
    const r = repo();
    const ledger = ledgerOf(r);
    const [blob] = writeBlobs(r, 1);
    expect(await ledger.tip()).toBeNull();
    expect(await ledger.linesOn(blob!)).toEqual([]);
    expect(await ledger.list()).toEqual(new Map());
    expect(await collect(ledger.entries())).toEqual([]);
    expect(await collect(ledger.history())).toEqual([]);
  });

  it('appends lines that every reader returns sorted and unique, and that git notes shows', async () => {
    const r = repo();
    const ledger = ledgerOf(r);
    const [a, b, c] = writeBlobs(r, 3);
    const first = await ledger.append([
      { blob: a!, lines: ['{"z":1}', '{"a":1}', '{"z":1}'] },
      { blob: b!, lines: ['{"b":1}'] },
    ]);
    expect(first.added).toBe(3);
    expect(first.commit).toBe(await ledger.tip());
    const second = await ledger.append([{ blob: a!, lines: ['{"m":1}', '{"a":1}'] }]);
    expect(second.added).toBe(1);
    expect(second.commit).not.toBe(first.commit);

    expect(await ledger.linesOn(a!)).toEqual(['{"a":1}', '{"m":1}', '{"z":1}']);
    expect(await ledger.linesOn(a!, first.commit!)).toEqual(['{"a":1}', '{"z":1}']);
    const many = await ledger.linesOnMany([a!, b!, c!]);
    expect(many).toEqual(
      new Map([
        [a!, ['{"a":1}', '{"m":1}', '{"z":1}']],
        [b!, ['{"b":1}']],
        [c!, []],
      ]),
    );
    const list = await ledger.list();
    expect([...list.keys()].sort()).toEqual([a!, b!].sort());
    expect(r.gitText(['cat-file', 'blob', list.get(a!)!])).toBe('{"a":1}\n{"m":1}\n{"z":1}');
    const entries = await collect(ledger.entries());
    expect(entries.sort((x, y) => compareBytewise(x.annotated, y.annotated))).toEqual(
      [
        { annotated: a!, lines: ['{"a":1}', '{"m":1}', '{"z":1}'] },
        { annotated: b!, lines: ['{"b":1}'] },
      ].sort((x, y) => compareBytewise(x.annotated, y.annotated)),
    );

    expect(gitNotesShow(r, a!)).toBe('{"a":1}\n{"m":1}\n{"z":1}\n');
    expect(gitNotesShow(r, b!)).toBe('{"b":1}\n');
    const history = await collect(ledger.history());
    expect(history).toEqual([
      { commit: second.commit, parents: [first.commit] },
      { commit: first.commit, parents: [] },
    ]);
    expect(r.gitText(['log', '-1', '--format=%cn <%ce>', LEDGER_REF])).toBe(
      'delegate-git <delegate-git@localhost>',
    );
    expect(r.git(['for-each-ref', 'refs/delegate-git/'])).toBe('');
    r.git(['fsck', '--strict', '--no-progress']);
  });

  it('treats lines already present as a no-op: added 0 and no new notes commit', async () => {
    const r = repo();
    const ledger = ledgerOf(r);
    const [a, b] = writeBlobs(r, 2);
    const first = await ledger.append([
      { blob: a!, lines: ['x', 'y'] },
      { blob: b!, lines: ['z'] },
    ]);
    const again = await ledger.append([
      { blob: a!, lines: ['y'] },
      { blob: b!, lines: ['z', 'z'] },
    ]);
    expect(again).toEqual({ commit: first.commit, added: 0 });
    expect(await ledger.tip()).toBe(first.commit);
    expect(await collect(ledger.history())).toHaveLength(1);
  });

  it('refuses empty lines, lines with a newline and short ids with LEDGER (control: a valid line is written)', async () => {
    const r = repo();
    const ledger = ledgerOf(r);
    const [a] = writeBlobs(r, 1);
    await expect(ledger.append([{ blob: a!, lines: [''] }])).rejects.toMatchObject({ code: 'LEDGER' });
    await expect(ledger.append([{ blob: a!, lines: ['one\ntwo'] }])).rejects.toMatchObject({
      code: 'LEDGER',
    });
    await expect(ledger.append([{ blob: a!.slice(0, 12), lines: ['x'] }])).rejects.toMatchObject({
      code: 'LEDGER',
    });
    expect(await ledger.tip()).toBeNull();
    expect((await ledger.append([{ blob: a!, lines: ['one'] }])).added).toBe(1);
  });

  it('refuses a notes commit that does not exist with LEDGER (control: the tip reads)', async () => {
    const r = repo();
    const ledger = ledgerOf(r);
    const [a] = writeBlobs(r, 1);
    const { commit } = await ledger.append([{ blob: a!, lines: ['x'] }]);
    await expect(ledger.linesOn(a!, 'f'.repeat(40))).rejects.toMatchObject({ code: 'LEDGER' });
    await expect(ledger.list('--all')).rejects.toMatchObject({ code: 'LEDGER' });
    expect(await ledger.linesOn(a!, commit!)).toEqual(['x']);
  });

  it('reads more blobs than the walk limit through one listing', async () => {
    const r = repo();
    const ledger = ledgerOf(r);
    const blobs = writeBlobs(r, 400);
    await ledger.append(blobs.slice(0, 350).map((blob, i) => ({ blob, lines: [`line ${i}`] })));
    const lines = await ledger.linesOnMany(blobs);
    expect(lines.size).toBe(400);
    blobs.forEach((blob, i) => {
      expect(lines.get(blob)).toEqual(i < 350 ? [`line ${i}`] : []);
    });
    // A window at a time, in request order, each blob once (a duplicate asked for is answered once), as raw notes.
    const windows: string[][] = [];
    const seen = new Map<string, string[]>();
    const raw = new Map<string, string>();
    await ledger.notesOnManyInWindows([...blobs, blobs[0]!], undefined, 150, (window) => {
      windows.push([...window.keys()]);
      for (const [blob, content] of window) {
        seen.set(blob, parseNote(content));
        raw.set(blob, content.toString('utf8'));
      }
    });
    expect(windows.map((w) => w.length)).toEqual([150, 150, 100]);
    expect(windows.flat()).toEqual(blobs);
    expect(seen).toEqual(lines);
    expect(raw.get(blobs[0]!)).toBe('line 0\n');
    expect(raw.get(blobs[399]!)).toBe('');
  });
});

describe('fanout', () => {
  it('reads and extends a ledger git fanned out, without leaving a flat duplicate', async () => {
    const r = repo();
    const blobs = writeBlobs(r, 320);
    const [first, ...rest] = blobs;
    r.git(['notes', `--ref=${LEDGER_REF}`, 'add', '-m', 'line from git', first!]);
    // One git process copies the note to every other blob: git's own writer decides the fanout.
    r.git(
      ['notes', `--ref=${LEDGER_REF}`, 'copy', '--stdin'],
      rest.map((blob) => `${first} ${blob}\n`).join(''),
    );
    const paths = notesPaths(r);
    expect(paths).toHaveLength(320);
    expect(paths.every((p) => /^[0-9a-f]{2}\/[0-9a-f]{38}$/.test(p))).toBe(true);

    const ledger = ledgerOf(r);
    const list = await ledger.list();
    expect(list.size).toBe(320);
    expect((await ledger.linesOnMany(blobs.slice(0, 5))).get(blobs[3]!)).toEqual(['line from git']);

    const [fresh] = writeBlobs(r, 1, 'fresh');
    const existing = blobs[7]!;
    const result = await ledger.append([
      { blob: existing, lines: ['added by ledger'] },
      { blob: fresh!, lines: ['new note'] },
    ]);
    expect(result.added).toBe(2);
    const after = notesPaths(r);
    expect(after).toHaveLength(321);
    expect(after.filter((p) => p.replace('/', '') === existing)).toEqual([
      `${existing.slice(0, 2)}/${existing.slice(2)}`,
    ]);
    expect(after.filter((p) => p.replace('/', '') === fresh)).toEqual([
      `${fresh!.slice(0, 2)}/${fresh!.slice(2)}`,
    ]);
    expect(gitNotesShow(r, existing)).toBe('added by ledger\nline from git\n');
    expect(gitNotesShow(r, fresh!)).toBe('new note\n');
    expect(await ledger.linesOn(existing)).toEqual(['added by ledger', 'line from git']);
    expect(await ledger.droppedLines(r.gitText(['rev-parse', `${LEDGER_REF}~1`]), result.commit!)).toEqual(
      [],
    );
    r.git(['fsck', '--strict', '--no-progress']);
  });

  it('fans out a flat ledger once it grows past 256 notes, moving existing notes without dropping a line', async () => {
    const r = repo();
    const ledger = ledgerOf(r);
    const blobs = writeBlobs(r, 300);
    const flat = await ledger.append(blobs.slice(0, 200).map((blob) => ({ blob, lines: [`first ${blob}`] })));
    expect(notesPaths(r).every((p) => !p.includes('/'))).toBe(true);

    const grown = await ledger.append([
      { blob: blobs[0]!, lines: ['second'] },
      ...blobs.slice(200).map((blob) => ({ blob, lines: [`first ${blob}`] })),
    ]);
    const paths = notesPaths(r);
    expect(paths).toHaveLength(300);
    expect(paths.every((p) => /^[0-9a-f]{2}\/[0-9a-f]{38}$/.test(p))).toBe(true);
    expect(await ledger.droppedLines(flat.commit!, grown.commit!)).toEqual([]);
    expect(gitNotesShow(r, blobs[0]!)).toBe(`first ${blobs[0]}\nsecond\n`);
    expect(gitNotesShow(r, blobs[150]!)).toBe(`first ${blobs[150]}\n`);
    const all = await ledger.linesOnMany(blobs);
    for (const blob of blobs.slice(1)) expect(all.get(blob)).toEqual([`first ${blob}`]);
    // git's own writer accepts the layout and keeps every note.
    r.git(['notes', `--ref=${LEDGER_REF}`, 'append', '-m', 'from git', blobs[1]!]);
    expect(await ledger.linesOn(blobs[1]!)).toEqual(['first ' + blobs[1], 'from git']);
    expect((await ledger.list()).size).toBe(300);
    r.git(['fsck', '--strict', '--no-progress']);
  });

  it('merges a flat duplicate left beside a fanned-out note into one note at the fanned path', async () => {
    const r = repo();
    const ledger = ledgerOf(r);
    const [blob, other] = writeBlobs(r, 2);
    const flatNote = r.blob('flat line\n');
    const fannedNote = r.blob('fanned line\n');
    // The layout isomorphic-git's addNote leaves behind (DESIGN 6): the same object noted at two depths.
    const tree = r.gitText(
      ['mktree'],
      `040000 tree ${r.gitText(['mktree'], `100644 blob ${fannedNote}\t${blob!.slice(2)}\n`)}\t${blob!.slice(0, 2)}\n` +
        `100644 blob ${flatNote}\t${blob}\n`,
    );
    const broken = r.gitText(['commit-tree', tree, '-m', 'broken layout']);
    r.git(['update-ref', LEDGER_REF, broken]);
    expect(await ledger.linesOn(blob!)).toEqual(['fanned line', 'flat line']);

    await ledger.append([
      { blob: blob!, lines: ['ledger line'] },
      { blob: other!, lines: ['other'] },
    ]);
    expect(notesPaths(r).filter((p) => p.replace('/', '') === blob)).toEqual([
      `${blob!.slice(0, 2)}/${blob!.slice(2)}`,
    ]);
    expect(gitNotesShow(r, blob!)).toBe('fanned line\nflat line\nledger line\n');
    // The root is fanned out, so the new note goes into a subdirectory too.
    expect(notesPaths(r)).toContain(`${other!.slice(0, 2)}/${other!.slice(2)}`);
  });
});

describe('droppedLines', () => {
  it('reports a line removed by rewriting a note, and nothing for pure additions', async () => {
    const r = repo();
    const ledger = ledgerOf(r);
    const [a, b] = writeBlobs(r, 2);
    const start = await ledger.append([
      { blob: a!, lines: ['l1', 'l2', 'l3'] },
      { blob: b!, lines: ['b1'] },
    ]);
    r.git(['notes', `--ref=${LEDGER_REF}`, 'add', '-f', '-F', '-', a!], 'l1\nl3\n');
    const rewritten = r.gitText(['rev-parse', LEDGER_REF]);
    expect(await ledger.droppedLines(start.commit!, rewritten)).toEqual([{ annotated: a!, line: 'l2' }]);

    const added = await ledger.append([
      { blob: a!, lines: ['l4'] },
      { blob: b!, lines: ['b2'] },
    ]);
    expect(await ledger.droppedLines(rewritten, added.commit!)).toEqual([]);

    r.git(['notes', `--ref=${LEDGER_REF}`, 'remove', b!]);
    const removed = r.gitText(['rev-parse', LEDGER_REF]);
    expect(await ledger.droppedLines(added.commit!, removed)).toEqual([
      { annotated: b!, line: 'b1' },
      { annotated: b!, line: 'b2' },
    ]);
  });
});

describe('droppedLinesAlongHistory', () => {
  it('names each line a notes commit dropped against its parent, anywhere in the history; none for additions', async () => {
    const r = repo();
    const ledger = ledgerOf(r);
    expect(await ledger.droppedLinesAlongHistory()).toEqual([]); // no ledger yet
    const [a, b] = writeBlobs(r, 2);
    await ledger.append([
      { blob: a!, lines: ['l1', 'l2'] },
      { blob: b!, lines: ['b1'] },
    ]);
    r.git(['notes', `--ref=${LEDGER_REF}`, 'add', '-f', '-F', '-', a!], 'l1\n');
    const rewritten = r.gitText(['rev-parse', LEDGER_REF]);
    await ledger.append([{ blob: b!, lines: ['b2'] }]); // later commits only add
    r.git(['notes', `--ref=${LEDGER_REF}`, 'remove', b!]); // a whole note removed
    const removed = r.gitText(['rev-parse', LEDGER_REF]);
    await ledger.append([{ blob: a!, lines: ['l3'] }]);
    expect(await ledger.droppedLinesAlongHistory()).toEqual([
      { commit: removed, annotated: b!, line: 'b1' },
      { commit: removed, annotated: b!, line: 'b2' },
      { commit: rewritten, annotated: a!, line: 'l2' },
    ]);
    // Control: the same as asking commit by commit.
    expect(await ledger.droppedLines(`${rewritten}~1`, rewritten)).toEqual([{ annotated: a!, line: 'l2' }]);
  });
});

describe('walkUpdate: one walk for the entries that are no notes and the lines dropped along an update', () => {
  /**
   * A notes history built by hand, dated so `rev-list` lists it m, c2, s1, c1, c0:
   *   c0 (root)  note a (a1 a2), note z (z1), root.txt
   *   c1 (c0)    + note b (b1), middle.txt, dir/x, dir/y; note z removed (drops z1)
   *   s1 (c1)    note a gains a3; root.txt removed
   *   c2 (c1)    note b gains b2; + an empty directory
   *   m (c2 s1)  c2's tree: its second-parent side drops a3, and adds back root.txt
   */
  function history(r: TempRepo) {
    const [a, b, z] = writeBlobs(r, 3, 'annotated') as [string, string, string];
    const mktree = (lines: string[]) => r.gitText(['mktree'], lines.map((l) => `${l}\n`).join(''));
    const file = (name: string, content: string) => `100644 blob ${r.blob(content)}\t${name}`;
    const dir = `040000 tree ${mktree([file('x', 'x\n'), file('y', 'y\n')])}\tdir`;
    const empty = `040000 tree ${mktree([])}\tempty`;
    let date = 1_700_000_000;
    const commit = (entries: string[], parents: string[]) =>
      execFileSync(
        'git',
        ['commit-tree', mktree(entries), ...parents.flatMap((p) => ['-p', p]), '-m', 'notes'],
        {
          cwd: r.dir,
          env: cleanGitEnv({ GIT_COMMITTER_DATE: `${++date} +0000`, GIT_AUTHOR_DATE: `${date} +0000` }),
        },
      )
        .toString()
        .trim();
    const rootTxt = file('root.txt', 'content\n');
    const c0 = commit([file(a, 'a1\na2\n'), file(z, 'z1\n'), rootTxt], []);
    const c1 = commit([file(a, 'a1\na2\n'), file(b, 'b1\n'), rootTxt, file('middle.txt', 'm\n'), dir], [c0]);
    const s1 = commit([file(a, 'a1\na2\na3\n'), file(b, 'b1\n'), file('middle.txt', 'm\n'), dir], [c1]);
    const c2Tree = [file(a, 'a1\na2\n'), file(b, 'b1\nb2\n'), rootTxt, file('middle.txt', 'm\n'), dir, empty];
    const c2 = commit(c2Tree, [c1]);
    const m = commit(c2Tree, [c2, s1]);
    return { a, z, c0, c1, s1, c2, m };
  }

  /** What a walk of each brought commit on its own finds: its foreign entries and dropped lines, pair by pair. */
  async function commitByCommit(r: TempRepo, newer: string, older: string | null) {
    const ledger = ledgerOf(r);
    const range = ['rev-list', '--parents', newer, ...(older ? ['--not', older] : [])];
    const foreign = new Map<string, ForeignEntry>();
    const dropped: Array<{ commit: string; annotated: string; line: string }> = [];
    for (const line of r.gitText(range).split('\n')) {
      const [commit, ...parents] = line.split(' ') as [string, ...string[]];
      for (const entry of (await readNotesDiff({ cwd: r.dir, env }, parents[0] ?? null, commit)).foreign)
        foreign.set(entry.path, entry);
      for (const parent of parents)
        for (const d of await ledger.droppedLines(parent, commit)) dropped.push({ commit, ...d });
    }
    return { foreign: [...foreign.values()], dropped };
  }

  it('finds in one walk what walking commit by commit finds: a merge dropping a line on its second-parent side, a foreign file in a middle commit, a root', async () => {
    const r = repo();
    const h = history(r);
    expect(r.gitText(['rev-list', h.m]).split('\n')).toEqual([h.m, h.c2, h.s1, h.c1, h.c0]);
    const ledger = ledgerOf(r);

    const whole = await ledger.walkUpdate(h.m, null, { foreign: true, dropped: true });
    expect(whole.foreign).toEqual([
      { path: 'empty', mode: '040000' }, // c2: an empty directory, which only -t shows
      { path: 'dir', mode: '040000' }, // c1: a directory named once, not by each file in it
      { path: 'middle.txt', mode: '100644' }, // c1: a foreign file in a middle commit
      { path: 'root.txt', mode: '100644' }, // c0: the root, against the empty tree
    ]);
    expect(whole.dropped()).toEqual([
      { commit: h.m, annotated: h.a, line: 'a3' }, // the merge against its second parent
      { commit: h.c1, annotated: h.z, line: 'z1' },
    ]);
    expect({ foreign: whole.foreign, dropped: whole.dropped() }).toEqual(await commitByCommit(r, h.m, null));
    // The dropped lines alone (verify's question) are the same, from a walk without directories or roots.
    expect(await ledger.droppedLinesAlong(h.m, null)).toEqual(whole.dropped());

    // An update from c1: root.txt is added back only against the merge's second parent, which foreign entries do
    // not count (it was in the ledger at c1 already); the line the merge drops is found all the same.
    const update = await ledger.walkUpdate(h.m, h.c1, { foreign: true, dropped: true });
    expect(update.foreign).toEqual([{ path: 'empty', mode: '040000' }]);
    expect(update.dropped()).toEqual([{ commit: h.m, annotated: h.a, line: 'a3' }]);
    expect({ foreign: update.foreign, dropped: update.dropped() }).toEqual(
      await commitByCommit(r, h.m, h.c1),
    );

    // Asked for one of the two only.
    const foreignOnly = await ledger.walkUpdate(h.m, null, { foreign: true });
    expect(foreignOnly.foreign).toEqual(whole.foreign);
    expect(foreignOnly.dropped()).toBeNull();
    const declined = await ledger.walkUpdate(h.m, h.c1, { foreign: true, dropped: false });
    expect(declined.foreign).toEqual(update.foreign);
    expect(declined.dropped()).toBeNull();
    expect((await ledger.walkUpdate(h.m, h.m, { foreign: true, dropped: true })).dropped()).toEqual([]);
  });

  it('stops collecting foreign entries at the end of the commit that reaches `enough`, and still finds every dropped line', async () => {
    const r = repo();
    const h = history(r);
    const ledger = ledgerOf(r);
    // c2 brings one entry: enough. c1, walked after it, drops z1.
    const one = await ledger.walkUpdate(h.m, null, { foreign: true, enough: 1, dropped: true });
    expect(one.foreign).toEqual([{ path: 'empty', mode: '040000' }]);
    expect(one.dropped()).toEqual([
      { commit: h.m, annotated: h.a, line: 'a3' },
      { commit: h.c1, annotated: h.z, line: 'z1' },
    ]);
    // c1 brings two at once: both are kept, past `enough`; the root, after it, is not read for them.
    const two = await ledger.walkUpdate(h.m, null, { foreign: true, enough: 2, dropped: true });
    expect(two.foreign.map((e) => e.path)).toEqual(['empty', 'dir', 'middle.txt']);
    expect(two.dropped()).toEqual(one.dropped());
    expect((await ledger.walkUpdate(h.m, null, { foreign: true, enough: 2 })).foreign).toEqual(two.foreign);
    // A caller that refuses foreign entries first has the walk end there, the dropped lines unanswered.
    const first = await ledger.walkUpdate(h.m, null, {
      foreign: true,
      enough: 1,
      dropped: true,
      foreignFirst: true,
    });
    expect(first.foreign).toEqual(one.foreign);
    expect(first.dropped()).toBeNull();
    // Under `enough`, the walk goes to the end and answers both.
    const under = await ledger.walkUpdate(h.m, h.c1, {
      foreign: true,
      enough: 2,
      dropped: true,
      foreignFirst: true,
    });
    expect(under.foreign).toEqual([{ path: 'empty', mode: '040000' }]);
    expect(under.dropped()).toEqual([{ commit: h.m, annotated: h.a, line: 'a3' }]);
  });

  it('says a failure to read the notes compared through dropped(), with every foreign entry found', async () => {
    const r = repo();
    const h = history(r);
    // The note the side commit held is gone from the object store (a damaged repository): its comparison fails.
    const gone = r.blob('a1\na2\na3\n');
    fs.rmSync(path.join(r.dir, '.git', 'objects', gone.slice(0, 2), gone.slice(2)));
    const walk = await ledgerOf(r).walkUpdate(h.m, null, { foreign: true, dropped: true });
    expect(walk.foreign).toHaveLength(4);
    expect(() => walk.dropped()).toThrow();
    // Control: the same walk with the note there answers.
    const whole = repo();
    const intact = history(whole);
    expect(
      (await ledgerOf(whole).walkUpdate(intact.m, null, { foreign: true, dropped: true })).dropped(),
    ).toHaveLength(2);
  });
});

describe('divergent ledgers', () => {
  it('merge with git notes merge -s cat_sort_uniq into the union, readable by NotesLedger', async () => {
    const origin = repo();
    origin.commit({ 'governed.txt': 'content\n' });
    const blob = origin.gitText(['rev-parse', 'HEAD:governed.txt']);
    await ledgerOf(origin).append([{ blob, lines: ['base'] }]);

    const clones = [cloneTempRepo(origin.dir), cloneTempRepo(origin.dir)];
    for (const clone of clones) {
      cleanups.push(clone.cleanup);
      clone.git(['fetch', '-q', 'origin', `${LEDGER_REF}:${LEDGER_REF}`]);
    }
    const [mine, theirs] = clones as [TempRepo, TempRepo];
    const [onlyTheirs] = writeBlobs(theirs, 1, 'theirs');
    const before = await ledgerOf(mine).append([{ blob, lines: ['mine'] }]);
    await ledgerOf(theirs).append([
      { blob, lines: ['theirs'] },
      { blob: onlyTheirs!, lines: ['theirs only'] },
    ]);

    mine.git(['fetch', '-q', theirs.dir, `${LEDGER_REF}:refs/notes/remotes/origin/delegations`]);
    mine.git([
      'notes',
      `--ref=${LEDGER_REF}`,
      'merge',
      '-q',
      '-s',
      'cat_sort_uniq',
      'refs/notes/remotes/origin/delegations',
    ]);

    const ledger = ledgerOf(mine);
    expect(await ledger.linesOn(blob)).toEqual(['base', 'mine', 'theirs']);
    expect(await ledger.linesOn(onlyTheirs!)).toEqual(['theirs only']);
    expect(gitNotesShow(mine, blob)).toBe('base\nmine\ntheirs\n');
    const tip = (await ledger.tip())!;
    expect(await ledger.droppedLines(before.commit!, tip)).toEqual([]);
    const [merge] = await collect(ledger.history());
    expect(merge?.parents).toHaveLength(2);
    // The merged ledger stays writable by NotesLedger.
    expect((await ledger.append([{ blob, lines: ['after merge'] }])).added).toBe(1);
    expect(gitNotesShow(mine, blob)).toBe('after merge\nbase\nmine\ntheirs\n');
  });
});

describe('an append through a reader its owner keeps open', () => {
  it('keeps the lines another writer added since that reader started, and leaves the reader open', async () => {
    const r = repo();
    const [blob] = writeBlobs(r, 1);
    const shared = new CatFileBatch({ cwd: r.dir, env });
    cleanups.push(() => void shared.close());
    const lending = new NotesLedger({ cwd: r.dir, env, objects: () => shared });
    await lending.append([{ blob: blob!, lines: ['first'] }]);
    await expect(shared.read(LEDGER_REF)).resolves.not.toBeNull(); // still open after the append

    // Another process's writer moves the ledger; the lending ledger's reader has been running all along.
    await ledgerOf(r).append([{ blob: blob!, lines: ['from another writer'] }]);
    await lending.append([{ blob: blob!, lines: ['second'] }]);
    expect(await ledgerOf(r).linesOn(blob!)).toEqual(['first', 'from another writer', 'second']);
    expect(r.git(['rev-list', '--count', LEDGER_REF]).trim()).toBe('3');
  });
});

describe('concurrent writers', () => {
  it('keeps every line from 4 processes appending at once, with history that only adds', async () => {
    const r = repo();
    const ledger = ledgerOf(r);
    const workers = 4;
    const rounds = 5;
    // No ledger yet: the first appends race to create the ref, the later ones to move it.
    const [shared, ...own] = writeBlobs(r, workers + 1);

    const appendWorker = await appendWorkers();
    const outputs = await Promise.all(
      own.map((blob, i) =>
        appendWorker([r.dir, `w${i}`, String(rounds), shared!, blob], {
          env,
        }),
      ),
    );
    const added = outputs.flatMap(
      ({ stdout }) => JSON.parse(stdout) as Array<{ blob: string; line: string }>,
    );
    expect(added).toHaveLength(workers * rounds * 2);

    const lines = await ledger.linesOnMany([shared!, ...own]);
    for (const { blob, line } of added) expect(lines.get(blob)).toContain(line);
    expect(lines.get(shared!)).toHaveLength(workers * rounds);
    expect(gitNotesShow(r, shared!).split('\n').filter(Boolean)).toEqual(lines.get(shared!));

    const history = await collect(ledger.history());
    expect(history).toHaveLength(workers * rounds);
    for (const { commit, parents } of history) {
      expect(parents.length).toBeLessThanOrEqual(1);
      if (parents[0]) expect(await ledger.droppedLines(parents[0], commit)).toEqual([]);
    }
    expect(r.git(['for-each-ref', 'refs/delegate-git/'])).toBe('');
    r.git(['fsck', '--strict', '--no-progress']);
  });
});

describe('takeIn (sync)', () => {
  /** Lines on every blob at the ledger's tip, as git reads them. */
  async function everything(ledger: NotesLedger, blobs: string[]): Promise<string[]> {
    const lines = await ledger.linesOnMany(blobs);
    return blobs.flatMap((b) => (lines.get(b) ?? []).map((line) => `${b.slice(0, 7)} ${line}`)).sort();
  }

  it('fast-forwards only when nothing is dropped, keeps both sides otherwise, and restores a line lost here', async () => {
    const r = repo();
    const ledger = ledgerOf(r);
    const remote = new NotesLedger({ cwd: r.dir, env, ref: 'refs/notes/remote' });
    const [a, b, c] = writeBlobs(r, 3) as [string, string, string];
    const base = (await ledger.append([{ blob: a, lines: ['a1'] }])).commit!;

    // No ledger here yet, or a remote that only adds: a fast-forward.
    r.git(['update-ref', 'refs/notes/remote', base]);
    const ahead = (await remote.append([{ blob: b, lines: ['b1'] }])).commit!;
    expect(await ledger.takeIn(ahead, 'sync')).toEqual({ commit: ahead, how: 'fast-forward', added: 0 });
    expect(await ledger.takeIn(base, 'sync')).toEqual({ commit: ahead, how: 'up to date', added: 0 });

    // The remote drops a1 on top of ours: no fast-forward; the merge keeps a1 and takes c1.
    r.git(['notes', '--ref=remote', 'remove', a]);
    const dropping = (await remote.append([{ blob: c, lines: ['c1'] }])).commit!;
    const merged = await ledger.takeIn(dropping, 'sync');
    expect(merged).toMatchObject({ how: 'merge', added: 1 });
    expect(r.git(['rev-list', '--parents', '-n', '1', merged.commit]).trim().split(' ').slice(1)).toEqual([
      ahead,
      dropping,
    ]);
    expect(await everything(ledger, [a, b, c])).toEqual(
      [`${a.slice(0, 7)} a1`, `${b.slice(0, 7)} b1`, `${c.slice(0, 7)} c1`].sort(),
    );

    // A line lost here that the remote (in our history) holds: restored by a commit on top, no merge.
    r.git(['notes', '--ref=delegations', 'remove', b]);
    const lost = (await ledger.tip())!;
    const restored = await ledger.takeIn(dropping, 'sync');
    expect(restored).toMatchObject({ how: 'restore', added: 1 });
    expect(r.git(['rev-list', '--parents', '-n', '1', restored.commit]).trim().split(' ').slice(1)).toEqual([
      lost,
    ]);
    expect(await everything(ledger, [a, b, c])).toHaveLength(3);
    expect(await ledger.droppedLines(dropping, restored.commit)).toEqual([]);
  });

  it('loses no line of writers appending while it takes in other ledgers (compare-and-swap, rebuilt on the new tip)', async () => {
    const r = repo();
    const ledger = ledgerOf(r);
    const remote = new NotesLedger({ cwd: r.dir, env, ref: 'refs/notes/remote' });
    const workers = 3;
    const rounds = 8;
    const [shared, ...blobs] = writeBlobs(r, workers + 1 + rounds);
    const own = blobs.slice(0, workers);
    const theirs = blobs.slice(workers);
    await ledger.append([{ blob: shared!, lines: ['base'] }]);
    // Remote notes commits with no history in common, each adding a line of its own.
    const others: string[] = [];
    for (const [i, blob] of theirs.entries()) {
      r.git(['update-ref', '-d', 'refs/notes/remote']);
      others.push((await remote.append([{ blob, lines: [`remote-${i}`] }])).commit!);
    }

    const appendWorker = await appendWorkers();
    const appending = Promise.all(
      own.map((blob, i) =>
        appendWorker([r.dir, `w${i}`, String(rounds), shared!, blob], {
          env,
        }),
      ),
    );
    for (const other of others) await ledger.takeIn(other, 'sync');
    const added = (await appending).flatMap(
      ({ stdout }) => JSON.parse(stdout) as Array<{ blob: string; line: string }>,
    );

    const lines = await ledger.linesOnMany([shared!, ...own, ...theirs]);
    for (const { blob, line } of added) expect(lines.get(blob)).toContain(line);
    for (const [i, blob] of theirs.entries()) expect(lines.get(blob)).toEqual([`remote-${i}`]);
    expect(lines.get(shared!)).toHaveLength(workers * rounds + 1);
    r.git(['fsck', '--strict', '--no-progress']);
  });
});
