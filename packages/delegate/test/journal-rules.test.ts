import { createHash } from 'node:crypto';
import { decodeRecord, type LedgerRecord } from '@delegate-git/core/record';
import { verdictStatement } from '@delegate-git/core/statement';
import { describe, expect, it } from 'vitest';
import {
  reviewLine,
  signedLine,
  subjectOf,
  TEST_CREATED_AT,
  TEST_REPOSITORY_ID,
  testKey,
} from '../../../test/support/records.js';
import {
  checkJournal,
  isOwnVerdict,
  type JournalBounds,
  type JournalRun,
  type ReplayKey,
  replayOrder,
  STAGED_SINCE,
  STAGED_UNKNOWN_SINCE,
  whyLeft,
} from '../src/journal-rules.js';

const bounds: JournalBounds = {
  top: '/w/repo',
  writableRoots: ['/w/out'],
  gitDirs: ['/w/repo/.git', '/w/gitdirs/repo'],
};
const HASH = 'a'.repeat(64);

/** A journal as a version 2 run writes it: src/a.js patched, src/new/b.js created in a new directory. */
function journal(overrides: Record<string, unknown> = {}) {
  return {
    version: 2,
    pid: 4242,
    boot: 'boot-1',
    started: '2026-12-03T00:00:00.000Z',
    monotonic: '123456789',
    taskName: 'unit',
    instructionSha256: HASH,
    keyid: 'b'.repeat(64),
    ledgerTip: null,
    files: [
      {
        path: 'src/a.js',
        absolute: '/w/repo/src/a.js',
        inRepository: true,
        written: HASH,
        previous: { copy: '0', mode: 0o640 },
      },
      {
        path: 'src/new/b.js',
        absolute: '/w/repo/src/new/b.js',
        inRepository: true,
        written: HASH,
        previous: null,
      },
    ],
    createdDirs: ['/w/repo/src/new'],
    ...overrides,
  };
}

function withFile(file: Record<string, unknown>) {
  const [first, ...rest] = journal().files;
  return journal({ files: [{ ...first, ...file }, ...rest] });
}

function problems(raw: unknown): string[] {
  const checked = checkJournal(raw, bounds);
  return checked.ok ? [] : checked.problems;
}

