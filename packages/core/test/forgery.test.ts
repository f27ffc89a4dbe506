// The forgery matrix: a real repository with a real ledger, a policy and a trust root, one genuinely promoted
// file (the control), and one file per forgery whose only record is that forgery. Every forgery must leave its
// file unpromoted, and the refusal must say why. Each forgery is also paired with its honest counterpart (what
// the forger wanted the ledger to say, signed properly), judged by the same rule, which does promote.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanGitEnv, makeTempRepo, type TempRepo } from '../../../test/support/git-repo.js';
import {
  reviewLine,
  signedLine,
  subjectOf,
  type TestKey,
  testKey,
  testPolicy,
  testReviewStatement,
  testVerdictStatement,
  trustRootOf,
  verdictLine,
  writeGovernance,
} from '../../../test/support/records.js';
import { canonicalize } from '../src/canonical-json.js';
import { type CheckReport, checkRevision, checkWorktreePaths, reportExitCode } from '../src/checks.js';
import { IN_TOTO_PAYLOAD_TYPE, pae } from '../src/dsse.js';
import { judgeLines } from '../src/judge.js';
import { promotionOf, REASONS } from '../src/promotion.js';
import { Repository } from '../src/repository.js';
import type { SubjectFile } from '../src/statement.js';

const L = 2n ** 252n + 27742317777372353535851937790883648493n;

const alice = testKey({ name: 'alice', roles: ['delegator'] });
const rita = testKey({ name: 'rita', roles: ['reviewer'] });
const revoked = testKey({ name: 'revoked', roles: ['delegator'], revoked: '2026-06-01T00:00:00Z' });
const expired = testKey({ name: 'expired', roles: ['delegator'], notAfter: '2026-02-01T00:00:00Z' });
const future = testKey({ name: 'future', roles: ['delegator'], notBefore: '2027-01-01T00:00:00Z' });
const mallory = testKey({ name: 'mallory', roles: ['delegator', 'reviewer'] });
const trusted = [alice, rita, revoked, expired, future];
const policy = testPolicy({ protect: ['src/**'] });
const governance = { policy, trustRoot: trustRootOf(trusted), source: 'test' };

// ---- line surgery: what a forger can do to a note line without the private key ----

interface EnvelopeJson {
  payloadType: string;
  payload: string;
  signatures: Array<{ keyid: string; sig: string }>;
}

function envelopeOf(line: string): EnvelopeJson {
  return JSON.parse(line) as EnvelopeJson;
}

/** The same line with its signature bytes changed (the line stays canonical). */
function withSignature(line: string, change: (sig: Buffer) => Buffer): string {
  const envelope = envelopeOf(line);
  const [first] = envelope.signatures;
  const sig = change(Buffer.from(first!.sig, 'base64')).toString('base64');
  return canonicalize({ ...envelope, signatures: [{ ...first!, sig }] });
}

/** The same line (same signature) carrying another payload. */
function withPayload(line: string, body: string): string {
  return canonicalize({ ...envelopeOf(line), payload: Buffer.from(body, 'utf8').toString('base64') });
}

/** A line whose signature over arbitrary payload bytes is genuine: the key's owner signed exactly these bytes. */
function signedBody(key: TestKey, body: string): string {
  const bytes = Buffer.from(body, 'utf8');
  const sig = Buffer.from(key.signer.sign(pae(IN_TOTO_PAYLOAD_TYPE, bytes))).toString('base64');
  return canonicalize({
    payloadType: IN_TOTO_PAYLOAD_TYPE,
    payload: bytes.toString('base64'),
    signatures: [{ keyid: key.signer.publicKey.keyid, sig }],
  });
}

function payloadOf(line: string): string {
  return Buffer.from(envelopeOf(line).payload, 'base64').toString('utf8');
}

/** S' = S + L: the same point equation, a second encoding of one signature (malleability). */
function addL(sig: Buffer): Buffer {
  const s = BigInt(`0x${Buffer.from(sig.subarray(32)).reverse().toString('hex')}`) + L;
  const le = Buffer.from(s.toString(16).padStart(64, '0'), 'hex').reverse();
  return Buffer.concat([sig.subarray(0, 32), le]);
}

// ---- the matrix ----

interface Forgery {
  name: string;
  /** The file whose blob the forged line is written on. */
  file: SubjectFile;
  forged: string;
  /** The honest counterpart: what the forger wanted, properly signed by a key that may sign it. */
  honest: string;
  reason: string | RegExp;
}

const content = (name: string) => `export const forged = ${JSON.stringify(name)};\n`;

