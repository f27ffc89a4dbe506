import { spawnSync } from 'node:child_process';
/**
 * The server gate end to end: a bare remote set up with `delegate-git init --server`, a clone set up with
 * `delegate-git init`, and real `git push` (atomic where the ledger travels with the branch). Every refusal is
 * asserted on git's exit code and on the `refused <ref> <commit> <path>: <reason>` line the pusher reads, and is
 * paired with a push that is accepted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  adopt,
  cli,
  cliOk,
  cloneInto,
  commit,
  commitBeforeAdoption,
  commitOf,
  gitOk,
  gitRun,
  LEDGER,
  ledgerCommitWith,
  looseCommit,
  makeServer,
  makeStory,
  mktree,
  noteLines,
  operatorEnv,
  refTip,
  resetWorkTree,
  type Story,
  statementOf,
  tagOf,
  withOnePayloadByteChanged,
  writeFiles,
} from '../support/cli-story.js';
import { rawPush } from '../support/raw-push.js';

const POLICY = '.delegate-git/policy.json';
const ATOMIC = ['push', '--atomic', 'origin', 'main', LEDGER];

let story: Story;
beforeAll(() => {
  story = makeStory();
});
afterAll(() => story.cleanup());

/** A server with the hook, and a clone that adopted delegate-git and pushed its adopting commit with the ledger. */
function adoptedPair(name: string): { server: string; work: string } {
  const server = makeServer(story, `${name}.git`);
  const work = cloneInto(story, server, name);
  adopt(story, work, ['src/**']);
  const first = gitRun(story, work, ATOMIC);
  if (first.code !== 0) throw new Error(`the first push was refused:\n${first.stderr}`);
  expect(first.stderr).toContain('this push was judged by its own policy (first push)');
  return { server, work };
}

function stageFile(work: string, file: string, content: string): string {
  writeFiles(work, { [file]: content });
  gitOk(story, work, ['add', '--', file]);
  return gitOk(story, work, ['rev-parse', `:${file}`]);
}

/** The clone back in step with the server: branch and ledger as the server has them, work tree clean. */
function realign(work: string): void {
  gitOk(story, work, ['fetch', '-q', 'origin', `+main:refs/remotes/origin/main`, `+${LEDGER}:${LEDGER}`]);
  gitOk(story, work, ['checkout', '-q', 'main']);
  gitOk(story, work, ['reset', '-q', '--hard', 'origin/main']);
  resetWorkTree(story, work);
}

function refusedLine(ref: string, file: string, reason: string): RegExp {
  const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return new RegExp(`refused ${literal(ref)} [0-9a-f]{12} ${literal(file)}: ${literal(reason)}`);
}