describe('checkJournal: a journal is acted on only as a run writes it', () => {
  it('control: the journal a run writes passes, as it is', () => {
    const checked = checkJournal(journal(), bounds);
    expect(checked.ok).toBe(true);
    if (!checked.ok) return;
    expect(checked.journal.files[0]!.previous).toEqual({ copy: '0', mode: 0o640 });
    expect(checked.journal.monotonic).toBe(123456789n);
    expect(checked.journal.keyid).toBe('b'.repeat(64));
  });

  it('control: a version 1 journal (an earlier build) passes, with no run id fields', () => {
    const { instructionSha256: _i, keyid: _k, monotonic: _m, ...v1 } = journal({ version: 1 });
    const checked = checkJournal(v1, bounds);
    expect(
      checked.ok && [checked.journal.instructionSha256, checked.journal.keyid, checked.journal.monotonic],
    ).toEqual([null, null, null]);
  });

  it('control: a file outside the work tree in an emitAllowlist root passes', () => {
    expect(
      problems(withFile({ path: '/w/out/gen.js', absolute: '/w/out/gen.js', inRepository: false })),
    ).toEqual([]);
  });

  it('a missing field is named, not a crash later (createdDirs was a TypeError in every delegate)', () => {
    const { createdDirs: _c, ...without } = journal();
    expect(problems(without)).toEqual(['field createdDirs must be array (got nothing)']);
    expect(problems(journal({ version: 2, keyid: undefined }))).toEqual([
      'field keyid is missing (a version 2 journal has it)',
    ]);
    expect(problems([])).toHaveLength(1);
    expect(problems(journal({ extra: 1 }))[0]).toMatch(/unknown field/);
    expect(problems(journal({ version: 5 }))[0]).toMatch(/^field version/);
    expect(problems(journal({ pid: -1 }))[0]).toMatch(/^field pid/);
    expect(problems(journal({ started: 'x' }))[0]).toMatch(/^field started/);
  });

  it('a path outside the work tree and every emitAllowlist root is refused, for files and created directories', () => {
    expect(problems(withFile({ path: '/etc/passwd', absolute: '/etc/passwd', inRepository: false }))).toEqual(
      ['files.0.absolute /etc/passwd is outside the work tree /w/repo and every emitAllowlist root'],
    );
    expect(problems(journal({ createdDirs: ['/w/elsewhere'] }))).toEqual([
      'field createdDirs.0 /w/elsewhere is outside the work tree /w/repo and every emitAllowlist root',
    ]);
    expect(problems(journal({ createdDirs: ['/w/repo'] }))).toEqual([
      'field createdDirs.0 /w/repo is the top level itself',
    ]);
    // Lexically inside, really outside: refused before anything compares it.
    expect(problems(withFile({ path: 'x', absolute: '/w/repo/../elsewhere/x' }))[0]).toMatch(
      /files\.0\.absolute must be an absolute, normalised path/,
    );
    expect(problems(withFile({ path: 'x', absolute: 'src/a.js' }))[0]).toMatch(/absolute, normalised/);
  });

  it('a path in a git directory is refused, whatever it is called and wherever it is', () => {
    expect(
      problems(
        withFile({ path: '.git/description', absolute: '/w/repo/.git/description', inRepository: true }),
      ),
    ).toContain('files.0.absolute /w/repo/.git/description is inside a git directory');
    expect(
      problems(
        withFile({ path: '/w/gitdirs/repo/config', absolute: '/w/gitdirs/repo/config', inRepository: false }),
      ),
    ).toEqual(['files.0.absolute /w/gitdirs/repo/config is inside a git directory']);
    expect(problems(journal({ createdDirs: ['/w/out/sub/.GIT'] }))).toEqual([
      'field createdDirs.0 /w/out/sub/.GIT is inside a git directory',
    ]);
  });

  it('a copy must be a number in the journal: `../` would read it from anywhere', () => {
    for (const copy of ['../../etc/hostname', '/etc/hostname', '0/../1', '', 'a'])
      expect(problems(withFile({ previous: { copy, mode: 0o644 } }))[0]).toMatch(
        /^field files\.0\.previous\.copy must be the number of a copy/,
      );
    const twice = journal();
    (twice.files[1] as { previous: unknown }).previous = { copy: '0', mode: 0o644 };
    expect(problems(twice)).toEqual(["files.1.previous.copy is another file's copy"]);
  });

  it('setuid, setgid and sticky bits are cut from the mode a file is put back with', () => {
    const checked = checkJournal(withFile({ previous: { copy: '0', mode: 0o6755 } }), bounds);
    expect(checked.ok && checked.journal.files[0]!.previous).toEqual({ copy: '0', mode: 0o755 });
    expect(problems(withFile({ previous: { copy: '0', mode: 0o17777 } }))[0]).toMatch(/previous\.mode/);
  });

  it('the path shown and looked up must be the file acted on', () => {
    expect(problems(withFile({ path: 'src/other.js' }))).toEqual([
      'files.0.path does not name /w/repo/src/a.js as a run names it',
    ]);
    expect(problems(withFile({ inRepository: false }))).toEqual([
      'files.0.path does not name /w/repo/src/a.js as a run names it',
    ]);
    expect(problems(withFile({ path: '/w/repo', absolute: '/w/repo', inRepository: false }))[0]).toMatch(
      /is a directory the run writes in/,
    );
  });

  it('control: a version 3 journal names the top level it was made in, and passes in it', () => {
    const checked = checkJournal(journal({ version: 3, top: '/w/repo' }), bounds);
    expect(checked.ok && checked.journal.top).toBe('/w/repo');
    expect(problems(journal({ version: 3 }))).toEqual(['field top is missing (a version 3 journal has it)']);
    expect(problems(journal({ version: 3, top: 'w/repo' }))[0]).toMatch(/^field top must be an absolute/);
  });

  it('a journal made before the repository moved is named as moved, with its files and copies, never acted on', () => {
    const moved = { ...bounds, top: '/w/renamed' };
    const checked = checkJournal(journal({ version: 3, top: '/w/repo' }), moved);
    expect(checked).toEqual({
      ok: false,
      problems: ['it was made when the repository was at /w/repo, and it is at /w/renamed now'],
      writer: {
        pid: 4242,
        boot: 'boot-1',
        starttime: null,
        monotonic: 123456789n,
        made: Date.parse('2026-12-03T00:00:00.000Z'),
      },
      moved: {
        from: '/w/repo',
        files: [
          { path: 'src/a.js', absolute: '/w/repo/src/a.js', inRepository: true, copy: '0' },
          { path: 'src/new/b.js', absolute: '/w/repo/src/new/b.js', inRepository: true, copy: null },
        ],
      },
    });
    // Control: the same journal where it was made is acted on.
    expect(checkJournal(journal({ version: 3, top: '/w/repo' }), bounds).ok).toBe(true);
  });

  it('a journal of another top level that would not pass there either is refused as any other, not named as moved', () => {
    const moved = { ...bounds, top: '/w/renamed' };
    const file = {
      path: '/etc/passwd',
      absolute: '/etc/passwd',
      inRepository: false,
      written: HASH,
      previous: null,
    };
    const checked = checkJournal(journal({ version: 3, top: '/w/repo', files: [file] }), moved);
    expect(checked).not.toHaveProperty('moved');
    expect(checked).toMatchObject({
      ok: false,
      problems: [
        'field top /w/repo is not the work tree /w/renamed',
        'files.0.absolute /etc/passwd is outside the work tree /w/repo and every emitAllowlist root',
      ],
    });
    const { keyid: _k, ...lacking } = journal({ version: 3, top: '/w/repo' });
    expect(checkJournal(lacking, moved)).not.toHaveProperty('moved');
    expect(checkJournal(lacking, moved)).toMatchObject({
      ok: false,
      problems: [
        'field keyid is missing (a version 3 journal has it)',
        'field top /w/repo is not the work tree /w/renamed',
      ],
    });
  });

  it('a refused journal says the process that wrote it while its pid and boot can be read, and only then', () => {
    const outside = withFile({ path: '/etc/passwd', absolute: '/etc/passwd', inRepository: false });
    const writerOf = (raw: unknown) => {
      const checked = checkJournal(raw, bounds);
      return checked.ok
        ? 'accepted'
        : checked.writer && { pid: checked.writer.pid, boot: checked.writer.boot };
    };
    expect(writerOf(outside)).toEqual({ pid: 4242, boot: 'boot-1' });
    expect(writerOf(journal({ taskName: 7 }))).toEqual({ pid: 4242, boot: 'boot-1' });
    expect(writerOf(journal({ boot: null, createdDirs: undefined }))).toEqual({ pid: 4242, boot: null });
    expect(writerOf(journal({ pid: '4242' }))).toBeUndefined();
    expect(writerOf(journal({ pid: 0 }))).toBeUndefined();
    expect(writerOf(journal({ boot: undefined }))).toBeUndefined();
    expect(writerOf('{"pid": 4242')).toBeUndefined();
  });

  it('a refused journal says what dates its process as far as it can be read: start time, monotonic clock, wall clock', () => {
    const checked = checkJournal(journal({ version: 4, starttime: '987', taskName: 7 }), bounds);
    expect(!checked.ok && checked.writer).toEqual({
      pid: 4242,
      boot: 'boot-1',
      starttime: '987',
      monotonic: 123456789n,
      made: Date.parse('2026-12-03T00:00:00.000Z'),
    });
    const undated = checkJournal(journal({ started: 'x', monotonic: 7, starttime: '../1' }), bounds);
    expect(!undated.ok && undated.writer).toMatchObject({ starttime: null, monotonic: null, made: null });
  });

  it('a version 4 journal records its process start time and what git held at each path before the write', () => {
    const v4 = journal({ version: 4, top: '/w/repo', starttime: '188284' });
    const held = { index: '1'.repeat(40), head: null };
    (v4.files[0] as Record<string, unknown>).git = held;
    (v4.files[1] as Record<string, unknown>).git = null;
    const checked = checkJournal(v4, bounds);
    expect(checked.ok).toBe(true);
    if (!checked.ok) return;
    expect(checked.journal.starttime).toBe('188284');
    expect(checked.journal.files.map((f) => f.heldBefore)).toEqual([held, null]);
    // An earlier version's journal does not say: null, not "nothing held".
    const v3 = checkJournal(journal({ version: 3, top: '/w/repo' }), bounds);
    expect(v3.ok && v3.journal.files.map((f) => f.heldBefore)).toEqual([null, null]);
  });

  it('a version 4 journal lacking its process start time or what git held is refused', () => {
    expect(problems(journal({ version: 4, top: '/w/repo' }))).toEqual([
      'field starttime is missing (a version 4 journal has it)',
      'field files.0.git is missing (a version 4 journal has it)',
      'field files.1.git is missing (a version 4 journal has it)',
    ]);
  });

  it('a version 1 or 2 journal of a repository moved since is named as moved, with its files and copies, as version 3 is', () => {
    const moved = { ...bounds, top: '/w/renamed' };
    for (const version of [1, 2]) {
      const raw =
        version === 1
          ? (({ instructionSha256: _i, keyid: _k, monotonic: _m, ...v1 }) => v1)(journal({ version }))
          : journal({ version });
      const checked = checkJournal(raw, moved);
      expect(checked, `version ${version}`).toMatchObject({
        ok: false,
        problems: ['it was made when the repository was at /w/repo, and it is at /w/renamed now'],
        moved: {
          from: '/w/repo',
          files: [
            { path: 'src/a.js', absolute: '/w/repo/src/a.js', inRepository: true, copy: '0' },
            { path: 'src/new/b.js', absolute: '/w/repo/src/new/b.js', inRepository: true, copy: null },
          ],
        },
      });
      // Control: where it was made, it is acted on.
      expect(checkJournal(raw, bounds).ok, `version ${version}`).toBe(true);
    }
  });

  it('control: a version 1 or 2 journal whose files name no one other top level, or would not pass there, is refused as any other', () => {
    const moved = { ...bounds, top: '/w/renamed' };
    const [a, b] = journal().files;
    const twoTops = journal({ files: [a, { ...b, absolute: '/w/else/src/new/b.js' }] });
    expect(checkJournal(twoTops, moved)).not.toHaveProperty('moved');
    expect(checkJournal(twoTops, moved).ok).toBe(false);
    const outsideThere = journal({ createdDirs: ['/etc'] });
    const checked = checkJournal(outsideThere, moved);
    expect(checked).not.toHaveProperty('moved');
    expect(!checked.ok && checked.problems[0]).toBe(
      'files.0.absolute /w/repo/src/a.js is outside the work tree /w/renamed and every emitAllowlist root',
    );
  });

  it('many problems: the first few and a count', () => {
    const files = Array.from({ length: 8 }, (_, i) => ({
      path: `/etc/f${i}`,
      absolute: `/etc/f${i}`,
      inRepository: false,
      written: HASH,
      previous: null,
    }));
    const found = problems(journal({ files }));
    expect(found).toHaveLength(6);
    expect(found[5]).toBe('3 more problem(s)');
  });
});

