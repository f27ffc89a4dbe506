/**
 * What a gate decided for (path, blob), remembered per ledger tip and governance, so a commit that stages
 * thousands of governed files does not read, hash and verify again what the previous commit already judged.
 *
 * A decision depends on the records on the blob (the note at the ledger tip), the governance that judged them
 * (policy, trust root, and the anchor governance for the governance files) and, for a refusal's wording only,
 * the path's history in the ledger. So: the file is named by a digest of the governance and by the ledger tip;
 * when the tip moves (each delegation appends), a promotion carries over unless the note on its blob changed
 * (one `git diff-tree` between the two notes commits says which did), and refusals are judged again.
 *
 * The sha256 kept with a decision is the one hashed from the blob's content when it was judged: a blob id names
 * immutable content in this object store, so it stands for that hash here. Anyone who can rewrite this cache
 * can equally rewrite the hooks that read it; the server and CI judge afresh or with their own cache.
 * The cache is an accelerator only: unreadable or from another version, it is ignored and rewritten.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { replaceCacheFile } from './cache-file.js';
import { canonicalize } from './canonical-json.js';
import {
  DECISIONS_FILE,
  decisionsFile,
  entryKey,
  PROMOTED_FILE,
  promotedFile,
  promotedText,
  readStore,
  STORE_VERSION,
  type Stored,
  storeText,
} from './decision-store.js';
import { type GitOptions, git } from './git.js';
import type { Governance } from './governance.js';

export interface Decision {
  path: string;
  blob: string;
  sha256: string;
  promoted: boolean;
  reason: string;
  by: string[];
}

/** Beyond this many decisions the oldest are forgotten (about 150 bytes each on disk). */
const MAX_ENTRIES = 200_000;

export class DecisionCache {
  private dirty = false;
  private readonly textIndex: Map<string, number>;
  private readonly parsedSigners = new Map<number, string[]>();

  private constructor(
    private readonly file: string | null,
    private readonly stored: Stored,
    /** The promotions alone, for the hook's quick path (decision-store.ts). */
    private readonly promotedFile: string | null = null,
  ) {
    this.textIndex = new Map(stored.texts.map((t, i) => [t, i]));
  }

  /** A cache that remembers nothing (no git dir to keep it in). */
  static none(): DecisionCache {
    return new DecisionCache(null, emptyStore());
  }

  static async open(
    cacheDir: string | null,
    tip: string | null,
    governance: Governance,
    anchor: Governance | undefined,
    gitOptions: GitOptions,
  ): Promise<DecisionCache> {
    if (cacheDir === null) return DecisionCache.none();
    const digest = governanceDigest(governance, anchor);
    const file = decisionsFile(cacheDir, digest, tip);
    const promoted = promotedFile(cacheDir, digest, tip);
    const exact = readStore(file);
    if (exact) {
      const cache = new DecisionCache(file, exact, promoted);
      // Its promotions file lost (removed by hand, or never written to a full disk): written again on save.
      cache.dirty = !existsSync(promoted);
      return cache;
    }
    const cache = new DecisionCache(file, await carryOver(cacheDir, digest, tip, gitOptions), promoted);
    cache.dirty = true;
    return cache;
  }

  get(filePath: string, blob: string): Decision | undefined {
    const e = this.stored.entries.get(entryKey(filePath, blob));
    if (!e) return undefined;
    return {
      path: filePath,
      blob,
      sha256: e.sha256,
      promoted: e.promoted,
      reason: this.stored.texts[e.reason] ?? '',
      by: this.signers(e.by),
    };
  }

  /** The same few signer lists recur in every entry: parsed once each, copied for the caller. */
  private signers(index: number): string[] {
    let list = this.parsedSigners.get(index);
    if (!list) {
      list = JSON.parse(this.stored.texts[index] ?? '[]') as string[];
      this.parsedSigners.set(index, list);
    }
    return [...list];
  }

  set(d: Decision): void {
    // A name read from bytes that are not UTF-8 (lone surrogates, git-fields.ts) would be written to the file as
    // another name, U+FFFD in place of each such byte: not remembered.
    if (!(d.path as unknown as { isWellFormed(): boolean }).isWellFormed()) return;
    const k = entryKey(d.path, d.blob);
    this.stored.entries.delete(k); // re-inserted last: the newest survive the bound
    this.stored.entries.set(k, {
      sha256: d.sha256,
      promoted: d.promoted,
      reason: this.text(d.reason),
      by: this.text(JSON.stringify(d.by)),
    });
    this.dirty = true;
  }

  private text(t: string): number {
    let i = this.textIndex.get(t);
    if (i === undefined) {
      i = this.stored.texts.push(t) - 1;
      this.textIndex.set(t, i);
    }
    return i;
  }

