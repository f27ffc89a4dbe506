// `delegate-git log` end to end with the BUILT CLI: the records on a path (or all), newest first by the time each
// record carries, one line each, verified against the trust root in the work tree (HEAD's in a bare repository).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { POLICY_PATH, parsePolicy, Repository, recordStatement } from '../../packages/core/src/index.js';
import { reviewStatement, type SubjectFile, verdictStatement } from '../../packages/core/src/statement.js';
import {
  adopt,
  cli,
  cliOk,
  commit,
  gitOk,
  makeStory,
  makeWorkTree,
  type Story,
} from '../support/cli-story.js';
import { keyFilesOf, subjectOf, testKey } from '../support/records.js';

const bob = testKey({ name: 'bob', roles: ['delegator'] });
const rita = testKey({ name: 'rita', roles: ['reviewer'] });
const mallory = testKey({ name: 'mallory', roles: ['delegator'] });

const A1 = 'export const a = 1;\n';
const A2 = 'export const a = 2;\n';
const B1 = 'export const b = 1;\n';
const a1 = subjectOf('src/a.ts', A1);
const a2 = subjectOf('src/a.ts', A2);
const b1 = subjectOf('src/lib/b.ts', B1);

let story: Story;
let dir: string;

interface LogJson {
  path: string | null;
  trustRoot: string;
  records: Array<{
    createdAt: string | null;
    kind: string | null;
    outcome: string;
    signer: string | null;
    subjects: Array<{ path: string; gitBlob: string; sha256: string }>;
    noteBlob: string;
    valid: boolean;
    notCounted: boolean;
    reason: string;
    unit: string | null;
    model: string | null;
    envelopeSha256: string;
  }>;
}

function logJson(args: string[], cwd = dir): LogJson {
  return JSON.parse(cliOk(story, cwd, ['log', ...args, '--json']).stdout) as LogJson;
}

beforeAll(async () => {
  story = makeStory('delegate-git-log-');
  dir = makeWorkTree(story, 'work');
  adopt(story, dir, ['src/**']);
  const policy = parsePolicy(fs.readFileSync(path.join(dir, POLICY_PATH), 'utf8'));
  for (const f of keyFilesOf([bob, rita], policy.keysDir)) fs.writeFileSync(path.join(dir, f.path), f.text);
  gitOk(story, dir, ['add', policy.keysDir]);
  expect(commit(story, dir, 'Register bob and rita', ['--no-verify']).code).toBe(0);
  for (const content of [A1, A2, B1]) {
    spawnSync('git', ['hash-object', '-w', '--stdin'], { cwd: dir, env: story.env, input: content });
  }
  const id = { id: policy.repositoryId };
  const verdict = (verdictName: 'UNIT_PASSED' | 'UNIT_FAILED', files: SubjectFile[], createdAt: string) =>
    verdictStatement(files, {
      verdict: verdictName,
      repository: id,
      createdAt,
      unit: { name: `unit ${createdAt.slice(0, 10)}` },
      worker: {
        endpointHost: '127.0.0.1:1',
        model: 'qwen2.5-coder',
        promptTokens: 1,
        completionTokens: 1,
        durationMs: 1,
      },
    });
  const repo = await Repository.open(dir, story.env);
  try {
    // Recorded out of time order: log sorts by the time the records carry, not by when they reached the ledger.
    await recordStatement(repo.ledger, verdict('UNIT_FAILED', [a2], '2026-11-02T10:00:00Z'), bob.signer, 't');
    await recordStatement(
      repo.ledger,
      verdict('UNIT_PASSED', [a1, b1], '2026-11-01T09:00:00Z'),
      bob.signer,
      't',
    );
    await recordStatement(
      repo.ledger,
      verdict('UNIT_PASSED', [a2], '2026-11-02T11:00:00Z'),
      mallory.signer,
      't',
    );
    await recordStatement(
      repo.ledger,
      reviewStatement([a2], {
        decision: 'approve',
        reviewer: { name: 'rita', email: rita.keyFile.email },
        repository: id,
        createdAt: '2026-11-03T08:00:00.250Z',
      }),
      rita.signer,
      't',
    );
  } finally {
    await repo.close();
  }
});

afterAll(() => story?.cleanup());