describe('whyLeft: a journaled file is put back only while it holds what the worker wrote and the user has not kept it', () => {
  const W = '1'.repeat(40);
  const other = '2'.repeat(40);
  const third = '3'.repeat(40);
  /** Held now (`index`, `head`), and before the run (`before`: a version 4 journal says; null: an earlier one). */
  const inRepo = (
    index: string | null,
    head: string | null,
    before: { index: string | null; head: string | null } | null = { index: other, head: other },
    asBefore = false,
  ) => ({
    canonical: true,
    asWritten: true,
    asBefore,
    blobs: { written: W, index, head, before },
  });

  it('control: as the worker wrote it, neither staged nor committed, it is put back', () => {
    expect(whyLeft(inRepo(null, null))).toBeNull();
    expect(whyLeft(inRepo(other, other))).toBeNull();
    expect(whyLeft(inRepo(other, other, null))).toBeNull();
    // Outside the repository (an emitAllowlist root) git holds nothing of it.
    expect(whyLeft({ canonical: true, asWritten: true, asBefore: false, blobs: null })).toBeNull();
  });

  it('control: staged or committed as the worker wrote it since the run (git add, git commit after the kill): left, not undone', () => {
    expect(whyLeft(inRepo(W, null))).toBe('staged or committed since the worker wrote it');
    expect(whyLeft(inRepo(W, other))).toBe('staged or committed since the worker wrote it');
    expect(whyLeft(inRepo(null, W))).toBe('staged or committed since the worker wrote it');
    expect(whyLeft(inRepo(other, W))).toBe('staged or committed since the worker wrote it');
    expect(whyLeft(inRepo(W, W))).toBe('staged or committed since the worker wrote it');
    // Staged before the run, committed since: the commit is the user's.
    expect(whyLeft(inRepo(W, W, { index: W, head: other }))).toBe(
      'staged or committed since the worker wrote it',
    );
    expect(whyLeft(inRepo(W, W, { index: null, head: null }))).toBe(
      'staged or committed since the worker wrote it',
    );
  });

  it('bytes HEAD or the index held before the run already (the worker undid an uncommitted edit) are no stage of the user: put back', () => {
    // HEAD held them: the user had edited the file, and the worker wrote it back as committed.
    expect(whyLeft(inRepo(W, W, { index: W, head: W }))).toBeNull();
    expect(whyLeft(inRepo(null, W, { index: null, head: W }))).toBeNull();
    // The index held them: the worker wrote back what was staged.
    expect(whyLeft(inRepo(W, third, { index: W, head: third }))).toBeNull();
  });

  it('the worker wrote back the very bytes the file held: there is nothing to undo, whoever staged them', () => {
    expect(whyLeft(inRepo(W, W, { index: W, head: W }, true))).toBeNull();
    expect(whyLeft(inRepo(W, W, null, true))).toBeNull();
    expect(whyLeft(inRepo(W, other, { index: other, head: other }, true))).toBeNull();
  });

  it('a journal of an earlier version, which does not say what git held before the run: left, and the reason says so', () => {
    expect(whyLeft(inRepo(W, null, null))).toBe(STAGED_UNKNOWN_SINCE);
    expect(whyLeft(inRepo(null, W, null))).toBe(STAGED_UNKNOWN_SINCE);
    expect(STAGED_UNKNOWN_SINCE).not.toBe(STAGED_SINCE);
  });

  it('changed since, or reached through a symbolic link now: left, whatever git holds', () => {
    expect(whyLeft({ canonical: true, asWritten: false, asBefore: false, blobs: null })).toBe(
      'changed since the worker wrote it',
    );
    expect(whyLeft({ canonical: false, asWritten: false, asBefore: true, blobs: null })).toBe(
      'its path leads through a symbolic link now',
    );
  });
});

