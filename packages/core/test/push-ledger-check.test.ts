/**
 * The server gate's ledger check gives each new line the same problem whether it judges the line alone (lineProblem,
 * with judgeLine) or reads it from the facts of the note checked once for the ledger and the pushed files
 * (problemOf over checkPushedNote): valid lines, forgeries, misplaced and mismatched records alike.
 */
import { describe, expect, it } from 'vitest';
import {
  reviewLine,
  signedLine,
  subjectOf,
  testKey,
  testPolicy,
  testVerdictStatement,
  trustRootOf,
  verdictLine,
} from '../../../test/support/records.js';
import { canonicalize } from '../src/canonical-json.js';
import type { Governance } from '../src/governance.js';
import { lineProblem, problemOf } from '../src/push-ledger-check.js';
import { checkPushedNote } from '../src/pushed-note-check.js';
import { MISPLACED } from '../src/record.js';

const alice = testKey({ name: 'alice', roles: ['delegator'] });
const rita = testKey({ name: 'rita', roles: ['reviewer'] });
const revoked = testKey({ name: 'revoked', roles: ['delegator'], revoked: '2026-01-01T00:00:00Z' });
const mallory = testKey({ name: 'mallory', roles: ['delegator', 'reviewer'] });
const governance: Governance = {
  policy: testPolicy({ protect: ['src/**'] }),
  trustRoot: trustRootOf([alice, rita, revoked]),
  source: 'test',
};

const file = subjectOf('src/a.ts', 'export const a = 1;\n');
const other = subjectOf('src/b.ts', 'export const b = 2;\n');
const valid = verdictLine(alice, [file]);

function flipSignature(line: string): string {
  const envelope = JSON.parse(line) as { signatures: Array<{ keyid: string; sig: string }> };
  const sig = Buffer.from(envelope.signatures[0]!.sig, 'base64');
  sig[5] = sig[5]! ^ 1;
  return canonicalize({
    ...envelope,
    signatures: [{ ...envelope.signatures[0]!, sig: sig.toString('base64') }],
  });
}

function withPayloadByteChanged(line: string): string {
  const envelope = JSON.parse(line) as { payload: string };
  const payload = Buffer.from(envelope.payload, 'base64')
    .toString('utf8')
    .replace('UNIT_PASSED', 'UNIT_PASSEE');
  return canonicalize({ ...envelope, payload: Buffer.from(payload).toString('base64') });
}

const cases: Array<{ name: string; line: string; expected: string | RegExp | null; digest?: string | null }> =
  [
    { name: 'a valid verdict', line: valid, expected: null },
    { name: 'a valid review', line: reviewLine(rita, [file]), expected: null },
    { name: 'a record about this blob and another', line: verdictLine(alice, [file, other]), expected: null },
    { name: 'a flipped signature bit', line: flipSignature(valid), expected: /does not verify/ },
    {
      name: 'a payload byte changed',
      line: withPayloadByteChanged(valid),
      expected: /not a valid record|does not verify/,
    },
    {
      name: 'a key outside the trust root',
      line: verdictLine(mallory, [file]),
      expected: /not in the trust root/,
    },
    { name: 'a revoked key', line: verdictLine(revoked, [file]), expected: /revoked/ },
    { name: 'a review by a delegator', line: reviewLine(alice, [file]), expected: /reviewer|role/ },
    {
      name: 'another repository',
      line: verdictLine(alice, [file], { repositoryId: 'elsewhere' }),
      expected: /another repository/,
    },
    { name: 'a record about another blob only', line: verdictLine(alice, [other]), expected: MISPLACED },
    {
      name: 'another sha256 for this blob',
      line: signedLine(alice, testVerdictStatement([{ ...file, sha256: other.sha256 }])),
      expected: 'the record names a sha256 that does not match the blob',
    },
    {
      name: 'another sha256, the blob not here',
      line: signedLine(alice, testVerdictStatement([{ ...file, sha256: other.sha256 }])),
      expected: null,
      digest: null,
    },
    { name: 'not JSON', line: 'not a record', expected: /^not a valid record: / },
    { name: 'JSON that is not canonical', line: valid.replace('{', '{ '), expected: /^not a valid record: / },
  ];

describe('a new line’s problem, judged alone or read from its checked note', () => {
  it.each(cases)('$name', async ({ line, expected, digest }) => {
    const sha256 = digest === undefined ? file.sha256 : digest;
    const alone = lineProblem(governance, file.gitBlob, sha256, line);
    const { examined } = await checkPushedNote(governance, file.gitBlob, [line], null);
    expect(problemOf(examined.get(line), file.gitBlob, sha256)).toBe(alone);
    if (expected === null) expect(alone).toBeNull();
    else if (typeof expected === 'string') expect(alone).toBe(expected);
    else expect(alone).toMatch(expected);
  });

  it('reads every line of a note of several, and promotes the pushed file the note’s records promote', async () => {
    const lines = [valid, verdictLine(mallory, [file]), 'not a record'].sort();
    const checked = await checkPushedNote(governance, file.gitBlob, lines, [
      {
        candidate: { path: file.path, sha256: file.sha256, gitBlob: file.gitBlob },
        rules: governance.policy,
      },
    ]);
    for (const line of lines)
      expect(problemOf(checked.examined.get(line), file.gitBlob, file.sha256)).toBe(
        lineProblem(governance, file.gitBlob, file.sha256, line),
      );
    expect([...checked.promoted.keys()]).toEqual([file.path]);
    expect(checked.promoted.get(file.path)?.by).toEqual(['alice']);
  });

  it('control: a file the note’s records do not promote is left to judgeFiles (no decision)', async () => {
    const checked = await checkPushedNote(
      governance,
      file.gitBlob,
      [verdictLine(mallory, [file])],
      [
        {
          candidate: { path: file.path, sha256: file.sha256, gitBlob: file.gitBlob },
          rules: governance.policy,
        },
      ],
    );
    expect(checked.promoted.size).toBe(0);
  });
});
