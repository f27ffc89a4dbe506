import { describe, expect, it } from 'vitest';
import {
  signedLine,
  subjectOf,
  TEST_CREATED_AT,
  TEST_REPOSITORY_ID,
  testKey,
  testReviewStatement,
  testVerdictStatement,
  trustRootOf,
  verdictLine,
} from '../../../test/support/records.js';
import { canonicalize } from '../src/canonical-json.js';
import type { Ed25519Backend } from '../src/ed25519.js';
import {
  decodeRecord,
  isRepositoryPath,
  type LedgerRecord,
  verifyRecord,
  verifyRecordSoon,
} from '../src/record.js';
import { parseRfc3339Utc, type Statement } from '../src/statement.js';

const alice = testKey({ name: 'alice', roles: ['delegator'] });
const rita = testKey({ name: 'rita', roles: ['reviewer'] });
const both = testKey({ name: 'both', roles: ['delegator', 'reviewer'] });
const old = testKey({ name: 'old', roles: ['delegator'], notAfter: '2026-01-01T00:00:00Z' });
const future = testKey({ name: 'future', roles: ['delegator'], notBefore: '2027-01-01T00:00:00Z' });
const revoked = testKey({ name: 'revoked', roles: ['delegator'], revoked: '2026-12-01T00:00:00Z' });
const mallory = testKey({ name: 'mallory', roles: ['delegator', 'reviewer'] });
const trustRoot = trustRootOf([alice, rita, both, old, future, revoked]);
const file = subjectOf('src/a.ts', 'export const a = 1;\n');

function decode(line: string): LedgerRecord {
  const decoded = decodeRecord(line);
  if (!decoded.ok) throw new Error(`expected a record: ${decoded.reason}`);
  return decoded.record;
}

/** A statement as plain mutable JSON, to break one field at a time. */
interface StatementJson {
  _type: unknown;
  subject: Array<{ name: unknown; digest?: { sha256: unknown; gitBlob: unknown } }>;
  predicateType: unknown;
  predicate?: { repository: unknown; createdAt: unknown; verdict: unknown; [field: string]: unknown };
}

/** A statement with one field changed, signed by alice (signature valid: only the shape is judged). */
function verdictWith(change: (statement: StatementJson) => void): string {
  const statement = JSON.parse(JSON.stringify(testVerdictStatement([file]))) as StatementJson;
  change(statement);
  return signedLine(alice, statement as unknown as Statement<object>);
}

function reasonOf(line: string): string {
  const decoded = decodeRecord(line);
  return decoded.ok ? 'decoded' : decoded.reason;
}

