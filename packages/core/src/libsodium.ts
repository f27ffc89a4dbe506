/**
 * libsodium's Ed25519 check, through sodium-native (an optional dependency): on x86-64 about twice OpenSSL's speed
 * (27,000 against 12,000 checks a second on one core here), and those checks are most of what `verify` spends on a
 * large ledger (DESIGN 6). Loaded on first use, by the threads that check notes in bulk only: loading costs about
 * 16 ms, more than a hook's few checks would save. A module that is missing or does not load (a platform without a
 * prebuilt binary, the single-file server build) leaves node:crypto to answer alone, as does DELEGATE_GIT_LIBSODIUM=0.
 *
 * Its "valid" is taken as the answer, so which module is loaded matters as much as the CLI's own code. It is looked
 * for only where the package manager installed it for this package (its own node_modules, or beside it in the
 * node_modules that holds it), never by Node's walk up the directories: the hooks run a copy of the CLI inside
 * .git, and that walk would reach the node_modules of the repository being judged, whose content a pull request
 * chooses. And a module that does not answer a published test vector both ways is not used.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** libsodium's crypto_sign_verify_detached: whether `signature` is `publicKey`'s over `message`, by libsodium's rules. */
export type LibsodiumVerify = (signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array) => boolean;

const MODULE = 'sodium-native';

let loaded: LibsodiumVerify | null | undefined;

/** libsodium's verify, or null when it is off or cannot be loaded here. */
export function libsodiumVerify(): LibsodiumVerify | null {
  if (loaded === undefined) loaded = loadLibsodium(process.env, packageRoot());
  return loaded;
}

/** The package this module was built into: the directory above its src/ (core) or dist/ (the CLI). */
function packageRoot(): string {
  return path.dirname(path.dirname(fileURLToPath(import.meta.url)));
}

/** Where the package manager puts a dependency of the package at `root`, nearest first. */
export function libsodiumPlaces(root: string): string[] {
  const places = [path.join(root, 'node_modules', MODULE)];
  if (path.basename(path.dirname(root)) === 'node_modules')
    places.push(path.join(path.dirname(root), MODULE));
  return places;
}

/** libsodium's verify for the package at `root`, as `env` allows it, loaded now (libsodiumVerify keeps the first). */
export function loadLibsodium(env: NodeJS.ProcessEnv, root: string): LibsodiumVerify | null {
  if (env.DELEGATE_GIT_LIBSODIUM === '0') return null;
  const load = createRequire(import.meta.url);
  for (const place of libsodiumPlaces(root)) {
    let verify: unknown;
    try {
      verify = (load(place) as { crypto_sign_verify_detached?: unknown }).crypto_sign_verify_detached;
    } catch {
      continue; // not installed there (or its binary does not load here)
    }
    if (typeof verify !== 'function') return null;
    const call: LibsodiumVerify = (s, m, k) => verify(s, m, k) === true;
    return answersTheVector(call) ? call : null;
  }
  return null;
}

/** RFC 8032 §7.1 TEST 1: its signature over the empty message, which must verify, and over "x", which must not. */
const TEST_1 = {
  publicKey: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
  signature:
    'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
};

function answersTheVector(verify: LibsodiumVerify): boolean {
  const publicKey = Buffer.from(TEST_1.publicKey, 'hex');
  const signature = Buffer.from(TEST_1.signature, 'hex');
  try {
    return verify(signature, Buffer.alloc(0), publicKey) && !verify(signature, Buffer.from('x'), publicKey);
  } catch {
    return false;
  }
}
