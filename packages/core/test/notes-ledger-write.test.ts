// The cost of one append, in git processes: every delegation pays for each process the ledger write spawns
// (DESIGN 6: delegation overhead < 100 ms), so the count is pinned here, traced by git itself (GIT_TRACE2_EVENT).
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  cleanGitEnv,
  makeTempDir,
  makeTempRepo,
  removeDir,
  type TempRepo,
} from '../../../test/support/git-repo.js';
import { LEDGER_REF, NotesLedger } from '../src/notes-ledger.js';
import { MAX_MESSAGE_LENGTH } from '../src/notes-write-plan.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function repo(): TempRepo {
  const created = makeTempRepo();
  cleanups.push(created.cleanup);
  return created;
}

/** Runs `use` with a ledger whose git processes are traced, and returns the git commands they ran, in order. */
async function tracedCommands(
  r: TempRepo,
  use: (ledger: NotesLedger) => Promise<unknown>,
): Promise<string[]> {
  const dir = makeTempDir();
  cleanups.push(() => removeDir(dir));
  const trace = path.join(dir, 'trace2.json');
  const ledger = new NotesLedger({
    cwd: r.dir,
    env: cleanGitEnv({ GIT_TRACE2_EVENT: trace, GIT_TRACE2_EVENT_NESTING: '5' }),
  });
  await use(ledger);
  if (!fs.existsSync(trace)) return [];
  return fs
    .readFileSync(trace, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { event: string; argv?: string[] })
    .filter((event) => event.event === 'start')
    .map((event) => subcommand(event.argv ?? []));
}

/** `git -c a=b fast-import --quiet` → `fast-import`. */
function subcommand(argv: string[]): string {
  let i = 1;
  while (argv[i]?.startsWith('-')) i += argv[i] === '-c' ? 2 : 1;
  return argv[i] ?? '';
}

describe('NotesLedger.append: git processes per append', () => {
  it('appends with cat-file and fast-import only to an existing ledger, and for-each-ref besides to a new one', async () => {
    const r = repo();
    const blobs = r
      .git(['hash-object', '-w', '--stdin'], 'one\n')
      .trim()
      .split('\n')
      .concat(r.git(['hash-object', '-w', '--stdin'], 'two\n').trim());
    const first = await tracedCommands(r, (ledger) =>
      ledger.append([{ blob: blobs[0]!, lines: ['{"a":1}'] }]),
    );
    // Where cat-file finds no ledger, for-each-ref tells a missing ref from one git cannot read (rt46 f01): once, at
    // the first append of a repository.
    expect(first).toEqual(['cat-file', 'for-each-ref', 'fast-import']);
    const second = await tracedCommands(r, (ledger) =>
      ledger.append([
        { blob: blobs[1]!, lines: ['{"b":1}'] },
        { blob: blobs[0]!, lines: ['{"c":1}'] },
      ]),
    );
    expect(second).toEqual(['cat-file', 'fast-import']);

    // What was written is all there, and nothing else: no temporary branch, a sound repository.
    const ledger = new NotesLedger({ cwd: r.dir, env: cleanGitEnv() });
    expect(await ledger.linesOnMany(blobs)).toEqual(
      new Map([
        [blobs[0]!, ['{"a":1}', '{"c":1}']],
        [blobs[1]!, ['{"b":1}']],
      ]),
    );
    expect(r.git(['for-each-ref', 'refs/delegate-git/'])).toBe('');
    expect(r.git(['rev-list', '--count', LEDGER_REF]).trim()).toBe('2');
    expect(fs.readdirSync(path.join(r.dir, '.git')).filter((f) => f.startsWith('fast_import_crash'))).toEqual(
      [],
    );
    r.git(['fsck', '--strict', '--no-progress']);
  });

  it('a no-op append only reads, with one process (control: the same lines are there)', async () => {
    const r = repo();
    const blob = r.git(['hash-object', '-w', '--stdin'], 'one\n').trim();
    const ledger = new NotesLedger({ cwd: r.dir, env: cleanGitEnv() });
    const written = await ledger.append([{ blob, lines: ['{"a":1}'] }]);
    const commands = await tracedCommands(r, async (traced) => {
      expect(await traced.append([{ blob, lines: ['{"a":1}'] }])).toEqual({
        commit: written.commit,
        added: 0,
      });
    });
    expect(commands).toEqual(['cat-file']);
    expect(await ledger.linesOn(blob)).toEqual(['{"a":1}']);
  });
});

