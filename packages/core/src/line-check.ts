/**
 * What `verify` asks of every ledger line, as one function a worker thread can run: does it parse, does it name
 * the blob it sits on, and does it verify under the trust root in force?
 */
import { decodeRecord, verifyRecord } from './record.js';
import type { TrustRoot } from './trust-root.js';

export type LineOutcome =
  | { status: 'valid'; outcome: string; signer: string }
  | { status: 'invalid'; reason: string }
  /** Valid once; a revoked key's records no longer count (not a fault of the ledger). */
  | { status: 'revoked'; reason: string };

export function checkLedgerLine(
  line: string,
  annotated: string,
  trustRoot: TrustRoot,
  repositoryId: string,
): LineOutcome {
  const decoded = decodeRecord(line);
  if (!decoded.ok) return { status: 'invalid', reason: `not a valid record: ${decoded.reason}` };
  const r = decoded.record;
  if (!r.subjects.some((s) => s.gitBlob === annotated)) {
    return { status: 'invalid', reason: 'the record does not name the blob it is attached to' };
  }
  const trust = verifyRecord(r, trustRoot, repositoryId);
  if (!trust.ok) {
    return trust.signer?.revoked !== undefined && trust.reason.endsWith('was revoked')
      ? { status: 'revoked', reason: trust.reason }
      : { status: 'invalid', reason: trust.reason };
  }
  return {
    status: 'valid',
    outcome: r.kind === 'verdict' ? r.verdict : `review:${r.decision}`,
    signer: trust.signer.name,
  };
}