describe('log', () => {
  test('all records, newest first, one line each, with validity', () => {
    const run = cliOk(story, dir, ['log']);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(5);
    // init's own approval of the policy and key file (made today) is the newest.
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ {2}review:approve +alice +\.delegate-git\/policy\.json \(\+1\) +[0-9a-f]{12} {2}valid$/,
    );
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^2026-11-03T08:00:00Z {2}review:approve +rita +src/a\\.ts +${a2.gitBlob.slice(0, 12)} {2}valid$`,
        ),
      ),
      expect.stringMatching(
        new RegExp(
          `^2026-11-02T11:00:00Z {2}UNIT_PASSED +- +src/a\\.ts +${a2.gitBlob.slice(0, 12)} {2}INVALID\\(signed by a key that is not in the trust root \\(keyid ${mallory.signer.publicKey.keyid.slice(0, 12)}\\)\\)$`,
        ),
      ),
      expect.stringMatching(
        new RegExp(
          `^2026-11-02T10:00:00Z {2}UNIT_FAILED +bob +src/a\\.ts +${a2.gitBlob.slice(0, 12)} {2}valid$`,
        ),
      ),
      expect.stringMatching(
        new RegExp(
          `^2026-11-01T09:00:00Z {2}UNIT_PASSED +bob +src/a\\.ts \\(\\+1\\) +${a1.gitBlob.slice(0, 12)} {2}valid$`,
        ),
      ),
    ]);
  });

  test('--json: each record once, with all its subjects, the record’s own time and what it says', () => {
    const log = logJson([]);
    expect(log.path).toBeNull();
    expect(log.trustRoot).toBe('the work tree');
    expect(log.records).toHaveLength(5);
    const [, review, forged, failed, passed] = log.records;
    expect(review).toMatchObject({
      createdAt: '2026-11-03T08:00:00.250Z',
      kind: 'review',
      outcome: 'review:approve',
      signer: 'rita',
      valid: true,
      reason: 'signature verified',
      unit: null,
      model: null,
    });
    expect(forged).toMatchObject({ outcome: 'UNIT_PASSED', signer: null, valid: false });
    expect(failed).toMatchObject({
      outcome: 'UNIT_FAILED',
      signer: 'bob',
      valid: true,
      unit: 'unit 2026-11-02',
      model: 'qwen2.5-coder',
    });
    expect(passed!.subjects).toEqual([
      { path: 'src/a.ts', gitBlob: a1.gitBlob, sha256: a1.sha256 },
      { path: 'src/lib/b.ts', gitBlob: b1.gitBlob, sha256: b1.sha256 },
    ]);
    expect(new Set(log.records.map((r) => r.envelopeSha256)).size).toBe(5);
  });

  test('a path keeps only the records about it; a directory, those about files under it', () => {
    const onA = logJson(['src/a.ts']);
    expect(onA.path).toBe('src/a.ts');
    expect(onA.records.map((r) => [r.createdAt, r.outcome])).toEqual([
      ['2026-11-03T08:00:00.250Z', 'review:approve'],
      ['2026-11-02T11:00:00Z', 'UNIT_PASSED'],
      ['2026-11-02T10:00:00Z', 'UNIT_FAILED'],
      ['2026-11-01T09:00:00Z', 'UNIT_PASSED'],
    ]);
    const onB = logJson(['src/lib/b.ts']);
    expect(onB.records.map((r) => [r.createdAt, r.subjects.map((s) => s.path)])).toEqual([
      ['2026-11-01T09:00:00Z', ['src/lib/b.ts']],
    ]);
    // Relative to the current directory, as git does; a directory matches what is under it, not a prefix.
    fs.mkdirSync(path.join(dir, 'src', 'lib'), { recursive: true });
    const fromLib = logJson(['.'], path.join(dir, 'src', 'lib'));
    expect(fromLib.path).toBe('src/lib');
    expect(fromLib.records).toHaveLength(1);
    expect(logJson(['src']).records).toHaveLength(4);
    expect(logJson(['src/a']).records).toEqual([]);
    expect(cliOk(story, dir, ['log', 'src/nothing.ts']).stdout).toBe('No records about src/nothing.ts.\n');
  });

  test('-n limits the output to the newest records', () => {
    const run = cliOk(story, dir, ['log', 'src/a.ts', '-n', '2']);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain('2026-11-03T08:00:00Z');
    expect(lines[1]).toContain('2026-11-02T11:00:00Z');
  });

  test('refuses two paths, a bad count and a path outside the repository (exit 2); one path is fine', () => {
    for (const args of [
      ['log', 'a', 'b'],
      ['log', '-n', 'many'],
      ['log', '../elsewhere'],
    ]) {
      const run = cli(story, dir, args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toContain('delegate-git log --help');
    }
    expect(cli(story, dir, ['log', 'src/a.ts']).code).toBe(0);
  });

  test('verifies against the trust root in the work tree: a key removed there no longer counts', () => {
    const keyFile = path.join(dir, '.delegate-git/keys/bob.json');
    const saved = fs.readFileSync(keyFile);
    fs.rmSync(keyFile);
    try {
      const byBob = logJson(['src/a.ts']).records.filter((r) => r.outcome === 'UNIT_FAILED');
      expect(byBob).toMatchObject([{ valid: false, signer: null }]);
      expect(byBob[0]!.reason).toContain('not in the trust root');
    } finally {
      fs.writeFileSync(keyFile, saved);
    }
    expect(logJson(['src/a.ts']).records.filter((r) => r.outcome === 'UNIT_FAILED')).toMatchObject([
      { valid: true, signer: 'bob' },
    ]);
  });

  test('--signer lists what one key signed, by name or keyid prefix (admin audit a05); control: a name no key has is said', () => {
    const byBob = logJson(['--signer', 'bob']).records;
    expect(byBob.map((r) => r.outcome)).toEqual(['UNIT_FAILED', 'UNIT_PASSED']);
    expect(byBob.every((r) => r.signer === 'bob')).toBe(true);
    const byKeyid = logJson(['--signer', bob.signer.publicKey.keyid.slice(0, 8)]).records;
    expect(byKeyid.map((r) => r.envelopeSha256)).toEqual(byBob.map((r) => r.envelopeSha256));
    expect(logJson(['src/lib/b.ts', '--signer', 'bob']).records).toHaveLength(1);
    expect(cliOk(story, dir, ['log', '--signer', 'rita', '-n', '1']).stdout).toMatch(/review:approve +rita /);
    expect(cliOk(story, dir, ['log', '--signer', 'nobody']).stdout).toBe(
      'No records signed by nobody: no key of the trust root has that name or keyid (`delegate-git keys list`).\n',
    );
  });

  test('in a bare repository, against the trust root at HEAD', () => {
    const bare = path.join(story.root, 'bare.git');
    gitOk(story, story.root, ['clone', '-q', '--bare', dir, bare]);
    expect(cliOk(story, bare, ['log']).stdout).toBe('The ledger holds no records.\n');
    gitOk(story, bare, ['fetch', '-q', dir, 'refs/notes/delegations:refs/notes/delegations']);
    const log = logJson(['src/a.ts'], bare);
    expect(log.trustRoot).toBe('HEAD');
    expect(log.records.map((r) => [r.outcome, r.valid])).toEqual([
      ['review:approve', true],
      ['UNIT_PASSED', false],
      ['UNIT_FAILED', true],
      ['UNIT_PASSED', true],
    ]);
  });
});

describe('log and show: a line the trust root no longer lets its key sign', () => {
  test('is "not counted" (as verify lists it), not INVALID; control: a line by a key outside the trust root stays INVALID', async () => {
    // rita is a reviewer: a verdict she signs verifies but does not count.
    const policy = parsePolicy(fs.readFileSync(path.join(dir, POLICY_PATH), 'utf8'));
    const repo = await Repository.open(dir, story.env);
    try {
      const statement = verdictStatement([b1], {
        verdict: 'UNIT_PASSED',
        repository: { id: policy.repositoryId },
        createdAt: '2026-11-04T08:00:00Z',
      });
      await recordStatement(repo.ledger, statement, rita.signer, 't');
    } finally {
      await repo.close();
    }
    const [byRita] = logJson(['src/lib/b.ts']).records;
    expect(byRita).toMatchObject({ signer: 'rita', valid: false, notCounted: true });
    const text = cliOk(story, dir, ['log', 'src/lib/b.ts', '-n', '1']).stdout;
    expect(text).toMatch(/ {2}not counted\(.*rita.*\)\n$/);
    const shown = cliOk(story, dir, ['show', b1.gitBlob]).stdout;
    expect(shown).toMatch(/^ {2}not counted {2}verdict UNIT_PASSED {2}by rita /m);
    // Control: mallory is in no key file, so her line is not a record the trust root knows at all.
    const byMallory = logJson(['src/a.ts']).records.find(
      (r) => r.signer === null && r.outcome === 'UNIT_PASSED',
    );
    expect(byMallory).toMatchObject({ valid: false, notCounted: false });
    expect(cliOk(story, dir, ['log', 'src/a.ts']).stdout).toContain(
      'INVALID(signed by a key that is not in the trust root',
    );
  });
});
