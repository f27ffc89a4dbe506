/**
 * The gate's I/O around the pure promotion rule: pick the governed files, read their content and the records on
 * their blobs, verify those records against the trust root in force, and ask promotionOf.
 */
import { createHash } from 'node:crypto';
import type { Ed25519Backend } from './ed25519.js';
import type { CatFileBatch } from './git.js';
import type { Governance } from './governance.js';
import type { NotesLedger } from './notes-ledger.js';
import type { PathIndex } from './path-index.js';
import { governedMatcher } from './policy.js';
import { type JudgedRecord, type Promotion, promotionOf } from './promotion.js';
import { decodeRecord, verifyRecord } from './record.js';

export interface FileToJudge {
  path: string;
  blob: string;
}

export interface JudgeContext {
  governance: Governance;
  ledger: NotesLedger;
  /** Notes commit to read records from (null: no ledger yet). */
  notesAt: string | null;
  index: PathIndex;
  batch: CatFileBatch;
  backend?: Ed25519Backend;
}

export interface Judgement extends Promotion {
  blob: string;
  sha256: string;
}

export function governedFiles<T extends { path: string }>(files: readonly T[], governance: Governance, index: PathIndex): T[] {
  const governed = governedMatcher(governance.policy);
  return files.filter((f) => governed(f.path, index.has(f.path)));
}

export async function judgeFiles(files: readonly FileToJudge[], ctx: JudgeContext): Promise<Judgement[]> {
  if (files.length === 0) return [];
  const blobs = [...new Set(files.map((f) => f.blob))];
  const [contents, notes] = await Promise.all([
    ctx.batch.readMany(blobs),
    ctx.notesAt === null ? Promise.resolve(new Map<string, string[]>()) : ctx.ledger.linesOnMany(blobs, ctx.notesAt),
  ]);
  const sha256 = new Map<string, string>();
  blobs.forEach((blob, i) => {
    const object = contents[i];
    if (object) sha256.set(blob, createHash('sha256').update(object.content).digest('hex'));
  });
  const judged = new Map<string, JudgedRecord[]>();
  for (const blob of blobs) judged.set(blob, judgeLines(notes.get(blob) ?? [], ctx));

  const { policy, trustRoot } = ctx.governance;
  return files.map((f) => {
    const digest = sha256.get(f.blob);
    if (digest === undefined) {
      return { path: f.path, blob: f.blob, sha256: '', promoted: false, reason: 'its content could not be read', by: [] };
    }
    const earlier = ctx.index.earlier(f.path, f.blob, trustRoot);
    const promotion = promotionOf({ path: f.path, sha256: digest, gitBlob: f.blob }, judged.get(f.blob) ?? [], policy, earlier);
    return { ...promotion, blob: f.blob, sha256: digest };
  });
}

/** Decodes and verifies every line on one blob; a line that does not decode is simply not a record for anyone. */
export function judgeLines(lines: readonly string[], ctx: Pick<JudgeContext, 'governance' | 'backend'>): JudgedRecord[] {
  const out: JudgedRecord[] = [];
  for (const line of lines) {
    const decoded = decodeRecord(line);
    if (!decoded.ok) continue;
    const trust = verifyRecord(decoded.record, ctx.governance.trustRoot, ctx.governance.policy.repositoryId, ctx.backend);
    out.push({ record: decoded.record, trust });
  }
  return out;
}
