/**
 * `delegate-git sync` end to end: two clones record concurrently and both end with the union of the records; a
 * remote without a ledger receives ours; a push the server refuses is reported as refused (not retried as a race).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adopt,
  cli,
  cliAsync,
  cliOk,
  cloneInto,
  commitOf,
  gitOk,
  gitRun,
  LEDGER,
  looseCommit,
  makeServer,
  makeStory,
  makeWorkTree,
  mktree,
  noteLines,
  OPERATOR,
  operatorEnv,
  recordApproval,
  refTip,
  type Story,
  statementOf,
  tagOf,
  withOnePayloadByteChanged,
  writeFiles,
} from '../support/cli-story.js';

const TRACKING = 'refs/notes/remotes/origin/delegations';

let story: Story;
beforeAll(() => {
  story = makeStory();
});
afterAll(() => story.cleanup());

function comments(lines: string[]): string[] {
  return lines.map((l) => String(statementOf(l).predicate.comment ?? '')).sort();
}

describe('sync between two clones', () => {
  it('merges concurrent approvals of the same blob: both clones and the remote end with the union', () => {
    const server = makeServer(story, 'shared.git');
    const first = cloneInto(story, server, 'first');
    adopt(story, first, ['src/**']);
    expect(gitRun(story, first, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);

    const second = cloneInto(story, server, 'second');
    expect(cliOk(story, second, ['init']).stdout).toContain('kept the existing .delegate-git/policy.json');
    // The first sync of a clone leaves the recorded paths of its ledger ready for the next commit's hook.
    const recorded = (dir: string) =>
      fs.existsSync(
        path.join(dir, '.git', 'delegate-git', 'cache', `recorded-paths-${refTip(story, dir, LEDGER)}`),
      );
    expect(cli(story, second, ['sync']).code).toBe(0);
    expect(recorded(second)).toBe(true);
    expect(gitOk(story, second, ['config', '--get-all', 'remote.origin.fetch'])).toContain(
      `+${LEDGER}:${TRACKING}`,
    );

    // The same content in both clones, approved in each before either has seen the other's record.
    const content = 'export const shared = 1;\n';
    for (const [dir, comment] of [
      [first, 'from the first clone'],
      [second, 'from the second clone'],
    ] as const) {
      writeFiles(dir, { 'src/shared.ts': content });
      cliOk(story, dir, ['attest', '--approve', 'src/shared.ts', '-m', comment, '--yes']);
    }
    const blob = gitOk(story, first, ['hash-object', 'src/shared.ts']);
    expect(comments(noteLines(story, first, blob))).toEqual(['from the first clone']);
    expect(comments(noteLines(story, second, blob))).toEqual(['from the second clone']);

    for (const dir of [first, second, first]) {
      const synced = cli(story, dir, ['sync']);
      expect(synced.code, synced.stderr).toBe(0);
      expect(synced.stdout).toContain('Ledger synced with origin.');
    }

    const union = ['from the first clone', 'from the second clone'];
    for (const dir of [first, second, server]) expect(comments(noteLines(story, dir, blob))).toEqual(union);
    const serverTip = refTip(story, server, LEDGER);
    for (const dir of [first, second]) {
      expect(refTip(story, dir, LEDGER)).toBe(serverTip);
      expect(refTip(story, dir, TRACKING)).toBe(serverTip);
    }
    // Nothing was lost on the way: the trust anchor's approval from init is still there too.
    const policyBlob = gitOk(story, first, ['rev-parse', 'HEAD:.delegate-git/policy.json']);
    expect(noteLines(story, server, policyBlob)).toHaveLength(1);
  });
});

describe('syncs racing each other', () => {
  it('four clones syncing at the same moment all succeed, and the remote ends with every record', async () => {
    const server = makeServer(story, 'racing.git');
    const first = cloneInto(story, server, 'racing-0');
    adopt(story, first, ['src/**']);
    expect(gitRun(story, first, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
    const clones = [first, ...[1, 2, 3].map((i) => cloneInto(story, server, `racing-${i}`))];
    for (const [i, dir] of clones.entries()) {
      if (i > 0) cliOk(story, dir, ['init']);
      writeFiles(dir, { [`src/c${i}.ts`]: `export const c = ${i};\n` });
      cliOk(story, dir, ['attest', '--approve', `src/c${i}.ts`, '--yes']);
    }
    // Started together: a push that loses the ref to another (non-fast-forward, or "cannot lock ref" when the other
    // wins between our fetch and the remote's update) is a lost race, fetched, merged and pushed again.
    for (let round = 0; round < 2; round++) {
      const runs = await Promise.all(clones.map((dir) => cliAsync(story, dir, ['sync'])));
      for (const run of runs) expect(run.code, run.stderr).toBe(0);
    }
    for (const [i, dir] of clones.entries()) {
      const blob = gitOk(story, dir, ['hash-object', `src/c${i}.ts`]);
      expect(noteLines(story, server, blob), `clone ${i}`).toHaveLength(1);
    }
  });
});

describe('sync with a remote that has no ledger yet', () => {
  it('pushes ours and records the remote-tracking ref; a second sync has nothing to add', () => {
    const server = makeServer(story, 'plain.git', { hook: false });
    const work = cloneInto(story, server, 'plain');
    adopt(story, work, ['src/**']);
    expect(gitRun(story, work, ['push', '-q', 'origin', 'main']).code).toBe(0);
    expect(refTip(story, server, LEDGER)).toBeNull();

    const synced = cli(story, work, ['sync', '--json']);
    expect(synced.code, synced.stderr).toBe(0);
    const result = JSON.parse(synced.stdout) as { pushed: boolean; tip: string };
    expect(result.pushed).toBe(true);
    expect(refTip(story, server, LEDGER)).toBe(refTip(story, work, LEDGER));
    expect(result.tip).toBe(refTip(story, work, LEDGER));

    const tip = refTip(story, work, LEDGER);
    const again = cli(story, work, ['sync']);
    expect(again.code, again.stderr).toBe(0);
    expect(refTip(story, work, LEDGER)).toBe(tip);
    expect(refTip(story, work, TRACKING)).toBe(tip);
    expect(refTip(story, server, LEDGER)).toBe(tip);
  });
});

describe('a remote added after init', () => {
  it('sync sets the fetch refspec init sets for the remotes there were, so a plain fetch brings the ledger from then on; control: set once, a second sync says nothing', () => {
    const server = makeServer(story, 'late-remote.git', { hook: false });
    const work = makeWorkTree(story, 'late-remote');
    const init = adopt(story, work, ['src/**']);
    expect(init.stdout).toContain(
      'no remote yet: once you add one, push this branch and the ledger to it together, `git push --atomic <remote> <branch> refs/notes/delegations`; then `delegate-git sync <remote>`',
    );
    gitOk(story, work, ['remote', 'add', 'origin', server]);
    gitOk(story, work, ['push', '-q', 'origin', 'main']);
    const spec = `+${LEDGER}:${TRACKING}`;
    const fetchSpecs = () => gitOk(story, work, ['config', '--get-all', 'remote.origin.fetch']).split('\n');
    expect(fetchSpecs()).not.toContain(spec);

    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(synced.stderr).toContain("set remote.origin.fetch to bring origin's ledger");
    expect(fetchSpecs()).toContain(spec);
    // Control: set once, not said again.
    const again = cli(story, work, ['sync']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).not.toContain('set remote.origin.fetch');
    expect(fetchSpecs().filter((s) => s === spec)).toHaveLength(1);

    gitOk(story, work, ['update-ref', '-d', TRACKING]);
    gitOk(story, work, ['fetch', '-q', 'origin']);
    expect(refTip(story, work, TRACKING)).toBe(refTip(story, server, LEDGER));
  });
});

describe('sync refused by the server', () => {
  it('reports the refusal once instead of retrying it as a lost race; an honest ledger syncs', () => {
    const server = makeServer(story, 'strict.git');
    const work = cloneInto(story, server, 'strict');
    adopt(story, work, ['src/**']);
    expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);

    writeFiles(work, { 'src/a.ts': 'export const a = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/a.ts', '--yes']);
    const honest = refTip(story, work, LEDGER)!;
    const blob = gitOk(story, work, ['hash-object', 'src/a.ts']);
    gitOk(story, work, ['notes', '--ref=delegations', 'append', '-m', '{"not":"a record"}', blob]);

    const refused = cli(story, work, ['sync']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('the push to origin was refused');
    expect(refused.stderr).toContain(`note on blob ${blob.slice(0, 12)}`);
    expect(refused.stderr).not.toContain('kept moving');

    gitOk(story, work, ['update-ref', LEDGER, honest]);
    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(refTip(story, server, LEDGER)).toBe(honest);
  });
});

describe('sync with a remote it cannot reach', () => {
  it('exits 2 saying which remote and what to check, with git’s reason and no stack; reachable again, it syncs', () => {
    const server = makeServer(story, 'moving.git', { hook: false });
    const work = cloneInto(story, server, 'moving');
    adopt(story, work, ['src/**']);
    const url = gitOk(story, work, ['remote', 'get-url', 'origin']);
    gitOk(story, work, ['remote', 'set-url', 'origin', `${server}-gone`]);

    const failed = cli(story, work, ['sync']);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(
      /^delegate-git sync: could not fetch the ledger from origin: .*does not appear to be a git repository/,
    );
    expect(failed.stderr).toContain(
      'Check that origin (`git remote get-url origin`) can be reached and read',
    );
    expect(failed.stderr).not.toContain('unexpected error');
    expect(failed.stderr.trim().split('\n')).toHaveLength(1);

    gitOk(story, work, ['remote', 'set-url', 'origin', url]);
    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(refTip(story, server, LEDGER)).toBe(refTip(story, work, LEDGER));
  });

  it('exits 2 when the push cannot reach the remote, not calling it a refusal (rt48 f02); reachable again, it syncs', () => {
    const server = makeServer(story, 'unpushable.git', { hook: false });
    const work = cloneInto(story, server, 'unpushable');
    adopt(story, work, ['src/**']);
    gitOk(story, work, ['remote', 'set-url', '--push', 'origin', `${server}-gone`]);
    const failed = cli(story, work, ['sync']);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(
      /^delegate-git sync: could not push the ledger to origin: .*does not appear/,
    );
    expect(failed.stderr).toContain('Check that origin (`git remote get-url --push origin`) can be reached');
    expect(failed.stderr).not.toContain('refused');
    expect(failed.stderr.trim().split('\n')).toHaveLength(1);
    gitOk(story, work, ['remote', 'set-url', '--push', 'origin', server]);
    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(refTip(story, server, LEDGER)).toBe(refTip(story, work, LEDGER));
  });

  it('names a lock on the ledger a stopped git left, at once (rt48 f06); removed, it syncs', () => {
    const { server, work, other } = hooklessPair('stale-lock');
    writeFiles(other, { 'src/o.ts': 'export const o = 1;\n' });
    cliOk(story, other, ['attest', '--approve', 'src/o.ts', '--yes']);
    cliOk(story, other, ['sync']);
    const lock = path.join(work, '.git', `${LEDGER}.lock`);
    fs.writeFileSync(lock, '');
    const hourAgo = new Date(Date.now() - 3_600_000);
    fs.utimesSync(lock, hourAgo, hourAgo);
    const started = Date.now();
    const locked = cli(story, work, ['sync']);
    expect(locked.code).toBe(2);
    expect(locked.stderr).toContain(`its lock file ${lock} is `);
    expect(locked.stderr).toContain('left by a git process that stopped');
    expect(Date.now() - started).toBeLessThan(10_000);
    fs.rmSync(lock);
    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(refTip(story, server, LEDGER)).toBe(refTip(story, work, LEDGER));
  });

  it("syncs another remote that adds nothing without asking which branch is origin's (rt48 f05); control: one that adds a line must", () => {
    const { work, other } = hooklessPair('second-remote');
    const plain = makeServer(story, 'second-remote-plain.git', { hook: false });
    gitOk(story, work, ['remote', 'add', 'plain', plain]);
    gitOk(story, work, ['remote', 'set-head', 'origin', '-d']);
    expect(cli(story, work, ['sync', 'plain']).code).toBe(0); // plain had no ledger
    writeFiles(work, { 'src/w.ts': 'export const w = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/w.ts', '--yes']);
    const behind = cli(story, work, ['sync', 'plain']); // plain's ledger is behind this one
    expect(behind.code, behind.stderr).toBe(0);
    expect(refTip(story, plain, LEDGER)).toBe(refTip(story, work, LEDGER));

    gitOk(story, other, ['remote', 'add', 'plain', plain]);
    cliOk(story, other, ['sync', 'plain']);
    writeFiles(other, { 'src/p.ts': 'export const p = 1;\n' });
    cliOk(story, other, ['attest', '--approve', 'src/p.ts', '--yes']);
    cliOk(story, other, ['sync', 'plain']);
    const adds = cli(story, work, ['sync', 'plain']);
    expect(adds.code).toBe(2);
    expect(adds.stderr).toContain('no refs/remotes/origin/HEAD');
  });

  it('says that another sync holds the tracking ref rather than blaming the remote; the lock gone, it syncs', () => {
    const server = makeServer(story, 'locked.git', { hook: false });
    const work = cloneInto(story, server, 'locked');
    adopt(story, work, ['src/**']);
    cliOk(story, work, ['sync']);
    gitOk(story, work, ['push', '-q', 'origin', 'main']);
    // Another clone moves the remote's ledger on: the next fetch here must write the tracking ref.
    const other = cloneInto(story, server, 'locked-other');
    cliOk(story, other, ['sync']);
    cliOk(story, other, ['attest', '--approve', '.delegate-git/policy.json', '--yes', '-m', 'elsewhere']);
    cliOk(story, other, ['sync']);
    expect(refTip(story, work, TRACKING)).not.toBe(refTip(story, server, LEDGER));
    // What a sync running at the same moment holds while git updates the tracking ref.
    const lock = path.join(work, '.git', `${TRACKING}.lock`);
    fs.mkdirSync(path.dirname(lock), { recursive: true });
    fs.writeFileSync(lock, '');
    const locked = cli(story, work, ['sync']);
    expect(locked.code).toBe(2);
    expect(locked.stderr).toContain(
      `could not update ${TRACKING}: another sync or fetch in this repository kept it locked`,
    );
    expect(locked.stderr).toContain('Nothing was lost; run sync again.');
    expect(locked.stderr).not.toContain('can be reached');
    fs.rmSync(lock);
    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(refTip(story, server, LEDGER)).toBe(refTip(story, work, LEDGER));
  });
});

describe('sync takes the union, whatever either side dropped', () => {
  /** A server without the hook (github.com), a clone that adopted and synced, and a second clone of it. */
  function plainPair(name: string): { server: string; work: string; other: string } {
    const server = makeServer(story, `${name}.git`, { hook: false });
    const work = cloneInto(story, server, name);
    adopt(story, work, ['src/**']);
    expect(gitRun(story, work, ['push', '-q', 'origin', 'main']).code).toBe(0);
    writeFiles(work, { 'src/a.ts': 'export const a = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/a.ts', '--yes', '-m', 'a']);
    expect(cli(story, work, ['sync']).code).toBe(0);
    const other = cloneInto(story, server, `${name}-other`);
    gitOk(story, other, ['fetch', '-q', 'origin', `${LEDGER}:${LEDGER}`]);
    return { server, work, other };
  }

  it('refuses a remote ledger whose history brings a commit of content though its tip holds only notes; the plain append is taken', () => {
    const { work, other } = plainPair('history');
    const before = refTip(story, work, LEDGER);
    const content = looseCommit(story, other, 'src/hidden.ts', 'export const hidden = 1;\n');
    const ledger = refTip(story, other, LEDGER)!;
    writeFiles(other, { 'src/b.ts': 'export const b = 1;\n' });
    cliOk(story, other, ['attest', '--approve', 'src/b.ts', '--yes', '-m', 'b']);
    const appended = refTip(story, other, LEDGER)!;
    const notes = gitOk(story, other, ['rev-parse', `${appended}^{tree}`]);
    const merged = commitOf(story, other, notes, [ledger, content]);
    expect(gitRun(story, other, ['push', '-q', '-f', 'origin', `${merged}:${LEDGER}`]).code).toBe(0);
    // The content commit is a pull request's branch this clone fetched: held here, judged by nobody.
    expect(gitRun(story, other, ['push', '-q', 'origin', `${content}:refs/heads/pr`]).code).toBe(0);
    gitOk(story, work, ['fetch', '-q', 'origin', 'pr']);
    const refused = cli(story, work, ['sync']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('holds entries that are no notes: src');
    expect(refTip(story, work, LEDGER)).toBe(before);

    expect(gitRun(story, other, ['push', '-q', '-f', 'origin', `${appended}:${LEDGER}`]).code).toBe(0);
    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(refTip(story, work, LEDGER)).toBe(appended);
  });

  it('refuses a remote ledger whose merge drops a line its other parent added, which verify would find in the history for good (rt44 f01); the plain append is taken', () => {
    const { work, other } = plainPair('side-line');
    const before = refTip(story, work, LEDGER)!;
    writeFiles(other, { 'src/b.ts': 'export const b = 1;\n' });
    cliOk(story, other, ['attest', '--approve', 'src/b.ts', '--yes', '-m', 'b']);
    const appended = refTip(story, other, LEDGER)!;
    // A side commit adds the line on src/b.ts; the merge keeps the tree from before it.
    const merged = commitOf(story, other, gitOk(story, other, ['rev-parse', `${before}^{tree}`]), [
      before,
      appended,
    ]);
    expect(gitRun(story, other, ['push', '-q', '-f', 'origin', `${merged}:${LEDGER}`]).code).toBe(0);
    const refused = cli(story, work, ['sync']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `has a history in which notes commit(s) ${merged.slice(0, 12)} drop 1 line(s)`,
    );
    expect(refTip(story, work, LEDGER)).toBe(before);

    expect(gitRun(story, other, ['push', '-q', '-f', 'origin', `${appended}:${LEDGER}`]).code).toBe(0);
    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(refTip(story, work, LEDGER)).toBe(appended);
  });

  it('refuses a remote ledger whose tree names a note twice (a server that checks objects refuses it); control: once', () => {
    const { work, other } = plainPair('twice');
    const before = refTip(story, work, LEDGER)!;
    const blob = gitOk(story, work, ['hash-object', 'src/a.ts']);
    const listed = gitOk(story, other, ['ls-tree', `${before}^{tree}`]).split('\n');
    const entry = listed.find((line) => line.endsWith(`\t${blob}`))!;
    const tree = mktree(story, other, [...listed, entry]);
    expect(
      gitRun(story, other, [
        'push',
        '-q',
        '-f',
        'origin',
        `${commitOf(story, other, tree, [before])}:${LEDGER}`,
      ]).code,
    ).toBe(0);
    const refused = cli(story, work, ['sync']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("holds objects git's own checks refuse");
    expect(refTip(story, work, LEDGER)).toBe(before);

    // What a plain `git fetch` brought unchecked is checked all the same when sync (or a commit hook) would take it.
    gitOk(story, work, ['fetch', '-q', 'origin', `+${LEDGER}:refs/notes/remotes/origin/delegations`]);
    const fetchedBefore = cli(story, work, ['sync']);
    expect(fetchedBefore.code).toBe(2);
    expect(fetchedBefore.stderr).toContain("holds objects git's own checks refuse (");
    expect(fetchedBefore.stderr).toContain('duplicateEntries');
    expect(refTip(story, work, LEDGER)).toBe(before);
    writeFiles(work, { 'src/a.ts': 'export const a = 2;\n' });
    gitOk(story, work, ['add', 'src/a.ts']);
    const hooked = gitRun(story, work, ['commit', '-q', '-m', 'a 2']);
    expect(hooked.code).not.toBe(0);
    expect(hooked.stderr).toContain("did not take origin's fetched ledger");
    expect(hooked.stderr).toContain('duplicateEntries');
    // A tip refused once is said in a line at the next commit, not checked again.
    const again = gitRun(story, work, ['commit', '-q', '-m', 'a 2']);
    expect(again.stderr).toContain('was refused before; `delegate-git sync` says why');
    expect(refTip(story, work, LEDGER)).toBe(before);
    gitOk(story, work, ['reset', '-q', '--hard']);

    const once = commitOf(story, other, mktree(story, other, listed), [before]);
    expect(gitRun(story, other, ['push', '-q', '-f', 'origin', `${once}:${LEDGER}`]).code).toBe(0);
    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
  });

  it('keeps a line the remote removed (a notes commit on top of ours) and gives it back; a remote that only adds is a fast-forward (control)', () => {
    const { server, work, other } = plainPair('dropping');
    const blob = gitOk(story, work, ['hash-object', 'src/a.ts']);
    // Control: the remote only adds, and the clone fast-forwards to it.
    writeFiles(other, { 'src/b.ts': 'export const b = 1;\n' });
    cliOk(story, other, ['attest', '--approve', 'src/b.ts', '--yes', '-m', 'b']);
    expect(gitRun(story, other, ['push', '-q', 'origin', LEDGER]).code).toBe(0);
    expect(cli(story, work, ['sync']).code).toBe(0);
    expect(refTip(story, work, LEDGER)).toBe(refTip(story, other, LEDGER));

    // A pusher removes the approval on src/a.ts, while this clone records something of its own.
    gitOk(story, other, ['notes', '--ref=delegations', 'remove', blob]);
    expect(gitRun(story, other, ['push', '-q', 'origin', LEDGER]).code).toBe(0);
    writeFiles(work, { 'src/c.ts': 'export const c = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/c.ts', '--yes', '-m', 'c']);
    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    const c = gitOk(story, work, ['hash-object', 'src/c.ts']);
    for (const dir of [work, server]) {
      expect(comments(noteLines(story, dir, blob)), dir).toEqual(['a']);
      expect(comments(noteLines(story, dir, c)), dir).toEqual(['c']);
    }
    // The remote's commit is in the history (a merge), so the push was no force.
    const parents = gitOk(story, work, ['rev-list', '--parents', '-n', '1', LEDGER]).split(' ');
    expect(parents.slice(1)).toContain(refTip(story, other, LEDGER));
  });

  it('gives back a line removed here that the remote holds, where the hook would refuse the push without it', () => {
    const server = makeServer(story, 'restoring.git');
    const work = cloneInto(story, server, 'restoring');
    adopt(story, work, ['src/**']);
    writeFiles(work, { 'src/a.ts': 'export const a = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/a.ts', '--yes', '-m', 'a']);
    expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
    const blob = gitOk(story, work, ['hash-object', 'src/a.ts']);
    gitOk(story, work, ['notes', '--ref=delegations', 'remove', blob]);
    // Control: pushed as it is, the hook refuses the dropped line.
    const pushed = gitRun(story, work, ['push', 'origin', LEDGER]);
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toContain('drops 1 record line');

    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(comments(noteLines(story, work, blob))).toEqual(['a']);
    expect(refTip(story, server, LEDGER)).toBe(refTip(story, work, LEDGER));
  });

  it('refuses a remote ledger that names no commit, or a commit of code, taking and pushing nothing; a valid one after is taken', () => {
    const { server, work, other } = plainPair('hostile');
    const before = refTip(story, work, LEDGER);
    fs.writeFileSync(path.join(other, '.git', 'not-a-commit'), 'not a commit\n');
    const blob = gitOk(story, other, ['hash-object', '-w', '.git/not-a-commit']);
    const tag = tagOf(story, other, refTip(story, other, LEDGER)!);
    for (const [target, expected] of [
      [tag, /the ledger on origin is damaged: its refs\/notes\/delegations names a tag, not a notes commit/],
      [
        blob,
        /the ledger on origin is damaged: its refs\/notes\/delegations names a blob, not a notes commit/,
      ],
      [
        'HEAD',
        /the ledger on origin \([0-9a-f]{12}\) holds entries that are no notes: \.delegate-git \(not a note/,
      ],
    ] as const) {
      expect(gitRun(story, other, ['push', '-q', '-f', 'origin', `${target}:${LEDGER}`]).code).toBe(0);
      const refused = cli(story, work, ['sync']);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(expected);
      expect(refused.stderr).not.toContain('    at ');
      expect(refTip(story, work, LEDGER)).toBe(before);
    }
    expect(gitRun(story, work, ['rev-parse', '--verify', '--quiet', TRACKING]).code).toBe(0);
    // The remote restored: taken again.
    expect(gitRun(story, other, ['push', '-q', '-f', 'origin', `${LEDGER}:${LEDGER}`]).code).toBe(0);
    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(refTip(story, server, LEDGER)).toBe(refTip(story, work, LEDGER));
  });

  it('reports a refusal whose message reads like a lost race once, from git’s own status line', () => {
    const server = makeServer(story, 'wordy.git', { hook: false });
    const work = cloneInto(story, server, 'wordy');
    adopt(story, work, ['src/**']);
    const hook = path.join(server, 'hooks', 'pre-receive');
    fs.writeFileSync(hook, '#!/bin/sh\necho "no (non-fast-forward) here; cannot lock ref" >&2\nexit 1\n', {
      mode: 0o755,
    });
    const refused = cli(story, work, ['sync', '--json']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('the push to origin was refused');
    expect(refused.stderr).not.toContain('kept moving');
    // Control: without the hook, the same sync goes through.
    fs.rmSync(hook);
    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
  });
});

/**
 * A server without the hook (a fork or a mirror, say), a clone that adopted and pushed a record on src/a.ts with its
 * ledger, and a second clone holding that ledger.
 */
/** A commit of a file no policy governs, so that `dir`'s branch diverges from origin's. */
function commitUngoverned(dir: string, name: string): void {
  writeFiles(dir, { [`notes-${name}.txt`]: 'not governed\n' });
  gitOk(story, dir, ['add', `notes-${name}.txt`]);
  expect(gitRun(story, dir, ['commit', '-q', '-m', `notes ${name}`]).code).toBe(0);
}

function hooklessPair(name: string): { server: string; work: string; other: string } {
  const server = makeServer(story, `${name}.git`, { hook: false });
  const work = cloneInto(story, server, name);
  adopt(story, work, ['src/**']);
  writeFiles(work, { 'src/a.ts': 'export const a = 1;\n' });
  cliOk(story, work, ['attest', '--approve', 'src/a.ts', '--yes', '-m', 'a']);
  expect(gitRun(story, work, ['push', '-q', 'origin', 'main', LEDGER]).code).toBe(0);
  const other = cloneInto(story, server, `${name}-other`);
  gitOk(story, other, ['fetch', '-q', 'origin', `${LEDGER}:${LEDGER}`]);
  return { server, work, other };
}

describe('sync and the remote’s own configuration', () => {
  /** A record made here (src/b.ts) and one the remote has that this clone lacks (src/c.ts). Returns their blobs. */
  function diverge(work: string, other: string): { b: string; c: string } {
    writeFiles(work, { 'src/b.ts': 'export const b = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/b.ts', '--yes', '-m', 'b']);
    writeFiles(other, { 'src/c.ts': 'export const c = 1;\n' });
    cliOk(story, other, ['attest', '--approve', 'src/c.ts', '--yes', '-m', 'c']);
    expect(gitRun(story, other, ['push', '-q', 'origin', LEDGER]).code).toBe(0);
    return {
      b: gitOk(story, work, ['hash-object', 'src/b.ts']),
      c: gitOk(story, other, ['hash-object', 'src/c.ts']),
    };
  }

  it('keeps the records made here when the remote maps refs/notes/* onto itself (the notes-sharing recipe)', () => {
    const { server, work, other } = hooklessPair('sharing');
    gitOk(story, work, ['config', '--add', 'remote.origin.fetch', '+refs/notes/*:refs/notes/*']);
    gitOk(story, work, ['config', '--add', 'remote.origin.push', '+refs/notes/*:refs/notes/*']);
    const { b, c } = diverge(work, other);

    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(synced.stderr).toBe('');
    expect(cli(story, other, ['sync']).code).toBe(0);
    for (const dir of [work, other, server]) {
      expect(comments(noteLines(story, dir, b)), dir).toEqual(['b']);
      expect(comments(noteLines(story, dir, c)), dir).toEqual(['c']);
    }
    // Control: a plain fetch with that refspec is what drops the local record (why sync must not apply it).
    writeFiles(work, { 'src/d.ts': 'export const d = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/d.ts', '--yes', '-m', 'd']);
    gitOk(story, work, ['fetch', '-q', 'origin']);
    expect(noteLines(story, work, gitOk(story, work, ['hash-object', 'src/d.ts']))).toEqual([]);
  });

  it('puts back the records a plain fetch with that refspec dropped (rt48 f09): sync from the reflog, and the post-merge hook after a pull; controls: a rewind named on the command line, a fetch that only adds', () => {
    const { server, work, other } = hooklessPair('dropped');
    // Control: a rewind named on the command line (what a refused push advises, to drop a line) is left alone.
    writeFiles(work, { 'src/junk.ts': 'export const junk = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/junk.ts', '--yes', '-m', 'junk']);
    const junk = gitOk(story, work, ['hash-object', 'src/junk.ts']);
    gitOk(story, work, ['fetch', '-q', 'origin', `+${LEDGER}:${LEDGER}`]);
    const rewound = cli(story, work, ['sync']);
    expect(rewound.code, rewound.stderr).toBe(0);
    expect(rewound.stderr).toBe('');
    expect(noteLines(story, work, junk)).toEqual([]);

    gitOk(story, work, ['config', '--add', 'remote.origin.fetch', '+refs/notes/*:refs/notes/*']);
    const { b, c } = diverge(work, other);
    gitOk(story, work, ['fetch', '-q', 'origin']);
    expect(noteLines(story, work, b)).toEqual([]); // what the fetch did

    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(synced.stderr).toMatch(
      /had moved refs\/notes\/delegations to [0-9a-f]{12}, dropping records made here; sync put it back/,
    );
    for (const dir of [work, server]) {
      expect(comments(noteLines(story, dir, b)), dir).toEqual(['b']);
      expect(comments(noteLines(story, dir, c)), dir).toEqual(['c']);
    }
    // Control: the ledger as sync left it; a fetch that brings nothing new says nothing at the next sync.
    gitOk(story, work, ['fetch', '-q', 'origin']);
    const quiet = cli(story, work, ['sync']);
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(quiet.stderr).toBe('');

    // A pull: the fetch drops a record made here, the merge runs post-merge, which puts it back.
    expect(cli(story, other, ['sync']).code).toBe(0);
    writeFiles(other, { 'README.md': 'moved on\n' });
    gitOk(story, other, ['add', 'README.md']);
    gitOk(story, other, ['commit', '-q', '-m', 'moved on']);
    writeFiles(other, { 'src/f.ts': 'export const f = 1;\n' });
    cliOk(story, other, ['attest', '--approve', 'src/f.ts', '--yes', '-m', 'f']);
    expect(gitRun(story, other, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
    writeFiles(work, { 'src/e.ts': 'export const e = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/e.ts', '--yes', '-m', 'e']);
    const e = gitOk(story, work, ['hash-object', 'src/e.ts']);
    const f = gitOk(story, other, ['hash-object', 'src/f.ts']);
    const pulled = gitRun(story, work, ['pull', '-q', '--no-rebase']);
    expect(pulled.code, pulled.stderr).toBe(0);
    expect(pulled.stderr).toContain('dropping records made here; delegate-git put it back');
    expect(comments(noteLines(story, work, e))).toEqual(['e']);
    // origin's record came in too, checked, from the tracking ref init's refspec fills.
    expect(comments(noteLines(story, work, f))).toEqual(['f']);
    expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
  });

  it('an approval written after such a fetch first puts the dropped records back, so sync later loses none of them', () => {
    const { server, work, other } = hooklessPair('refspec-then-attest');
    gitOk(story, work, ['config', '--add', 'remote.origin.fetch', '+refs/notes/*:refs/notes/*']);
    const { b, c } = diverge(work, other);
    gitOk(story, work, ['fetch', '-q', 'origin']);
    expect(noteLines(story, work, b)).toEqual([]); // what the fetch did
    // check only reads: it says why the approved src/b.ts reads as refused, and what puts the ledger back.
    const checked = cli(story, work, ['check', 'src/b.ts']);
    expect(checked.code).toBe(1);
    expect(checked.stderr).toContain('dropping records made here, which may promote what is refused below');
    expect(noteLines(story, work, b)).toEqual([]);

    writeFiles(work, { 'src/d.ts': 'export const d = 1;\n' });
    const attested = cli(story, work, ['attest', '--approve', 'src/d.ts', '--yes', '-m', 'd']);
    expect(attested.code, attested.stderr).toBe(0);
    expect(attested.stderr).toContain('dropping records made here; attest put it back');
    const d = gitOk(story, work, ['hash-object', 'src/d.ts']);
    expect(comments(noteLines(story, work, b))).toEqual(['b']);
    expect(comments(noteLines(story, work, d))).toEqual(['d']);

    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    for (const dir of [work, server])
      for (const [blob, comment] of [
        [b, 'b'],
        [c, 'c'],
        [d, 'd'],
      ] as const)
        expect(comments(noteLines(story, dir, blob)), `${dir} ${comment}`).toEqual([comment]);
  });

  it('puts the local ledger back when a fetch moves it anyway (a hook here), and says so', () => {
    const { server, work, other } = hooklessPair('moved');
    const hooks = path.resolve(work, gitOk(story, work, ['rev-parse', '--git-path', 'hooks']));
    fs.mkdirSync(hooks, { recursive: true });
    fs.writeFileSync(
      path.join(hooks, 'reference-transaction'),
      [
        '#!/bin/sh',
        '[ "$1" = committed ] && [ -z "$MOVED_ONCE" ] || exit 0',
        'while read old new ref; do',
        `  [ "$ref" = ${TRACKING} ] && MOVED_ONCE=1 git update-ref ${LEDGER} "$new"`,
        'done',
        'exit 0',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    const { b, c } = diverge(work, other);

    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    for (const dir of [work, server]) {
      expect(comments(noteLines(story, dir, b)), dir).toEqual(['b']);
      expect(comments(noteLines(story, dir, c)), dir).toEqual(['c']);
    }
    expect(synced.stderr).toContain(`fetching from origin moved ${LEDGER}, and sync put it back`);
    // Control: the remote now holds this very ledger, so the hook's move changes nothing and sync says nothing.
    const again = cli(story, work, ['sync']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toBe('');
  });

  it('pushes the ledger to a mirror remote, and only the ledger', () => {
    const { server, work } = hooklessPair('mirrored');
    gitOk(story, work, ['config', 'remote.origin.mirror', 'true']);
    gitOk(story, work, ['branch', 'local-only']);
    writeFiles(work, { 'src/b.ts': 'export const b = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/b.ts', '--yes', '-m', 'b']);

    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(refTip(story, server, LEDGER)).toBe(refTip(story, work, LEDGER));
    expect(refTip(story, server, 'refs/heads/local-only')).toBeNull();
    // Control: git's own push of a refspec to that remote is what fails.
    const plain = gitRun(story, work, ['push', 'origin', `${LEDGER}:${LEDGER}`]);
    expect(plain.code).not.toBe(0);
    expect(plain.stderr).toContain('--mirror');
  });

  it('names a tracking ref that cannot exist beside another as such, not as a lock; renamed, the remote syncs', () => {
    const { server, work } = hooklessPair('conflicting');
    cliOk(story, work, ['sync']);
    gitOk(story, work, ['remote', 'add', 'origin/delegations', server]);

    const refused = cli(story, work, ['sync', 'origin/delegations']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `git cannot create that ref because ${TRACKING} exists and one name would be a directory of the other`,
    );
    expect(refused.stderr).toContain('git remote rename origin/delegations');
    expect(refused.stderr).not.toContain('locked');
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);

    gitOk(story, work, ['remote', 'rename', 'origin/delegations', 'fork']);
    const synced = cli(story, work, ['sync', 'fork']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(refTip(story, work, 'refs/notes/remotes/fork/delegations')).toBe(refTip(story, server, LEDGER));
  });
});

describe('sync checks every line a remote would add before taking any', () => {
  /** Adds `line` to the note on `blob` in `dir`'s ledger (sorted and unique, as every note is), and pushes it. */
  function addLineAndPush(dir: string, blob: string, line: string): void {
    const lines = [...new Set([...noteLines(story, dir, blob), line])].sort();
    const file = path.join(dir, '.git', 'note-lines');
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    gitOk(story, dir, ['notes', '--ref=delegations', 'add', '-f', '-F', file, blob]);
    expect(gitRun(story, dir, ['push', '-q', '-f', 'origin', LEDGER]).code).toBe(0);
  }

  it('refuses a remote ledger adding a forged line, taking nothing of it; the same remote without it is taken', () => {
    const { work, other } = hooklessPair('forged');
    const before = refTip(story, work, LEDGER);
    writeFiles(other, { 'src/c.ts': 'export const c = 1;\n' });
    cliOk(story, other, ['attest', '--approve', 'src/c.ts', '--yes', '-m', 'c']);
    const honest = refTip(story, other, LEDGER)!;
    const c = gitOk(story, other, ['hash-object', 'src/c.ts']);
    addLineAndPush(other, c, withOnePayloadByteChanged(noteLines(story, other, c)[0]!));
    const a = gitOk(story, work, ['hash-object', 'src/a.ts']);
    addLineAndPush(other, a, '{"not":"a record"}');

    const refused = cli(story, work, ['sync']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /^delegate-git sync: the ledger on origin \([0-9a-f]{12}\) holds 2 line\(s\) that are no valid records under the policy and keys committed at HEAD: /,
    );
    expect(refused.stderr).toContain(`note on blob ${a.slice(0, 12)}: not a valid record`);
    expect(refused.stderr).toContain(`note on blob ${c.slice(0, 12)}: `);
    expect(refused.stderr).toContain('the local ledger is unchanged');
    expect(refused.stderr).toContain('Whoever administers origin must then remove them');
    expect(refused.stderr).not.toContain('    at ');
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refTip(story, work, LEDGER)).toBe(before);
    expect(noteLines(story, work, c)).toEqual([]);

    // Control: the remote restored to its valid lines, and the new approval among them is taken.
    expect(gitRun(story, other, ['push', '-q', '-f', 'origin', `${honest}:${LEDGER}`]).code).toBe(0);
    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(comments(noteLines(story, work, c))).toEqual(['c']);
  });

  it('checks more lines than one batch on the checking threads, into a clone without a ledger: the forged lines in both batches are named; without them, every line is taken', () => {
    const { server, other } = hooklessPair('many');
    // About 1.5 KB a line: 1,500 lines are more than the 1 MiB one thread is handed at a time.
    const files = Array.from({ length: 1500 }, (_, i) => `src/many/f${i}.ts`);
    writeFiles(other, Object.fromEntries(files.map((f, i) => [f, `export const f${i} = ${i};\n`])));
    cliOk(story, other, ['attest', '--approve', ...files, '--yes', '-m', 'many']);
    const honest = refTip(story, other, LEDGER)!;
    const blobs = gitOk(story, other, ['hash-object', ...files])
      .split('\n')
      .sort();
    const [first, last] = [blobs[0]!, blobs[blobs.length - 1]!];
    for (const blob of [first, last])
      addLineAndPush(other, blob, withOnePayloadByteChanged(noteLines(story, other, blob)[0]!));
    const fresh = cloneInto(story, server, 'many-fresh');
    expect(refTip(story, fresh, LEDGER)).toBeNull();

    const refused = cli(story, fresh, ['sync']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('holds 2 line(s) that are no valid records');
    expect(refused.stderr).toContain(`note on blob ${first.slice(0, 12)}: `);
    expect(refused.stderr).toContain(`note on blob ${last.slice(0, 12)}: `);
    expect(refTip(story, fresh, LEDGER)).toBeNull();

    // Control: the remote restored to its valid lines; every one of them is taken.
    expect(gitRun(story, other, ['push', '-q', '-f', 'origin', `${honest}:${LEDGER}`]).code).toBe(0);
    const synced = cli(story, fresh, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(refTip(story, fresh, LEDGER)).toBe(honest);
    for (const blob of [first, last]) expect(comments(noteLines(story, fresh, blob))).toEqual(['many']);
  });

  it('refuses a line signed by a key the trust root does not list; one signed by a listed key is taken', async () => {
    const { work, other } = hooklessPair('untrusted');
    const before = refTip(story, work, LEDGER);
    const mallory = operatorEnv(story, 'mallory');
    expect(cli(story, other, ['keygen', 'mallory'], mallory).code).toBe(0);
    writeFiles(other, { 'src/m.ts': 'export const m = 1;\n' });
    const m = await recordApproval(story, other, 'src/m.ts', { key: 'mallory', env: mallory });
    expect(gitRun(story, other, ['push', '-q', 'origin', LEDGER]).code).toBe(0);

    const refused = cli(story, work, ['sync']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`holds 1 line(s) that are no valid records`);
    expect(refused.stderr).toContain(`note on blob ${m.slice(0, 12)}: `);
    expect(refTip(story, work, LEDGER)).toBe(before);

    // Control: the same approval signed by the operator, whose key the trust root lists, on the ledger from before
    // mallory's line (a commit removing it would keep it in the history, which verify reads whole).
    gitOk(story, other, ['update-ref', LEDGER, before!]);
    const approved = await recordApproval(story, other, 'src/m.ts', { key: OPERATOR });
    expect(gitRun(story, other, ['push', '-q', '-f', 'origin', LEDGER]).code).toBe(0);
    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(noteLines(story, work, approved)).toHaveLength(1);
  });

  it("judges them by HEAD, the synced remote's default branch and origin's: a checked-out branch or a fork's default branch that trusts a key of its own is outvoted; merged into origin's, that key's lines are taken", async () => {
    const { work, other } = hooklessPair('branch-key');
    const erin = operatorEnv(story, 'erin');
    const key = JSON.parse(cliOk(story, other, ['keygen', 'erin', '--json'], erin).stdout) as {
      publicKey: string;
    };
    writeFiles(other, { 'src/m.ts': 'export const m = 1;\n' });
    const m = await recordApproval(story, other, 'src/m.ts', { key: 'erin', env: erin });
    expect(gitRun(story, other, ['push', '-q', 'origin', LEDGER]).code).toBe(0);
    // A branch under review here that trusts erin (a fork's pull request, say): its keys are not the remote's.
    gitOk(story, work, ['checkout', '-q', '-b', 'review']);
    cliOk(story, work, ['keys', 'add', 'erin', '--public-key', key.publicKey, '--roles', 'reviewer']);
    cliOk(story, work, ['attest', '--approve', '.delegate-git/keys/erin.json', '--yes']);
    gitOk(story, work, ['add', '.delegate-git/keys/erin.json']);
    expect(gitRun(story, work, ['commit', '-q', '-m', 'trust erin']).code).toBe(0);

    const refused = cli(story, work, ['sync']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      "under the policy and keys committed at origin's default branch as last fetched (origin/main, ",
    );
    expect(refused.stderr).toContain(`note on blob ${m.slice(0, 12)}: `);
    expect(refused.stderr).toContain('run `git fetch origin` first');
    expect(noteLines(story, work, m)).toEqual([]);
    // Nor by the default branch of the remote synced: a fork whose main trusts erin, and whose ledger holds her line.
    const fork = makeServer(story, 'branch-key-fork.git', { hook: false });
    gitOk(story, work, ['remote', 'add', 'fork', fork]);
    gitOk(story, other, ['push', '-q', fork, LEDGER]);
    gitOk(story, work, ['push', '-q', 'fork', 'review:main']);
    gitOk(story, work, ['fetch', '-q', 'fork']);
    // Origin's default branch is not known in this clone of an empty repository: said, and nothing asked or taken.
    const unknown = cli(story, work, ['sync', 'fork']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('`git remote set-head origin --auto`');
    expect(noteLines(story, work, m)).toEqual([]);
    gitOk(story, work, ['remote', 'set-head', 'origin', 'main']);
    const fromFork = cli(story, work, ['sync', 'fork']);
    expect(fromFork.code).toBe(2);
    expect(fromFork.stderr).toContain(
      "keys committed at origin's default branch as last fetched (origin/main, ",
    );
    expect(noteLines(story, work, m)).toEqual([]);

    // Control: the branch merged into the remote's default branch (and so known here), erin's line is taken.
    expect(gitRun(story, work, ['push', '-q', 'origin', 'review:main']).code).toBe(0);
    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    expect(noteLines(story, work, m)).toHaveLength(1);
  });
});

describe('the records a pull brings', () => {
  it("a clone set up by init takes origin's ledger, so its first record pushes without a sync", () => {
    const { server, work } = hooklessPair('teammate');
    const mate = cloneInto(story, server, 'teammate-mate');
    expect(refTip(story, mate, LEDGER)).toBeNull();
    const init = cliOk(story, mate, ['init']);
    expect(init.stdout).toContain("took origin's ledger");
    expect(refTip(story, mate, LEDGER)).toBe(refTip(story, work, LEDGER));

    writeFiles(mate, { 'src/m.ts': 'export const m = 1;\n' });
    cliOk(story, mate, ['attest', '--approve', 'src/m.ts', '--yes']);
    gitOk(story, mate, ['add', 'src/m.ts']);
    expect(gitRun(story, mate, ['commit', '-q', '-m', 'm']).code).toBe(0);
    const pushed = gitRun(story, mate, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(pushed.code, pushed.stderr).toBe(0);
  });

  it('a merge a pull makes takes in the fetched ledger, checked as sync checks it: a promoted file merges; with a forged line nothing is taken and the merge is refused', () => {
    const { server, work } = hooklessPair('pulled');
    const mate = cloneInto(story, server, 'pulled-mate');
    cliOk(story, mate, ['init']);
    const divergeAndPull = (file: string) => {
      commitUngoverned(mate, file);
      writeFiles(work, { [`src/${file}.ts`]: `export const ${file} = 1;\n` });
      cliOk(story, work, ['attest', '--approve', `src/${file}.ts`, '--yes']);
      gitOk(story, work, ['add', `src/${file}.ts`]);
      expect(gitRun(story, work, ['commit', '-q', '-m', file]).code).toBe(0);
      return gitOk(story, work, ['hash-object', `src/${file}.ts`]);
    };

    divergeAndPull('b');
    expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
    const merged = gitRun(story, mate, ['pull', '--no-rebase', '--no-edit']);
    expect(merged.code, merged.stderr).toBe(0);
    expect(merged.stderr).toContain("took the records of origin's ledger");
    expect(refTip(story, mate, LEDGER)).toBe(refTip(story, work, LEDGER));

    // The same with the new record forged on the remote (a hookless server takes anything).
    const c = divergeAndPull('c');
    const forged = withOnePayloadByteChanged(noteLines(story, work, c)[0]!);
    const file = path.join(work, '.git', 'forged-note');
    fs.writeFileSync(file, `${forged}\n`);
    gitOk(story, work, ['notes', '--ref=delegations', 'add', '-f', '-F', file, c]);
    expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
    const before = refTip(story, mate, LEDGER);
    const refused = gitRun(story, mate, ['pull', '--no-rebase', '--no-edit']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("did not take origin's fetched ledger");
    expect(refused.stderr).toContain('merge commit refused');
    expect(refTip(story, mate, LEDGER)).toBe(before);
  });

  it('a push of the ledger behind records another clone pushed alone: after a pull that found the branch up to date, pre-push takes them in and the push again lands; without that pull it names sync', () => {
    const { server, work } = hooklessPair('behind-push');
    const mate = cloneInto(story, server, 'behind-push-mate');
    cliOk(story, mate, ['init']);
    const push = () => gitRun(story, mate, ['push', '--atomic', 'origin', 'main', LEDGER]);
    /** mate commits an approved file; meanwhile work approves one of its own and pushes the ledger alone. */
    const meanwhile = (file: string) => {
      writeFiles(mate, { [`src/${file}.ts`]: `export const ${file} = 1;\n` });
      cliOk(story, mate, ['attest', '--approve', `src/${file}.ts`, '--yes']);
      gitOk(story, mate, ['add', `src/${file}.ts`]);
      expect(gitRun(story, mate, ['commit', '-q', '-m', file]).code).toBe(0);
      writeFiles(work, { [`src/${file}-review.ts`]: `export const r = '${file}';\n` });
      cliOk(story, work, ['attest', '--approve', `src/${file}-review.ts`, '--yes']);
      cliOk(story, work, ['sync']); // the ledger alone, with what mate pushed before
    };

    // Control: a push whose ledger moves forward says nothing of it.
    writeFiles(mate, { 'src/first.ts': 'export const first = 1;\n' });
    cliOk(story, mate, ['attest', '--approve', 'src/first.ts', '--yes']);
    gitOk(story, mate, ['add', 'src/first.ts']);
    expect(gitRun(story, mate, ['commit', '-q', '-m', 'first']).code).toBe(0);
    const forward = push();
    expect(forward.code, forward.stderr).toBe(0);
    expect(forward.stderr).not.toContain('delegate-git:');

    meanwhile('p');
    const upToDate = gitRun(story, mate, ['pull', '--no-rebase', '--no-edit']);
    expect(upToDate.code, upToDate.stderr).toBe(0);
    expect(upToDate.stderr).not.toContain('took the records'); // git ran no post-merge hook
    const first = push();
    expect(first.code).not.toBe(0);
    expect(first.stderr).toContain("took the records of origin's ledger");
    expect(first.stderr).toContain('goes through when run again');
    const again = push();
    expect(again.code, again.stderr).toBe(0);

    meanwhile('q');
    const unfetched = push();
    expect(unfetched.code).not.toBe(0);
    expect(unfetched.stderr).toContain('run `delegate-git sync origin`');
    cliOk(story, mate, ['sync', 'origin']);
    const synced = push();
    expect(synced.code, synced.stderr).toBe(0);
    expect(refTip(story, server, LEDGER)).toBe(refTip(story, mate, LEDGER));
  });

  it('a push to another remote whose fetched ledger holds records this clone lacks names sync for that remote, and takes in nothing of it; control: after that sync the push lands', () => {
    const { server, work } = hooklessPair('behind-upstream');
    const mate = cloneInto(story, server, 'behind-upstream-mate');
    cliOk(story, mate, ['init']);
    gitOk(story, mate, ['remote', 'add', 'upstream', server]);
    cliOk(story, mate, ['sync', 'upstream']); // sets upstream's ledger refspec
    writeFiles(mate, { 'src/mine.ts': 'export const mine = 1;\n' });
    cliOk(story, mate, ['attest', '--approve', 'src/mine.ts', '--yes']);
    gitOk(story, mate, ['add', 'src/mine.ts']);
    expect(gitRun(story, mate, ['commit', '-q', '-m', 'mine']).code).toBe(0);
    writeFiles(work, { 'src/theirs.ts': 'export const theirs = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/theirs.ts', '--yes']);
    cliOk(story, work, ['sync']);
    gitOk(story, mate, ['fetch', '-q', 'upstream']);
    const ours = refTip(story, mate, LEDGER);

    const refused = gitRun(story, mate, ['push', '--atomic', 'upstream', 'main', LEDGER]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('run `delegate-git sync upstream`');
    expect(refused.stderr).not.toContain('took the records');
    expect(refTip(story, mate, LEDGER)).toBe(ours);

    cliOk(story, mate, ['sync', 'upstream']);
    const landed = gitRun(story, mate, ['push', '--atomic', 'upstream', 'main', LEDGER]);
    expect(landed.code, landed.stderr).toBe(0);
    expect(landed.stderr).not.toContain('delegate-git:');
    expect(refTip(story, server, LEDGER)).toBe(refTip(story, mate, LEDGER));
  });

  it('a merge refused for a file it takes unchanged from the branch merged in says to sync, not to approve it; control: content the merge made gets no such advice', () => {
    const { server, work } = hooklessPair('named-pull');
    const mate = cloneInto(story, server, 'named-pull-mate');
    cliOk(story, mate, ['init']);
    const approvedThere = (files: Record<string, string>) => {
      writeFiles(work, files);
      for (const file of Object.keys(files)) cliOk(story, work, ['attest', '--approve', file, '--yes']);
      gitOk(story, work, ['add', ...Object.keys(files)]);
      expect(gitRun(story, work, ['commit', '-q', '-m', 'approved there']).code).toBe(0);
      expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
    };

    // Control: both sides change src/a.ts (apart), so the merge makes content neither side approved.
    const lines = Array.from({ length: 12 }, (_, i) => `export const a${i} = ${i};`);
    approvedThere({ 'src/a.ts': `${lines.join('\n')}\n` });
    expect(gitRun(story, mate, ['pull', '-q', '--no-rebase', '--no-edit']).code).toBe(0);
    writeFiles(mate, { 'src/a.ts': `${['// mate', ...lines].join('\n')}\n` });
    cliOk(story, mate, ['attest', '--approve', 'src/a.ts', '--yes']);
    gitOk(story, mate, ['add', 'src/a.ts']);
    expect(gitRun(story, mate, ['commit', '-q', '-m', 'mate a']).code).toBe(0);
    approvedThere({ 'src/a.ts': `${[...lines, '// work'].join('\n')}\n` });
    const made = gitRun(story, mate, ['pull', '--no-rebase', '--no-edit', 'origin', 'main']);
    expect(made.code).not.toBe(0);
    expect(made.stderr).toContain('merge commit refused');
    expect(made.stderr).not.toContain('as the branch merged in has it');
    // What the merge made is for a reviewer to approve: then it concludes.
    cliOk(story, mate, ['attest', '--approve', '--staged', '--yes']);
    expect(gitRun(story, mate, ['commit', '-q', '--no-edit']).code).toBe(0);

    commitUngoverned(mate, 'n');
    approvedThere({ 'src/n.ts': 'export const n = 1;\n' });
    const named = gitRun(story, mate, ['pull', '--no-rebase', '--no-edit', 'origin', 'main']);
    expect(named.code).not.toBe(0);
    expect(named.stderr).toContain('src/n.ts: as the branch merged in has it, unchanged');
    expect(named.stderr).toContain('run `delegate-git sync`, then `git commit`');
    expect(named.stderr).not.toContain('src/a.ts: as the branch');
    cliOk(story, mate, ['sync']);
    const concluded = gitRun(story, mate, ['commit', '-q', '--no-edit']);
    expect(concluded.code, concluded.stderr).toBe(0);
  });

  it('a merge refused because origin was added again without the ledger refspec says so, and sync mends it; a pull that passes says nothing of it', () => {
    const { server, work } = hooklessPair('unfetched');
    const mate = cloneInto(story, server, 'unfetched-mate');
    cliOk(story, mate, ['init']);
    // The remote replaced after init: its fetch refspecs are git's default again, the tracking ledger gone.
    gitOk(story, mate, ['remote', 'remove', 'origin']);
    gitOk(story, mate, ['remote', 'add', 'origin', server]);
    gitOk(story, mate, ['fetch', '-q', 'origin']);
    gitOk(story, mate, ['branch', '-q', '--set-upstream-to=origin/main']);
    gitRun(story, mate, ['update-ref', '-d', 'refs/notes/remotes/origin/delegations']);
    const diverge = (file: string, governed: boolean) => {
      commitUngoverned(mate, file);
      const at = governed ? `src/${file}.ts` : `${file}.txt`;
      writeFiles(work, { [at]: `export const ${file} = 1;\n` });
      if (governed) cliOk(story, work, ['attest', '--approve', at, '--yes']);
      gitOk(story, work, ['add', at]);
      expect(gitRun(story, work, ['commit', '-q', '-m', file]).code).toBe(0);
      expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
    };

    // Control: a merge of nothing governed passes, and the hint, which may not apply, is not said.
    diverge('plain', false);
    const passed = gitRun(story, mate, ['pull', '--no-rebase', '--no-edit']);
    expect(passed.code, passed.stderr).toBe(0);
    expect(passed.stderr).not.toContain('not set to fetch');

    diverge('d', true);
    const refused = gitRun(story, mate, ['pull', '--no-rebase', '--no-edit']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('merge commit refused');
    expect(refused.stderr).toContain(`origin is not set to fetch its ledger (${LEDGER})`);
    expect(refused.stderr).toContain('`delegate-git sync`');

    cliOk(story, mate, ['sync']);
    expect(gitOk(story, mate, ['config', '--get-all', 'remote.origin.fetch'])).toContain(LEDGER);
    const concluded = gitRun(story, mate, ['commit', '-q', '--no-edit']);
    expect(concluded.code, concluded.stderr).toBe(0);
  });

  it('a pull that makes no commit (a rebase, a fast-forward) takes in the fetched ledger too, so the ledger pushes beside the branch; without the post-rewrite hook it is refused as non-fast-forward', () => {
    const { server, work } = hooklessPair('rebased');
    /** A clone with a committed record of its own, behind origin by `src/<file>.ts` and its record. */
    const behind = (name: string, file: string) => {
      const mate = cloneInto(story, server, name);
      cliOk(story, mate, ['init']);
      writeFiles(mate, { [`src/${name}.ts`]: 'export const m = 1;\n' });
      cliOk(story, mate, ['attest', '--approve', `src/${name}.ts`, '--yes']);
      gitOk(story, mate, ['add', `src/${name}.ts`]);
      expect(gitRun(story, mate, ['commit', '-q', '-m', name]).code).toBe(0);
      writeFiles(work, { [`src/${file}.ts`]: `export const ${file} = 1;\n` });
      cliOk(story, work, ['attest', '--approve', `src/${file}.ts`, '--yes']);
      gitOk(story, work, ['add', `src/${file}.ts`]);
      expect(gitRun(story, work, ['commit', '-q', '-m', file]).code).toBe(0);
      expect(gitRun(story, work, ['pull', '-q', '--rebase']).code).toBe(0);
      expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
      return mate;
    };
    const pushBoth = (mate: string) => gitRun(story, mate, ['push', '--atomic', 'origin', 'main', LEDGER]);

    // Control first: with no post-rewrite hook, nothing takes origin's ledger in after the rebase.
    const unhooked = behind('unhooked', 'u');
    fs.rmSync(path.join(unhooked, '.git', 'hooks', 'post-rewrite'), { force: true });
    const rebasedBare = gitRun(story, unhooked, ['pull', '--rebase']);
    expect(rebasedBare.code, rebasedBare.stderr).toBe(0);
    expect(rebasedBare.stderr).not.toContain('took the records');
    const refused = pushBoth(unhooked);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('non-fast-forward');

    const mate = behind('hooked', 'h');
    const rebased = gitRun(story, mate, ['pull', '--rebase']);
    expect(rebased.code, rebased.stderr).toBe(0);
    expect(rebased.stderr).toContain("took the records of origin's ledger");
    const pushed = pushBoth(mate);
    expect(pushed.code, pushed.stderr).toBe(0);
    const served = gitOk(story, server, ['rev-parse', LEDGER]);
    expect(
      gitRun(story, server, ['merge-base', '--is-ancestor', refTip(story, work, LEDGER)!, served]).code,
    ).toBe(0);

    // A fast-forward pull (post-merge): a record made here but not committed, and origin's new one, both kept.
    writeFiles(mate, { 'src/later.ts': 'export const later = 1;\n' });
    cliOk(story, mate, ['attest', '--approve', 'src/later.ts', '--yes']);
    const later = gitOk(story, mate, ['hash-object', 'src/later.ts']);
    expect(gitRun(story, work, ['pull', '-q', '--rebase']).code).toBe(0);
    writeFiles(work, { 'src/f.ts': 'export const f = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/f.ts', '--yes']);
    const f = gitOk(story, work, ['hash-object', 'src/f.ts']);
    gitOk(story, work, ['add', 'src/f.ts']);
    expect(gitRun(story, work, ['commit', '-q', '-m', 'f']).code).toBe(0);
    expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
    const forwarded = gitRun(story, mate, ['pull', '--ff-only']);
    expect(forwarded.code, forwarded.stderr).toBe(0);
    expect(forwarded.stderr).toContain("took the records of origin's ledger");
    expect(noteLines(story, mate, f)).toHaveLength(1);
    expect(noteLines(story, mate, later)).toHaveLength(1);
    expect(gitRun(story, mate, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);

    // Nothing new fetched: the hook says nothing (git alone answers, before Node starts).
    const quiet = gitRun(story, mate, ['pull', '--rebase']);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).not.toContain('delegate-git');
  });

  it('a pulled merge that stopped on a conflict, concluded with `git commit`, takes in the fetched ledger, so the ledger pushes beside it; control: without that commit hook it is refused as non-fast-forward', () => {
    const { server, work } = hooklessPair('conflicted');
    /** A clone whose own approved `src/a.ts` conflicts with the one origin holds now, pulled to a stopped merge. */
    const stoppedMerge = (name: string) => {
      const mate = cloneInto(story, server, name);
      cliOk(story, mate, ['init']);
      writeFiles(mate, { 'src/a.ts': `export const a = '${name}';\n` });
      cliOk(story, mate, ['attest', '--approve', 'src/a.ts', '--yes']);
      gitOk(story, mate, ['add', 'src/a.ts']);
      expect(gitRun(story, mate, ['commit', '-q', '-m', name]).code).toBe(0);
      writeFiles(work, { 'src/a.ts': `export const a = 'origin for ${name}';\n` });
      cliOk(story, work, ['attest', '--approve', 'src/a.ts', '--yes']);
      gitOk(story, work, ['add', 'src/a.ts']);
      expect(gitRun(story, work, ['commit', '-q', '-m', `origin for ${name}`]).code).toBe(0);
      expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
      const pulled = gitRun(story, mate, ['pull', '--no-rebase', '--no-edit']);
      expect(pulled.code).not.toBe(0);
      expect(pulled.stdout).toContain('CONFLICT');
      writeFiles(mate, { 'src/a.ts': "export const a = 'merged';\n" });
      cliOk(story, mate, ['attest', '--approve', 'src/a.ts', '--yes']);
      gitOk(story, mate, ['add', 'src/a.ts']);
      return mate;
    };
    const pushBoth = (mate: string) => gitRun(story, mate, ['push', '--atomic', 'origin', 'main', LEDGER]);

    // Control first: the quick answer passes this merge (its file is approved here), and nothing else takes the
    // fetched ledger in: git runs no post-merge hook for a merge concluded by `git commit`.
    const unhooked = stoppedMerge('conflict-unhooked');
    fs.rmSync(path.join(unhooked, '.git', 'hooks', 'pre-commit'), { force: true });
    expect(gitRun(story, unhooked, ['commit', '-q', '--no-edit']).code).toBe(0);
    const refused = pushBoth(unhooked);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('non-fast-forward');

    const mate = stoppedMerge('conflict-hooked');
    const concluded = gitRun(story, mate, ['commit', '-q', '--no-edit']);
    expect(concluded.code, concluded.stderr).toBe(0);
    expect(concluded.stderr).toContain("took the records of origin's ledger");
    const pushed = pushBoth(mate);
    expect(pushed.code, pushed.stderr).toBe(0);
    // The next commit concludes no merge: nothing more is said.
    writeFiles(mate, { 'notes.txt': 'after the merge\n' });
    gitOk(story, mate, ['add', 'notes.txt']);
    const next = gitRun(story, mate, ['commit', '-q', '-m', 'after']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).not.toContain('delegate-git');
  });

  it('a rebasing pull that fetched a forged line takes nothing and says so, and the rebase itself goes ahead', () => {
    const { server, work } = hooklessPair('rebased-forged');
    const mate = cloneInto(story, server, 'rebased-forged-mate');
    cliOk(story, mate, ['init']);
    writeFiles(mate, { 'notes.txt': 'local\n' });
    gitOk(story, mate, ['add', 'notes.txt']);
    expect(gitRun(story, mate, ['commit', '-q', '-m', 'local']).code).toBe(0);
    writeFiles(work, { 'src/c.ts': 'export const c = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/c.ts', '--yes']);
    const c = gitOk(story, work, ['hash-object', 'src/c.ts']);
    gitOk(story, work, ['add', 'src/c.ts']);
    expect(gitRun(story, work, ['commit', '-q', '-m', 'c']).code).toBe(0);
    const file = path.join(work, '.git', 'forged-note');
    fs.writeFileSync(file, `${withOnePayloadByteChanged(noteLines(story, work, c)[0]!)}\n`);
    gitOk(story, work, ['notes', '--ref=delegations', 'add', '-f', '-F', file, c]);
    expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);

    const before = refTip(story, mate, LEDGER);
    const rebased = gitRun(story, mate, ['pull', '--rebase']);
    expect(rebased.code, rebased.stderr).toBe(0);
    expect(rebased.stderr).toContain("did not take origin's fetched ledger");
    expect(rebased.stderr).toContain('`delegate-git sync` says what and why');
    expect(rebased.stderr).not.toContain('Why:');
    expect(refTip(story, mate, LEDGER)).toBe(before);
    // Said once: an amend after it (post-rewrite again) says nothing more.
    const amended = gitRun(story, mate, ['commit', '--amend', '-q', '--no-edit']);
    expect(amended.code, amended.stderr).toBe(0);
    expect(amended.stderr).not.toContain('delegate-git');
    expect(gitOk(story, mate, ['log', '--format=%s', '-2']).split('\n')).toEqual(['local', 'c']);
  });

  it("takes in only origin's ledger, also on a branch that tracks a fork: the fork's fetched ledger stays where the fetch put it", () => {
    const { server, work } = hooklessPair('upstream-only');
    const mate = cloneInto(story, server, 'upstream-only-mate');
    cliOk(story, mate, ['init']);
    // A record only another remote holds (a fork fetched for a look), in that remote's tracking ref.
    writeFiles(work, { 'src/f.ts': 'export const f = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/f.ts', '--yes']);
    gitOk(story, mate, ['remote', 'add', 'fork', work]);
    gitOk(story, mate, ['fetch', '-q', 'fork', `+${LEDGER}:refs/notes/remotes/fork/delegations`]);
    gitOk(story, mate, ['config', 'branch.main.remote', 'fork']); // as `git checkout --track fork/<branch>` sets
    const before = refTip(story, mate, LEDGER);
    writeFiles(mate, { 'src/f.ts': 'export const f = 1;\n' });
    gitOk(story, mate, ['add', 'src/f.ts']);
    const refused = gitRun(story, mate, ['commit', '-q', '-m', 'f']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).not.toContain('took the records');
    expect(refTip(story, mate, LEDGER)).toBe(before);
    // Control: the same ledger as origin's tracking ledger is taken in, and the commit passes.
    gitOk(story, mate, ['update-ref', 'refs/notes/remotes/origin/delegations', refTip(story, work, LEDGER)!]);
    const taken = gitRun(story, mate, ['commit', '-q', '-m', 'f']);
    expect(taken.code, taken.stderr).toBe(0);
    expect(taken.stderr).toContain("took the records of origin's ledger");
  });

  it("judges the lines by origin's default branch: a pull that brings a new reviewer's key and that reviewer's records merges; a key only the merged-into branch lacks does not stop it", async () => {
    const { server, work } = hooklessPair('new-key');
    const mate = cloneInto(story, server, 'new-key-mate');
    cliOk(story, mate, ['init']);
    writeFiles(mate, { 'notes.txt': 'local\n' });
    gitOk(story, mate, ['add', 'notes.txt']);
    expect(gitRun(story, mate, ['commit', '-q', '-m', 'local']).code).toBe(0);

    // On origin: dave's key, approved, then dave's approval of src/d.ts, each pushed with the ledger.
    const dave = operatorEnv(story, 'dave');
    const key = JSON.parse(cliOk(story, work, ['keygen', 'dave', '--json'], dave).stdout) as {
      publicKey: string;
    };
    cliOk(story, work, ['keys', 'add', 'dave', '--public-key', key.publicKey, '--roles', 'reviewer']);
    cliOk(story, work, ['attest', '--approve', '.delegate-git/keys/dave.json', '--yes']);
    gitOk(story, work, ['add', '.delegate-git/keys/dave.json']);
    expect(gitRun(story, work, ['commit', '-q', '-m', 'trust dave']).code).toBe(0);
    writeFiles(work, { 'src/d.ts': 'export const d = 1;\n' });
    const d = await recordApproval(story, work, 'src/d.ts', { key: 'dave', env: dave });
    gitOk(story, work, ['add', 'src/d.ts']);
    expect(gitRun(story, work, ['commit', '-q', '-m', 'd']).code).toBe(0);
    expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);

    // sync before pulling: dave's key is not trusted on this clone's branch yet. It says to bring that branch in
    // first; removing the lines on origin is for lines no branch trusts.
    const early = cli(story, mate, ['sync']);
    expect(early.code).toBe(2);
    const advice = early.stderr.indexOf('First, if they are signed by a key');
    expect(advice).toBeGreaterThan(0);
    expect(early.stderr.indexOf('Whoever administers origin must then remove them')).toBeGreaterThan(advice);

    const merged = gitRun(story, mate, ['pull', '--no-rebase', '--no-edit']);
    expect(merged.code, merged.stderr).toBe(0);
    expect(merged.stderr).toContain("took the records of origin's ledger");
    expect(noteLines(story, mate, d)).toHaveLength(1);
    const synced = cli(story, mate, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
  });
});