describe('pre-receive: content and the ledger', () => {
  let server: string;
  let work: string;
  beforeAll(() => {
    ({ server, work } = adoptedPair('ledger'));
  });
  afterEach(() => realign(work));

  it('refuses a --no-verify commit of an unpromoted file; attested and pushed atomically with the ledger, it is accepted', () => {
    stageFile(work, 'src/skipped.ts', 'export const skipped = 1;\n');
    expect(commit(story, work, 'skip the hook', ['--no-verify']).code).toBe(0);
    const before = refTip(story, server, 'main');

    const refused = gitRun(story, work, ['push', 'origin', 'main']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(refusedLine('refs/heads/main', 'src/skipped.ts', 'no verdict'));
    expect(refused.stderr).toContain('main -> main (pre-receive hook declined)');
    expect(refTip(story, server, 'main')).toBe(before);

    cliOk(story, work, ['attest', '--approve', 'src/skipped.ts', '--yes']);
    const accepted = gitRun(story, work, ATOMIC);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(refTip(story, server, 'main')).toBe(refTip(story, work, 'HEAD'));
    expect(refTip(story, server, LEDGER)).toBe(refTip(story, work, LEDGER));
  });

  it('refuses a file whose name holds a line break, naming it C-quoted on one line; attested, it is accepted', () => {
    const name = 'src/odd\u2028name\n.ts';
    stageFile(work, name, 'export const odd = 1;\n');
    expect(commit(story, work, 'an odd name, hook skipped', ['--no-verify']).code).toBe(0);
    const refused = gitRun(story, work, ['push', 'origin', 'main']);
    expect(refused.code).not.toBe(0);
    // U+2028 ends a line in some viewers: quoted too, by its UTF-8 bytes as git quotes them.
    expect(refused.stderr).toMatch(
      refusedLine('refs/heads/main', '"src/odd\\342\\200\\250name\\n.ts"', 'no verdict'),
    );

    cliOk(story, work, ['attest', '--approve', name, '--yes']);
    const accepted = gitRun(story, work, ATOMIC);
    expect(accepted.code, accepted.stderr).toBe(0);
  });

  it('refuses the branch pushed without the notes that promote it; the same branch with its notes is accepted', () => {
    stageFile(work, 'src/late.ts', 'export const late = 1;\n');
    cliOk(story, work, ['attest', '--approve', 'src/late.ts', '--yes']);
    expect(commit(story, work, 'promoted locally').code).toBe(0);

    const refused = gitRun(story, work, ['push', 'origin', 'main']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(refusedLine('refs/heads/main', 'src/late.ts', 'no verdict'));
    expect(refused.stderr).toContain('git push --atomic <remote> <branch> refs/notes/delegations');
    // The likely cause first: the push carried no ledger.
    expect(refused.stderr).toContain(
      'delegate-git: push refused. This push brings no change to refs/notes/delegations',
    );

    const accepted = gitRun(story, work, ATOMIC);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(refTip(story, server, 'main')).toBe(refTip(story, work, 'HEAD'));
  });

  it('refuses deleting the ledger; an append to it is accepted', () => {
    const tip = refTip(story, server, LEDGER);
    const refused = gitRun(story, work, ['push', 'origin', `:${LEDGER}`]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      'refused refs/notes/delegations: the ledger cannot be deleted (it is append-only)',
    );
    expect(refTip(story, server, LEDGER)).toBe(tip);

    writeFiles(work, { 'src/appended.ts': 'export const appended = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/appended.ts', '--yes']);
    const accepted = gitRun(story, work, ['push', 'origin', LEDGER]);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(refTip(story, server, LEDGER)).toBe(refTip(story, work, LEDGER));
  });

  it('refuses a force-pushed rewrite of the ledger (git itself would allow it); sync merges and pushes instead', () => {
    // A bare repository does not set receive.denyNonFastForwards: only the hook stands in the way.
    expect(gitRun(story, server, ['config', '--get', 'receive.denyNonFastForwards']).code).toBe(1);
    const serverTip = refTip(story, server, LEDGER)!;
    // Rewritten from scratch: a ledger holding only the new record, none of the server's history.
    gitOk(story, work, ['update-ref', '-d', LEDGER]);
    writeFiles(work, { 'src/rewrite.ts': 'export const rewrite = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/rewrite.ts', '--yes']);
    expect(gitRun(story, work, ['merge-base', '--is-ancestor', serverTip, LEDGER]).code).toBe(1);

    const refused = gitRun(story, work, ['push', '--force', 'origin', LEDGER]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('refused refs/notes/delegations: non-fast-forward update of the ledger');
    expect(refused.stderr).toContain('delegate-git sync');
    expect(refTip(story, server, LEDGER)).toBe(serverTip);

    const synced = cli(story, work, ['sync']);
    expect(synced.code, synced.stderr).toBe(0);
    const merged = refTip(story, server, LEDGER)!;
    expect(gitRun(story, server, ['merge-base', '--is-ancestor', serverTip, merged]).code).toBe(0);
    const blob = gitOk(story, work, ['hash-object', 'src/rewrite.ts']);
    expect(noteLines(story, server, blob)).toHaveLength(1);
  });

  it('refuses a note line with one payload byte changed, naming its blob; the same push without it is accepted', () => {
    const blob = stageFile(work, 'src/forged.ts', 'export const forged = 1;\n');
    cliOk(story, work, ['attest', '--approve', 'src/forged.ts', '--yes']);
    const honest = refTip(story, work, LEDGER)!;
    const [line] = noteLines(story, work, blob);
    gitOk(story, work, [
      'notes',
      '--ref=delegations',
      'append',
      '-m',
      withOnePayloadByteChanged(line!),
      blob,
    ]);
    expect(noteLines(story, work, blob)).toHaveLength(2);
    expect(commit(story, work, 'forged record beside the real one').code).toBe(0);

    expect(refusedThenHonestAccepted(blob, honest)).toContain('main -> main (pre-receive hook declined)');
  });

  it('walks 300 new tags on a commit held already in one git process, not one each (rt41 f05); a new tag bringing an unpromoted commit is still refused', () => {
    const held = gitOk(story, work, ['rev-parse', 'origin/main']);
    const tags = Array.from({ length: 300 }, (_, i) => `${held}:refs/tags/release-${i}`);
    stageFile(work, 'src/tagged.ts', 'export const tagged = 1;\n');
    expect(commit(story, work, 'unpromoted, hook skipped', ['--no-verify']).code).toBe(0);
    const mixed = gitRun(story, work, ['push', 'origin', ...tags, 'HEAD:refs/tags/unpromoted']);
    expect(mixed.code).not.toBe(0);
    expect(mixed.stderr).toMatch(refusedLine('refs/tags/unpromoted', 'src/tagged.ts', 'no verdict'));
    expect(mixed.stderr).not.toContain('refused refs/tags/release-');

    const trace = path.join(story.root, 'tags.trace');
    const accepted = gitRun(story, work, ['push', 'origin', ...tags], { ...story.env, GIT_TRACE: trace });
    expect(accepted.code, accepted.stderr).toBe(0);
    const walks = fs
      .readFileSync(trace, 'utf8')
      .split('\n')
      .filter(
        (line) => /trace: (?:built-in|exec): git (?:log|rev-list)\b/.test(line) && line.includes('--all'),
      );
    expect(walks.length).toBeGreaterThan(0); // control: the trace sees the hook's git
    expect(walks.length).toBeLessThanOrEqual(3);
  });

  it('refuses a note of 150,000 lines in a few lines of output, without a stack (rt41 f02); the same push without it is accepted', () => {
    const blob = stageFile(work, 'src/many.ts', 'export const many = 1;\n');
    cliOk(story, work, ['attest', '--approve', 'src/many.ts', '--yes']);
    const honest = refTip(story, work, LEDGER)!;
    const junk = Array.from({ length: 150_000 }, (_, i) => `not a record ${i}`).join('\n');
    const note = path.join(story.root, 'many-lines.txt');
    fs.writeFileSync(note, `${junk}\n`);
    gitOk(story, work, ['notes', '--ref=delegations', 'append', '-F', note, blob]);
    expect(commit(story, work, 'a note of many lines').code).toBe(0);

    const stderr = refusedThenHonestAccepted(blob, honest);
    expect(stderr).not.toMatch(/RangeError|unexpected error| {4}at /);
    expect(stderr).toMatch(/and 14980\d more refusal\(s\) like these, not shown/);
    expect(stderr.split('\n').length).toBeLessThan(260);
  });

  it('refuses a copy of a signed record made without a key (its signature entry repeated), as verify does; the original alone is accepted', () => {
    const blob = stageFile(work, 'src/copied.ts', 'export const copied = 1;\n');
    cliOk(story, work, ['attest', '--approve', 'src/copied.ts', '--yes']);
    const honest = refTip(story, work, LEDGER)!;
    const [line] = noteLines(story, work, blob);
    const entry = /"signatures":\[(\{[^\]]+\})\]/.exec(line!)![1]!;
    const padded = line!.replace(/\]\}$/, `,${entry}]}`);
    gitOk(story, work, ['notes', '--ref=delegations', 'append', '-m', padded, blob]);
    expect(noteLines(story, work, blob)).toHaveLength(2);
    expect(commit(story, work, 'a record and its copy').code).toBe(0);

    const verified = cli(story, work, ['verify', '--json']);
    const invalid = (JSON.parse(verified.stdout) as { invalid: Array<{ blob: string; reason: string }> })
      .invalid;
    expect(invalid).toEqual([
      expect.objectContaining({ blob, reason: expect.stringContaining('2 signatures') }),
    ]);
    expect(refusedThenHonestAccepted(blob, honest)).toContain('2 signatures');
  });

  /**
   * The atomic push of the branch and the ledger is refused for a line on `blob`; with the ledger put back at `honest`
   * (control) it is accepted. The refused push's stderr.
   */
  function refusedThenHonestAccepted(blob: string, honest: string): string {
    const refused = gitRun(story, work, ATOMIC);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`refused refs/notes/delegations: note on blob ${blob.slice(0, 12)}:`);
    // sync keeps every line, so it is not what the pusher is told: the ledger put back without the line is.
    expect(refused.stderr).toContain("rebuild it on the server's");
    expect(refused.stderr).not.toContain('to catch up with the server');
    gitOk(story, work, ['update-ref', LEDGER, honest]);
    const accepted = gitRun(story, work, ATOMIC);
    expect(accepted.code, accepted.stderr).toBe(0);
    return refused.stderr;
  }

  it('refuses a fast-forward ledger update that drops a line; the ledger on the server keeps it', () => {
    const blob = stageFile(work, 'src/dropped.ts', 'export const dropped = 1;\n');
    cliOk(story, work, ['attest', '--approve', 'src/dropped.ts', '--yes']);
    expect(commit(story, work, 'promoted').code).toBe(0);
    expect(gitRun(story, work, ATOMIC).code).toBe(0);
    const serverTip = refTip(story, server, LEDGER)!;

    gitOk(story, work, ['notes', '--ref=delegations', 'remove', blob]);
    expect(gitRun(story, work, ['merge-base', '--is-ancestor', serverTip, LEDGER]).code).toBe(0);
    const refused = gitRun(story, work, ['push', 'origin', LEDGER]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`drops 1 record line(s) on blob(s) ${blob.slice(0, 12)}`);
    expect(refTip(story, server, LEDGER)).toBe(serverTip);
    expect(noteLines(story, server, blob)).toHaveLength(1);
  });

  it('refuses a ledger merge dropping a line its other parent added, which verify would find in the history for good (rt44 f01); a line dropped and put back, and the plain append, are accepted', () => {
    const tip = refTip(story, work, LEDGER)!;
    const treeOf = (rev: string) => gitOk(story, work, ['ls-tree', rev]).split('\n').filter(Boolean);
    // A side commit adds a junk line to a new note; the merge keeps the tip's tree, so the tips differ in nothing.
    fs.writeFileSync(path.join(work, '.git', 'junk'), 'not a record\n');
    const junk = gitOk(story, work, ['hash-object', '-w', '.git/junk']);
    const side = gitOk(story, work, [
      'commit-tree',
      mktree(story, work, [...treeOf(tip), `100644 blob ${junk}\t${'ab'.repeat(20)}`]),
      '-p',
      tip,
      '-m',
      'side',
    ]);
    const merge = gitOk(story, work, ['commit-tree', `${tip}^{tree}`, '-p', tip, '-p', side, '-m', 'merge']);
    const merged = gitRun(story, work, ['push', 'origin', `${merge}:${LEDGER}`]);
    expect(merged.code).not.toBe(0);
    expect(merged.stderr).toContain(
      `notes commit(s) ${merge.slice(0, 12)} drop 1 line(s) their parents hold`,
    );
    expect(refTip(story, server, LEDGER)).toBe(tip);

    // A note removed by one commit and put back by the next lost nothing.
    const note = treeOf(tip)[0]!;
    const removed = gitOk(story, work, [
      'commit-tree',
      mktree(
        story,
        work,
        treeOf(tip).filter((e) => e !== note),
      ),
      '-p',
      tip,
      '-m',
      'drop',
    ]);
    const restored = gitOk(story, work, ['commit-tree', `${tip}^{tree}`, '-p', removed, '-m', 'restore']);
    const chain = gitRun(story, work, ['push', 'origin', `${restored}:${LEDGER}`]);
    expect(chain.code, chain.stderr).toBe(0);
    gitOk(story, work, ['update-ref', LEDGER, restored]);

    stageFile(work, 'src/appended.ts', 'export const appended = 1;\n');
    cliOk(story, work, ['attest', '--approve', 'src/appended.ts', '--yes']);
    expect(commit(story, work, 'promoted').code).toBe(0);
    const accepted = gitRun(story, work, ATOMIC);
    expect(accepted.code, accepted.stderr).toBe(0);
  });

  it('stops checking a refused push after 100 refused lines and says how many it left (rt44 f02); under that, each line is refused by name', () => {
    const tip = refTip(story, work, LEDGER)!;
    const tree = gitOk(story, work, ['ls-tree', tip]).split('\n').filter(Boolean);
    fs.writeFileSync(path.join(work, '.git', 'junk'), 'not a record\n');
    const junk = gitOk(story, work, ['hash-object', '-w', '.git/junk']);
    const junkNotes = (count: number, from: number) => {
      const entries = Array.from(
        { length: count },
        (_, i) => `100644 blob ${junk}\t${(from + i).toString(16).padStart(40, 'f')}`,
      );
      return gitOk(story, work, [
        'commit-tree',
        mktree(story, work, [...tree, ...entries]),
        '-p',
        tip,
        '-m',
        'junk',
      ]);
    };
    const refusedLines = (stderr: string) =>
      stderr.split('\n').filter((l) => l.includes('refused refs/notes/delegations: note on blob')).length;

    const few = gitRun(story, work, ['push', 'origin', `${junkNotes(30, 0)}:${LEDGER}`]);
    expect(few.code).not.toBe(0);
    expect(refusedLines(few.stderr)).toBe(30);
    expect(few.stderr).not.toContain('not checked');

    const many = gitRun(story, work, ['push', 'origin', `${junkNotes(400, 1000)}:${LEDGER}`]);
    expect(many.code).not.toBe(0);
    const refused = refusedLines(many.stderr);
    // Notes are checked 64 at a time: those started before the count reached 100 finish.
    expect(refused).toBeGreaterThanOrEqual(100);
    expect(refused).toBeLessThan(100 + 64);
    expect(many.stderr).toContain(
      `${400 - refused} more new line(s) not checked: the push is refused for the lines above already`,
    );
    expect(refTip(story, server, LEDGER)).toBe(tip);
  });

  it('refuses a ledger update whose history brings a commit of content (a second parent, or in the chain); control: the plain append', () => {
    const content = looseCommit(story, work, 'src/hidden.ts', 'export const hidden = 1;\n');
    const ledger = refTip(story, work, LEDGER)!;
    stageFile(work, 'src/approved.ts', 'export const approved = 1;\n');
    cliOk(story, work, ['attest', '--approve', 'src/approved.ts', '--yes']);
    const appended = refTip(story, work, LEDGER)!;
    const notes = gitOk(story, work, ['rev-parse', `${appended}^{tree}`]);
    const merged = commitOf(story, work, notes, [ledger, content]);
    const contentTree = gitOk(story, work, ['rev-parse', `${content}^{tree}`]);
    const chained = commitOf(story, work, notes, [commitOf(story, work, contentTree, [ledger])]);
    // The server's own main as a parent: its commits hold content too, and a ledger that brings them is no ledger.
    const onMain = commitOf(story, work, notes, [ledger, refTip(story, server, 'refs/heads/main')!]);
    // The merge with its second parent spelled in upper case, which git reads as the same parent (rt56 f03).
    const raw = gitOk(story, work, ['cat-file', 'commit', merged]);
    const upper = spawnSync('git', ['hash-object', '-t', 'commit', '-w', '--stdin'], {
      cwd: work,
      env: story.env,
      input: `${raw.replace(`parent ${content}`, `parent ${content.toUpperCase()}`)}\n`,
    })
      .stdout.toString()
      .trim();
    expect(gitOk(story, work, ['rev-list', '--parents', '-n1', upper])).toBe(`${upper} ${ledger} ${content}`);
    for (const tip of [merged, chained, onMain, upper]) {
      const refused = gitRun(story, work, ['push', 'origin', `${tip}:${LEDGER}`]);
      expect(refused.code).not.toBe(0);
      // The content commit's files, whichever the walk meets first.
      expect(refused.stderr).toMatch(
        /refused refs\/notes\/delegations: the update adds (src|\.delegate-git)\b/,
      );
      expect(refTip(story, server, LEDGER)).toBe(ledger);
    }
    const accepted = gitRun(story, work, ['push', 'origin', `${appended}:${LEDGER}`]);
    expect(accepted.code, accepted.stderr).toBe(0);
  });

  it('refuses a push through a symbolic ref that leads to the ledger, and a name git reads as the ledger; control: by its name', () => {
    const ledger = refTip(story, work, LEDGER)!;
    const tree = gitOk(story, work, ['rev-parse', `${ledger}^{tree}`]);
    const first = gitOk(story, work, ['ls-tree', tree]).split('\n')[0]!.split('\t')[1]!;
    const kept = gitOk(story, work, ['ls-tree', tree])
      .split('\n')
      .filter((line) => !line.endsWith(`\t${first}`));
    const dropping = gitOk(story, work, [
      'commit-tree',
      mktree(story, work, kept),
      '-p',
      ledger,
      '-m',
      'drop a note',
    ]);
    gitOk(story, server, ['symbolic-ref', 'refs/notes/alias', LEDGER]);
    const aliased = gitRun(story, work, ['push', 'origin', `${dropping}:refs/notes/alias`]);
    expect(aliased.code).not.toBe(0);
    expect(aliased.stderr).toContain(
      'refused refs/notes/alias: a symbolic ref here that leads where refs/notes/delegations does',
    );
    expect(refTip(story, server, LEDGER)).toBe(ledger);
    gitOk(story, server, ['symbolic-ref', '--delete', 'refs/notes/alias']);

    // The other way round: the ledger a symbolic ref to another ref, which a push by that name would move.
    gitOk(story, server, ['update-ref', 'refs/notes/real', ledger]);
    gitOk(story, server, ['symbolic-ref', LEDGER, 'refs/notes/real']);
    const behind = gitRun(story, work, ['push', '-f', 'origin', `${dropping}:refs/notes/real`]);
    expect(behind.code).not.toBe(0);
    expect(behind.stderr).toContain(
      'refused refs/notes/real: refs/notes/delegations is a symbolic ref to this one',
    );
    expect(refTip(story, server, 'refs/notes/real')).toBe(ledger);
    // A link in the middle of the ledger's chain, and an alias of the ledger, lead where it does: moved or deleted,
    // they would move or delete the ledger.
    gitOk(story, server, ['symbolic-ref', 'refs/notes/middle', 'refs/notes/real']);
    gitOk(story, server, ['symbolic-ref', LEDGER, 'refs/notes/middle']);
    gitOk(story, server, ['symbolic-ref', 'refs/notes/alias', LEDGER]);
    for (const [ref, pushed] of [
      ['refs/notes/middle', `${dropping}:refs/notes/middle`],
      ['refs/notes/alias', `${dropping}:refs/notes/alias`],
      ['refs/notes/alias', ':refs/notes/alias'],
    ] as const) {
      const through = gitRun(story, work, ['push', '-f', 'origin', pushed]);
      expect(through.code, pushed).not.toBe(0);
      expect(through.stderr).toContain(`refused ${ref}: a symbolic ref here that leads where ${LEDGER} does`);
      expect(refTip(story, server, 'refs/notes/real')).toBe(ledger);
    }
    gitOk(story, server, ['symbolic-ref', '--delete', 'refs/notes/alias']);
    // The ledger leading to a ref that does not exist yet: creating that ref creates the ledger.
    gitOk(story, server, ['symbolic-ref', LEDGER, 'refs/notes/unborn']);
    const unborn = gitRun(story, work, ['push', 'origin', `${dropping}:refs/notes/unborn`]);
    expect(unborn.code).not.toBe(0);
    expect(unborn.stderr).toContain(
      'refused refs/notes/unborn: refs/notes/delegations is a symbolic ref to this one',
    );
    // And an alias of that end, as dangling as it is.
    gitOk(story, server, ['symbolic-ref', 'refs/notes/alias', 'refs/notes/unborn']);
    const dangling = gitRun(story, work, ['push', 'origin', `${dropping}:refs/notes/alias`]);
    expect(dangling.code).not.toBe(0);
    expect(dangling.stderr).toContain(
      `refused refs/notes/alias: a symbolic ref here that leads where ${LEDGER} does`,
    );
    gitOk(story, server, ['symbolic-ref', '--delete', 'refs/notes/alias']);
    gitOk(story, server, ['update-ref', '--no-deref', LEDGER, ledger]);
    gitOk(story, server, ['symbolic-ref', '--delete', 'refs/notes/middle']);
    gitOk(story, server, ['update-ref', '-d', 'refs/notes/real']);

    for (const shadow of ['refs/tags/refs/notes/delegations', 'refs/heads/refs/notes/delegations']) {
      const shadowed = gitRun(story, work, ['push', 'origin', `${ledger}:${shadow}`]);
      expect(shadowed.code, shadow).not.toBe(0);
      expect(shadowed.stderr).toContain(`refused ${shadow}: git reads this name as refs/notes/delegations`);
      expect(refTip(story, server, shadow)).toBeNull();
    }
    // Control: a tag of the same notes commit under another name is content like any tag, and holds only notes.
    expect(gitRun(story, work, ['push', 'origin', `${ledger}:refs/tags/ledger-snapshot`]).code).toBe(0);
  });

  it('refuses a ledger update to a tag of a notes commit (every reader takes it as damage); the commit itself is accepted', () => {
    stageFile(work, 'src/tagged.ts', 'export const tagged = 1;\n');
    cliOk(story, work, ['attest', '--approve', 'src/tagged.ts', '--yes']);
    const notes = refTip(story, work, LEDGER)!;
    const serverTip = refTip(story, server, LEDGER);
    const refused = gitRun(story, work, ['push', 'origin', `${tagOf(story, work, notes)}:${LEDGER}`]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      'refused refs/notes/delegations: the ledger must name a notes commit, not a tag',
    );
    expect(refTip(story, server, LEDGER)).toBe(serverTip);

    const accepted = gitRun(story, work, ['push', 'origin', LEDGER]);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(refTip(story, server, LEDGER)).toBe(notes);
  });
});

