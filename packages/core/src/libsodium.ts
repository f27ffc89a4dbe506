/**
 * libsodium's Ed25519 check, through sodium-native (an optional dependency): on x86-64 about twice OpenSSL's speed
 * (27,000 against 12,000 checks a second on one core here), and those checks are most of what `verify` spends on a
 * large ledger (DESIGN 6). Loaded on first use, by the threads that check notes in bulk only: loading costs about
 * 16 ms, more than a hook's few checks would save. A module that is missing or does not load (a platform without a
 * prebuilt binary, the single-file server build) leaves node:crypto to answer alone, as does DELEGATE_GIT_LIBSODIUM=0.
 */
import { createRequire } from 'node:module';

/** libsodium's crypto_sign_verify_detached: whether `signature` is `publicKey`'s over `message`, by libsodium's rules. */
export type LibsodiumVerify = (signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array) => boolean;

let loaded: LibsodiumVerify | null | undefined;

/** libsodium's verify, or null when it is off or cannot be loaded here. */
export function libsodiumVerify(): LibsodiumVerify | null {
  if (loaded === undefined) loaded = loadLibsodium(process.env);
  return loaded;
}

/** libsodium's verify as `env` allows it, loaded now (libsodiumVerify keeps the first answer). */
export function loadLibsodium(env: NodeJS.ProcessEnv): LibsodiumVerify | null {
  if (env.DELEGATE_GIT_LIBSODIUM === '0') return null;
  try {
    const sodium = createRequire(import.meta.url)('sodium-native') as {
      crypto_sign_verify_detached?: LibsodiumVerify;
    };
    const verify = sodium.crypto_sign_verify_detached;
    return typeof verify === 'function' ? (s, m, k) => verify(s, m, k) : null;
  } catch {
    return null;
  }
}
