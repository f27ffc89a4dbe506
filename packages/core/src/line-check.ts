/**
 * What `verify` asks of every ledger line, as one function a worker thread can run: does it parse, does it name
 * the blob it sits on, and does it verify under the trust root in force? The answer is plain data (`LineFacts`),
 * so it crosses threads and a cache unchanged, and everything verify reports about the line is derived from it.
 */
import { datedAhead } from './dated-ahead.js';
import type { Ed25519Backend } from './ed25519.js';
import { addLines } from './path-index.js';
import {
  decodeRecord,
  type LedgerRecord,
  type LineJudgement,
  MISPLACED,
  type RecordTrust,
  verifyRecord,
  verifyRecordSoon,
} from './record.js';
import { sha256Hex } from './sha256.js';
import type { TrustRoot } from './trust-root.js';

export type LineOutcome =
  | { status: 'valid'; outcome: string; signer: string }
  | { status: 'invalid'; reason: string }
  /** Valid once; a revoked key's records no longer count (not a fault of the ledger). */
  | { status: 'revoked'; reason: string }
  /**
   * Signed by a key of the trust root that may not sign it (without the role, or dated outside the key's validity):
   * it counts for nothing, and is no fault of the ledger either, since a role removed or a notAfter set later turns
   * the key's earlier records into these. The server refuses such a line when it arrives.
   */
  | { status: 'disallowed'; reason: string };

/** A path index entry without its blob (the blob is the note's): kind, outcome, signer keyid, createdAt, paths. */
export type IndexFact = [kind: 'v' | 'r', outcome: string, keyid: string, createdAt: number, paths: string[]];

export interface LineFacts {
  /** Why the line is no record (strict decoding refused it); null when it decodes. */
  undecodable: string | null;
  /** It decodes but none of its subjects is the blob it sits on. */
  misplaced: boolean;
  /** It decodes and names another blob too, so the same line may sit on that blob's note as well. */
  elsewhere: boolean;
  /**
   * verifyRecord's answer, with the signer by keyid; null when the line does not decode. `verified`: refused though
   * its signature verifies under that key (the key may not sign it).
   */
  trust: { ok: boolean; reason: string; keyid: string | null; verified?: true } | null;
  /** The verdict, or `review:<decision>`, of a line that decodes. */
  outcome: string | null;
  /** What the path index records for this line on this blob (null: nothing, as path-index.ts reads it). */
  index: IndexFact | null;
  /**
   * Hex SHA-256 of the line, when verify needs it: to name a line that does not count, or to count once a line
   * that may sit on several notes. Null otherwise (a line that counts and names only its own blob).
   */
  sha256: string | null;
}

/** A line's facts, with the decoded record and its trust for a caller in the same thread. */
export interface ExaminedLine {
  facts: LineFacts;
  record: LedgerRecord | null;
  trust: RecordTrust | null;
}

/** Decodes and verifies one line as it sits on `annotated`. */
export function examineLine(
  line: string,
  annotated: string,
  trustRoot: TrustRoot,
  repositoryId: string,
  backend: Ed25519Backend = 'node',
): ExaminedLine {
  const decoded = decodeRecord(line);
  if (!decoded.ok) return examined(line, annotated, decoded);
  const { record } = decoded;
  // A misplaced line is verified too: judging the files on its blob weighs it (promotion.ts), as any record there.
  return examined(line, annotated, {
    ok: true,
    record,
    trust: verifyRecord(record, trustRoot, repositoryId, backend),
  });
}

/** examineLine's answer, with the signature checked on the thread pool while this thread goes on. */
export async function examineLineSoon(
  line: string,
  annotated: string,
  trustRoot: TrustRoot,
  repositoryId: string,
): Promise<ExaminedLine> {
  const decoded = decodeRecord(line);
  if (!decoded.ok) return examined(line, annotated, decoded);
  const { record } = decoded;
  const trust = await verifyRecordSoon(record, trustRoot, repositoryId);
  return examined(line, annotated, { ok: true, record, trust });
}

