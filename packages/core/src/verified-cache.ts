/**
 * What `verify` learned about each note, remembered for the next run (DESIGN 6: checking a record depends only on
 * its bytes and the trust root). An entry is keyed by the annotated blob and the note blob(s) holding its lines: a
 * note blob id names its exact bytes, and the blob it sits on decides whether a line names it. The file is named
 * by the trust root's digest, the repository id and the rules version, so it is never read under other keys or
 * other rules; a new trust root starts a new file and the old one is removed.
 *
 * Entries are kept in the order verify reads the notes (sorted by annotated id), so a run reads the file as a
 * stream beside its own pass and memory does not grow with the ledger. An accelerator only: a missing, damaged
 * or foreign file is ignored (from the first line it cannot read) and written again; a read-only git dir just
 * goes without. Whoever can write this file can equally rewrite the hooks that read it: CI on a fresh checkout
 * starts without one.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { finished } from 'node:stream/promises';
import type { IndexFact, LineFacts } from './line-check.js';
import type { Candidate, Promotion, PromotionRules } from './promotion.js';
import type { TrustRoot } from './trust-root.js';

/**
 * Bumped whenever what a line's facts mean, or how a line is judged, changes: old files are then never read.
 * 2: a record dated ahead of the clock promotes nothing (promotion.ts, countingAt).
 * 3: a refused line's trust says whether its signature verified (`verified`), which dates versions (promotion.ts)
 *    and tells verify's disallowed lines from invalid ones; before, a warm run lost it.
 * 4: a line with more than one signature entry is no valid record (dsse.ts); a cache from before holds such lines as
 *    valid.
 * 5: reviewers toward a threshold are the holders of keys (trust-root.ts holderOf), not keys; a cache from before
 *    holds promotions two keys of one person made.
 * 6: a time in any UTC form of RFC 3339 is one, and a review names its reviewer (name and email); a cache from before
 *    holds such lines judged the other way.
 */
const RULES_VERSION = 6;
/** Lines remembered at most (about 230 bytes each on disk); a larger ledger is remembered up to here. */
const MAX_LINES = 2_000_000;
const FILE = /^verified-[0-9a-f]{16}\.ndjson$/;
/** Entries are written in chunks of about this many characters. */
const WRITE_CHUNK = 1 << 18;

/**
 * A file the note's records promoted: a promotion depends only on those records (their bytes and trust), the
 * file's path and content digest, and the rules; never on the rest of the ledger (only a refusal's wording does).
 */
export interface CachedPromotion {
  path: string;
  sha256: string;
  rules: PromotionRules;
  promotion: Promotion;
}

export interface CachedNote {
  facts: LineFacts[];
  promoted: CachedPromotion[];
}

interface Entry extends CachedNote {
  annotated: string;
  notes: string;
  /** The entry's line in the file, copied as is when the next file keeps it. */
  raw: string;
}

/** The remembered promotion of `candidate` under `rules`, if any. */
export function rememberedPromotion(
  note: CachedNote,
  candidate: Candidate,
  rules: PromotionRules,
): Promotion | null {
  const p = note.promoted.find(
    (c) =>
      c.path === candidate.path &&
      c.sha256 === candidate.sha256 &&
      c.rules.requireReview === rules.requireReview &&
      c.rules.reviewThreshold === rules.reviewThreshold,
  );
  return p?.promotion ?? null;
}

/** The key of a note's content: its note blob id (more than one when a foreign tool left a duplicate). */
export function noteKey(oids: readonly string[]): string {
  return oids.length === 1 ? oids[0]! : [...oids].sort().join(',');
}

function header(trustRoot: TrustRoot, repositoryId: string) {
  return { version: RULES_VERSION, trustRoot: trustRoot.digest, repositoryId };
}

function fileName(trustRoot: TrustRoot, repositoryId: string): string {
  const id = createHash('sha256')
    .update(JSON.stringify(header(trustRoot, repositoryId)))
    .digest('hex');
  return `verified-${id.slice(0, 16)}.ndjson`;
}

/** Reads the previous run's entries in order; `find` must be asked in increasing annotated order. */
export class VerifiedCacheReader {
  private next: Entry | null | undefined;
  /** Entries passed over without being asked for (their notes changed or left the ledger). */
  skipped = 0;

  private constructor(private readonly entries: AsyncIterator<Entry> | null) {}

  static open(cacheDir: string | null, trustRoot: TrustRoot, repositoryId: string): VerifiedCacheReader {
    if (cacheDir === null) return new VerifiedCacheReader(null);
    const file = path.join(cacheDir, fileName(trustRoot, repositoryId));
    const expected = JSON.stringify(header(trustRoot, repositoryId));
    return new VerifiedCacheReader(readEntries(file, expected, trustRoot)[Symbol.asyncIterator]());
  }