function forgeries(): Forgery[] {
  const list: Forgery[] = [];
  const add = (name: string, make: (file: SubjectFile) => Omit<Forgery, 'name' | 'file'>) => {
    const file = subjectOf(`src/${name}.ts`, content(name));
    list.push({ name, file, ...make(file) });
  };
  const doesNotCount = (why: string) => `the record on it does not count: ${why}`;

  add('payload-byte', (file) => {
    // A genuine UNIT_FAILED verdict turned into UNIT_PASSED: same length, one word changed, signature kept.
    const failed = verdictLine(alice, [file], { verdict: 'UNIT_FAILED' });
    const passedBody = payloadOf(failed).replace('"UNIT_FAILED"', '"UNIT_PASSED"');
    return {
      forged: withPayload(failed, passedBody),
      honest: verdictLine(alice, [file]),
      reason: doesNotCount('the signature by alice does not verify'),
    };
  });
  add('signature-byte', (file) => {
    const line = verdictLine(alice, [file]);
    return {
      forged: withSignature(line, (sig) => {
        const copy = Buffer.from(sig);
        copy[40]! ^= 0x01;
        return copy;
      }),
      honest: line,
      reason: doesNotCount('the signature by alice does not verify'),
    };
  });
  add('signature-s-plus-l', (file) => {
    const line = verdictLine(alice, [file]);
    return {
      forged: withSignature(line, addL),
      honest: line,
      reason: doesNotCount('the signature by alice does not verify'),
    };
  });
  add('untrusted-key', (file) => ({
    forged: verdictLine(mallory, [file]),
    honest: verdictLine(alice, [file]),
    reason: doesNotCount(
      `signed by a key that is not in the trust root (keyid ${mallory.signer.publicKey.keyid.slice(0, 12)})`,
    ),
  }));
  add('untrusted-key-trusted-keyid', (file) => {
    // The keyid is only a hint: naming alice's key does not make mallory's signature alice's.
    const line = verdictLine(mallory, [file]);
    const envelope = envelopeOf(line);
    const forged = canonicalize({
      ...envelope,
      signatures: [{ keyid: alice.signer.publicKey.keyid, sig: envelope.signatures[0]!.sig }],
    });
    return {
      forged,
      honest: verdictLine(alice, [file]),
      reason: doesNotCount('the signature by alice does not verify'),
    };
  });
  add('reviewer-signs-verdict', (file) => ({
    forged: verdictLine(rita, [file]),
    honest: verdictLine(alice, [file]),
    reason: doesNotCount('signer rita does not have the delegator role'),
  }));
  add('delegator-signs-review', (file) => ({
    forged: reviewLine(alice, [file]),
    honest: reviewLine(rita, [file]),
    reason: doesNotCount('signer alice does not have the reviewer role'),
  }));
  add('revoked-key', (file) => ({
    // Dated before the revocation: createdAt is the signer's own claim, so it cannot save a revoked key.
    forged: verdictLine(revoked, [file], { createdAt: '2026-03-01T00:00:00Z' }),
    honest: verdictLine(alice, [file], { createdAt: '2026-03-01T00:00:00Z' }),
    reason: doesNotCount("signer revoked's key was revoked"),
  }));
  add('expired-key', (file) => ({
    forged: verdictLine(expired, [file], { createdAt: '2026-03-01T00:00:00Z' }),
    honest: verdictLine(expired, [file], { createdAt: '2026-01-15T00:00:00Z' }),
    reason: doesNotCount("signer expired's key had expired when the record was made"),
  }));
  add('not-yet-valid-key', (file) => ({
    forged: verdictLine(future, [file], { createdAt: '2026-03-01T00:00:00Z' }),
    honest: verdictLine(future, [file], { createdAt: '2027-03-01T00:00:00Z' }),
    reason: doesNotCount("signer future's key was not yet valid when the record was made"),
  }));
  add('non-canonical-payload', (file) => {
    // Genuinely signed by alice, but the payload is not the JCS of itself (keys in insertion order).
    const statement = testVerdictStatement([file]);
    return {
      forged: signedBody(alice, JSON.stringify(statement)),
      honest: signedBody(alice, canonicalize(statement)),
      reason: 'the line on it is not a valid record: payload is not canonical JSON (RFC 8785)',
    };
  });
  add('duplicate-key-payload', (file) => {
    // Genuinely signed; a lenient parser would read the last "verdict" and promote it.
    const body = canonicalize(testVerdictStatement([file], { verdict: 'UNIT_FAILED' })).replace(
      '"verdict":"UNIT_FAILED"',
      '"verdict":"UNIT_FAILED","verdict":"UNIT_PASSED"',
    );
    expect((JSON.parse(body) as { predicate: { verdict: string } }).predicate.verdict).toBe('UNIT_PASSED');
    return {
      forged: signedBody(alice, body),
      honest: verdictLine(alice, [file]),
      reason: /^the line on it is not a valid record: payload is not strict JSON \(.*duplicate key "verdict"/,
    };
  });
  add('another-repository', (file) => ({
    forged: verdictLine(alice, [file], { repositoryId: 'some-other-repository' }),
    honest: verdictLine(alice, [file]),
    reason: doesNotCount('the record belongs to another repository'),
  }));
  add('replayed-on-other-content', (file) => {
    // A genuine verdict for another version of the same path, copied onto the note of the current blob.
    const earlierVersion = subjectOf(file.path, 'export const forged = "an earlier version";\n');
    return {
      forged: verdictLine(alice, [earlierVersion]),
      honest: verdictLine(alice, [file]),
      reason: 'the record on it names this path with another sha256 digest, so it is not about this content',
    };
  });
  add('wrong-git-blob', (file) => {
    const otherBlob = subjectOf(file.path, 'something else\n').gitBlob;
    return {
      forged: verdictLine(alice, [{ ...file, gitBlob: otherBlob }]),
      honest: verdictLine(alice, [file]),
      reason: 'the record on it names this path with another gitBlob digest, so it is not about this content',
    };
  });
  add('other-path', (file) => ({
    forged: verdictLine(alice, [{ ...file, path: 'src/elsewhere.ts' }]),
    honest: verdictLine(alice, [file]),
    reason: 'no verdict for this path (the same content is recorded as src/elsewhere.ts)',
  }));
  return list;
}

// ---- the repository ----

let repo: TempRepo;
let repository: Repository;
let matrix: Forgery[];
let worktreeReport: CheckReport;
const CONTROL_TEXT = 'export const control = true;\n';
const control = subjectOf('src/control.ts', CONTROL_TEXT);
const REVIEWED_TEXT = 'export const reviewed = true;\n';
const reviewed = subjectOf('src/reviewed.ts', REVIEWED_TEXT);

function resultFor(report: CheckReport, path: string) {
  const result = report.results.find((r) => r.path === path);
  if (!result) throw new Error(`no result for ${path}`);
  return result;
}

beforeAll(async () => {
  repo = makeTempRepo();
  writeGovernance(repo.dir, policy, trusted);
  matrix = forgeries();
  const files = [control, reviewed, ...matrix.map((f) => f.file)];
  repo.git(['add', '.delegate-git']);
  repo.commit({
    [control.path]: CONTROL_TEXT,
    [reviewed.path]: REVIEWED_TEXT,
    ...Object.fromEntries(matrix.map((f) => [f.file.path, content(f.name)])),
  });
  repository = await Repository.open(repo.dir, cleanGitEnv());
  await repository.ledger.append([
    { blob: control.gitBlob, lines: [verdictLine(alice, [control])] },
    { blob: reviewed.gitBlob, lines: [reviewLine(rita, [reviewed])] },
    ...matrix.map((f) => ({ blob: f.file.gitBlob, lines: [f.forged] })),
  ]);
  worktreeReport = await checkWorktreePaths(
    repository,
    repo.dir,
    files.map((f) => f.path),
  );
});

afterAll(async () => {
  await repository?.close();
  repo?.cleanup();
});

describe('the control: a genuine record promotes through the whole I/O path', () => {
  it('subjectOf computes the blob ids git computes', () => {
    expect(repo.gitText(['rev-parse', `HEAD:${control.path}`])).toBe(control.gitBlob);
    for (const f of matrix) expect(repo.gitText(['rev-parse', `HEAD:${f.file.path}`])).toBe(f.file.gitBlob);
  });

  it('a UNIT_PASSED verdict by a delegator promotes its file in the work tree', () => {
    expect(resultFor(worktreeReport, control.path)).toMatchObject({
      promoted: true,
      governed: true,
      reason: REASONS.passed,
      by: ['alice'],
      blob: control.gitBlob,
      sha256: control.sha256,
    });
  });

  it('a reviewer approval promotes its file', () => {
    expect(resultFor(worktreeReport, reviewed.path)).toMatchObject({
      promoted: true,
      reason: 'approved by rita and unchanged since',
    });
  });

  it('a report with only promoted files exits 0; with the forgeries it exits 1', async () => {
    const clean = await checkWorktreePaths(repository, repo.dir, [control.path, reviewed.path]);
    expect(reportExitCode(clean)).toBe(0);
    expect(reportExitCode(worktreeReport)).toBe(1);
  });

  it('changing the promoted file in the work tree unpromotes it: the content changed after the verdict', async () => {
    const target = path.join(repo.dir, control.path);
    fs.writeFileSync(target, 'export const control = false;\n');
    try {
      const report = await checkWorktreePaths(repository, repo.dir, [control.path]);
      expect(resultFor(report, control.path)).toMatchObject({
        promoted: false,
        reason: REASONS.changedAfterVerdict,
      });
    } finally {
      fs.writeFileSync(target, CONTROL_TEXT);
    }
  });
});

/** Every forgery the issue lists; the matrix must build exactly these, and each is judged below. */
const FORGERIES = [
  'payload-byte',
  'signature-byte',
  'signature-s-plus-l',
  'untrusted-key',
  'untrusted-key-trusted-keyid',
  'reviewer-signs-verdict',
  'delegator-signs-review',
  'revoked-key',
  'expired-key',
  'not-yet-valid-key',
  'non-canonical-payload',
  'duplicate-key-payload',
  'another-repository',
  'replayed-on-other-content',
  'wrong-git-blob',
  'other-path',
];

describe('each forgery in the ledger leaves its file unpromoted, and says why', () => {
  it('covers every forgery the issue lists', () => {
    expect(matrix.map((f) => f.name)).toEqual(FORGERIES);
  });

  it.each(FORGERIES)('%s', (name) => {
    const forgery = matrix.find((f) => f.name === name)!;
    // Control: the honest counterpart, judged by the same rule on the same content, promotes (judged by a clock past
    // its date: the not-yet-valid key's honest record is dated in 2027, and one dated ahead counts for nothing).
    const rules = { ...policy, now: Date.parse('2027-06-01T00:00:00Z') };
    const honest = promotionOf(forgery.file, judgeLines([forgery.honest], { governance }), rules);
    expect(honest).toMatchObject({ promoted: true });
    // The forgery, read back from the real ledger by the work-tree check, does not.
    const result = resultFor(worktreeReport, forgery.file.path);
    expect(result.governed).toBe(true);
    expect(result.promoted).toBe(false);
    if (typeof forgery.reason === 'string') expect(result.reason).toBe(forgery.reason);
    else expect(result.reason).toMatch(forgery.reason);
  });

  it('the S+L signature is the same signature re-encoded (so only the S < L rule refuses it)', () => {
    const f = matrix.find((x) => x.name === 'signature-s-plus-l')!;
    const sig = Buffer.from(envelopeOf(f.forged).signatures[0]!.sig, 'base64');
    const original = Buffer.from(envelopeOf(f.honest).signatures[0]!.sig, 'base64');
    expect(sig).toHaveLength(64);
    expect(sig.subarray(0, 32)).toEqual(original.subarray(0, 32));
    const s = (b: Buffer) => BigInt(`0x${Buffer.from(b.subarray(32)).reverse().toString('hex')}`);
    expect(s(sig) - s(original)).toBe(L);
  });

  it('a commit of the same files is judged the same way by checkRevision', async () => {
    const report = await checkRevision(repository, 'HEAD');
    expect(resultFor(report, control.path).promoted).toBe(true);
    for (const f of matrix) {
      const fromWorktree = resultFor(worktreeReport, f.file.path);
      expect(resultFor(report, f.file.path)).toMatchObject({ promoted: false, reason: fromWorktree.reason });
    }
  });
});

describe('the governance files need a reviewer, whatever a unit says', () => {
  it('a UNIT_PASSED verdict does not promote the policy file; a reviewer approval of a key file does', async () => {
    const governanceFile = (p: string) => subjectOf(p, fs.readFileSync(path.join(repo.dir, p)));
    const policyFile = governanceFile('.delegate-git/policy.json');
    const keyFile = governanceFile('.delegate-git/keys/rita.json');
    expect(repo.gitText(['rev-parse', 'HEAD:.delegate-git/policy.json'])).toBe(policyFile.gitBlob);
    await repository.ledger.append([
      { blob: policyFile.gitBlob, lines: [verdictLine(alice, [policyFile])] },
      { blob: keyFile.gitBlob, lines: [signedLine(rita, testReviewStatement(rita, [keyFile]))] },
    ]);
    const report = await checkWorktreePaths(repository, repo.dir, [policyFile.path, keyFile.path]);
    expect(resultFor(report, policyFile.path)).toMatchObject({ promoted: false });
    expect(resultFor(report, policyFile.path).reason).toMatch(
      /a unit passed it, but .* requires 1 reviewer approval/,
    );
    expect(resultFor(report, keyFile.path)).toMatchObject({
      promoted: true,
      reason: 'approved by rita and unchanged since',
    });
  });
});
