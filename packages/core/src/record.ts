/**
 * A note line read as a record: decoded (shape only) and then judged against a trust root and repository id.
 * Only the fields the promotion rule reads are required (DESIGN 3.2): predicateType, subject, verdict or decision,
 * repository.id, createdAt, and the signature.
 */
import { quotedValue } from './canonical-json.js';
import {
  decodeBase64Strict,
  decodeEnvelopeLine,
  type Envelope,
  IN_TOTO_PAYLOAD_TYPE,
  isObject,
  pae,
} from './dsse.js';
import type { Ed25519Backend } from './ed25519.js';
import { shownPath, shownText } from './shown-path.js';
import {
  parseRfc3339Utc,
  REVIEW_PREDICATE,
  STATEMENT_TYPE,
  VERDICT_PREDICATE,
  VERDICTS,
  type VerdictName,
} from './statement.js';
import { keyRefusal, type Role, type TrustedKey, type TrustRoot } from './trust-root.js';

export interface RecordSubject {
  path: string;
  sha256: string;
  gitBlob: string;
}

interface RecordBase {
  line: string;
  envelope: Envelope;
  body: Buffer;
  subjects: RecordSubject[];
  repositoryId: string;
  createdAt: number;
  createdAtText: string;
  predicate: Record<string, unknown>;
}

export type LedgerRecord =
  | (RecordBase & { kind: 'verdict'; verdict: VerdictName })
  | (RecordBase & { kind: 'review'; decision: 'approve' | 'reject' });

export type DecodedRecord = { ok: true; record: LedgerRecord } | { ok: false; reason: string };

const HEX64 = /^[0-9a-f]{64}$/;
const GIT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** Decodes a note line into a record, refusing anything the promotion rule could not read unambiguously. */
export function decodeRecord(line: string): DecodedRecord {
  const decoded = decodeEnvelopeLine(line);
  if (!decoded.ok) return decoded;
  const st = decoded.statement;
  if (!isObject(st) || st._type !== STATEMENT_TYPE) return fail('the payload is not an in-toto Statement v1');
  if (!Array.isArray(st.subject) || st.subject.length === 0) return fail('the statement has no subject');
  const subjects: RecordSubject[] = [];
  for (const s of st.subject) {
    if (!isObject(s) || typeof s.name !== 'string' || !isObject(s.digest)) return fail('malformed subject');
    const { sha256, gitBlob } = s.digest;
    if (typeof sha256 !== 'string' || !HEX64.test(sha256))
      return fail(`subject ${shownPath(s.name)} has no sha256 digest`);
    if (typeof gitBlob !== 'string' || !GIT_ID.test(gitBlob))
      return fail(`subject ${shownPath(s.name)} has no gitBlob digest`);
    if (!isRepositoryPath(s.name))
      return fail(`subject name ${quotedValue(s.name)} is not a repository path`);
    subjects.push({ path: s.name, sha256, gitBlob });
  }
  const predicate = st.predicate;
  if (!isObject(predicate)) return fail('the statement has no predicate');
  const repository = predicate.repository;
  if (!isObject(repository) || typeof repository.id !== 'string')
    return fail('the predicate has no repository.id');
  const createdAtText = predicate.createdAt;
  const createdAt = typeof createdAtText === 'string' ? parseRfc3339Utc(createdAtText) : null;
  if (typeof createdAtText !== 'string' || createdAt === null) {
    return fail('the predicate has no RFC 3339 UTC createdAt');
  }
  const base = {
    line,
    envelope: decoded.envelope,
    body: decoded.body,
    subjects,
    repositoryId: repository.id,
    createdAt,
    createdAtText,
    predicate,
  };
  if (st.predicateType === VERDICT_PREDICATE) {
    const verdict = predicate.verdict;
    if (typeof verdict !== 'string' || !(VERDICTS as readonly string[]).includes(verdict)) {
      return fail(`unknown verdict ${quotedValue(verdict)}`);
    }
    return { ok: true, record: { ...base, kind: 'verdict', verdict: verdict as VerdictName } };
  }
  if (st.predicateType === REVIEW_PREDICATE) {
    const decision = predicate.decision;
    if (decision !== 'approve' && decision !== 'reject')
      return fail(`unknown review decision ${quotedValue(decision)}`);
    // Who reviewed is the key that signed (a key renamed later keeps its reviews); `reviewer` is what its holder
    // wrote of themselves, informative, but a review must carry it (DESIGN 3.2).
    const reviewer = predicate.reviewer;
    if (!isObject(reviewer) || typeof reviewer.name !== 'string' || typeof reviewer.email !== 'string')
      return fail('the review names no reviewer (an object with a name and an email)');
    return { ok: true, record: { ...base, kind: 'review', decision } };
  }
  return fail(`unknown predicateType ${quotedValue(st.predicateType)}`);
}

/** Why a line does not count on the note it is in: a record is valid only on the blob it judged. */
export const MISPLACED = 'the record does not name the blob it is attached to';