describe('decodeRecord', () => {
  it('reads a verdict: kind, verdict, subjects, repository and time', () => {
    const record = decode(verdictLine(alice, [file], { verdict: 'UNIT_FLAKY' }));
    expect(record).toMatchObject({
      kind: 'verdict',
      verdict: 'UNIT_FLAKY',
      subjects: [file],
      repositoryId: TEST_REPOSITORY_ID,
      createdAt: Date.parse(TEST_CREATED_AT),
      createdAtText: TEST_CREATED_AT,
    });
  });

  it('reads a review: kind and decision, every subject', () => {
    const other = subjectOf('docs/b.md', '# b\n');
    const record = decode(signedLine(rita, testReviewStatement(rita, [file, other], { decision: 'reject' })));
    expect(record).toMatchObject({ kind: 'review', decision: 'reject', subjects: [file, other] });
  });

  it('passes on the envelope refusals', () => {
    const line = verdictLine(alice, [file]);
    const envelope = JSON.parse(line);
    expect(reasonOf(canonicalize({ ...envelope, payloadType: 'text/plain' }))).toBe(
      'unknown payloadType "text/plain"',
    );
  });

  const refusals: Array<[string, (s: StatementJson) => void, string]> = [
    [
      'not an in-toto statement',
      (s) => (s._type = 'https://in-toto.io/Statement/v0.1'),
      'the payload is not an in-toto Statement v1',
    ],
    ['no subject', (s) => (s.subject = []), 'the statement has no subject'],
    ['a subject without digest', (s) => delete s.subject[0]!.digest, 'malformed subject'],
    [
      'an uppercase sha256',
      (s) => (s.subject[0]!.digest!.sha256 = file.sha256.toUpperCase()),
      'subject src/a.ts has no sha256 digest',
    ],
    [
      'a short gitBlob',
      (s) => (s.subject[0]!.digest!.gitBlob = file.gitBlob.slice(0, 39)),
      'subject src/a.ts has no gitBlob digest',
    ],
    [
      'an absolute subject name',
      (s) => (s.subject[0]!.name = '/etc/passwd'),
      'subject name "/etc/passwd" is not a repository path',
    ],
    [
      'a subject name with ..',
      (s) => (s.subject[0]!.name = 'src/../a.ts'),
      'subject name "src/../a.ts" is not a repository path',
    ],
    ['no predicate', (s) => delete s.predicate, 'the statement has no predicate'],
    ['no repository id', (s) => (s.predicate!.repository = {}), 'the predicate has no repository.id'],
    [
      'a local time',
      (s) => (s.predicate!.createdAt = '2026-03-01T12:00:00+01:00'),
      'the predicate has no RFC 3339 UTC createdAt',
    ],
    [
      'a loose date',
      (s) => (s.predicate!.createdAt = 'March 1, 2026 Z'),
      'the predicate has no RFC 3339 UTC createdAt',
    ],
    [
      'a date that does not exist',
      (s) => (s.predicate!.createdAt = '2026-02-30T00:00:00Z'),
      'the predicate has no RFC 3339 UTC createdAt',
    ],
    [
      'a numeric time',
      (s) => (s.predicate!.createdAt = 1772366400000),
      'the predicate has no RFC 3339 UTC createdAt',
    ],
    ['an unknown verdict', (s) => (s.predicate!.verdict = 'PASSED'), 'unknown verdict "PASSED"'],
    [
      // The line's author chose the length: the reason, printed by every view of the ledger, quotes a part.
      'an unknown verdict of 60,000 characters',
      (s) => (s.predicate!.verdict = 'X'.repeat(60_000)),
      `unknown verdict "${'X'.repeat(59)}... (60002 characters)`,
    ],
    [
      'an unknown predicate type',
      (s) => (s.predicateType = 'https://slsa.dev/provenance/v1'),
      'unknown predicateType "https://slsa.dev/provenance/v1"',
    ],
  ];

  it('control: the unchanged statement decodes', () => {
    expect(reasonOf(verdictWith(() => {}))).toBe('decoded');
  });

  it.each(refusals)('refuses %s', (_, change, reason) => {
    expect(reasonOf(verdictWith(change))).toBe(reason);
  });

  it('refuses a review with an unknown decision (control: approve decodes)', () => {
    const review = (decision: string) => {
      const statement = JSON.parse(JSON.stringify(testReviewStatement(rita, [file])));
      statement.predicate.decision = decision;
      return signedLine(rita, statement);
    };
    expect(reasonOf(review('approve'))).toBe('decoded');
    expect(reasonOf(review('lgtm'))).toBe('unknown review decision "lgtm"');
  });

  it('refuses a review that names no reviewer (control: a name and an email decode)', () => {
    const review = (reviewer: unknown) => {
      const statement = JSON.parse(JSON.stringify(testReviewStatement(rita, [file])));
      statement.predicate.reviewer = reviewer;
      if (reviewer === undefined) delete statement.predicate.reviewer;
      return signedLine(rita, statement);
    };
    expect(reasonOf(review({ name: 'rita', email: '' }))).toBe('decoded');
    for (const reviewer of [undefined, 42, 'rita', { name: 'rita' }, { email: 'rita@example.com' }])
      expect(reasonOf(review(reviewer)), JSON.stringify(reviewer)).toBe(
        'the review names no reviewer (an object with a name and an email)',
      );
  });

  it('keeps every field of the predicate it does not read (informative fields travel)', () => {
    const record = decode(
      verdictWith((s) => (s.predicate!.tool = { name: 'delegate-git', version: '0.1.0' })),
    );
    expect(record.predicate.tool).toEqual({ name: 'delegate-git', version: '0.1.0' });
  });
});

