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
  it('appends with cat-file and fast-import only, to a new and to an existing ledger', async () => {
    const r = repo();
    const blobs = r
      .git(['hash-object', '-w', '--stdin'], 'one\n')
      .trim()
      .split('\n')
      .concat(r.git(['hash-object', '-w', '--stdin'], 'two\n').trim());
    const first = await tracedCommands(r, (ledger) =>
      ledger.append([{ blob: blobs[0]!, lines: ['{"a":1}'] }]),
    );
    expect(first).toEqual(['cat-file', 'fast-import']);
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