  async find(annotated: string, notes: string): Promise<Entry | null> {
    if (this.entries === null) return null;
    for (;;) {
      if (this.next === undefined) this.next = (await this.entries.next()).value ?? null;
      const e: Entry | null = this.next ?? null;
      if (e === null || e.annotated > annotated) return null;
      this.next = undefined;
      if (e.annotated === annotated && e.notes === notes) return e;
      this.skipped++;
    }
  }

  async close(): Promise<void> {
    await this.entries?.return?.();
  }
}

async function* readEntries(
  file: string,
  expectedHeader: string,
  trustRoot: TrustRoot,
): AsyncGenerator<Entry> {
  const stream = createReadStream(file, { encoding: 'utf8' });
  const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  stream.on('error', () => lines.close()); // no file (or an unreadable one): nothing to read
  try {
    let first = true;
    let last = '';
    for await (const line of lines) {
      if (first) {
        if (line !== expectedHeader) return;
        first = false;
        continue;
      }
      const entry = parseEntry(line, trustRoot);
      // Out of order or unreadable: the rest of the file cannot be trusted to be what it says.
      if (entry === null || entry.annotated <= last) return;
      last = entry.annotated;
      yield entry;
    }
  } catch {
    // unreadable: nothing more from it
  } finally {
    lines.close();
    stream.destroy();
  }
}

/** Writes the entries of this run, in order, to a temporary file renamed into place when complete. */
export class VerifiedCacheWriter {
  private lines = 0;
  private failed = false;
  private pending: string[] = [];
  private pendingBytes = 0;

  private constructor(
    private readonly file: string,
    private readonly tmp: string,
    private readonly out: WriteStream,
  ) {
    out.on('error', () => {
      this.failed = true;
    });
  }

  static async create(
    cacheDir: string | null,
    trustRoot: TrustRoot,
    repositoryId: string,
  ): Promise<VerifiedCacheWriter | null> {
    if (cacheDir === null) return null;
    try {
      await mkdir(cacheDir, { recursive: true });
    } catch {
      return null;
    }
    const file = path.join(cacheDir, fileName(trustRoot, repositoryId));
    const tmp = `${file}.${process.pid}.tmp`;
    const writer = new VerifiedCacheWriter(file, tmp, createWriteStream(tmp));
    writer.out.write(`${JSON.stringify(header(trustRoot, repositoryId))}\n`);
    return writer;
  }

  add(annotated: string, notes: string, note: CachedNote): void {
    const promoted = note.promoted.map((p) => [
      p.path,
      p.sha256,
      p.rules.requireReview ? 1 : 0,
      p.rules.reviewThreshold,
      p.promotion.reason,
      p.promotion.by,
    ]);
    this.write(note.facts.length, JSON.stringify([annotated, notes, note.facts.map(encodeFacts), promoted]));
  }

  /** Keeps an entry of the previous file as it was. */
  keep(entry: CachedNote & { raw: string }): void {
    this.write(entry.facts.length, entry.raw);
  }

  private write(lines: number, text: string): void {
    if (this.failed || this.lines + lines > MAX_LINES) return;
    this.lines += lines;
    this.pending.push(text);
    this.pendingBytes += text.length + 1;
    if (this.pendingBytes >= WRITE_CHUNK) this.flush();
  }

  /** One write per chunk of entries: a write per entry costs more than the entry's encoding. */
  private flush(): void {
    if (this.pending.length === 0) return;
    this.out.write(`${this.pending.join('\n')}\n`);
    this.pending = [];
    this.pendingBytes = 0;
  }