describe('verifyRecord', () => {
  /** verifyRecord with a back-end, or verifyRecordSoon ('pool': node:crypto on the thread pool). */
  const judge = async (
    line: string,
    way: Ed25519Backend | 'pool' = 'node',
    repositoryId = TEST_REPOSITORY_ID,
  ) => {
    const trust =
      way === 'pool'
        ? await verifyRecordSoon(decode(line), trustRoot, repositoryId)
        : verifyRecord(decode(line), trustRoot, repositoryId, way);
    return trust.ok ? `ok by ${trust.signer.name}` : trust.reason;
  };

  /** Replaces the one signature of a line, keeping the line canonical. */
  const withSignatures = (line: string, signatures: Array<{ keyid: string; sig: string }>) =>
    canonicalize({ ...JSON.parse(line), signatures });

  describe.each(['node', 'noble', 'pool'] as const)(
    'with the %s back-end (pool: verifyRecordSoon)',
    (backend) => {
      it('accepts a verdict by a delegator and a review by a reviewer', async () => {
        expect(await judge(verdictLine(alice, [file]), backend)).toBe('ok by alice');
        expect(await judge(signedLine(rita, testReviewStatement(rita, [file])), backend)).toBe('ok by rita');
        expect(await judge(verdictLine(both, [file]), backend)).toBe('ok by both');
        expect(await judge(signedLine(both, testReviewStatement(both, [file])), backend)).toBe('ok by both');
      });

      it('refuses a record made for another repository', async () => {
        expect(await judge(verdictLine(alice, [file], { repositoryId: 'another-repository' }), backend)).toBe(
          'the record belongs to another repository',
        );
        expect(await judge(verdictLine(alice, [file]), backend, 'another-repository')).toBe(
          'the record belongs to another repository',
        );
      });

      it('refuses a key that is not in the trust root', async () => {
        expect(await judge(verdictLine(mallory, [file]), backend)).toBe(
          `signed by a key that is not in the trust root (keyid ${mallory.signer.publicKey.keyid.slice(0, 12)})`,
        );
      });

      it('keyid is only a hint: a trusted keyid on a signature by another key does not verify', async () => {
        const forged = JSON.parse(verdictLine(mallory, [file]));
        const line = withSignatures(verdictLine(mallory, [file]), [
          { keyid: alice.signer.publicKey.keyid, sig: forged.signatures[0].sig },
        ]);
        expect(await judge(line, backend)).toBe('the signature by alice does not verify');
      });

      it('refuses a changed signature byte and a signature that is not strict base64', async () => {
        const line = verdictLine(alice, [file]);
        const { keyid, sig } = JSON.parse(line).signatures[0];
        const bytes = Buffer.from(sig, 'base64');
        bytes[10]! ^= 1;
        expect(await judge(withSignatures(line, [{ keyid, sig: bytes.toString('base64') }]), backend)).toBe(
          'the signature by alice does not verify',
        );
        expect(await judge(withSignatures(line, [{ keyid, sig: sig.replace(/=+$/, '') }]), backend)).toBe(
          'the signature by alice is not standard base64',
        );
        // The same 64 bytes written with padding bits set: other text, so no longer the signed record's.
        const padBits = `${sig.slice(0, -3)}${String.fromCharCode(sig.charCodeAt(sig.length - 3) + 1)}==`;
        expect(Buffer.from(padBits, 'base64')).toEqual(Buffer.from(sig, 'base64'));
        expect(await judge(withSignatures(line, [{ keyid, sig: padBits }]), backend)).toBe(
          'the signature by alice is not standard base64',
        );
        expect(await judge(withSignatures(line, [{ keyid, sig: sig.slice(0, 40) }]), backend)).toBe(
          'the signature by alice does not verify',
        );
      });

      it('refuses the wrong role: a reviewer signing a verdict, a delegator signing a review', async () => {
        expect(await judge(verdictLine(rita, [file]), backend)).toBe(
          'signer rita does not have the delegator role',
        );
        expect(await judge(signedLine(alice, testReviewStatement(alice, [file])), backend)).toBe(
          'signer alice does not have the reviewer role',
        );
      });

      it('takes who reviewed from the signing key, not from what the review names (a key renamed keeps its reviews)', async () => {
        const statement = testReviewStatement(rita, [file]);
        statement.predicate.reviewer = { name: 'mallory', email: 'mallory@example.com' };
        expect(await judge(signedLine(rita, statement), backend)).toBe('ok by rita');
      });

      it('refuses a revoked key even for a record dated before the revocation', async () => {
        expect(
          await judge(verdictLine(revoked, [file], { createdAt: '2026-01-01T00:00:00Z' }), backend),
        ).toBe("signer revoked's key was revoked");
      });

      it('refuses a record outside the key’s validity window, and accepts one inside it', async () => {
        expect(await judge(verdictLine(old, [file], { createdAt: '2025-12-31T23:59:59Z' }), backend)).toBe(
          'ok by old',
        );
        expect(
          await judge(verdictLine(old, [file], { createdAt: '2026-01-01T00:00:00.001Z' }), backend),
        ).toBe("signer old's key had expired when the record was made");
        expect(await judge(verdictLine(future, [file], { createdAt: '2027-01-01T00:00:00Z' }), backend)).toBe(
          'ok by future',
        );
        expect(
          await judge(verdictLine(future, [file], { createdAt: '2026-12-31T23:59:59.999Z' }), backend),
        ).toBe("signer future's key was not yet valid when the record was made");
      });

      it('refuses a record with more than one signature entry, though one counts (a copy anyone could make); with its own alone it counts', async () => {
        const line = verdictLine(alice, [file]);
        const good = JSON.parse(line).signatures[0];
        const stranger = JSON.parse(verdictLine(mallory, [file])).signatures[0];
        expect(await judge(line, backend)).toBe('ok by alice');
        for (const signatures of [
          [stranger, good],
          [good, good],
        ]) {
          const decoded = decodeRecord(withSignatures(line, signatures));
          expect(decoded.ok ? 'decoded' : decoded.reason).toMatch(/^2 signatures: /);
        }
        const bad = { ...good, sig: Buffer.alloc(64).toString('base64') };
        expect(await judge(withSignatures(line, [bad]), backend)).toBe(
          'the signature by alice does not verify',
        );
      });
    },
  );
});

