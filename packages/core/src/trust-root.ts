/**
 * The trust root: one JSON file per key in the repository's keys directory (DESIGN 3.4). A key counts only with
 * the right role, inside its validity window, and never once revoked.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod/mini';
import { PublicKey } from './ed25519.js';
import { DelegateGitError } from './errors.js';
import { parseWithSchema, printableLine, rfc3339Utc } from './schema.js';
import { shownPath } from './shown-path.js';
import { parseRfc3339Utc } from './statement.js';

export type Role = 'delegator' | 'reviewer';

const keyFileSchema = z.strictObject({
  // Both are shown in reports, hook messages and CI summaries, and `keys list` starts a line with the name: it starts
  // with a letter or a digit, of any script.
  name: z.string().check(
    z.minLength(1),
    printableLine,
    z.refine((name) => /^[\p{L}\p{N}]/u.test(name), 'must start with a letter or a digit'),
  ),
  email: z.string().check(printableLine),
  publicKey: z.string(),
  keyid: z.string().check(z.regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits')),
  roles: z.array(z.enum(['delegator', 'reviewer'])).check(z.minLength(1, 'must name at least one role')),
  notBefore: z.optional(rfc3339Utc),
  notAfter: z.optional(rfc3339Utc),
  revoked: z.optional(rfc3339Utc),
});

export type KeyFile = z.infer<typeof keyFileSchema>;

export interface TrustedKey {
  readonly name: string;
  readonly email: string;
  readonly keyid: string;
  readonly publicKey: PublicKey;
  readonly roles: ReadonlySet<Role>;
  readonly notBefore?: number;
  readonly notAfter?: number;
  readonly revoked?: number;
  /** Repository-relative path of the key file. */
  readonly file: string;
}

/**
 * Who holds a key, as a threshold counts reviewers: the email of its key file (any letter case, compatibility forms
 * and characters that show as nothing left out), so that one person with two keys (the overlap of a key rotation) is
 * one reviewer; a key with no email is a reviewer of its own. Look-alike letters of other scripts are not matched:
 * the reviewers who approve a key file vouch for whom it names.
 */
export function holderOf(key: TrustedKey): string {
  const email = key.email.normalize('NFKC').replace(SHOWS_AS_NOTHING, '').trim().toLowerCase();
  return email === '' ? `key ${key.keyid}` : `email ${email}`;
}

/** Soft hyphen, zero-width spaces and joiners, direction marks, word joiner, byte order mark. */
const SHOWS_AS_NOTHING = /[\u00ad\u180e\u200b-\u200f\u2060-\u2064\ufeff]/g;

/** Why a key may not sign a record of `role` made at `createdAt`, or null when it may. */
export function keyRefusal(key: TrustedKey, role: Role, createdAt: number): string | null {
  // A revoked key's records never count again: createdAt is asserted by the signer, so it cannot prove that a
  // record predates the compromise.
  if (key.revoked !== undefined) return `signer ${key.name}'s key was revoked`;
  if (!key.roles.has(role)) return `signer ${key.name} does not have the ${role} role`;
  if (key.notBefore !== undefined && createdAt < key.notBefore) {
    return `signer ${key.name}'s key was not yet valid when the record was made`;
  }
  if (key.notAfter !== undefined && createdAt > key.notAfter) {
    return `signer ${key.name}'s key had expired when the record was made`;
  }
  return null;
}

/**
 * Why a record that arrives at `now` (a push the server judges) cannot come from `key`: past its notAfter, a record's
 * date is only its signer's word, so a key holder could date an approval back to before the expiry. Null when it may.
 */
export function expiredAt(key: TrustedKey, now: number): string | null {
  if (key.notAfter === undefined || now <= key.notAfter) return null;
  return `signer ${key.name}'s key expired at ${new Date(key.notAfter).toISOString()}, before this record arrived (the date it carries is the signer's word): have a key valid now sign it`;
}

export class TrustRoot {
  private readonly byId = new Map<string, TrustedKey>();

  constructor(
    readonly keys: readonly TrustedKey[],
    /** SHA-256 over the key files, for caches keyed by the trust root in force. */
    readonly digest: string,
    /** The key files it was built from, so another thread can rebuild the same trust root. */
    readonly sources: ReadonlyArray<{ path: string; text: string }> = [],
    /**
     * Keyids revoked here by another trust root's revocation (withRevocationsOf), not by their files: their sources
     * are rewritten to say so, so the files themselves may read otherwise.
     */
    readonly revokedElsewhere: ReadonlySet<string> = new Set(),
  ) {
    for (const key of keys) this.byId.set(key.keyid, key);
  }