  /** Puts the file in place (and removes the files of other trust roots), or drops it. */
  async finish(keep: boolean): Promise<void> {
    if (keep) this.flush();
    this.out.end();
    await finished(this.out).catch(() => {
      this.failed = true;
    });
    if (!keep || this.failed) {
      await rm(this.tmp, { force: true }).catch(() => {});
      return;
    }
    try {
      await rename(this.tmp, this.file);
      const dir = path.dirname(this.file);
      for (const n of await readdir(dir)) {
        if (FILE.test(n) && n !== path.basename(this.file)) await rm(path.join(dir, n), { force: true });
      }
    } catch {
      await rm(this.tmp, { force: true }).catch(() => {});
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// One line's facts as a compact JSON array: [undecodable, misplaced + 2 * elsewhere, trust (1 ok; 0 refused; 2 refused
// though the signature verified), trust reason, signer keyid, outcome, index, sha256]. The index entry's keyid and
// outcome are left out when they repeat the line's.

type EncodedFacts = [
  undecodable: string | null,
  placement: 0 | 1 | 2 | 3,
  trust: 0 | 1 | 2 | null,
  reason: string,
  keyid: string | null,
  outcome: string | null,
  index: [kind: 'v' | 'r', outcome: string | 0, keyid: string | 0, createdAt: number, paths: string[]] | null,
  sha256: string | null,
];

function encodeFacts(f: LineFacts): EncodedFacts {
  const keyid = f.trust?.keyid ?? null;
  const ix = f.index;
  const outcome = f.outcome === null ? null : f.outcome.replace(/^review:/, '');
  return [
    f.undecodable,
    ((f.misplaced ? 1 : 0) + (f.elsewhere ? 2 : 0)) as EncodedFacts[1],
    f.trust === null ? null : f.trust.ok ? 1 : f.trust.verified ? 2 : 0,
    f.trust?.reason ?? '',
    keyid,
    f.outcome,
    ix === null ? null : [ix[0], ix[1] === outcome ? 0 : ix[1], ix[2] === keyid ? 0 : ix[2], ix[3], ix[4]],
    f.sha256,
  ];
}

const HEX64 = /^[0-9a-f]{64}$/;
const isString = (v: unknown): v is string => typeof v === 'string';
const isStringOrNull = (v: unknown): v is string | null => v === null || typeof v === 'string';

function decodeFacts(value: unknown, trustRoot: TrustRoot): LineFacts | null {
  if (!Array.isArray(value) || value.length !== 8) return null;
  const [undecodable, placement, ok, reason, keyid, outcome, ix, sha256] = value as unknown[];
  if (
    !isStringOrNull(undecodable) ||
    (placement !== 0 && placement !== 1 && placement !== 2 && placement !== 3)
  )
    return null;
  if (!(sha256 === null || (isString(sha256) && HEX64.test(sha256)))) return null;
  if ((ok !== null && ok !== 0 && ok !== 1 && ok !== 2) || !isString(reason) || !isStringOrNull(keyid))
    return null;
  if (!isStringOrNull(outcome) || (undecodable === null) === (ok === null)) return null;
  // A signer is always one of this trust root's keys, and a record that counts, or verified, always has one.
  if (keyid === null ? ok === 1 || ok === 2 : trustRoot.byKeyid(keyid) === undefined) return null;
  let index: IndexFact | null = null;
  if (ix !== null) {
    if (!Array.isArray(ix) || ix.length !== 5) return null;
    const [kind, o, k, createdAt, paths] = ix as unknown[];
    if (kind !== 'v' && kind !== 'r') return null;
    const ixOutcome = o === 0 ? outcome?.replace(/^review:/, '') : o;
    const ixKeyid = k === 0 ? keyid : k;
    if (!isString(ixOutcome) || !isString(ixKeyid) || typeof createdAt !== 'number') return null;
    if (!Array.isArray(paths) || !paths.every(isString)) return null;
    index = [kind, ixOutcome, ixKeyid, createdAt, paths];
  }
  const facts: LineFacts = {
    undecodable,
    misplaced: (placement & 1) === 1,
    elsewhere: (placement & 2) === 2,
    trust: ok === null ? null : { ok: ok === 1, reason, keyid, ...(ok === 2 && { verified: true as const }) },
    outcome,
    index,
    sha256,
  };
  // A line that does not count, or may sit on other notes, is known by its digest.
  const counts = undecodable === null && !facts.misplaced && ok === 1;
  return sha256 === null && (!counts || facts.elsewhere) ? null : facts;
}

function parseEntry(line: string, trustRoot: TrustRoot): Entry | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 4) return null;
  const [annotated, notes, facts, promoted] = value as unknown[];
  if (!isString(annotated) || !isString(notes) || !Array.isArray(facts) || !Array.isArray(promoted))
    return null;
  const promotions: CachedPromotion[] = [];
  for (const p of promoted) {
    if (!Array.isArray(p) || p.length !== 6) return null;
    const [path, sha256, review, threshold, reason, by] = p as unknown[];
    if (
      !isString(path) ||
      !isString(sha256) ||
      (review !== 0 && review !== 1) ||
      typeof threshold !== 'number'
    )
      return null;
    if (!isString(reason) || !Array.isArray(by) || !by.every(isString)) return null;
    promotions.push({
      path,
      sha256,
      rules: { requireReview: review === 1, reviewThreshold: threshold },
      promotion: { path, promoted: true, reason, by },
    });
  }
  const decoded: LineFacts[] = [];
  for (const f of facts) {
    const d = decodeFacts(f, trustRoot);
    if (d === null) return null;
    decoded.push(d);
  }
  return { annotated, notes, facts: decoded, promoted: promotions, raw: line };
}