function key(started: string, boot: string | null = 'boot-1', monotonic: bigint | null = null): ReplayKey {
  return { boot, started, monotonic };
}

function order(journals: Array<{ name: string; key: ReplayKey }>): string[] {
  return replayOrder(journals).map((j) => j.name);
}

describe('replayOrder: newest first, so each journal undoes the layer above the next', () => {
  it('by the monotonic clock within a boot, whatever the wall clock and the names say', () => {
    expect(
      order([
        { name: '1-a', key: key('2026-12-03T00:00:05.000Z', 'boot-1', 10n) },
        { name: '2-b', key: key('2026-12-03T00:00:01.000Z', 'boot-1', 20n) },
        { name: '0-c', key: key('2026-12-03T00:00:03.000Z', 'boot-1', 15n) },
      ]),
    ).toEqual(['2-b', '0-c', '1-a']);
  });

  it('by the wall clock when a journal lacks the monotonic clock (version 1), then by name', () => {
    expect(
      order([
        { name: 'a', key: key('2026-12-03T00:00:01.000Z', 'boot-1', 30n) },
        { name: 'b', key: key('2026-12-03T00:00:02.000Z') },
        { name: 'c', key: key('2026-12-03T00:00:02.000Z') },
      ]),
    ).toEqual(['c', 'b', 'a']);
  });

  it('the journals of a boot together, the boot with the newest journal first', () => {
    expect(
      order([
        { name: 'old-1', key: key('2026-12-01T00:00:00.000Z', 'boot-0', 900n) },
        { name: 'new-1', key: key('2026-12-03T00:00:00.000Z', 'boot-1', 5n) },
        { name: 'old-2', key: key('2026-12-01T00:00:01.000Z', 'boot-0', 950n) },
        { name: 'new-2', key: key('2026-12-03T00:00:01.000Z', 'boot-1', 6n) },
        { name: 'noboot', key: key('2026-12-02T00:00:00.000Z', null, 1_000_000n) },
      ]),
    ).toEqual(['new-2', 'new-1', 'noboot', 'old-2', 'old-1']);
  });

  it('the same journals in any listed order give one order', () => {
    const journals = [
      { name: 'x', key: key('2026-12-03T00:00:00.000Z', 'boot-1', 1n) },
      { name: 'y', key: key('2026-12-03T00:00:00.000Z', 'boot-1', 1n) },
      { name: 'z', key: key('2026-12-03T00:00:00.000Z', 'boot-1', 2n) },
    ];
    expect(order(journals)).toEqual(['z', 'y', 'x']);
    expect(order([...journals].reverse())).toEqual(['z', 'y', 'x']);
  });
});