  /**
   * Writes the file atomically (temporary file, then rename) and removes the files of other tips. The files of other
   * rules at this tip stay: one check may judge under two (a commit changing the rules, judged by the new rules and
   * the rules in force), and each would otherwise find the other's file gone and start cold every time.
   */
  async save(): Promise<void> {
    if (this.file === null || !this.dirty) return;
    const dir = path.dirname(this.file);
    const { entries } = this.stored;
    for (const k of [...entries.keys()].slice(0, Math.max(0, entries.size - MAX_ENTRIES))) entries.delete(k);
    // Unwritten (a read-only git dir): the answers stay correct, only slower.
    if (!(await replaceCacheFile(this.file, storeText(this.stored)))) return;
    // Unwritten, the quick path finds an older, shorter list (each promotion in it still true) or none.
    if (this.promotedFile) await replaceCacheFile(this.promotedFile, promotedText(this.stored));
    this.dirty = false;
    try {
      const tipOf = (name: string) => (DECISIONS_FILE.exec(name) ?? PROMOTED_FILE.exec(name))?.[2];
      const tip = tipOf(path.basename(this.file));
      for (const n of await readdir(dir)) {
        const at = tipOf(n);
        if (at !== undefined && at !== tip) await rm(path.join(dir, n), { force: true });
      }
    } catch {
      // The older files are removed next time.
    }
  }
}

/**
 * 2: the policy and keys paths ignore case (governed-paths.ts), so their files need a reviewer's approval; 3: a key
 * file may not change its key, nor hold a listed key with other content (trust-root.ts, keyFileRefusal); 4: a merge
 * keeping one side's policy or key file is dated as a change from the other side's (promotion.ts, admittedAt); 5: a
 * version is dated by the review threshold in force when it was admitted; 6: a record dated ahead of the clock counts
 * for nothing (promotion.ts, countingAt); 7: that threshold is the highest of the commit's parents' (judge.ts); 8: the
 * approvals of keys rotated out since count toward the date of a version trusted keys approved too (approvedBy).
 */
const DECISION_RULES = 8;

function emptyStore(): Stored {
  return { texts: [], entries: new Map() };
}

/**
 * Everything a decision depends on besides the ledger: the rules and the keys that judged it, and the version of the
 * promotion rule itself (DECISION_RULES), so a decision taken by an earlier rule is never reused. The store's version
 * too, which so names the files: two builds sharing a repository (the hooks' copy of the CLI and a newer one run by
 * hand) keep files of their own, instead of each finding the other's unreadable and writing its own over it.
 */
export function governanceDigest(governance: Governance, anchor: Governance | undefined): string {
  const part = (g: Governance | undefined) =>
    g ? { policy: g.policy, keys: g.trustRoot.sources.map((s) => [s.path, s.text]) } : null;
  return createHash('sha256')
    .update(
      canonicalize({
        rules: DECISION_RULES,
        store: STORE_VERSION,
        governance: part(governance),
        anchor: part(anchor),
      }),
    )
    .digest('hex')
    .slice(0, 16);
}

/**
 * The promotions of the newest cache file for the same governance whose blobs' notes did not change between its
 * tip and `tip`. Nothing when there is none, or when the two tips cannot be compared (the old one was gc'd).
 */
async function carryOver(
  cacheDir: string,
  digest: string,
  tip: string | null,
  gitOptions: GitOptions,
): Promise<Stored> {
  const carried = emptyStore();
  if (tip === null) return carried;
  let names: string[];
  try {
    names = (await readdir(cacheDir)).filter((n) => DECISIONS_FILE.exec(n)?.[1] === digest);
  } catch {
    return carried;
  }
  const dated = await Promise.all(
    names.map(async (n) => ({ n, at: (await stat(path.join(cacheDir, n)).catch(() => null))?.mtimeMs ?? 0 })),
  );
  const latest = dated.sort((a, b) => b.at - a.at)[0];
  const older = latest && DECISIONS_FILE.exec(latest.n)![2]!;
  if (!latest || older === 'none') return carried;
  const previous = readStore(path.join(cacheDir, latest.n));
  if (!previous) return carried;
  let changed: Set<string>;
  try {
    const out = await git(['diff-tree', '-r', '-z', '--no-renames', '--name-only', older!, tip], gitOptions);
    // A note's path is its blob's id, fanned out into directories (ab/cdef...).
    changed = new Set(
      out
        .toString('utf8')
        .split('\0')
        .filter(Boolean)
        .map((p) => p.replaceAll('/', '')),
    );
  } catch {
    return carried;
  }
  carried.texts = previous.texts;
  for (const [k, e] of previous.entries) {
    if (e.promoted && !changed.has(k.slice(0, k.indexOf('\0')))) carried.entries.set(k, e);
  }
  return carried;
}
