/**
 * The gates in a partial clone (`git clone --filter=blob:none`), whose fetched ledger lacks every note blob: the first
 * run fetches them in one batch, saying so, instead of one silent `git fetch` per note as git reads them (rt48 f03);
 * a remote that cannot be reached is refused in one paragraph (exit 2). An ordinary clone asks git nothing for it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adopt,
  cli,
  cliOk,
  cloneInto,
  gitOk,
  gitRun,
  LEDGER,
  makeServer,
  makeStory,
  type Run,
  type Story,
  writeFiles,
} from '../support/cli-story.js';
import { addKeys } from '../support/reviewers.js';

const NOTES = 40;
const FETCHING = /^delegate-git: fetching (\d+) ledger objects from origin \(a partial clone\)…$/m;

let story: Story;
let server: string;
let work: string;
beforeAll(() => {
  story = makeStory();
  server = makeServer(story, 'partial.git');
  // What a server needs to serve a partial clone (protocol v2 serves any object asked for by id).
  gitOk(story, server, ['config', 'uploadpack.allowFilter', 'true']);
  work = cloneInto(story, server, 'work');
  adopt(story, work, ['src/**']);
  const files: Record<string, string> = {};
  for (let i = 0; i < NOTES; i++) files[`src/f${i}.js`] = `export const v = ${i};\n`;
  writeFiles(work, files);
  gitOk(story, work, ['add', 'src']);
  cliOk(story, work, ['attest', '--approve', '--staged', '--yes']);
  expect(gitRun(story, work, ['commit', '-qm', 'files']).code).toBe(0);
  // Approved, not committed: a clone that stages the same content has it promoted.
  writeFiles(work, { 'src/extra.js': 'export const extra = 1;\n' });
  cliOk(story, work, ['attest', '--approve', 'src/extra.js', '--yes']);
  fs.rmSync(path.join(work, 'src/extra.js'));
  expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
});
afterAll(() => story.cleanup());

/** A blob-less clone of the server with its ledger fetched, as `delegate-git sync` or a refspec would. */
function partialClone(name: string): string {
  gitOk(story, story.root, ['clone', '-q', '--filter=blob:none', `file://${server}`, name]);
  const dir = path.join(story.root, name);
  gitOk(story, dir, ['fetch', '-q', 'origin', `${LEDGER}:${LEDGER}`]);
  return dir;
}

function missingLedgerObjects(dir: string): number {
  const listed = gitOk(story, dir, ['rev-list', '--objects', '--missing=print', LEDGER]);
  return listed.split('\n').filter((line) => line.startsWith('?')).length;
}

/** The command, with every git process it starts (children included) traced: the `git fetch`es among them. */
function traced(dir: string, args: string[]): Run & { fetches: number; commands: string[] } {
  const trace = path.join(story.root, `trace-${Math.random().toString(36).slice(2)}.json`);
  const run = cli(story, dir, args, { ...story.env, GIT_TRACE2_EVENT: trace });
  const events = fs.existsSync(trace)
    ? fs
        .readFileSync(trace, 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as { event: string; name?: string; argv?: string[] })
    : [];
  return {
    ...run,
    fetches: events.filter((e) => e.event === 'cmd_name' && e.name === 'fetch').length,
    commands: events.filter((e) => e.event === 'start').map((e) => (e.argv ?? []).join(' ')),
  };
}