describe('NotesLedger.append through a writer started early (startWriter)', () => {
  /** What a fast-import that failed or was cut short leaves behind: crash reports and temporary packs. */
  function leftovers(r: TempRepo): string[] {
    const crashes = fs.readdirSync(path.join(r.dir, '.git')).filter((f) => f.startsWith('fast_import_crash'));
    const packs = fs
      .readdirSync(path.join(r.dir, '.git', 'objects', 'pack'))
      .filter((f) => f.startsWith('tmp_'));
    return [...crashes, ...packs];
  }

  it('writes the notes commit through the waiting fast-import, started before the lines were known', async () => {
    const r = repo();
    const blob = r.git(['hash-object', '-w', '--stdin'], 'one\n').trim();
    const commands = await tracedCommands(r, async (ledger) => {
      const writer = ledger.startWriter();
      await new Promise((resolve) => setTimeout(resolve, 50)); // started well ahead of its input
      const { added } = await ledger.append([{ blob, lines: ['{"a":1}'] }], { writer });
      expect(added).toBe(1);
    });
    expect(commands.sort()).toEqual(['cat-file', 'fast-import', 'for-each-ref']); // a first append: see above
    expect(await new NotesLedger({ cwd: r.dir, env: cleanGitEnv() }).linesOn(blob)).toEqual(['{"a":1}']);
    expect(leftovers(r)).toEqual([]);
    r.git(['fsck', '--strict', '--no-progress']);
  });

  it('a writer not needed (nothing to add, or dismissed) ends without writing or leaving anything', async () => {
    const r = repo();
    const blob = r.git(['hash-object', '-w', '--stdin'], 'one\n').trim();
    const ledger = new NotesLedger({ cwd: r.dir, env: cleanGitEnv() });
    const { commit } = await ledger.append([{ blob, lines: ['{"a":1}'] }]);
    const packsBefore = fs.readdirSync(path.join(r.dir, '.git', 'objects', 'pack')).sort();

    const unused = ledger.startWriter();
    expect(await ledger.append([{ blob, lines: ['{"a":1}'] }], { writer: unused })).toEqual({
      commit,
      added: 0,
    });
    const dismissed = ledger.startWriter();
    // The append dismissed the one it did not use; each ended cleanly, having written nothing.
    expect(() => unused.run('')).toThrow(/already given its input/);
    for (const writer of [unused, dismissed]) expect((await writer.dismiss()).code).toBe(0);
    expect(await ledger.tip()).toBe(commit);
    expect(leftovers(r)).toEqual([]);
    expect(fs.readdirSync(path.join(r.dir, '.git', 'objects', 'pack')).sort()).toEqual(packsBefore);
  });

  it('a stream cut short is refused, not committed in part (control: the whole stream commits)', async () => {
    const r = repo();
    const blob = r.git(['hash-object', '-w', '--stdin'], 'one\n').trim();
    const ledger = new NotesLedger({ cwd: r.dir, env: cleanGitEnv() });
    const whole = `feature done\ncommit ${LEDGER_REF}\ncommitter a <a@b> 1700000000 +0000\ndata 1\nm\nM 100644 inline ${blob}\ndata 8\n{"a":1}\n\ndone\n`;
    const cut = ledger.startWriter();
    const refused = await cut.run(whole.slice(0, whole.indexOf('\ndone\n')));
    expect(refused.code).not.toBe(0);
    expect(await ledger.tip()).toBeNull();
    const complete = ledger.startWriter();
    expect((await complete.run(whole)).code).toBe(0);
    expect(await ledger.linesOn(blob)).toEqual(['{"a":1}']);
  });

  it('writes a message its writer chose as one line git fsck accepts: a NUL, escapes, a bidi override, an invisible character, bounded (control: a plain one as it is)', async () => {
    const r = repo();
    const blobs = ['one\n', 'two\n'].map((t) => r.git(['hash-object', '-w', '--stdin'], t).trim());
    const ledger = new NotesLedger({ cwd: r.dir, env: cleanGitEnv() });
    await ledger.append([{ blob: blobs[0]!, lines: ['{"a":1}'] }], {
      message: 'delegate-git delegate: UNIT_PASSED plain',
    });
    expect(r.git(['log', '-1', '--format=%B', LEDGER_REF]).trim()).toBe(
      'delegate-git delegate: UNIT_PASSED plain',
    );
    const chosen = `a\u0000b\u001b]0;owned\u0007\u001b[2J\u202e\u200b\nsecond line ${'x'.repeat(5000)}`;
    await ledger.append([{ blob: blobs[1]!, lines: ['{"a":2}'] }], {
      message: `delegate-git delegate: UNIT_PASSED ${chosen}`,
    });
    r.git(['fsck', '--strict', '--no-progress']);
    const body = r.git(['cat-file', 'commit', LEDGER_REF]);
    const message = body.slice(body.indexOf('\n\n') + 2);
    expect(message).toMatch(
      /^delegate-git delegate: UNIT_PASSED a\\u0000b\\u001b\]0;owned\\u0007\\u001b\[2J\\u202e\\u200b\\u000asecond line x+…$/,
    );
    expect(message.length).toBeLessThanOrEqual(MAX_MESSAGE_LENGTH + 1);
  });
});
