/**
 * Writing records: sign statements and add each envelope line to the note of every subject's blob, in one notes
 * commit. Kept apart from verification so that verifying code never needs signing code.
 */
import { canonicalize } from './canonical-json.js';
import { type Envelope, IN_TOTO_PAYLOAD_TYPE, pae } from './dsse.js';
import { DelegateGitError } from './errors.js';
import type { WaitingGit } from './git.js';
import type { NotesLedger } from './notes-ledger.js';
import { decodeRecord } from './record.js';
import { listSigningKeys, loadSigningKey, SIGNING_KEY_ENV, type SigningKey } from './signing-key.js';
import type { Statement, Subject } from './statement.js';
import { keyRefusal, type Role, type TrustRoot } from './trust-root.js';

export async function recordStatement(
  ledger: NotesLedger,
  statement: Statement<object>,
  key: SigningKey,
  message: string,
  writer?: WaitingGit,
): Promise<{ line: string; commit: string | null }> {
  const { lines, commit } = await recordStatements(ledger, [statement], key, message, writer);
  return { line: lines[0]!, commit };
}

/**
 * Signs each statement and adds its line to the note of every one of its subjects' blobs, all in one notes commit.
 * A line sits on as many notes as it has subjects, so a review of many files is one statement per file: one of all
 * of them would make the ledger grow with the square of their number.
 */
export async function recordStatements(
  ledger: NotesLedger,
  statements: ReadonlyArray<Statement<object>>,
  key: SigningKey,
  message: string,
  writer?: WaitingGit,
): Promise<{ lines: string[]; commit: string | null }> {
  const lines = statements.map((statement) => readableLine(statement, key));
  const additions = statements.flatMap((statement, i) =>
    [...new Set(statement.subject.map((s: Subject) => s.digest.gitBlob))].map((blob) => ({
      blob,
      lines: [lines[i]!],
    })),
  );
  const { commit } = await ledger.append(additions, { message, writer });
  return { lines, commit };
}

/**
 * The signed line of a statement. A line no reader accepts (a number beyond I-JSON's range, say) would fail verify,
 * and the server would refuse every later push of the ledger: refused here, before anything is written.
 */
function readableLine(statement: Statement<object>, key: SigningKey): string {
  const { line } = signStatement(statement, key);
  const readable = decodeRecord(line);
  if (!readable.ok)
    throw new DelegateGitError(
      'RECORD',
      `the record would not be readable (${readable.reason}), so nothing was recorded.`,
    );
  return line;
}

/** Refuses, before anything is signed, a key the trust root would not count for this role now. */
export function assertKeyMaySign(trustRoot: TrustRoot, key: SigningKey, role: Role, keysDir: string): string {
  const trusted = trustRoot.byKeyid(key.publicKey.keyid);
  if (!trusted) {
    throw new DelegateGitError(
      'SIGNING_KEY',
      `Your signing key (keyid ${key.publicKey.keyid.slice(0, 16)}) is not in the trust root (${keysDir}), so its records ` +
        "would not count. Register it with `delegate-git keys add` (and commit that with a reviewer's approval), or use --key <name>.",
    );
  }
  const refusal = keyRefusal(trusted, role, Date.now());
  if (refusal) {
    throw new DelegateGitError(
      'SIGNING_KEY',
      `Cannot sign as ${trusted.name}: ${refusal}. Nothing was recorded.`,
    );
  }
  return trusted.name;
}

/**
 * The signing key to sign as `role` with: the one named (or in DELEGATE_GIT_SIGNING_KEY), else the only personal key,
 * else, among several, the only one the trust root lets sign as `role` now. A person who keeps a key per project (or
 * a retired one) is not asked to name the only one that could sign here. Several that could: the choice stays theirs.
 */
export function signingKeyFor(
  trustRoot: TrustRoot,
  role: Role,
  name: string | undefined,
  env: NodeJS.ProcessEnv,
): ReturnType<typeof loadSigningKey> {
  if (name !== undefined || env[SIGNING_KEY_ENV]?.trim()) return loadSigningKey(name, env);
  const names = listSigningKeys(env);
  if (names.length <= 1) return loadSigningKey(undefined, env);
  const unreadable: string[] = [];
  const may = names.filter((candidate) => {
    try {
      const trusted = trustRoot.byKeyid(loadSigningKey(candidate, env).key.publicKey.keyid);
      return trusted !== undefined && keyRefusal(trusted, role, Date.now()) === null;
    } catch {
      unreadable.push(candidate); // not the one to pick for the person (named, it says what is wrong)
      return false;
    }
  });
  if (may.length === 1) return loadSigningKey(may[0], env);
  // None may sign, and the one the trust root names alike cannot be read: loading it says why (mode, damage), where
  // "which one is ambiguous" would hide it (fc audit f01).
  const likely = unreadable.filter((candidate) => trustRoot.byName(candidate) !== undefined);
  return loadSigningKey(may.length === 0 && likely.length === 1 ? likely[0] : undefined, env);
}

/** Signs a statement and returns the envelope with its note line. */
export function signStatement(
  statement: Statement<object>,
  key: SigningKey,
): { envelope: Envelope; line: string } {
  const body = Buffer.from(canonicalize(statement), 'utf8');
  const sig = key.sign(pae(IN_TOTO_PAYLOAD_TYPE, body));
  const envelope: Envelope = {
    payloadType: IN_TOTO_PAYLOAD_TYPE,
    payload: body.toString('base64'),
    signatures: [{ keyid: key.publicKey.keyid, sig: Buffer.from(sig).toString('base64') }],
  };
  return { envelope, line: canonicalize(envelope) };
}