function examined(line: string, annotated: string, judged: LineJudgement): ExaminedLine {
  if (!judged.ok) {
    const facts: LineFacts = {
      undecodable: judged.reason,
      misplaced: false,
      elsewhere: false,
      trust: null,
      outcome: null,
      index: indexFactOf(line, annotated),
      sha256: sha256Hex(line),
    };
    return { facts, record: null, trust: null };
  }
  const { record: r, trust } = judged;
  const paths: string[] = [];
  let elsewhere = false;
  for (const s of r.subjects) {
    if (s.gitBlob === annotated) paths.push(s.path);
    else elsewhere = true;
  }
  // The entry path-index.ts's lenient read gives a line that decodes strictly (the same fields, the same rules).
  const outcome = r.kind === 'verdict' ? r.verdict : r.decision;
  const index: IndexFact | null =
    paths.length === 0
      ? null
      : [r.kind === 'verdict' ? 'v' : 'r', outcome, r.envelope.signatures[0]!.keyid, r.createdAt, paths];
  const facts: LineFacts = {
    undecodable: null,
    misplaced: paths.length === 0,
    elsewhere,
    trust: trust.ok
      ? { ok: true, reason: '', keyid: trust.signer.keyid }
      : {
          ok: false,
          reason: trust.reason,
          keyid: trust.signer?.keyid ?? null,
          ...(trust.verified && { verified: true as const }),
        },
    outcome: r.kind === 'verdict' ? outcome : `review:${outcome}`,
    index,
    sha256: null,
  };
  // A line dated ahead of this clock may be reported as such (lineOutcome), so it is named too.
  if (elsewhere || !trust.ok || paths.length === 0 || r.createdAt > Date.now())
    facts.sha256 = sha256Hex(line);
  return { facts, record: r, trust };
}

export function lineFacts(
  line: string,
  annotated: string,
  trustRoot: TrustRoot,
  repositoryId: string,
): LineFacts {
  return examineLine(line, annotated, trustRoot, repositoryId).facts;
}

/**
 * path-index.ts's own reading of a line (addLines): what it records for the line on `annotated`. Used for a line
 * that does not decode strictly (the index keeps what it can read), and for every line when only the index is built.
 */
export function indexFactOf(line: string, annotated: string): IndexFact | null {
  const byPath: Parameters<typeof addLines>[0] = new Map();
  addLines(byPath, annotated, [line]);
  let fact: IndexFact | null = null;
  for (const [path, entries] of byPath) {
    const [kind, outcome, keyid, , createdAt] = entries[0]!;
    fact ??= [kind, outcome, keyid, createdAt, []];
    for (let i = 0; i < entries.length; i++) fact[4].push(path);
  }
  return fact;
}

/** The trust decision as verifyRecord made it, with the signer looked up in the same trust root. */
export function recordTrust(facts: LineFacts, trustRoot: TrustRoot): RecordTrust | null {
  const t = facts.trust;
  if (t === null) return null;
  const signer = t.keyid === null ? undefined : trustRoot.byKeyid(t.keyid);
  if (t.ok) return { ok: true, signer: signer! };
  if (signer === undefined) return { ok: false, reason: t.reason };
  return t.verified
    ? { ok: false, reason: t.reason, signer, verified: true }
    : { ok: false, reason: t.reason, signer };
}

/** What verify reports for a line: valid (counts), invalid (a problem), or revoked or disallowed (counts for nothing). */
export function lineOutcome(facts: LineFacts, trustRoot: TrustRoot, now = Date.now()): LineOutcome {
  if (facts.undecodable !== null)
    return { status: 'invalid', reason: `not a valid record: ${facts.undecodable}` };
  if (facts.misplaced) return { status: 'invalid', reason: MISPLACED };
  const trust = recordTrust(facts, trustRoot)!;
  if (!trust.ok) {
    if (!trust.verified) return { status: 'invalid', reason: trust.reason };
    // keyRefusal names a revocation before anything else the key may lack.
    return { status: trust.signer?.revoked === undefined ? 'disallowed' : 'revoked', reason: trust.reason };
  }
  const ahead = datedAhead(facts.index?.[3] ?? 0, now);
  if (ahead) return { status: 'invalid', reason: ahead };
  return { status: 'valid', outcome: facts.outcome!, signer: trust.signer.name };
}

export function checkLedgerLine(
  line: string,
  annotated: string,
  trustRoot: TrustRoot,
  repositoryId: string,
): LineOutcome {
  return lineOutcome(lineFacts(line, annotated, trustRoot, repositoryId), trustRoot);
}