export type RecordTrust =
  | { ok: true; signer: TrustedKey }
  /** `verified`: the signature verifies under a key of the trust root that may not sign it now (revoked, say). */
  | { ok: false; reason: string; signer?: TrustedKey; verified?: true };

function roleFor(record: LedgerRecord): Role {
  return record.kind === 'verdict' ? 'delegator' : 'reviewer';
}

/**
 * Judges a decoded record: it must belong to this repository and carry a signature that verifies under a trusted
 * key allowed to sign it at its time. The keyid is only a hint to find the key; the signature decides.
 */
export function verifyRecord(
  record: LedgerRecord,
  trustRoot: TrustRoot,
  repositoryId: string,
  backend: Ed25519Backend = 'node',
): RecordTrust {
  if (record.repositoryId !== repositoryId) return OTHER_REPOSITORY;
  const s = signatureOf(record, trustRoot);
  const verifies =
    isCheckable(s) && s.key.publicKey.verify(pae(IN_TOTO_PAYLOAD_TYPE, record.body), s.signature, backend);
  return trustOf(record, s, verifies);
}

/**
 * verifyRecord's answer, with the signature checked on the thread pool (node:crypto), so the calling thread decodes
 * other records meanwhile: the server gate checks a push's new lines this way.
 */
export async function verifyRecordSoon(
  record: LedgerRecord,
  trustRoot: TrustRoot,
  repositoryId: string,
): Promise<RecordTrust> {
  if (record.repositoryId !== repositoryId) return OTHER_REPOSITORY;
  const s = signatureOf(record, trustRoot);
  const verifies =
    isCheckable(s) && (await s.key.publicKey.verifySoon(pae(IN_TOTO_PAYLOAD_TYPE, record.body), s.signature));
  return trustOf(record, s, verifies);
}

const OTHER_REPOSITORY: RecordTrust = { ok: false, reason: 'the record belongs to another repository' };

/** The record's signature: its trusted key (undefined: none has its keyid) and its bytes (null: not base64). */
interface RecordSignature {
  keyid: string;
  key: TrustedKey | undefined;
  signature: Buffer | null;
}

type CheckableSignature = RecordSignature & { key: TrustedKey; signature: Buffer };

function isCheckable(s: RecordSignature): s is CheckableSignature {
  return s.key !== undefined && s.signature !== null;
}

/** A record carries exactly one signature: decoding refuses a line with none or more (dsse.ts readEnvelope). */
function signatureOf(record: LedgerRecord, trustRoot: TrustRoot): RecordSignature {
  const { keyid, sig } = record.envelope.signatures[0]!;
  return { keyid, key: trustRoot.byKeyid(keyid), signature: decodeBase64Strict(sig) };
}

/** Whether the signature (`verifies`: it verifies under its key) is by a key allowed to sign the record now. */
function trustOf(record: LedgerRecord, s: RecordSignature, verifies: boolean): RecordTrust {
  if (!s.key)
    return {
      ok: false,
      reason: `signed by a key that is not in the trust root (keyid ${shownText(s.keyid.slice(0, 12))})`,
    };
  if (!verifies) {
    const flaw = s.signature === null ? 'is not standard base64' : 'does not verify';
    return { ok: false, reason: `the signature by ${s.key.name} ${flaw}`, signer: s.key };
  }
  const problem = keyRefusal(s.key, roleFor(record), record.createdAt);
  if (problem) return { ok: false, reason: problem, signer: s.key, verified: true };
  return { ok: true, signer: s.key };
}

export function isRepositoryPath(path: string): boolean {
  return (
    path.length > 0 &&
    !path.startsWith('/') &&
    !path.includes('\\') &&
    !path.includes('\0') &&
    path.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..')
  );
}

function fail(reason: string): { ok: false; reason: string } {
  return { ok: false, reason };
}

export type LineJudgement =
  | { ok: true; record: LedgerRecord; trust: RecordTrust }
  | { ok: false; reason: string };

// Within one run the same line is often judged more than once (the push's ledger check, then the pushed files;
// a record about several files, once per file). Its answer depends only on its bytes and the trust root.
const judgedLines = new WeakMap<TrustRoot, Map<string, LineJudgement>>();

/** decodeRecord + verifyRecord, remembered per trust root for the life of the process. */
export function judgeLine(
  line: string,
  trustRoot: TrustRoot,
  repositoryId: string,
  backend: Ed25519Backend = 'node',
): LineJudgement {
  let memo = judgedLines.get(trustRoot);
  if (!memo) {
    memo = new Map();
    judgedLines.set(trustRoot, memo);
  }
  const key = `${repositoryId}\n${backend}\n${line}`;
  const known = memo.get(key);
  if (known) return known;
  const decoded = decodeRecord(line);
  const judged: LineJudgement = decoded.ok
    ? {
        ok: true,
        record: decoded.record,
        trust: verifyRecord(decoded.record, trustRoot, repositoryId, backend),
      }
    : decoded;
  memo.set(key, judged);
  return judged;
}
