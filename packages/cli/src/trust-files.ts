/**
 * Editing the trust root's key files in the work tree (init, keys add, keys revoke).
 */
import path from 'node:path';
import {
  checkKeyName,
  DelegateGitError,
  holdsKey,
  type KeyFile,
  keyFileText,
  POLICY_PATH,
  type Policy,
  PublicKey,
  parseKeyFile,
  parsePolicy,
  type Role,
} from '@delegate-git/core';
import { type Snapshot, worktreeSnapshot } from '@delegate-git/core/snapshot';
import { writeFileAtomic } from './fs.js';

export interface NewKey {
  name: string;
  email: string;
  publicKey: string;
  roles: Role[];
  notBefore?: string;
  notAfter?: string;
}

const NAME = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * The key file already registering this public key, or null when none does. Another key under the name is refused:
 * the name is the key file's, and a key file keeps its key.
 */
export async function registeredKeyFile(
  top: string,
  keysDir: string,
  name: string,
  publicKey: PublicKey,
  snapshot: Snapshot = worktreeSnapshot(top),
): Promise<string | null> {
  if (!NAME.test(name)) {
    throw new DelegateGitError(
      'USAGE',
      `"${name}" is not a valid key name: use 1-64 letters, digits, dots, dashes or underscores.`,
    );
  }
  for (const existing of await readKeyFiles(snapshot, keysDir)) {
    if (existing.keyid === publicKey.keyid) return existing.file;
    if (existing.name === name) {
      throw new DelegateGitError(
        'TRUST_ROOT',
        `${existing.file} already registers a different key under the name "${name}". Pick another name (--key <name>).`,
      );
    }
  }
  return null;
}

/** Adds `<keysDir>/<name>.json` unless the same key is already registered. Another key under the name is refused. */
export async function registerKey(
  top: string,
  keysDir: string,
  key: NewKey,
): Promise<{ file: string; created: boolean }> {
  // The name becomes the file's: checked as such first, not through the file it would make.
  checkKeyName(key.name);
  const publicKey = PublicKey.fromBase64(key.publicKey);
  const existing = await registeredKeyFile(top, keysDir, key.name, publicKey);
  if (existing !== null) return { file: existing, created: false };
  const file = `${keysDir}/${key.name}.json`;
  const content: KeyFile = {
    name: key.name,
    email: key.email,
    publicKey: publicKey.base64,
    keyid: publicKey.keyid,
    roles: [...new Set(key.roles)].sort() as Role[],
    ...(key.notBefore ? { notBefore: key.notBefore } : {}),
    ...(key.notAfter ? { notAfter: key.notAfter } : {}),
  };
  parseKeyFile(keyFileText(content), file);
  await writeFileAtomic(path.join(top, file), keyFileText(content));
  return { file, created: true };
}

/** The key files `snapshot` holds in `keysDir`, parsed. */
export async function readKeyFiles(snapshot: Snapshot, keysDir: string) {
  // At any depth, as every gate loads the trust root (a key in keys/team/ is trusted as one in keys/).
  const files = (await snapshot.listFiles(keysDir)).filter(holdsKey);
  return Promise.all(
    files.map(async (file) => {
      const content = await snapshot.readFile(file);
      if (content === null)
        throw new DelegateGitError(
          'TRUST_ROOT',
          `The key file ${file} could not be read (did it change meanwhile?). Run the command again.`,
        );
      const text = content.toString('utf8');
      return { ...parseKeyFile(text, file), raw: JSON.parse(text) as KeyFile };
    }),
  );
}

/** The policy as `snapshot` holds it, with the init hint when there is none. */
export async function readPolicyIn(snapshot: Snapshot): Promise<Policy> {
  const text = await snapshot.readFile(POLICY_PATH);
  if (text === null) {
    throw new DelegateGitError('POLICY', `There is no ${POLICY_PATH} here. Run \`delegate-git init\` first.`);
  }
  return parsePolicy(text.toString('utf8'));
}
