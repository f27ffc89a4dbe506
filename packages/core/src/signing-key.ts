/**
 * The operator's Ed25519 private keys (DESIGN 3.4). They never enter a repository: they live in
 * `$XDG_CONFIG_HOME/delegate-git/keys/<name>.key` as PKCS#8 PEM (mode 0600, so `openssl` and other standard tools
 * read them), or come from the DELEGATE_GIT_SIGNING_KEY environment variable (CI, a delegation service).
 *
 * Signing goes through node:crypto (over 10x faster than noble); what it produces is plain RFC 8032 Ed25519,
 * deterministic, so any verifier reproduces the same bytes.
 */
import { createPrivateKey, type KeyObject, sign as nodeSign, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PublicKey } from './ed25519.js';
import { DelegateGitError } from './errors.js';

export interface SigningKey {
  readonly publicKey: PublicKey;
  sign(message: Uint8Array): Uint8Array;
  /** PKCS#8 PEM */
  toPem(): string;
}

/** The environment variable that, when set, overrides every key file. */
export const SIGNING_KEY_ENV = 'DELEGATE_GIT_SIGNING_KEY';

const SEED_LENGTH = 32;
/** DER PKCS#8 PrivateKeyInfo header for an Ed25519 seed (RFC 8410 §7); the 32 seed bytes follow. */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
/** Also a file name and a word in commands: it starts as the trust root's names do, never with `.` or `-`. */
export const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const KEY_SUFFIX = '.key';
const KEYGEN_HINT = 'Create one with `delegate-git keygen <name>`, or set ' + SIGNING_KEY_ENV + '.';

class NodeSigningKey implements SigningKey {
  readonly publicKey: PublicKey;
  // A private field: util.inspect and JSON.stringify do not show it, so a logged SigningKey leaks nothing.
  readonly #privateKey: KeyObject;

  constructor(privateKey: KeyObject) {
    this.#privateKey = privateKey;
    const jwk = privateKey.export({ format: 'jwk' });
    this.publicKey = PublicKey.fromRaw(new Uint8Array(Buffer.from(jwk.x ?? '', 'base64url')));
  }

  sign(message: Uint8Array): Uint8Array {
    return new Uint8Array(nodeSign(null, message, this.#privateKey));
  }

  toPem(): string {
    return this.#privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  }
}

function signingKeyError(message: string, cause?: unknown): DelegateGitError {
  return new DelegateGitError('SIGNING_KEY', message, cause === undefined ? undefined : { cause });
}

/**
 * A key from 32 random bytes, which is what an Ed25519 private key is (RFC 8032 5.1.5). Not generateKeyPairSync: in
 * Node 20, a garbage collection that finalizes its key generation job while the new key is being exported deadlocks
 * the process (the job's destructor waits for the key's lock, which the export holds); it hung `keygen` once in CI.
 */
export function generateSigningKey(): SigningKey {
  return signingKeyFromSeed(randomBytes(SEED_LENGTH));
}

/** `where` names the key's origin in error messages ("the key file /x/y.key"). */
function signingKeyFromPemAt(pem: string, where: string): SigningKey {
  if (typeof pem !== 'string' || !pem.includes('-----BEGIN ')) {
    throw signingKeyError(
      `${where} is not a PEM private key. Expected PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"), as ` +
        '`delegate-git keygen` or `openssl genpkey -algorithm ed25519` writes.',
    );
  }
  if (pem.includes('-----BEGIN ENCRYPTED PRIVATE KEY-----')) {
    throw signingKeyError(
      `${where} is an encrypted private key, which delegate-git cannot use. Write a decrypted copy with ` +
        '`openssl pkey -in <encrypted> -out <name>.key` (then `chmod 600 <name>.key`).',
    );
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: 'pem' });
  } catch (error) {
    throw signingKeyError(
      `${where} could not be read as a PKCS#8 private key (the PEM is damaged or holds no private key). ` +
        'Generate a new key with `delegate-git keygen <name>`.',
      error,
    );
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw signingKeyError(
      `${where} holds a ${privateKey.asymmetricKeyType ?? 'unknown'} key, not an Ed25519 key. delegate-git signs ` +
        'with Ed25519 only: generate one with `delegate-git keygen <name>` or `openssl genpkey -algorithm ed25519`.',
    );
  }
  return new NodeSigningKey(privateKey);
}

/** PKCS#8 PEM (what `openssl genpkey -algorithm ed25519` writes). */
export function signingKeyFromPem(pem: string): SigningKey {
  return signingKeyFromPemAt(pem, 'the signing key');
}

/** 32-byte RFC 8032 secret. */
export function signingKeyFromSeed(seed: Uint8Array): SigningKey {
  if (!(seed instanceof Uint8Array) || seed.length !== SEED_LENGTH) {
    throw signingKeyError(
      `an Ed25519 secret key (seed) is exactly 32 bytes; got ${seed instanceof Uint8Array ? seed.length : 'no'} bytes.`,
    );
  }
  const der = Buffer.concat([PKCS8_ED25519_PREFIX, seed]);
  return new NodeSigningKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }));
}

