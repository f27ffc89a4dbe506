/**
 * `verify` over a ledger large enough to be checked on worker threads: the answer (counts, and each problem with
 * its blob and line, and the files judged) must be exactly what a line-by-line check gives, and what core gives
 * in-process, with or without the cache of lines verified by an earlier run, and with or without libsodium on the
 * threads.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  loadSigningKey,
  Repository,
  signStatement,
  verdictStatement,
  verificationExitCode,
  verifyLedger,
} from '../../packages/core/src/index.js';
import { libsodiumPlaces } from '../../packages/core/src/libsodium.js';
import {
  adopt,
  cli,
  commit,
  gitOk,
  makeStory,
  makeWorkTree,
  OPERATOR,
  operatorSigner,
  type Story,
  storyCli,
  writeFiles,
} from '../support/cli-story.js';
import { identityRSigningKey } from '../support/identity-r.js';
import { subjectOf } from '../support/records.js';

const RECORDS = 2400;
/** Blobs whose content is a file at HEAD (src/f<b>.ts), so the threads weigh records for real files too. */
const FILES = 40;
/** This one's content changed after its records: refused, and worded by the main thread from the ledger's history. */
const CHANGED = 5;
/** One more blob, with one UNIT_PASSED record whose signature has an identity R: libsodium refuses it, node:crypto and the strict rule accept it. */
const IDENTITY_R_BLOB = createHash('sha1').update('identity R').digest('hex');

describe('verify on worker threads', () => {
  let story: Story;
  let work: string;
  let forgedBlob: string;
  let forgedLine: number;

  beforeAll(async () => {
    story = makeStory();
    work = makeWorkTree(story, 'work');
    adopt(story, work, ['src/**']);
    const { repository, sign } = operatorSigner(story, work);
    const repo = await Repository.open(work, story.env);
    try {
      // 800 blobs with 3 records each, written in one notes commit (blobs need not exist for verify).
      const additions: Array<{ blob: string; lines: string[] }> = [];
      const files: Record<string, string> = {};
      for (let b = 0; b < RECORDS / 3; b++) {
        let blob = createHash('sha1').update(`blob ${b}`).digest('hex');
        let sha256 = (r: number) => createHash('sha256').update(`${b}/${r}`).digest('hex');
        if (b < FILES) {
          const content = `export const f${b} = ${b};\n`;
          // The id git gives this content (SHA-1 repository), as the commit below stores it.
          const file = subjectOf(`src/f${b}.ts`, content);
          blob = file.gitBlob;
          sha256 = () => file.sha256;
          files[`src/f${b}.ts`] = b === CHANGED ? `${content}// changed since\n` : content;
        }
        const lines = [0, 1, 2].map((r) => {
          const statement = verdictStatement([{ path: `src/f${b}.ts`, sha256: sha256(r), gitBlob: blob }], {
            verdict: r === 2 ? 'UNIT_FAILED' : 'UNIT_PASSED',
            repository,
            createdAt: `2026-11-0${1 + r}T00:00:00.000Z`,
          });
          return sign(statement);
        });
        additions.push({ blob, lines });
      }
      // One forged line in the middle: a valid line with one payload character changed.
      const target = additions[400]!;
      const line = target.lines[1]!;
      const i = line.indexOf('"payload":"') + 40;
      target.lines[1] = line.slice(0, i) + (line[i] === 'A' ? 'B' : 'A') + line.slice(i + 1);
      forgedBlob = target.blob;
      forgedLine = [...target.lines].sort().indexOf(target.lines[1]!) + 1;
      const identityR = identityRSigningKey(loadSigningKey(OPERATOR, story.env).key);
      const statement = verdictStatement(
        [{ path: 'src/identity-r.ts', sha256: 'a'.repeat(64), gitBlob: IDENTITY_R_BLOB }],
        { verdict: 'UNIT_PASSED', repository, createdAt: '2026-11-01T00:00:00.000Z' },
      );
      additions.push({ blob: IDENTITY_R_BLOB, lines: [signStatement(statement, identityR).line] });
      await repo.ledger.append(additions);
      writeFiles(work, files);
      gitOk(story, work, ['add', 'src']);
      const committed = commit(story, work, 'files, one changed after its verdict', ['--no-verify']);
      if (committed.code !== 0) throw new Error(committed.stderr);
    } finally {
      await repo.close();
    }
  }, 120_000);

  afterAll(() => story.cleanup());

  it('counts every line once and names the one forged line by blob and line', () => {
    const run = cli(story, work, ['verify', '--json']);
    const result = JSON.parse(run.stdout);
    // Lines: every record, the identity-R one, + init's anchor approval on the policy and on the key file. Records:
    // distinct valid ones (all but the forged line, and the anchor).
    expect(result.lines).toBe(RECORDS + 1 + 2);
    expect(result.records).toBe(RECORDS + 1 - 1 + 1);
    expect(result.byVerdict.UNIT_PASSED).toBe((RECORDS / 3) * 2 - 1 + 1);
    expect(result.byVerdict.UNIT_FAILED).toBe(RECORDS / 3);
    expect(result.invalid).toHaveLength(1);
    expect(result.invalid[0]).toMatchObject({ blob: forgedBlob, line: forgedLine });
    expect(result.invalid[0].reason).toMatch(/does not verify|not a valid record/);
    expect(run.code).toBe(1);
    const files = Object.fromEntries(
      (result.files as Array<{ path: string; promoted: boolean; reason: string }>).map((f) => [f.path, f]),
    );
    expect(Object.keys(files).filter((p) => p.startsWith('src/'))).toHaveLength(FILES);
    expect(files[`src/f${CHANGED}.ts`]).toMatchObject({
      promoted: false,
      reason: 'its content changed after the verdict, so it is not the version anything verified',
    });
    expect(files['src/f1.ts']).toMatchObject({ promoted: true });
  });

  it('the threads find libsodium beside the built CLI, and answer the same without it', () => {
    const built = path.dirname(path.dirname(storyCli));
    expect(fs.existsSync(path.join(built, 'dist', 'verify-worker.js'))).toBe(true);
    expect(libsodiumPlaces(built).some((place) => fs.existsSync(place))).toBe(true);
    fs.rmSync(path.join(work, '.git', 'delegate-git', 'cache'), { recursive: true, force: true });
    const withLibsodium = cli(story, work, ['verify', '--json']);
    fs.rmSync(path.join(work, '.git', 'delegate-git', 'cache'), { recursive: true, force: true });
    const without = cli(story, work, ['verify', '--json'], { ...story.env, DELEGATE_GIT_LIBSODIUM: '0' });
    expect(JSON.parse(withLibsodium.stdout).invalid).toHaveLength(1);
    expect(without.stdout).toBe(withLibsodium.stdout);
  });

  it('threads, the cache and core in-process all give the same answer', async () => {
    fs.rmSync(path.join(work, '.git', 'delegate-git', 'cache'), { recursive: true, force: true });
    const cold = cli(story, work, ['verify', '--json']);
    const cached = fs.readdirSync(path.join(work, '.git', 'delegate-git', 'cache'));
    expect(cached.some((n) => n.startsWith('verified-'))).toBe(true);
    const warm = cli(story, work, ['verify', '--json']);
    expect(warm.stdout).toBe(cold.stdout);
    const repo = await Repository.open(work, story.env);
    try {
      const inProcess = await verifyLedger(repo, { cache: false });
      const exitCode = verificationExitCode(inProcess);
      expect(JSON.parse(cold.stdout)).toEqual(JSON.parse(JSON.stringify({ ...inProcess, exitCode })));
    } finally {
      await repo.close();
    }
  });
});