const delegator = testKey({ name: 'delegator', roles: ['delegator', 'reviewer'] });
const other = testKey({ name: 'other', roles: ['delegator'] });
const content = 'export const a = 2;\n';
const file = subjectOf('src/a.js', content);
const instruction = 'Make a return 2.';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const run: JournalRun = {
  taskName: 'unit',
  instructionSha256: sha256(instruction),
  keyid: delegator.signer.publicKey.keyid,
};

function verdict(
  signer = delegator,
  unit: Record<string, unknown> = { name: 'unit', instructionSha256: sha256(instruction) },
  subjects = [file],
): LedgerRecord {
  const line = signedLine(
    signer,
    verdictStatement(subjects, {
      verdict: 'UNIT_FAILED',
      unit,
      repository: { id: TEST_REPOSITORY_ID },
      createdAt: TEST_CREATED_AT,
    }),
  );
  const decoded = decodeRecord(line);
  if (!decoded.ok) throw new Error(decoded.reason);
  return decoded.record;
}

describe('isOwnVerdict: only the own verdict of the run on the bytes it wrote counts as its record', () => {
  const at = { path: file.path, gitBlob: file.gitBlob };

  it('control: the verdict of the run (any verdict: a failure is recorded too) counts', () => {
    expect(isOwnVerdict(verdict(), run, at)).toBe(true);
  });

  it('a review never counts, rejecting or approving', () => {
    for (const decision of ['reject', 'approve'] as const) {
      const decoded = decodeRecord(reviewLine(delegator, [file], { decision }));
      expect(decoded.ok && isOwnVerdict(decoded.record, run, at)).toBe(false);
    }
  });

  it('the verdict of another unit on the same bytes does not count: another name, instruction or key', () => {
    expect(
      isOwnVerdict(verdict(delegator, { name: 'other', instructionSha256: sha256(instruction) }), run, at),
    ).toBe(false);
    expect(
      isOwnVerdict(verdict(delegator, { name: 'unit', instructionSha256: sha256('Other.') }), run, at),
    ).toBe(false);
    expect(isOwnVerdict(verdict(other), run, at)).toBe(false);
    expect(isOwnVerdict(verdict(delegator, {}), run, at)).toBe(false);
  });

  it('a verdict naming the blob at another path does not count', () => {
    expect(isOwnVerdict(verdict(delegator, undefined, [subjectOf('src/b.js', content)]), run, at)).toBe(
      false,
    );
  });

  it('a version 1 journal has only the name of the unit to go by', () => {
    const v1: JournalRun = { taskName: 'unit', instructionSha256: null, keyid: null };
    expect(isOwnVerdict(verdict(other, { name: 'unit' }), v1, at)).toBe(true);
    expect(isOwnVerdict(verdict(other, { name: 'other' }), v1, at)).toBe(false);
  });
});