/** `$XDG_CONFIG_HOME/delegate-git/keys` (default `~/.config/delegate-git/keys`); env param defaults to process.env. */
export function signingKeyDir(env: NodeJS.ProcessEnv = process.env): string {
  // The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
  const xdg = env.XDG_CONFIG_HOME;
  const configHome =
    xdg !== undefined && path.isAbsolute(xdg) ? xdg : path.join(env.HOME || os.homedir(), '.config');
  return path.join(configHome, 'delegate-git', 'keys');
}

export function checkKeyName(name: string): void {
  if (typeof name !== 'string' || !KEY_NAME.test(name)) {
    throw signingKeyError(
      `"${String(name)}" is not a valid key name: use 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or a digit (for example "laptop").`,
    );
  }
}

/** Quotes a word (a path, say) for a shell command in a message, only when it needs quoting. */
export function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Writes `<dir>/<name>.key` as PKCS#8 PEM, mode 0600, atomically (temp file in the same dir, then a hard link
 * that fails if the name exists, so a concurrent writer cannot be clobbered either). Refuses to overwrite an
 * existing key. Returns the path.
 */
export function saveSigningKey(name: string, key: SigningKey, env: NodeJS.ProcessEnv = process.env): string {
  checkKeyName(name);
  const dir = signingKeyDir(env);
  const target = path.join(dir, name + KEY_SUFFIX);
  const refuseOverwrite = (): never => {
    throw signingKeyError(
      `a signing key named "${name}" already exists at ${target}; delegate-git never overwrites a private key. ` +
        'Choose another name, or move the old key away first if you really mean to replace it.',
    );
  };
  if (fs.existsSync(target)) refuseOverwrite();
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const temp = path.join(dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const fd = fs.openSync(temp, 'wx', 0o600);
    try {
      fs.fchmodSync(fd, 0o600); // the umask could only narrow the mode, but be explicit about the result
      fs.writeFileSync(fd, key.toPem());
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    try {
      fs.linkSync(temp, target);
    } catch (error) {
      if (errorCode(error) === 'EEXIST') refuseOverwrite();
      // File systems without hard links: rename is still atomic; the existence check above guards the name.
      if (fs.existsSync(target)) refuseOverwrite();
      fs.renameSync(temp, target);
    }
  } catch (error) {
    if (error instanceof DelegateGitError) throw error;
    throw new DelegateGitError(
      'IO',
      `could not write the signing key ${target}: ${(error as Error).message}. Check that ${dir} is writable.`,
      { cause: error },
    );
  } finally {
    fs.rmSync(temp, { force: true });
  }
  return target;
}

/** Names of the keys in the key directory, sorted. */
export function listSigningKeys(env: NodeJS.ProcessEnv = process.env): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(signingKeyDir(env), { withFileTypes: true });
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw signingKeyError(
      `cannot list the signing keys in ${signingKeyDir(env)} (${errorCode(error) ?? String(error)}). ` +
        'Check that it is a directory you can read.',
      error,
    );
  }
  return entries
    .filter((entry) => entry.name.endsWith(KEY_SUFFIX) && (entry.isFile() || entry.isSymbolicLink()))
    .map((entry) => entry.name.slice(0, -KEY_SUFFIX.length))
    .filter((name) => KEY_NAME.test(name))
    .sort();
}