describe('the ledger of a partial clone', () => {
  it('is fetched in one batch by the first hook run, which then judges as anywhere else', () => {
    const dir = partialClone('pc');
    const missing = missingLedgerObjects(dir);
    expect(missing).toBeGreaterThan(NOTES);

    writeFiles(dir, { 'src/extra.js': 'export const extra = 1;\n', 'README.md': 'hello\n' });
    gitOk(story, dir, ['add', 'src/extra.js', 'README.md']);
    const hook = traced(dir, ['hook', 'pre-commit']);
    expect(hook.code, hook.stderr).toBe(0);
    expect(hook.stderr.match(new RegExp(FETCHING.source, 'gm'))).toHaveLength(1);
    expect(Number(FETCHING.exec(hook.stderr)![1])).toBe(missing);
    expect(hook.fetches).toBe(1); // git's lazy fetch would have run one per note
    expect(missingLedgerObjects(dir)).toBe(0);

    // Nothing is fetched again, and a governed file nobody approved is refused.
    gitOk(story, dir, ['reset', '-q']);
    writeFiles(dir, { 'src/unapproved.js': 'export const nobody = 1;\n' });
    gitOk(story, dir, ['add', 'src/unapproved.js']);
    const check = traced(dir, ['check', '--staged']);
    expect(check.code, check.stderr).toBe(1);
    expect(check.stdout + check.stderr).toContain('src/unapproved.js');
    expect(check.stderr).not.toMatch(FETCHING);
    expect(check.fetches).toBe(0);
  });

  it('is refused in one paragraph (exit 2) when the remote cannot be reached, and nothing is left half done', () => {
    const dir = partialClone('pc-offline');
    const missing = missingLedgerObjects(dir);
    gitOk(story, dir, ['config', 'remote.origin.url', `file://${path.join(story.root, 'gone.git')}`]);
    writeFiles(dir, { 'README.md': 'hello\n' });
    gitOk(story, dir, ['add', 'README.md']);
    for (const args of [['check', '--staged'], ['hook', 'pre-commit'], ['verify']]) {
      const run = traced(dir, args);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toMatch(FETCHING);
      expect(run.stderr).toContain(
        `this repository is a partial clone (git clone --filter), which left ${missing} objects of the ledger out, and fetching them from origin failed`,
      );
      expect(run.stderr).toContain('run the command again where the remote can be reached');
      expect(run.fetches).toBe(1);
    }
    expect(missingLedgerObjects(dir)).toBe(missing);
  });

  it('syncs: the remote ledger taken in with its missing objects fetched in one batch, and a record made here pushed', () => {
    gitOk(story, story.root, ['clone', '-q', '--filter=blob:none', `file://${server}`, 'pc-sync']);
    const dir = path.join(story.root, 'pc-sync');
    const first = traced(dir, ['sync']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('Ledger synced with origin');
    expect(first.stderr.match(new RegExp(FETCHING.source, 'gm'))).toHaveLength(1);
    expect(first.fetches).toBe(2); // the ledger, then its notes in one batch
    expect(missingLedgerObjects(dir)).toBe(0);

    writeFiles(dir, { 'src/pc.js': 'export const pc = 1;\n' });
    cliOk(story, dir, ['attest', '--approve', 'src/pc.js', '--yes']);
    const second = traced(dir, ['sync']);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).not.toMatch(FETCHING);
    expect(gitOk(story, server, ['rev-parse', LEDGER])).toBe(gitOk(story, dir, ['rev-parse', LEDGER]));
  });

  it('costs an ordinary clone no git process, when it reads the whole ledger', () => {
    const dir = cloneInto(story, server, 'full');
    gitOk(story, dir, ['fetch', '-q', 'origin', `${LEDGER}:${LEDGER}`]);
    // A README is governed only if the ledger recorded its path: the whole ledger is read for that.
    writeFiles(dir, { 'src/extra.js': 'export const extra = 1;\n', 'README.md': 'hello\n' });
    gitOk(story, dir, ['add', 'src/extra.js', 'README.md']);
    const check = traced(dir, ['check', '--staged']);
    expect(check.code, check.stderr).toBe(0);
    expect(check.commands.filter((c) => c.startsWith('git ls-tree -r'))).toHaveLength(1);
    expect(check.stderr).not.toMatch(FETCHING);
    expect(check.commands.filter((c) => /promisor|--missing=/.test(c))).toEqual([]);
    expect(check.fetches).toBe(0);
  });

  it("offline, key files of origin's default branch not fetched yet leave its revocations unknown: the commit is judged by its own keys (rt62 f04)", () => {
    const dir = partialClone('pc-default');
    writeFiles(dir, { 'README.md': 'hello\n' });
    gitOk(story, dir, ['add', 'README.md']);
    expect(cli(story, dir, ['check', '--staged']).code).toBe(0); // the ledger's objects fetched, online
    gitOk(story, dir, ['reset', '-q']);
    // main moves on with a new key file, whose blob a fetch of a blob-less clone does not bring (the records other
    // clones pushed taken in first).
    gitOk(story, work, ['fetch', '-q', 'origin', `${LEDGER}:${LEDGER}`]);
    const [carol] = addKeys(story, work, [{ name: 'carol' }]);
    expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
    gitOk(story, dir, ['fetch', '-q', 'origin']);
    expect(gitOk(story, dir, ['rev-parse', 'HEAD'])).not.toBe(
      gitOk(story, dir, ['rev-parse', 'origin/HEAD']),
    );
    const keyBlob = gitOk(story, dir, ['rev-parse', `origin/HEAD:${carol!.keyFile}`]);
    // Listed as missing (rev-list --missing=print fetches nothing).
    expect(gitOk(story, dir, ['rev-list', '--objects', '--missing=print', 'origin/HEAD'])).toContain(
      `?${keyBlob}`,
    );

    gitOk(story, dir, ['config', 'remote.origin.url', `file://${path.join(story.root, 'gone.git')}`]);
    writeFiles(dir, { 'src/extra.js': 'export const extra = 1;\n' });
    gitOk(story, dir, ['add', 'src/extra.js']);
    const hook = cli(story, dir, ['hook', 'pre-commit']);
    expect(hook.code, hook.stderr).toBe(0);
    // Control: content nobody approved is still refused there.
    writeFiles(dir, { 'src/unapproved.js': 'export const nobody = 1;\n' });
    gitOk(story, dir, ['add', 'src/unapproved.js']);
    expect(cli(story, dir, ['check', '--staged']).code).toBe(1);
  });
});
