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
 * chooses. Only where it ships a binary for this host: without one, its loader looks for `prebuilds/<host>/` in
 * every directory above it (red team rt61 f02). And a module that does not answer three vectors as OpenSSL does
 * (one of them a signature only a cofactored check accepts) is not used.
 */
import { existsSync, readdirSync } from 'node:fs';
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
    if (!existsSync(place)) continue;
    if (!shipsBinaryForThisHost(place)) return null;
    let verify: unknown;
    try {
      // The trailing separator: the directory itself, never a file `sodium-native.js` beside it (rt61 f03).
      verify = (load(`${place}${path.sep}`) as { crypto_sign_verify_detached?: unknown })
        .crypto_sign_verify_detached;
    } catch {
      return null; // its binary does not load here
    }
    if (typeof verify !== 'function') return null;
    const call: LibsodiumVerify = (s, m, k) =>
      withinLibsodiumLimits(s) &&
      withinLibsodiumLimits(m) &&
      withinLibsodiumLimits(k) &&
      verify(s, m, k) === true;
    return answersTheVectors(call) ? call : null;
  }
  return null;
}

/** As sodium-native's loader names the host: `prebuilds/<platform>-<arch>[-musl]/`, holding a `.node` binary. */
function shipsBinaryForThisHost(place: string): boolean {
  const musl = process.platform === 'linux' && existsSync('/etc/alpine-release');
  const dir = path.join(place, 'prebuilds', `${process.platform}-${process.arch}${musl ? '-musl' : ''}`);
  try {
    return readdirSync(dir).some((name) => name.endsWith('.node'));
  } catch {
    return false;
  }
}

/**
 * sodium-native hands libsodium a view's offset and length as 32-bit numbers, so past them it checks other bytes than
 * node:crypto would (rt61 f01). node:crypto refuses a message of 2 GiB or more itself; such views go to it alone.
 */
export function withinLibsodiumLimits(view: Pick<Uint8Array, 'byteLength' | 'byteOffset'>): boolean {
  return view.byteLength < 2 ** 31 && view.byteOffset + view.byteLength < 2 ** 32;
}

/**
 * RFC 8032 §7.1 TEST 1's key: its signature over the empty message, which must verify, the same over "x", which must
 * not, and one whose R has a point of order 8 added (S made to fit), which a cofactored check accepts and OpenSSL, so
 * node:crypto, refuses.
 */
export const SELF_TEST_VECTORS = {
  publicKey: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
  signature:
    'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
  mixedOrderR:
    'c2ecc2af9bfefd06ee0f9cbb9adf4abda71f6a01db3f1a78458754856f6bd5c4ce8bac9d0a9cb8149696874ba55329baae5a03fbf3fe13adcd95f3d3050f3504',
};

function answersTheVectors(verify: LibsodiumVerify): boolean {
  const publicKey = Buffer.from(SELF_TEST_VECTORS.publicKey, 'hex');
  const signature = Buffer.from(SELF_TEST_VECTORS.signature, 'hex');
  const empty = Buffer.alloc(0);
  try {
    return (
      verify(signature, empty, publicKey) &&
      !verify(signature, Buffer.from('x'), publicKey) &&
      !verify(Buffer.from(SELF_TEST_VECTORS.mixedOrderR, 'hex'), empty, publicKey)
    );
  } catch {
    return false;
  }
}