/** Strict standard base64 of exactly 32 bytes, else undefined. */
function decodeSeedBase64(text: string): Uint8Array | undefined {
  const bytes = Buffer.from(text, 'base64');
  return bytes.length === SEED_LENGTH && bytes.toString('base64') === text
    ? new Uint8Array(bytes)
    : undefined;
}

function signingKeyFromEnv(value: string): SigningKey {
  const where = `the ${SIGNING_KEY_ENV} environment variable`;
  if (value.includes('-----BEGIN ')) return signingKeyFromPemAt(value, where);
  const seed = decodeSeedBase64(value);
  if (seed === undefined) {
    throw signingKeyError(
      `${where} is neither a PKCS#8 PEM private key nor the standard base64 of a 32-byte Ed25519 seed. ` +
        `Set it to the content of a key file (for example \`${SIGNING_KEY_ENV}="$(cat <name>.key)"\`).`,
    );
  }
  return signingKeyFromSeed(seed);
}

function loadKeyFile(file: string): SigningKey {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (error) {
    throw signingKeyError(
      `cannot read the signing key file ${file} (${errorCode(error) ?? String(error)}).`,
      error,
    );
  }
  if (!stat.isFile()) throw signingKeyError(`the signing key ${file} is not a regular file.`);
  if ((stat.mode & 0o077) !== 0) {
    const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
    throw signingKeyError(
      `the signing key file ${file} has mode ${mode}: other users can read or change it, so it is refused. ` +
        `Make it private with: chmod 600 ${shellQuote(file)}`,
    );
  }
  let pem: string;
  try {
    pem = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw signingKeyError(
      `cannot read the signing key file ${file} (${errorCode(error) ?? String(error)}). ` +
        'Check that it belongs to you and that you can read it.',
      error,
    );
  }
  return signingKeyFromPemAt(pem, `the signing key file ${file}`);
}

/**
 * DELEGATE_GIT_SIGNING_KEY (PEM, or standard base64 of a 32-byte seed) overrides everything. Otherwise
 * `<dir>/<name>.key`; with no name, the only key in the directory. Refuses a key file that group or others can
 * read or write. Returns the key and where it came from (the variable's name, or the file's path).
 */
export function loadSigningKey(
  name?: string,
  env: NodeJS.ProcessEnv = process.env,
): { key: SigningKey; source: string; name?: string } {
  // Blank counts as unset: a CI secret that is not configured usually expands to an empty string.
  const fromEnv = env[SIGNING_KEY_ENV]?.trim();
  if (fromEnv) return { key: signingKeyFromEnv(fromEnv), source: SIGNING_KEY_ENV };

  const dir = signingKeyDir(env);
  const available = listSigningKeys(env);
  const listed = available.length > 0 ? `available: ${available.join(', ')}` : 'it holds no keys';
  let chosen: string;
  if (name !== undefined) {
    checkKeyName(name);
    chosen = name;
    if (!fs.existsSync(path.join(dir, name + KEY_SUFFIX))) {
      throw signingKeyError(
        `there is no signing key named "${name}" in ${dir} (${listed}). Pass --key with one of those names, ` +
          'or create it with `delegate-git keygen ' +
          name +
          '`.',
      );
    }
  } else if (available.length === 1) {
    chosen = available[0]!;
  } else if (available.length === 0) {
    throw signingKeyError(
      `no signing key found: ${dir} holds no keys and ${SIGNING_KEY_ENV} is not set. ${KEYGEN_HINT}`,
    );
  } else {
    throw signingKeyError(
      `there are ${available.length} signing keys in ${dir} (${available.join(', ')}), so which one to use is ` +
        'ambiguous. Pass --key <name> to choose one.',
    );
  }
  const file = path.join(dir, chosen + KEY_SUFFIX);
  return { key: loadKeyFile(file), source: file, name: chosen };
}
