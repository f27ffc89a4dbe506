/**
 * Builders for ledger records in tests: signing keys with roles, validity windows and revocation; the trust root
 * and policy files that name them; the digests of content; and signed verdict and review note lines.
 *
 * Typical use:
 *   const alice = testKey({ name: 'alice', roles: ['delegator'] });
 *   const trustRoot = trustRootOf([alice]);
 *   const file = subjectOf('src/a.ts', 'export const a = 1;\n');
 *   const line = verdictLine(alice, [file]);               // UNIT_PASSED for TEST_REPOSITORY_ID
 *   writeGovernance(workTree, testPolicy({ protect: ['src/**'] }), [alice]);
 *
 * Everything is real: keys are generated Ed25519 keys, lines are signed with the project's own signStatement,
 * and subjectOf computes the same git blob id `git hash-object` does (SHA-1 repositories).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  DEFAULT_KEYS_DIR,
  POLICY_PATH,
  type Policy,
  parsePolicy,
  policyText,
} from '../../packages/core/src/policy.js';
import { signStatement } from '../../packages/core/src/recording.js';
import { generateSigningKey, type SigningKey } from '../../packages/core/src/signing-key.js';
import {
  type ReviewPredicate,
  reviewStatement,
  type Statement,
  type SubjectFile,
  type VerdictName,
  type VerdictPredicate,
  verdictStatement,
} from '../../packages/core/src/statement.js';
import {
  type KeyFile,
  keyFileText,
  parseTrustRoot,
  type Role,
  type TrustRoot,
} from '../../packages/core/src/trust-root.js';

/** The repository id testPolicy() writes and the line builders sign for, unless told otherwise. */
export const TEST_REPOSITORY_ID = 'test-repository-0001';
/** A fixed record time inside every default validity window. */
export const TEST_CREATED_AT = '2026-03-01T12:00:00.000Z';

export interface KeySpec {
  name: string;
  roles: Role[];
  email?: string;
  /** RFC 3339 UTC, as a key file carries it. */
  notBefore?: string;
  notAfter?: string;
  revoked?: string;
}

/** A generated key pair and the trust-root key file that registers its public half. */
export interface TestKey {
  readonly name: string;
  readonly signer: SigningKey;
  readonly keyFile: KeyFile;
}

export function testKey(spec: KeySpec): TestKey {
  const signer = generateSigningKey();
  const keyFile: KeyFile = {
    name: spec.name,
    email: spec.email ?? `${spec.name}@example.com`,
    publicKey: signer.publicKey.base64,
    keyid: signer.publicKey.keyid,
    roles: spec.roles,
    ...(spec.notBefore !== undefined && { notBefore: spec.notBefore }),
    ...(spec.notAfter !== undefined && { notAfter: spec.notAfter }),
    ...(spec.revoked !== undefined && { revoked: spec.revoked }),
  };
  return { name: spec.name, signer, keyFile };
}

/** The key files of a keys directory (`<keysDir>/<name>.json` → text), as committed in a repository. */
export function keyFilesOf(
  keys: readonly TestKey[],
  keysDir = DEFAULT_KEYS_DIR,
): Array<{ path: string; text: string }> {
  return keys.map((k) => ({ path: `${keysDir}/${k.name}.json`, text: keyFileText(k.keyFile) }));
}

/** The trust root those key files make, parsed by the project's own parser. */
export function trustRootOf(keys: readonly TestKey[], keysDir = DEFAULT_KEYS_DIR): TrustRoot {
  return parseTrustRoot(keyFilesOf(keys, keysDir));
}

/** A valid policy for TEST_REPOSITORY_ID, defaults filled in by the project's own parser. */
export function testPolicy(overrides: Partial<Policy> = {}): Policy {
  return parsePolicy(JSON.stringify({ version: 1, repositoryId: TEST_REPOSITORY_ID, ...overrides }));
}

/** Writes the policy file and the key files into a work tree (nothing is staged or committed). */
export function writeGovernance(workTree: string, policy: Policy, keys: readonly TestKey[]): void {
  const files = [{ path: POLICY_PATH, text: policyText(policy) }, ...keyFilesOf(keys, policy.keysDir)];
  for (const file of files) {
    const target = path.join(workTree, file.path);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, file.text);
  }
}

/** The subject of `content` at `path`: its SHA-256 and its git blob id (SHA-1 object format). */
export function subjectOf(filePath: string, content: string | Buffer): SubjectFile {
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  const gitBlob = createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
  return { path: filePath, sha256: createHash('sha256').update(bytes).digest('hex'), gitBlob };
}

export interface RecordOptions {
  repositoryId?: string;
  createdAt?: string;
}

export function testVerdictStatement(
  files: readonly SubjectFile[],
  opts: RecordOptions & { verdict?: VerdictName } = {},
): Statement<VerdictPredicate> {
  return verdictStatement([...files], {
    verdict: opts.verdict ?? 'UNIT_PASSED',
    repository: { id: opts.repositoryId ?? TEST_REPOSITORY_ID },
    createdAt: opts.createdAt ?? TEST_CREATED_AT,
  });
}

export function testReviewStatement(
  reviewer: TestKey,
  files: readonly SubjectFile[],
  opts: RecordOptions & { decision?: 'approve' | 'reject' } = {},
): Statement<ReviewPredicate> {
  return reviewStatement([...files], {
    decision: opts.decision ?? 'approve',
    reviewer: { name: reviewer.keyFile.name, email: reviewer.keyFile.email },
    repository: { id: opts.repositoryId ?? TEST_REPOSITORY_ID },
    createdAt: opts.createdAt ?? TEST_CREATED_AT,
  });
}

/** The note line of `statement` signed by `key`. */
export function signedLine(key: TestKey, statement: Statement<object>): string {
  return signStatement(statement, key.signer).line;
}

/** A signed verdict line (default UNIT_PASSED, TEST_REPOSITORY_ID, TEST_CREATED_AT). */
export function verdictLine(
  key: TestKey,
  files: readonly SubjectFile[],
  opts: RecordOptions & { verdict?: VerdictName } = {},
): string {
  return signedLine(key, testVerdictStatement(files, opts));
}

/** A signed review line by `key` as reviewer (default approve). */
export function reviewLine(
  key: TestKey,
  files: readonly SubjectFile[],
  opts: RecordOptions & { decision?: 'approve' | 'reject' } = {},
): string {
  return signedLine(key, testReviewStatement(key, files, opts));
}