  byKeyid(keyid: string): TrustedKey | undefined {
    return this.byId.get(keyid);
  }

  byName(name: string): TrustedKey | undefined {
    return this.keys.find((k) => k.name === name);
  }
}

const KEY_HINT = 'Fix or remove the key file (see `delegate-git keys --help`).';

export function parseKeyFile(text: string, file: string): TrustedKey {
  const data = parseWithSchema(keyFileSchema, text, file, 'TRUST_ROOT', KEY_HINT);
  let publicKey: PublicKey;
  try {
    publicKey = PublicKey.fromBase64(data.publicKey);
  } catch (error) {
    throw new DelegateGitError('TRUST_ROOT', `${shownPath(file)}: ${(error as Error).message} ${KEY_HINT}`);
  }
  if (publicKey.keyid !== data.keyid) {
    throw new DelegateGitError(
      'TRUST_ROOT',
      `${file}: keyid ${data.keyid} does not match its public key (expected ${publicKey.keyid}). ${KEY_HINT}`,
    );
  }
  return {
    name: data.name,
    email: data.email,
    keyid: data.keyid,
    publicKey,
    roles: new Set(data.roles),
    notBefore: time(data.notBefore),
    notAfter: time(data.notAfter),
    revoked: time(data.revoked),
    file,
  };
}

/** Builds the trust root from the key files (path → text) of a keys directory. Duplicate key ids or names are refused. */
// A run often reads the same keys twice (the staged and the committed trust root of a commit); checking a key's
// point is the costly part of parsing it, and the answer depends only on the files' bytes.
const parsedRoots = new Map<string, TrustRoot>();

export function parseTrustRoot(files: ReadonlyArray<{ path: string; text: string }>): TrustRoot {
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : 1));
  const hash = createHash('sha256');
  for (const { path, text } of sorted) hash.update(`${path}\0${text}\0`);
  const digest = hash.digest('hex');
  let root = parsedRoots.get(digest);
  if (!root) {
    root = new TrustRoot(parseKeys(sorted), digest, sorted);
    parsedRoots.set(digest, root);
  }
  return root;
}

function parseKeys(sorted: ReadonlyArray<{ path: string; text: string }>): TrustedKey[] {
  const keys: TrustedKey[] = [];
  for (const { path, text } of sorted) {
    const key = parseKeyFile(text, path);
    const twin = keys.find((k) => k.keyid === key.keyid || k.name === key.name);
    if (twin) {
      throw new DelegateGitError(
        'TRUST_ROOT',
        `${path} and ${twin.file} describe the same key or name. Keep one file per key.`,
      );
    }
    keys.push(key);
  }
  return keys;
}

/**
 * Why a key file at `path` may not hold `text` under the trust root in force (`before`), or null. A key file keeps its
 * key for good: replaced in place, the key's earlier records could no longer be verified, and what they approved
 * (a revocation, say) would lose its date; a rotation is a revocation and a new file. And a key already listed keeps
 * its content when the keys directory moves: a stale copy elsewhere (from before its revocation) would otherwise
 * join on its old approvals. An unreadable file is left to the loading of the trust root, which refuses it.
 */
export function keyFileRefusal(before: TrustRoot, path: string, text: string): string | null {
  let key: TrustedKey;
  try {
    key = parseKeyFile(text, path);
  } catch {
    return null;
  }
  const here = before.keys.find((k) => k.file === path);
  if (here && here.keyid !== key.keyid) {
    return `its key changes (keyid ${here.keyid.slice(0, 12)} becomes ${key.keyid.slice(0, 12)}): a key file keeps its key; to rotate a key, revoke it and add the new one in a file of its own`;
  }
  const listed = before.byKeyid(key.keyid);
  // A key revoked by the default branch stays revoked here whatever a copy of its file says (red team r02).
  if (
    listed &&
    listed.file !== path &&
    !before.revokedElsewhere.has(listed.keyid) &&
    before.sources.find((f) => f.path === listed.file)?.text !== text
  ) {
    return `the key ${listed.name} is in the trust root already as ${listed.file}, with other content: a key keeps its file as it is when the keys directory moves`;
  }
  return null;
}

export function keyFileText(key: KeyFile): string {
  return `${JSON.stringify(key, null, 2)}\n`;
}

function time(value: string | undefined): number | undefined {
  // The schema has already refused a value this cannot read.
  return value === undefined ? undefined : (parseRfc3339Utc(value) ?? Number.NaN);
}