describe('isRepositoryPath', () => {
  it.each(['a', 'src/a.ts', '.github/workflows/ci.yml', 'a b/c', 'dir/.hidden', 'é/ü'])('accepts %j', (p) => {
    expect(isRepositoryPath(p)).toBe(true);
  });
  it.each(['', '/a', 'a/', 'a//b', './a', 'a/./b', '../a', 'a/..', 'a\\b', 'a\0b'])('refuses %j', (p) => {
    expect(isRepositoryPath(p)).toBe(false);
  });
});

describe('parseRfc3339Utc', () => {
  it('reads UTC with Z, with or without a fraction', () => {
    expect(parseRfc3339Utc('2026-03-01T12:00:00Z')).toBe(Date.UTC(2026, 2, 1, 12));
    expect(parseRfc3339Utc('2026-03-01T12:00:00.5Z')).toBe(Date.UTC(2026, 2, 1, 12, 0, 0, 500));
    expect(parseRfc3339Utc('2026-03-01T12:00:00.123456789Z')).toBe(Date.UTC(2026, 2, 1, 12, 0, 0, 123));
    expect(parseRfc3339Utc('2024-02-29T23:59:59Z')).toBe(Date.UTC(2024, 1, 29, 23, 59, 59));
    expect(parseRfc3339Utc(new Date(Date.UTC(2026, 0, 2)).toISOString())).toBe(Date.UTC(2026, 0, 2));
  });

  it('reads the other forms RFC 3339 gives UTC as the same instant: lower case t and z, the offset +00:00 or -00:00', () => {
    const noon = Date.UTC(2026, 2, 1, 12);
    for (const text of [
      '2026-03-01T12:00:00+00:00',
      '2026-03-01T12:00:00-00:00',
      '2026-03-01t12:00:00z',
      '2026-03-01T12:00:00.000+00:00',
    ])
      expect(parseRfc3339Utc(text), text).toBe(noon);
  });

  it.each([
    '2026-03-01',
    '2026-03-01T12:00Z',
    '2026-03-01T12:00:00',
    '2026-03-01T12:00:00+01:00',
    '2026-03-01T12:00:00-05:00',
    '2026-03-01T12:00:00+0000',
    '2026-03-01T12:00:00Z+00:00',
    '2026-03-01 12:00:00Z',
    'March 1, 2026 Z',
    '2026-02-29T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-03-01T24:00:00Z',
    '2026-03-01T12:60:00Z',
    '2016-12-31T23:59:60Z',
    '+002026-03-01T12:00:00Z',
  ])('refuses %j', (text) => {
    expect(parseRfc3339Utc(text)).toBeNull();
  });
});