describe('pre-receive: the ledger holds only notes', () => {
  let server: string;
  let work: string;
  beforeAll(() => {
    ({ server, work } = adoptedPair('only-notes'));
  });
  afterEach(() => realign(work));

  const refusal = (shown: string, why: string) =>
    `refused refs/notes/delegations: the update adds ${shown}, which is ${why}; the ledger holds only notes`;
  const NO_ID = 'not a note on a full object id';

  /** A new record in the clone's ledger (nothing committed): the honest update each refused one is paired with. */
  function honestUpdate(file: string): string {
    writeFiles(work, { [file]: `export const x = ${JSON.stringify(file)};\n` });
    cliOk(story, work, ['attest', '--approve', file, '--yes']);
    return refTip(story, work, LEDGER)!;
  }

  /** Pushes the ledger at `junk` (refused, the server's ledger unchanged), then at `honest` (accepted). */
  function refusedThenAccepted(junk: string, honest: string): string {
    const before = refTip(story, server, LEDGER);
    gitOk(story, work, ['update-ref', LEDGER, junk]);
    const refused = gitRun(story, work, ['push', 'origin', LEDGER]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('refs/notes/delegations (pre-receive hook declined)');
    expect(refTip(story, server, LEDGER)).toBe(before);

    gitOk(story, work, ['update-ref', LEDGER, honest]);
    const accepted = gitRun(story, work, ['push', 'origin', LEDGER]);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(refTip(story, server, LEDGER)).toBe(honest);
    return refused.stderr;
  }

  it('refuses files named by no id, one line each (ten, then a count); the same update without them is accepted', () => {
    const honest = honestUpdate('src/files.ts');
    const junk = stageBlob('junk\n');
    // Git's order names the first ten: README, the C-quoted name, and junk-0 to junk-7.
    const names = ['README', 'NEWS\nfake line', ...Array.from({ length: 10 }, (_, i) => `junk-${i}`)];
    const stderr = refusedThenAccepted(
      ledgerCommitWith(
        story,
        work,
        names.map((n) => `100644 blob ${junk}\t${n}`),
      ),
      honest,
    );
    expect(stderr).toContain(refusal('README', NO_ID));
    expect(stderr).toContain(refusal('"NEWS\\nfake line"', NO_ID));
    expect(stderr).toContain(refusal('junk-7', NO_ID));
    expect(stderr).not.toContain('junk-8');
    expect(stderr.split('\n').filter((l) => l.includes('the ledger holds only notes'))).toHaveLength(10);
    expect(stderr).toContain(
      'refused refs/notes/delegations: the update adds 2 more entries that are not notes',
    );
  });

  it('refuses a directory of no fanout (named once, empty or not) and a file in a fanout directory; without them, accepted', () => {
    const honest = honestUpdate('src/dirs.ts');
    const junk = stageBlob('junk\n');
    const holding = mktree(story, work, [`100644 blob ${junk}\tfoo`]);
    const empty = mktree(story, work, []);
    const stderr = refusedThenAccepted(
      ledgerCommitWith(story, work, [
        `040000 tree ${holding}\tzz`,
        `040000 tree ${empty}\tempty`,
        `040000 tree ${holding}\tab`,
      ]),
      honest,
    );
    expect(stderr).toContain(refusal('zz', NO_ID));
    expect(stderr).toContain(refusal('empty', NO_ID));
    expect(stderr).toContain(refusal('ab/foo', NO_ID));
    expect(stderr).not.toContain('zz/foo');
  });

  it('refuses a submodule, an executable file and a link where a note would be; the same update without them is accepted', () => {
    const honest = honestUpdate('src/modes.ts');
    const [a, b, c] = ['a\n', 'b\n', 'c\n'].map((content) => stageBlob(content)) as [string, string, string];
    const stderr = refusedThenAccepted(
      ledgerCommitWith(story, work, [
        `160000 commit ${refTip(story, work, 'HEAD')}\t${a}`,
        `100755 blob ${stageBlob('a record line\n')}\t${b}`,
        `120000 blob ${stageBlob('a link target\n')}\t${c}`,
      ]),
      honest,
    );
    expect(stderr).toContain(refusal(a, 'a submodule (mode 160000), not a note file (mode 100644)'));
    expect(stderr).toContain(refusal(b, 'an executable file (mode 100755), not a note file (mode 100644)'));
    expect(stderr).toContain(refusal(c, 'a symbolic link (mode 120000), not a note file (mode 100644)'));
  });

  it('reads a note stored under an old mode (100664) as git does: a fanned copy holding only the approval hides no rejection; an approved file stored so is accepted', () => {
    const rejected = 'src/old-mode-rejected.ts';
    const approved = 'src/old-mode-approved.ts';
    writeFiles(work, { [rejected]: 'export const x = "no";\n', [approved]: 'export const y = "yes";\n' });
    cliOk(story, work, ['attest', '--approve', rejected, approved, '--yes']);
    cliOk(story, work, ['attest', '--reject', rejected, '--yes', '-m', 'wrong']);
    expect(gitRun(story, work, ['push', 'origin', LEDGER]).code).toBe(0);
    const ids = [rejected, approved].map((f) => gitOk(story, work, ['hash-object', f]));
    // Each note, flat at the top of the ledger's tree, stored as 100664 (git shows and reads it as 100644, and its diff
    // shows no change), with a fanned-out copy beside it holding only the approval.
    const tip = refTip(story, work, LEDGER)!;
    const listed = gitOk(story, work, ['ls-tree', '-z', tip]).split('\0').filter(Boolean);
    const approvalOf = (id: string) =>
      noteLines(story, work, id).find((line) => statementOf(line).predicate.decision === 'approve')!;
    const tree = mktree(story, work, [
      ...listed.map((entry) =>
        ids.some((id) => entry.endsWith(`\t${id}`)) ? entry.replace(/^100644/, '100664') : entry,
      ),
      ...ids.map((id) => {
        const copy = mktree(story, work, [`100644 blob ${stageBlob(`${approvalOf(id)}\n`)}\t${id.slice(2)}`]);
        return `040000 tree ${copy}\t${id.slice(0, 2)}`;
      }),
    ]);
    const crafted = gitOk(story, work, ['commit-tree', tree, '-p', tip, '-m', 'Notes added by git notes']);
    expect(gitOk(story, work, ['diff-tree', '-r', '--name-only', tip, crafted]).split('\n')).toHaveLength(2);
    gitOk(story, work, ['update-ref', LEDGER, crafted]);
    gitOk(story, work, ['add', '--', rejected, approved]);
    gitOk(story, work, ['commit', '-q', '--no-verify', '-m', 'both files']);

    const refused = gitRun(story, work, ATOMIC);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(refusedLine('refs/heads/main', rejected, 'rejected by'));
    expect(refused.stderr).not.toContain(approved);
    expect(refTip(story, server, 'refs/heads/main')).not.toBe(refTip(story, work, 'HEAD'));

    // Control: the approved file alone, with the same crafted ledger, is accepted.
    gitOk(story, work, ['rm', '-q', '--cached', rejected]);
    gitOk(story, work, ['commit', '-q', '--amend', '--no-verify', '-m', 'the approved file']);
    const accepted = gitRun(story, work, ATOMIC);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(refTip(story, server, LEDGER)).toBe(crafted);
  });

  it('refuses the first push of a ledger that holds a file besides its notes; without it, the first push is accepted', () => {
    const firstServer = makeServer(story, 'first-junk.git');
    const first = cloneInto(story, firstServer, 'first-junk');
    adopt(story, first, ['src/**']);
    const honest = refTip(story, first, LEDGER)!;
    const junk = stageBlob('junk\n', first);
    gitOk(story, first, [
      'update-ref',
      LEDGER,
      ledgerCommitWith(story, first, [`100644 blob ${junk}\tREADME`]),
    ]);

    const refused = gitRun(story, first, ATOMIC);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(refusal('README', NO_ID));
    expect(refTip(story, firstServer, LEDGER)).toBeNull();
    expect(refTip(story, firstServer, 'refs/heads/main')).toBeNull();

    gitOk(story, first, ['update-ref', LEDGER, honest]);
    const accepted = gitRun(story, first, ATOMIC);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(refTip(story, firstServer, LEDGER)).toBe(honest);
  });

  it('refuses a ledger pushed alone to a server with no policy yet, saying to push it with the adopting commit; that push is accepted', () => {
    const server = makeServer(story, 'ledger-first.git');
    const first = cloneInto(story, server, 'ledger-first');
    adopt(story, first, ['src/**']);
    const alone = gitRun(story, first, ['push', 'origin', LEDGER]);
    expect(alone.code).not.toBe(0);
    expect(alone.stderr).toContain(
      'push the adopting commit and the ledger together (`git push --atomic <remote> <branch> refs/notes/delegations`',
    );
    const together = gitRun(story, first, ATOMIC);
    expect(together.code, together.stderr).toBe(0);
  });

  /** Writes `content` as a blob in `dir` (default: the clone) and returns its id. */
  function stageBlob(content: string, dir = work): string {
    const file = 'blob-input';
    fs.writeFileSync(path.join(dir, '.git', file), content);
    return gitOk(story, dir, ['hash-object', '-w', path.join('.git', file)]);
  }
});

describe('pre-receive: the policy in force judges', () => {
  let server: string;
  let work: string;
  beforeAll(() => {
    ({ server, work } = adoptedPair('policy'));
  });
  afterEach(() => realign(work));

  function weakenPolicyWithUnpromotedFile(file: string): void {
    const policyFile = path.join(work, POLICY);
    const policy = JSON.parse(fs.readFileSync(policyFile, 'utf8')) as { protect: string[] };
    policy.protect = [];
    fs.writeFileSync(policyFile, `${JSON.stringify(policy, null, 2)}\n`);
    stageFile(work, file, 'export const unverified = 1;\n');
    gitOk(story, work, ['add', POLICY]);
    expect(commit(story, work, 'stop protecting src, add a file', ['--no-verify']).code).toBe(0);
  }

  it('judges a new branch by the default branch policy; a promoted new branch is accepted', () => {
    gitOk(story, work, ['checkout', '-q', '-b', 'feature']);
    weakenPolicyWithUnpromotedFile('src/feature.ts');
    const refused = gitRun(story, work, ['push', '--atomic', 'origin', 'feature', LEDGER]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(refusedLine('refs/heads/feature', POLICY, ''));
    expect(refused.stderr).toMatch(refusedLine('refs/heads/feature', 'src/feature.ts', 'no verdict'));
    expect(gitRun(story, server, ['rev-parse', '--verify', '-q', 'refs/heads/feature']).code).not.toBe(0);

    gitOk(story, work, ['checkout', '-q', '-B', 'feature-ok', 'origin/main']);
    stageFile(work, 'src/ok.ts', 'export const ok = 1;\n');
    cliOk(story, work, ['attest', '--approve', 'src/ok.ts', '--yes']);
    expect(commit(story, work, 'promoted').code).toBe(0);
    const accepted = gitRun(story, work, ['push', '--atomic', 'origin', 'feature-ok', LEDGER]);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(refTip(story, server, 'refs/heads/feature-ok')).toBe(refTip(story, work, 'HEAD'));
  });

  it('judges a push that weakens the policy by the old policy: the policy edit and the unpromoted file are both refused', () => {
    weakenPolicyWithUnpromotedFile('src/sneaky.ts');
    const refused = gitRun(story, work, ATOMIC);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      refusedLine('refs/heads/main', POLICY, 'approved by alice for another version'),
    );
    expect(refused.stderr).toMatch(refusedLine('refs/heads/main', 'src/sneaky.ts', 'no verdict'));

    // Control: the same weakening approved by the reviewer in force, without the unpromoted file, is accepted.
    realign(work);
    const policyFile = path.join(work, POLICY);
    const policy = JSON.parse(fs.readFileSync(policyFile, 'utf8')) as { protect: string[] };
    policy.protect = [];
    fs.writeFileSync(policyFile, `${JSON.stringify(policy, null, 2)}\n`);
    cliOk(story, work, ['attest', '--approve', POLICY, '--yes']);
    gitOk(story, work, ['add', POLICY]);
    expect(commit(story, work, 'stop protecting src, approved').code).toBe(0);
    const accepted = gitRun(story, work, ATOMIC);
    expect(accepted.code, accepted.stderr).toBe(0);
  });
});

describe('pre-receive: a ref cannot choose the policy that judges another', () => {
  it('judges what the default branch receives by its own policy, though a ref moved on under an older one holds it', () => {
    const { work } = adoptedPair('policy-shopping');
    const older = refTip(story, work, 'HEAD')!;
    // The reviewer tightens the policy: lib/** is protected too.
    const policyFile = path.join(work, POLICY);
    const policy = JSON.parse(fs.readFileSync(policyFile, 'utf8')) as { protect: string[] };
    policy.protect.push('lib/**');
    fs.writeFileSync(policyFile, `${JSON.stringify(policy, null, 2)}\n`);
    cliOk(story, work, ['attest', '--approve', POLICY, '--yes']);
    gitOk(story, work, ['add', POLICY]);
    expect(commit(story, work, 'protect lib too').code).toBe(0);
    expect(gitRun(story, work, ATOMIC).code).toBe(0);

    // A pusher makes a ref at the older commit (nothing new: accepted). Moved on with the tightened policy and lib
    // content, it is refused: content a push brings with a rules change is judged by the pushed rules too (rt48 f04).
    expect(gitRun(story, work, ['push', 'origin', `${older}:refs/heads/anchor`]).code).toBe(0);
    stageFile(work, 'lib/x.ts', 'export const x = 1;\n');
    expect(commit(story, work, 'lib, hook skipped', ['--no-verify']).code).toBe(0);
    const withRules = gitRun(story, work, ['push', 'origin', 'HEAD:refs/heads/anchor']);
    expect(withRules.code).not.toBe(0);
    expect(withRules.stderr).toMatch(refusedLine('refs/heads/anchor', 'lib/x.ts', 'no verdict'));
    expect(withRules.stderr).toContain('(under the rules this push brings)');
    // Moved on under its own looser policy alone (lib ungoverned there), it is accepted, and then merged into main.
    const lib = refTip(story, work, 'HEAD')!;
    gitOk(story, work, ['reset', '-q', '--hard', 'HEAD~1']);
    gitOk(story, work, ['checkout', '-q', '-b', 'anchor', older]);
    gitOk(story, work, ['checkout', '-q', lib, '--', 'lib/x.ts']);
    expect(commit(story, work, 'lib under the older policy', ['--no-verify']).code).toBe(0);
    const moved = gitRun(story, work, ['push', 'origin', 'HEAD:refs/heads/anchor']);
    expect(moved.code, moved.stderr).toBe(0);
    gitOk(story, work, ['checkout', '-q', 'main']);
    gitOk(story, work, ['merge', '-q', '--no-verify', '--no-edit', 'anchor']);

    const refused = gitRun(story, work, ['push', 'origin', 'main']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(refusedLine('refs/heads/main', 'lib/x.ts', 'no verdict'));
    // Control: promoted, the same commit goes to the default branch.
    cliOk(story, work, ['attest', '--approve', 'lib/x.ts', '--yes']);
    const accepted = gitRun(story, work, ATOMIC);
    expect(accepted.code, accepted.stderr).toBe(0);
  });
});

describe('pre-receive: a push moving many branches at once', () => {
  it('judges each branch by its own commits (walked together): a commit another branch held is still judged where it moves; the branches without refusals land alone', () => {
    const { server, work } = adoptedPair('many-branches');
    const branches = ['fwd', 'unpromoted', 'onto', 'held', 'back'];
    for (const b of branches) {
      gitOk(story, work, ['checkout', '-q', '-b', b, 'main']);
      stageFile(work, `src/${b}.ts`, `export const ${b} = 1;\n`);
      cliOk(story, work, ['attest', '--approve', `src/${b}.ts`, '--yes']);
      expect(commit(story, work, `${b}: promoted`).code).toBe(0);
    }
    const first = gitRun(story, work, ['push', '--atomic', 'origin', ...branches, LEDGER]);
    expect(first.code, first.stderr).toBe(0);
    // Since it landed, a reviewer rejects what 'held' holds: the branch itself is not judged again, but a branch
    // moved onto its commit brings that content anew.
    gitOk(story, work, ['checkout', '-q', 'held']);
    cliOk(story, work, ['attest', '--reject', 'src/held.ts', '-m', 'not this', '--yes']);

    gitOk(story, work, ['checkout', '-q', 'fwd']);
    stageFile(work, 'src/fwd.ts', 'export const fwd = 2;\n');
    cliOk(story, work, ['attest', '--approve', 'src/fwd.ts', '--yes']);
    expect(commit(story, work, 'fwd: promoted again').code).toBe(0);
    gitOk(story, work, ['checkout', '-q', 'unpromoted']);
    stageFile(work, 'src/unpromoted.ts', 'export const unpromoted = 2;\n');
    expect(commit(story, work, 'unpromoted: hook skipped', ['--no-verify']).code).toBe(0);
    gitOk(story, work, ['checkout', '-q', 'onto']);
    gitOk(story, work, ['reset', '-q', '--hard', 'held']);
    gitOk(story, work, ['checkout', '-q', 'back']);
    gitOk(story, work, ['reset', '-q', '--hard', 'main']);

    const all = ['+fwd', '+unpromoted', '+onto', '+back'];
    const before = branches.map((b) => refTip(story, server, b));
    const refused = gitRun(story, work, ['push', '--atomic', 'origin', ...all, LEDGER]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      refusedLine('refs/heads/unpromoted', 'src/unpromoted.ts', 'approved by alice for another version'),
    );
    expect(refused.stderr).toMatch(/refused refs\/heads\/onto [0-9a-f]{12} src\/held\.ts: .*reject/);
    expect(refused.stderr).not.toMatch(/refused refs\/heads\/(fwd|back)\b/);
    expect(branches.map((b) => refTip(story, server, b))).toEqual(before);

    // Control: the same push without the two refused branches lands, each branch where it was pushed.
    const accepted = gitRun(story, work, ['push', '--atomic', 'origin', '+fwd', '+back', LEDGER]);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(refTip(story, server, 'fwd')).toBe(refTip(story, work, 'fwd'));
    expect(refTip(story, server, 'back')).toBe(refTip(story, server, 'main'));
    gitOk(story, work, ['checkout', '-q', 'main']);
  });

  it('a submodule and a file of one id, both brought to a branch, are two questions: the submodule is refused whichever git lists first, alone or beside another branch (rt55 f01, f04)', () => {
    const { server, work } = adoptedPair('submodule-or-file');
    gitOk(story, work, ['push', '-q', 'origin', 'main:r', 'main:s']);
    const blob = stageFile(work, 'src/new.ts', 'export const n = 2;\n');
    cliOk(story, work, ['attest', '--approve', 'src/new.ts', '--yes']);
    gitOk(story, work, ['reset', '-q', '--hard']);
    // One date for every commit: which of the two git lists first is then up to the walk.
    const dated = {
      ...story.env,
      GIT_AUTHOR_DATE: '1700000000 +0000',
      GIT_COMMITTER_DATE: '1700000000 +0000',
    };
    gitOk(story, work, ['checkout', '-q', '-b', 'sub', 'main']);
    gitOk(story, work, ['update-index', '--add', '--cacheinfo', `160000,${blob},src/new.ts`]);
    expect(commit(story, work, 'a submodule at src/new.ts', ['--no-verify']).code).toBe(0);
    const sub = gitOk(story, work, ['commit-tree', 'HEAD^{tree}', '-p', 'main', '-m', 'submodule'], dated);
    gitOk(story, work, ['checkout', '-q', '-f', '-b', 'reg', 'main']);
    gitOk(story, work, ['rm', '-q', '--cached', '--ignore-unmatch', 'src/new.ts']);
    stageFile(work, 'src/new.ts', 'export const n = 2;\n');
    const tree = gitOk(story, work, ['write-tree']);
    const reg = gitOk(story, work, ['commit-tree', tree, '-p', 'main', '-m', 'the approved file'], dated);
    const merge = gitOk(
      story,
      work,
      ['commit-tree', `${sub}^{tree}`, '-p', sub, '-p', reg, '-m', 'keeps the submodule'],
      dated,
    );
    gitOk(story, work, ['checkout', '-q', '-f', 'main']);

    const submodule = /refused refs\/heads\/r [0-9a-f]{12} src\/new\.ts: a submodule/;
    const alone = gitRun(story, work, ['push', '--atomic', 'origin', `${merge}:refs/heads/r`, LEDGER]);
    expect(alone.code).not.toBe(0);
    expect(alone.stderr).toMatch(submodule);
    const together = gitRun(story, work, [
      'push',
      '--atomic',
      'origin',
      `${merge}:refs/heads/r`,
      `${reg}:refs/heads/s`,
      LEDGER,
    ]);
    expect(together.code).not.toBe(0);
    expect(together.stderr).toMatch(submodule);
    // Control: the approved file alone lands.
    const file = gitRun(story, work, ['push', '--atomic', 'origin', `${reg}:refs/heads/s`, LEDGER]);
    expect(file.code, file.stderr).toBe(0);
    expect(refTip(story, server, 's')).toBe(reg);
  });
});

describe('pre-receive: history from before the policy', () => {
  it('accepts a new tag on a branch that predates the policy; a commit new to the repository under it is judged', () => {
    const server = makeServer(story, 'legacy.git', { hook: false });
    const work = cloneInto(story, server, 'legacy');
    stageFile(work, 'src/old.ts', 'export const old = 1;\n');
    expect(commit(story, work, 'before delegate-git').code).toBe(0);
    gitOk(story, work, ['push', '-q', 'origin', 'main', 'main:refs/heads/release-1']);
    cliOk(story, server, ['init', '--server']);
    adopt(story, work, ['src/**']);
    // Adopting a repository with history: its branch holds no policy yet, so the adopting one is taken on trust, and
    // every file of the adopting tip is judged by it, as verify judges a revision: src/old.ts was judged by nobody.
    const unapproved = gitRun(story, work, ATOMIC);
    expect(unapproved.code).not.toBe(0);
    expect(unapproved.stderr).toMatch(refusedLine('refs/heads/main', 'src/old.ts', 'no verdict'));
    cliOk(story, work, ['attest', '--approve', 'src/old.ts', '--yes']);
    const adopted = gitRun(story, work, ATOMIC);
    expect(adopted.code, adopted.stderr).toBe(0);
    expect(adopted.stderr).toContain('this push was judged by its own policy (first push)');

    const tagged = gitRun(story, work, ['push', 'origin', 'origin/release-1:refs/tags/v1.0.1']);
    expect(tagged.code, tagged.stderr).toBe(0);
    gitOk(story, work, ['checkout', '-q', '-b', 'fix', 'origin/release-1']);
    stageFile(work, 'src/old.ts', 'export const old = 2;\n');
    expect(commit(story, work, 'a fix, hook skipped', ['--no-verify']).code).toBe(0);
    const refused = gitRun(story, work, ['push', 'origin', 'HEAD:refs/tags/v1.0.2']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(refusedLine('refs/tags/v1.0.2', 'src/old.ts', 'approved by'));
    // The branch itself holds no policy: the default branch's judges what it receives.
    const onBranch = gitRun(story, work, ['push', 'origin', 'HEAD:release-1']);
    expect(onBranch.code).not.toBe(0);
    expect(onBranch.stderr).toMatch(refusedLine('refs/heads/release-1', 'src/old.ts', 'approved by'));
    expect(onBranch.stderr).not.toContain('first push');
  });
});

describe('pre-receive: a first push that brings the history from before the adoption', () => {
  it('judges only what commits holding the policy brought, and every file of the adopting tip: old versions pass, the current one must be promoted', () => {
    const server = makeServer(story, 'late.git');
    const work = cloneInto(story, server, 'late');
    stageFile(work, 'src/a.ts', 'export const a = 1;\n');
    expect(commit(story, work, 'history 1', ['--no-verify']).code).toBe(0);
    stageFile(work, 'src/a.ts', 'export const a = 2;\n');
    stageFile(work, 'src/gone.ts', 'export const gone = 1;\n');
    expect(commit(story, work, 'history 2', ['--no-verify']).code).toBe(0);
    gitOk(story, work, ['rm', '-q', 'src/gone.ts']);
    expect(commit(story, work, 'history 3', ['--no-verify']).code).toBe(0);
    const init = adopt(story, work, ['src/**']);
    expect(init.stdout).toContain(
      '1 file(s) the policy protects are here already (src/a.ts), and nothing promotes them',
    );
    expect(init.stdout).toContain(
      "git ls-files -z -- ':(glob)src/**' | xargs -0 delegate-git attest --approve --yes --",
    );

    const unapproved = gitRun(story, work, ATOMIC);
    expect(unapproved.code).not.toBe(0);
    const refusals = unapproved.stderr.split('\n').filter((l) => l.includes('delegate-git: refused'));
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatch(refusedLine('refs/heads/main', 'src/a.ts', 'no verdict'));

    // Control: today's content approved, the push with the whole history is accepted (versions 1 and src/gone.ts never were).
    cliOk(story, work, ['attest', '--approve', 'src/a.ts', '--yes']);
    const accepted = gitRun(story, work, ATOMIC);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(accepted.stderr).toContain('this push was judged by its own policy (first push)');

    // Adopted, the rule is back to every commit: a later commit of old content is refused.
    stageFile(work, 'src/a.ts', 'export const a = 1;\n');
    expect(commit(story, work, 'back to 1', ['--no-verify']).code).toBe(0);
    const back = gitRun(story, work, ATOMIC);
    expect(back.code).not.toBe(0);
    expect(back.stderr).toMatch(refusedLine('refs/heads/main', 'src/a.ts', 'approved by'));
  });
});

describe('pre-receive: an adopted repository moved to a new server', () => {
  it('moved by one push of every branch and tag: the refs from before the adoption and a feature branch are judged as if the default branch came first', () => {
    const first = makeServer(story, 'mirrored-from.git', { hook: false });
    const work = cloneInto(story, first, 'mirrored');
    commitBeforeAdoption(story, work);
    gitOk(story, work, ['branch', 'old']);
    gitOk(story, work, ['tag', 'v0']);
    gitOk(story, work, ['checkout', '-q', '-b', 'stale']);
    stageFile(work, 'src/stale.ts', 'export const stale = 1;\n');
    expect(commit(story, work, 'work left on a branch before the adoption').code).toBe(0);
    gitOk(story, work, ['checkout', '-q', 'main']);
    adopt(story, work, ['src/**']);
    gitOk(story, work, ['checkout', '-q', '-b', 'feature']);
    stageFile(work, 'src/a.ts', 'export const a = 1;\n');
    cliOk(story, work, ['attest', '--approve', 'src/a.ts', '--yes']);
    expect(commit(story, work, 'a promoted feature').code).toBe(0);
    gitOk(story, work, ['checkout', '-q', 'main']);
    const everything = (remote: string, ...more: string[]) =>
      gitRun(story, work, ['push', '--atomic', remote, 'main', 'old', 'feature', 'v0', ...more, LEDGER]);

    // Control: the default branch, a branch and a tag from before the adoption, and a promoted feature branch.
    const target = makeServer(story, 'mirrored-to.git');
    gitOk(story, work, ['remote', 'add', 'target', target]);
    const moved = everything('target');
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stderr).toContain('this push was judged by its own policy (first push)');

    // A branch whose commits the default branch does not hold is judged commit by commit, by the adopted policy.
    const other = makeServer(story, 'mirrored-to-2.git');
    gitOk(story, work, ['remote', 'add', 'other', other]);
    const refused = everything('other', 'stale');
    expect(refused.code).not.toBe(0);
    const refusals = refused.stderr.split('\n').filter((l) => l.includes('delegate-git: refused'));
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatch(refusedLine('refs/heads/stale', 'src/stale.ts', 'no verdict'));

    // Without the default branch, a ref holding no policy is refused, saying what to push first.
    const third = makeServer(story, 'mirrored-to-3.git');
    gitOk(story, work, ['remote', 'add', 'third', third]);
    const alone = gitRun(story, work, ['push', 'third', 'old']);
    expect(alone.code).not.toBe(0);
    expect(alone.stderr).toContain(
      'refused refs/heads/old: no policy is in force here yet, and this ref holds none: push refs/heads/main with the commit that adopts delegate-git',
    );
    expect(alone.stderr).not.toContain('delegate-git hook:');
  });

  it('is asked what verify asks of its tip: a history that raised the threshold is accepted; a key added without approval in it is refused', () => {
    const first = makeServer(story, 'moved-from.git', { hook: false });
    const work = cloneInto(story, first, 'moved');
    adopt(story, work, ['src/**']);
    stageFile(work, 'src/a.ts', 'export const a = 1;\n');
    cliOk(story, work, ['attest', '--approve', 'src/a.ts', '--yes']);
    expect(commit(story, work, 'a').code).toBe(0);
    const policyFile = path.join(work, POLICY);
    const policy = JSON.parse(fs.readFileSync(policyFile, 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(policyFile, `${JSON.stringify({ ...policy, reviewThreshold: 2 }, null, 2)}\n`);
    cliOk(story, work, ['attest', '--approve', POLICY, '--yes']); // approved by the threshold in force then: 1
    gitOk(story, work, ['add', POLICY]);
    expect(commit(story, work, 'two reviewers from now on').code).toBe(0);
    expect(cli(story, work, ['verify']).code).toBe(0);

    const target = makeServer(story, 'moved-to.git');
    gitOk(story, work, ['remote', 'add', 'target', target]);
    const moved = gitRun(story, work, ['push', '--atomic', 'target', 'main', LEDGER]);
    expect(moved.code, moved.stderr).toBe(0);

    // Control: the same history with a key file committed past the hook, approved by nobody, is refused.
    const other = makeServer(story, 'moved-to-2.git');
    const mallory = operatorEnv(story, 'mallory');
    const key = JSON.parse(cliOk(story, work, ['keygen', 'mallory', '--json'], mallory).stdout) as {
      publicKey: string;
    };
    cliOk(story, work, ['keys', 'add', 'mallory', '--public-key', key.publicKey, '--roles', 'reviewer']);
    gitOk(story, work, ['add', '.delegate-git/keys/mallory.json']);
    expect(commit(story, work, 'mallory', ['--no-verify']).code).toBe(0);
    gitOk(story, work, ['remote', 'add', 'other', other]);
    const refused = gitRun(story, work, ['push', '--atomic', 'other', 'main', LEDGER]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('.delegate-git/keys/mallory.json');
  });
});

describe('pre-receive: the server’s own git configuration', () => {
  const sshKeygen = spawnSync('ssh-keygen', ['-?']).error === undefined;

  /** An adopted pair whose server carries `settings`, and a root commit (an orphan branch) with a governed file. */
  function rootCommitPushed(name: string, settings: Record<string, string>, sign: string[] = []) {
    const { server, work } = adoptedPair(name);
    for (const [key, value] of Object.entries(settings)) gitOk(story, server, ['config', key, value]);
    gitOk(story, work, ['checkout', '-q', '--orphan', 'orphan']);
    stageFile(work, 'src/orphan.ts', 'export const orphan = 1;\n');
    expect(gitRun(story, work, [...sign, 'commit', '-q', '--no-verify', '-m', 'a root commit']).code).toBe(0);
    return { work, refused: gitRun(story, work, ['push', 'origin', 'orphan']) };
  }

  it('judges what a pushed root commit adds when log.showRoot is false; promoted, it is accepted', () => {
    const { work, refused } = rootCommitPushed('no-root', { 'log.showRoot': 'false' });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(refusedLine('refs/heads/orphan', 'src/orphan.ts', 'no verdict'));
    cliOk(story, work, ['attest', '--approve', 'src/orphan.ts', '--yes']);
    const accepted = gitRun(story, work, ['push', '--atomic', 'origin', 'orphan', LEDGER]);
    expect(accepted.code, accepted.stderr).toBe(0);
  });

  it('receive.shallowUpdate: a push from a shallow clone is refused, the server left whole (rt57 f08); control: the same branch pushed with its history is taken', () => {
    const { server, work } = adoptedPair('shallow-push');
    gitOk(story, server, ['config', 'receive.shallowUpdate', 'true']);
    gitOk(story, work, ['checkout', '-q', '-b', 'feat']);
    for (const text of ['one', 'two']) {
      writeFiles(work, { 'notes.txt': `${text}\n` });
      gitOk(story, work, ['add', 'notes.txt']);
      gitOk(story, work, ['commit', '-q', '--no-verify', '-m', text]);
    }
    const shallow = path.join(story.root, 'shallow-push-clone');
    gitOk(story, story.root, ['clone', '-q', '--depth', '1', '-b', 'feat', `file://${work}`, shallow]);
    const refused = gitRun(story, shallow, ['push', `file://${server}`, 'feat']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('this push comes from a shallow clone and lacks history');
    expect(refused.stderr).toContain('git fetch --unshallow');
    // Judged alone: no advice about rules the push does not change.
    expect(refused.stderr).not.toContain('policy or the trust root');
    expect(fs.existsSync(path.join(server, 'shallow'))).toBe(false);
    expect(gitRun(story, server, ['rev-parse', '--verify', '-q', 'refs/heads/feat']).code).not.toBe(0);

    const accepted = gitRun(story, work, ['push', 'origin', 'feat']);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(fs.existsSync(path.join(server, 'shallow'))).toBe(false);

    // A depth-1 clone of the server itself pushing back cuts nothing: the server holds what is behind it (rt58 f01).
    const own = path.join(story.root, 'shallow-push-own');
    gitOk(story, story.root, ['clone', '-q', '--depth', '1', '-b', 'feat', `file://${server}`, own]);
    writeFiles(own, { 'notes.txt': 'three\n' });
    gitOk(story, own, ['add', 'notes.txt']);
    gitOk(story, own, [
      '-c',
      'user.name=a',
      '-c',
      'user.email=a@b',
      'commit',
      '-q',
      '--no-verify',
      '-m',
      'three',
    ]);
    const back = gitRun(story, own, ['push', 'origin', 'feat']);
    expect(back.code, back.stderr).toBe(0);
    expect(fs.existsSync(path.join(server, 'shallow'))).toBe(false);
  });

  // Signing needs ssh-keygen; without it this case cannot be made here, and says so by being skipped.
  it.skipIf(!sshKeygen)('reads signed commits correctly when log.showSignature is true', () => {
    const key = path.join(story.root, 'signing-key');
    expect(spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]).status).toBe(0);
    const sign = ['-c', 'gpg.format=ssh', '-c', `user.signingkey=${key}.pub`, '-c', 'commit.gpgSign=true'];
    const { work, refused } = rootCommitPushed('signed', { 'log.showSignature': 'true' }, sign);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(refusedLine('refs/heads/orphan', 'src/orphan.ts', 'no verdict'));
    cliOk(story, work, ['attest', '--approve', 'src/orphan.ts', '--yes']);
    const accepted = gitRun(story, work, ['push', '--atomic', 'origin', 'orphan', LEDGER]);
    expect(accepted.code, accepted.stderr).toBe(0);
  });
});

describe('pre-receive: content that arrives by other refs', () => {
  let server: string;
  let work: string;
  beforeAll(() => {
    ({ server, work } = adoptedPair('other-refs'));
  });
  afterEach(() => realign(work));

  /** A commit of an unpromoted governed file, made without the hook, on no branch. */
  function unpromotedCommit(file: string): string {
    stageFile(work, file, `export const x = ${JSON.stringify(file)};\n`);
    expect(commit(story, work, `${file}, hook skipped`, ['--no-verify']).code).toBe(0);
    const made = refTip(story, work, 'HEAD')!;
    gitOk(story, work, ['reset', '-q', '--hard', 'HEAD~1']);
    return made;
  }

  it('judges every file of a tree a tag names (plain or annotated); a promoted tree and a blob are accepted', () => {
    const tree = gitOk(story, work, ['rev-parse', `${unpromotedCommit('src/tree.ts')}^{tree}`]);
    const plain = gitRun(story, work, ['push', 'origin', `${tree}:refs/tags/plain-tree`]);
    expect(plain.code).not.toBe(0);
    expect(plain.stderr).toMatch(refusedLine('refs/tags/plain-tree', 'src/tree.ts', 'no verdict'));
    gitOk(story, work, ['tag', '-a', '-m', 'a tree', 'annotated-tree', tree]);
    const annotated = gitRun(story, work, ['push', 'origin', 'refs/tags/annotated-tree']);
    expect(annotated.code).not.toBe(0);
    expect(annotated.stderr).toMatch(refusedLine('refs/tags/annotated-tree', 'src/tree.ts', 'no verdict'));
    expect(gitOk(story, server, ['tag', '--list'])).toBe('');

    const promoted = gitRun(story, work, ['push', 'origin', 'HEAD^{tree}:refs/tags/promoted-tree']);
    expect(promoted.code, promoted.stderr).toBe(0);
    const blob = gitOk(story, work, ['rev-parse', `${tree}:src/tree.ts`]);
    const aBlob = gitRun(story, work, ['push', 'origin', `${blob}:refs/tags/a-blob`]);
    expect(aBlob.code, aBlob.stderr).toBe(0);

    // A tag that named a tree held no commit: moved to one, what it brings is judged as for a new ref.
    const moved = gitRun(story, work, [
      'push',
      'origin',
      `+${unpromotedCommit('src/moved.ts')}:refs/tags/promoted-tree`,
    ]);
    expect(moved.code).not.toBe(0);
    expect(moved.stderr).toMatch(refusedLine('refs/tags/promoted-tree', 'src/moved.ts', 'no verdict'));
    const harmless = gitRun(story, work, ['push', 'origin', `+${harmlessCommit()}:refs/tags/promoted-tree`]);
    expect(harmless.code, harmless.stderr).toBe(0);
  });

  /** A commit that changes nothing governed, on no branch. */
  function harmlessCommit(): string {
    stageFile(work, 'README.md', 'nothing governed\n');
    expect(commit(story, work, 'a harmless commit').code).toBe(0);
    const harmless = refTip(story, work, 'HEAD')!;
    gitOk(story, work, ['reset', '-q', '--hard', 'HEAD~1']);
    return harmless;
  }

  /** `refs/replace/<replaced>` made on the server by hand (a push of one is refused), naming a pushed commit. */
  function replaceOnServer(replaced: string, by: string): void {
    const pushed = gitRun(story, work, ['push', 'origin', `${by}:refs/heads/replacement`]);
    expect(pushed.code, pushed.stderr).toBe(0);
    gitOk(story, server, ['update-ref', `refs/replace/${replaced}`, by]);
    gitOk(story, server, ['update-ref', '-d', 'refs/heads/replacement']);
  }

  it('refuses a pushed refs/replace/* ref, for a commit or for a promoted blob; deleting one is accepted', () => {
    const tip = refTip(story, work, 'HEAD')!;
    const made = unpromotedCommit('src/swapped.ts');
    gitOk(story, work, ['replace', tip, made]);
    const commitSwap = gitRun(story, work, ['push', 'origin', `refs/replace/${tip}`]);
    expect(commitSwap.code).not.toBe(0);
    expect(commitSwap.stderr).toContain(
      `refused refs/replace/${tip}: a replace ref makes git show other content`,
    );
    gitOk(story, work, ['replace', '-d', tip]);
    // In any letter case: loose refs on a server that ignores case put it where git reads replace refs.
    const shouted = gitRun(story, work, ['push', 'origin', `${made}:refs/REPLACE/${tip}`]);
    expect(shouted.code).not.toBe(0);
    expect(shouted.stderr).toContain(`refused refs/REPLACE/${tip}: a replace ref`);

    const policyBlob = gitOk(story, work, ['rev-parse', `HEAD:${POLICY}`]);
    const evilFile = path.join(story.root, 'evil-policy.json');
    fs.writeFileSync(evilFile, '{"protect": []}\n');
    const evil = gitOk(story, work, ['hash-object', '-w', evilFile]);
    gitOk(story, work, ['replace', policyBlob, evil]);
    const blobSwap = gitRun(story, work, ['push', 'origin', `refs/replace/${policyBlob}`]);
    expect(blobSwap.code).not.toBe(0);
    expect(gitOk(story, server, ['for-each-ref', 'refs/replace/'])).toBe('');
    // The server shows the policy as pushed.
    expect(gitOk(story, server, ['show', `HEAD:${POLICY}`])).not.toContain('"protect": []');
    gitOk(story, work, ['replace', '-d', policyBlob]);

    // Control: one already on the server (an administrator's) can be deleted by a push.
    replaceOnServer(made, harmlessCommit());
    const deleted = gitRun(story, work, ['push', 'origin', `:refs/replace/${made}`]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(gitOk(story, server, ['for-each-ref', 'refs/replace/'])).toBe('');
  });

  it('judges objects as stored, not what a refs/replace/* ref puts in their place (the server); verify refuses to answer beside one', () => {
    const harmless = harmlessCommit();
    const made = unpromotedCommit('src/replaced.ts');
    // On the server and in this clone.
    replaceOnServer(made, harmless);
    gitOk(story, work, ['replace', made, harmless]);
    // What git checks out here is the replacement, which verify does not judge: it answers nothing (rt57 f01).
    const beside = cli(story, work, ['verify', '--rev', made]);
    expect(beside.code).toBe(2);
    expect(beside.stderr).toContain(`This clone holds a replace ref (refs/replace/${made})`);
    gitOk(story, work, ['replace', '-d', made]);
    // Without it, verify reads the commit itself, as a clone checks it out.
    const verified = cli(story, work, ['verify', '--rev', made]);
    expect(verified.code).toBe(1);
    expect(verified.stdout).toContain('NOT PROMOTED  src/replaced.ts');

    const refused = gitRun(story, work, ['push', 'origin', `${made}:refs/heads/main`]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(refusedLine('refs/heads/main', 'src/replaced.ts', 'no verdict'));
    const accepted = gitRun(story, work, ['push', 'origin', `${harmless}:refs/heads/main`]);
    expect(accepted.code, accepted.stderr).toBe(0);
    gitOk(story, server, ['update-ref', '-d', `refs/replace/${made}`]);
  });

  it('judges a notes ref other than the ledger as content (anyone can check it out); promoted, it is accepted', () => {
    const made = unpromotedCommit('src/staged-on-notes.ts');
    for (const ref of ['refs/notes/staging', 'refs/notes/remotes/origin/delegations']) {
      const staging = gitRun(story, work, ['push', 'origin', `${made}:${ref}`]);
      expect(staging.code, ref).not.toBe(0);
      expect(staging.stderr).toMatch(refusedLine(ref, 'src/staged-on-notes.ts', 'no verdict'));
      expect(refTip(story, server, ref)).toBeNull();
    }
    const refused = gitRun(story, work, ['push', 'origin', `${made}:refs/heads/main`]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(refusedLine('refs/heads/main', 'src/staged-on-notes.ts', 'no verdict'));

    gitOk(story, work, ['reset', '-q', '--hard', made]);
    cliOk(story, work, ['attest', '--approve', 'src/staged-on-notes.ts', '--yes']);
    const accepted = gitRun(story, work, ATOMIC);
    expect(accepted.code, accepted.stderr).toBe(0);
    // Control: a notes ref holding notes (git notes add) and a copy of the ledger are accepted.
    gitOk(story, work, ['notes', '--ref=review', 'add', '-m', 'looks good', 'HEAD']);
    const notes = gitRun(story, work, ['push', 'origin', 'refs/notes/review', `${LEDGER}:refs/notes/copy`]);
    expect(notes.code, notes.stderr).toBe(0);
  });

  it('refuses a ref named as the ledger in another case (the same file where case is ignored); control: its own name', () => {
    const tip = refTip(story, work, LEDGER)!;
    const other = gitRun(story, work, ['push', 'origin', `${tip}:refs/notes/Delegations`]);
    expect(other.code).not.toBe(0);
    expect(other.stderr).toContain(
      'refused refs/notes/Delegations: git reads this name as refs/notes/delegations',
    );
    expect(gitRun(story, work, ['push', 'origin', LEDGER]).code).toBe(0);
  });
});

describe('pre-receive: namespaces the administrator leaves to review (delegate-git.reviewRefs)', () => {
  /** A commit with an unpromoted governed file, made on top of the clone's branch and left out of it. */
  function unpromoted(work: string, file: string): string {
    stageFile(work, file, `export const x = ${JSON.stringify(file)};\n`);
    expect(commit(story, work, `${file}, hook skipped`, ['--no-verify']).code).toBe(0);
    const made = refTip(story, work, 'HEAD')!;
    gitOk(story, work, ['reset', '-q', '--hard', 'HEAD~1']);
    return made;
  }

  it('takes an unpromoted commit there unjudged, and judges it wherever else it goes (held there counts for nothing); control: unset, it is refused there too', () => {
    const { server, work } = adoptedPair('review-refs');
    const made = unpromoted(work, 'src/for-review.ts');
    const unset = gitRun(story, work, ['push', 'origin', `${made}:refs/review/alice/1`]);
    expect(unset.code).not.toBe(0);
    expect(unset.stderr).toMatch(refusedLine('refs/review/alice/1', 'src/for-review.ts', 'no verdict'));

    gitOk(story, server, ['config', 'delegate-git.reviewRefs', 'refs/review/']);
    const taken = gitRun(story, work, ['push', 'origin', `${made}:refs/review/alice/1`]);
    expect(taken.code, taken.stderr).toBe(0);
    expect(refTip(story, server, 'refs/review/alice/1')).toBe(made);
    // Held by a review ref only, the commit is new to every ref the gate judges: a branch, a tag, main.
    for (const ref of ['refs/heads/feature', 'refs/tags/v1', 'refs/heads/main']) {
      const refused = gitRun(story, work, ['push', 'origin', `${made}:${ref}`]);
      expect(refused.code, ref).not.toBe(0);
      expect(refused.stderr).toMatch(refusedLine(ref, 'src/for-review.ts', 'no verdict'));
    }
    // Once approved (the reviewer fetched it from the review ref), it goes to main with the ledger.
    gitOk(story, work, ['fetch', '-q', 'origin', 'refs/review/alice/1']);
    cliOk(story, work, ['attest', '--approve', '--rev', made, 'src/for-review.ts', '--yes']);
    const accepted = gitRun(story, work, ['push', '--atomic', 'origin', `${made}:refs/heads/main`, LEDGER]);
    expect(accepted.code, accepted.stderr).toBe(0);
  });

  it('a server that is not plain (a symbolic ref, a link under refs/, a linked worktree) takes no push while review refs are set (rt59 f02-f04, rt60); control: made plain, it does', () => {
    const { server, work } = adoptedPair('review-refs-plain');
    gitOk(story, server, ['config', 'delegate-git.reviewRefs', 'refs/review/']);
    const made = unpromoted(work, 'src/plain.ts');
    const refusedFor = (why: string) => {
      const refused = gitRun(story, work, ['push', 'origin', `${made}:refs/review/a`]);
      expect(refused.code, why).not.toBe(0);
      expect(refused.stderr).toContain(
        'leaves refs to review (delegate-git.reviewRefs) only in a plain repository',
      );
      expect(refused.stderr).toContain(why);
    };
    gitOk(story, server, ['symbolic-ref', 'refs/heads/queue', 'refs/review/a']);
    refusedFor('refs/heads/queue is a symbolic ref');
    gitOk(story, server, ['symbolic-ref', '--delete', 'refs/heads/queue']);
    // As a file system that ignores case would make refs/review and refs/REVIEW one directory.
    fs.mkdirSync(path.join(server, 'refs', 'REVIEW'));
    fs.symlinkSync('REVIEW', path.join(server, 'refs', 'review'));
    refusedFor('refs/review is a symbolic link');
    fs.unlinkSync(path.join(server, 'refs', 'review'));
    gitOk(story, server, [
      'worktree',
      'add',
      '-q',
      '--detach',
      path.join(story.root, 'review-refs-look'),
      'main',
    ]);
    refusedFor('it has linked worktrees');
    gitOk(story, server, ['worktree', 'remove', path.join(story.root, 'review-refs-look')]);

    const taken = gitRun(story, work, ['push', 'origin', `${made}:refs/review/a`]);
    expect(taken.code, taken.stderr).toBe(0);
    const branch = gitRun(story, work, ['push', 'origin', `${made}:refs/heads/plain`]);
    expect(branch.code).not.toBe(0);
    expect(branch.stderr).toMatch(refusedLine('refs/heads/plain', 'src/plain.ts', 'no verdict'));
  });

  it('a value that could reach what the gate judges refuses every push, naming the setting; control: a sound value takes a promoted push', () => {
    const { server, work } = adoptedPair('review-refs-bad');
    for (const bad of ['refs/heads/', 'refs/', 'refs/notes/review/', 'refs/review', 'refs/namespaces/']) {
      gitOk(story, server, ['config', 'delegate-git.reviewRefs', bad]);
      stageFile(work, 'README.md', `${bad}\n`);
      expect(commit(story, work, `readme ${bad}`).code).toBe(0);
      const refused = gitRun(story, work, ['push', 'origin', 'main']);
      expect(refused.code, bad).not.toBe(0);
      expect(refused.stderr).toContain(
        `the server's delegate-git.reviewRefs value "${bad}" is not a namespace`,
      );
    }
    gitOk(story, server, ['config', 'delegate-git.reviewRefs', 'refs/for/']);
    const accepted = gitRun(story, work, ['push', 'origin', 'main']);
    expect(accepted.code, accepted.stderr).toBe(0);
  });
});

describe('pre-receive: a default branch that does not exist', () => {
  it('trusts a first push, then refuses new refs until HEAD names the branch that holds the policy', () => {
    const server = makeServer(story, 'dangling-head.git');
    gitOk(story, server, ['symbolic-ref', 'HEAD', 'refs/heads/master']);
    const work = cloneInto(story, server, 'dangling-head');
    gitOk(story, work, ['symbolic-ref', 'HEAD', 'refs/heads/main']); // the clone took master from the server
    adopt(story, work, ['src/**']);
    const first = gitRun(story, work, ATOMIC);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain('this push was judged by its own policy (first push)');

    // Not a first push any more: a new ref would otherwise be judged by its own (here weakened) policy.
    gitOk(story, work, ['checkout', '-q', '-b', 'feature']);
    stageFile(work, 'README.md', 'a feature\n');
    expect(commit(story, work, 'a feature').code).toBe(0);
    const refused = gitRun(story, work, ['push', 'origin', 'feature']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      'refused refs/heads/feature: no policy in force to judge by: HEAD names refs/heads/master, which does not exist here.',
    );
    expect(refused.stderr).not.toContain('first push');

    gitOk(story, server, ['symbolic-ref', 'HEAD', 'refs/heads/main']);
    const accepted = gitRun(story, work, ['push', 'origin', 'feature']);
    expect(accepted.code, accepted.stderr).toBe(0);
  });
});

describe('pre-receive: the commands of a push are checked before they are believed (rt51 f01, f02)', () => {
  let server: string;
  let work: string;
  let rejectedCommit: string;
  let before: { main: string; ledger: string };
  beforeAll(() => {
    ({ server, work } = adoptedPair('claims'));
    // A file approved, then rejected by a reviewer; the ledger with both is the server's.
    writeFiles(work, { 'src/risky.ts': 'export const risky = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/risky.ts', '--yes']);
    gitOk(story, work, ['push', '-q', 'origin', LEDGER]);
    cliOk(story, work, ['attest', '--reject', 'src/risky.ts', '--yes', '-m', 'no, this is wrong']);
    gitOk(story, work, ['push', '-q', 'origin', LEDGER]);
    gitOk(story, work, ['add', '--', 'src/risky.ts']);
    gitOk(story, work, ['commit', '-q', '--no-verify', '-m', 'risky']);
    rejectedCommit = gitOk(story, work, ['rev-parse', 'HEAD']);
    before = { main: refTip(story, server, 'refs/heads/main')!, ledger: refTip(story, server, LEDGER)! };
  });

  function serverUnchanged(): void {
    expect.soft(refTip(story, server, 'refs/heads/main')).toBe(before.main);
    expect.soft(refTip(story, server, LEDGER)).toBe(before.ledger);
  }

  it('a ledger named twice is refused whole: the second command (a rewrite dropping the rejection) never lands', () => {
    const blob = gitOk(story, work, ['rev-parse', 'HEAD:src/risky.ts']);
    const approvalOnly = noteLines(story, work, blob).filter(
      (line) => statementOf(line).predicate.decision !== 'reject',
    );
    const kept = path.join(story.root, 'approval-only');
    fs.writeFileSync(kept, `${approvalOnly.join('\n')}\n`);
    gitOk(story, work, ['notes', `--ref=${LEDGER}`, 'add', '-f', '-F', kept, blob]);
    const rewritten = refTip(story, work, LEDGER)!;
    gitOk(story, work, ['update-ref', LEDGER, before.ledger, rewritten]);
    expect(approvalOnly).toHaveLength(1);
    const pushed = rawPush(story, server, work, [
      `${before.ledger} ${before.ledger} ${LEDGER}`,
      `${before.ledger} ${rewritten} ${LEDGER}`,
    ]);
    expect
      .soft(pushed.stdout)
      .toBe(`ng ${LEDGER} pre-receive hook declined\nng ${LEDGER} pre-receive hook declined`);
    expect
      .soft(pushed.stderr)
      .toContain(
        `delegate-git: refused ${LEDGER}: named 2 times in one push; a push names each ref once (git push does), so this one is not judged\ndelegate-git: push refused.\n`,
      );
    serverUnchanged();
  });

  it('a ledger claimed at an older tip (before the rejection) is refused, and the branch judged against it does not land', () => {
    const older = gitOk(story, work, ['rev-parse', `${LEDGER}^`]);
    const pushed = rawPush(story, server, work, [
      `${older} ${older} ${LEDGER}`,
      `${before.main} ${rejectedCommit} refs/heads/main`,
    ]);
    expect
      .soft(pushed.stdout)
      .toBe(`ng ${LEDGER} pre-receive hook declined\nng refs/heads/main pre-receive hook declined`);
    expect
      .soft(pushed.stderr)
      .toContain(
        `delegate-git: refused ${LEDGER}: the push expects it at ${older}, but on the server it is at ${before.ledger}; fetch, and push again`,
      );
    serverUnchanged();
  });

  it('a branch claimed at an old id it is not at is refused too', () => {
    const pushed = rawPush(story, server, work, [`${rejectedCommit} ${before.main} refs/heads/main`]);
    expect.soft(pushed.stdout).toBe('ng refs/heads/main pre-receive hook declined');
    expect
      .soft(pushed.stderr)
      .toContain(
        `delegate-git: refused refs/heads/main: the push expects it at ${rejectedCommit}, but on the server it is at ${before.main}; fetch, and push again`,
      );
    serverUnchanged();
  });

  it('control: the same client, its commands true, pushes a promoted change with the ledger that promotes it', () => {
    gitOk(story, work, ['reset', '-q', '--hard', 'origin/main']);
    writeFiles(work, { 'src/fine.ts': 'export const fine = 1;\n' });
    cliOk(story, work, ['attest', '--approve', 'src/fine.ts', '--yes']);
    gitOk(story, work, ['add', '--', 'src/fine.ts']);
    expect(commit(story, work, 'fine').code).toBe(0);
    const main = gitOk(story, work, ['rev-parse', 'HEAD']);
    const ledger = refTip(story, work, LEDGER)!;
    const pushed = rawPush(story, server, work, [
      `${before.ledger} ${ledger} ${LEDGER}`,
      `${before.main} ${main} refs/heads/main`,
    ]);
    expect(pushed.stderr).not.toContain('refused');
    expect(pushed.stdout).toBe(`ok ${LEDGER}\nok refs/heads/main`);
    expect(refTip(story, server, 'refs/heads/main')).toBe(main);
    expect(refTip(story, server, LEDGER)).toBe(ledger);
  });
});
