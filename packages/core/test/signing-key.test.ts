import { spawnSync } from 'node:child_process';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DelegateGitError } from '../src/errors.js';
import {
  generateSigningKey,
  listSigningKeys,
  loadSigningKey,
  type SigningKey,
  saveSigningKey,
  signingKeyDir,
  signingKeyFromPem,
  signingKeyFromSeed,
} from '../src/signing-key.js';
import { refusalWith } from './support.js';

// RFC 8032 §7.1 TEST 1.
const RFC_SEED = '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60';
const RFC_PUBLIC = 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a';

const hasOpenssl = spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0;

let configHome: string;
let env: NodeJS.ProcessEnv;
let keyDir: string;

beforeEach(() => {
  configHome = fs.mkdtempSync(path.join(os.tmpdir(), 'delegate-git-signing-key-'));
  // A fresh environment, so a DELEGATE_GIT_SIGNING_KEY of the machine running the tests cannot leak in.
  env = { XDG_CONFIG_HOME: configHome, HOME: configHome };
  keyDir = path.join(configHome, 'delegate-git', 'keys');
});

afterEach(() => {
  fs.rmSync(configHome, { recursive: true, force: true });
});

const message = new TextEncoder().encode('a record to sign');
const hexOf = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
const modeOf = (file: string): number => fs.statSync(file).mode & 0o777;

function expectSigningKeyError(action: () => unknown, pattern: RegExp | string): DelegateGitError {
  const error = refusalWith('SIGNING_KEY', action);
  expect(error.message).toMatch(pattern);
  return error;
}

function expectSameKey(a: SigningKey, b: SigningKey): void {
  expect(hexOf(b.publicKey.raw)).toBe(hexOf(a.publicKey.raw));
  expect(a.publicKey.verify(message, b.sign(message))).toBe(true);
}

describe('signingKeyDir', () => {
  it('uses $XDG_CONFIG_HOME, else ~/.config, and ignores a relative XDG_CONFIG_HOME', () => {
    expect(signingKeyDir({ XDG_CONFIG_HOME: '/cfg', HOME: '/home/u' })).toBe('/cfg/delegate-git/keys');
    expect(signingKeyDir({ HOME: '/home/u' })).toBe('/home/u/.config/delegate-git/keys');
    expect(signingKeyDir({ XDG_CONFIG_HOME: 'relative', HOME: '/home/u' })).toBe(
      '/home/u/.config/delegate-git/keys',
    );
  });
});

describe('keys from bytes and PEM', () => {
  it('derives the RFC 8032 public key from a seed and refuses a seed of the wrong length', () => {
    expect(hexOf(signingKeyFromSeed(Buffer.from(RFC_SEED, 'hex')).publicKey.raw)).toBe(RFC_PUBLIC);
    expectSigningKeyError(() => signingKeyFromSeed(new Uint8Array(31)), /exactly 32 bytes; got 31/);
  });

  it('round-trips through PKCS#8 PEM', () => {
    const key = generateSigningKey();
    const pem = key.toPem();
    expect(pem).toMatch(/^-----BEGIN PRIVATE KEY-----\n[\s\S]+-----END PRIVATE KEY-----\n$/);
    expectSameKey(key, signingKeyFromPem(pem));
    // Each generated key is a fresh random one.
    expect(generateSigningKey().publicKey.base64).not.toBe(key.publicKey.base64);
  });

  it('refuses text that is not a PEM private key, and a key that is not Ed25519', () => {
    expectSigningKeyError(() => signingKeyFromPem('hello'), /is not a PEM private key/);
    const damaged = '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n';
    expectSigningKeyError(() => signingKeyFromPem(damaged), /could not be read as a PKCS#8 private key/);
    // Encoded by the generation itself: exporting a KeyObject whose generation job the GC may finalize meanwhile can
    // deadlock Node 20 (see generateSigningKey).
    const ec = generateKeyPairSync('ec', {
      namedCurve: 'P-256',
      privateKeyEncoding: { format: 'pem', type: 'pkcs8' },
      publicKeyEncoding: { format: 'pem', type: 'spki' },
    }).privateKey;
    expectSigningKeyError(() => signingKeyFromPem(ec), /holds a ec key, not an Ed25519 key/);
    const publicPem = createPublicKey(signingKeyFromSeed(new Uint8Array(32).fill(7)).toPem())
      .export({ format: 'pem', type: 'spki' })
      .toString();
    expectSigningKeyError(() => signingKeyFromPem(publicPem), /could not be read/);
  });

  it('does not show the private key when logged', () => {
    const key = signingKeyFromSeed(Buffer.from(RFC_SEED, 'hex'));
    const shown = JSON.stringify(key) + inspect(key, { showHidden: true, depth: 10 });
    expect(shown).toContain(key.publicKey.base64); // control: the output does show the key's contents
    expect(shown).not.toContain(RFC_SEED);
    expect(shown).not.toContain(Buffer.from(RFC_SEED, 'hex').toString('base64url'));
  });
});

describe('saving and loading key files', () => {
  it('saves 0600 in a 0700 directory and loads the same key back', () => {
    const key = generateSigningKey();
    const file = saveSigningKey('laptop', key, env);
    expect(file).toBe(path.join(keyDir, 'laptop.key'));
    expect(modeOf(file)).toBe(0o600);
    expect(modeOf(keyDir)).toBe(0o700);
    expect(fs.readFileSync(file, 'utf8')).toBe(key.toPem());
    expect(fs.readdirSync(keyDir)).toEqual(['laptop.key']); // no temp file left behind

    const loaded = loadSigningKey('laptop', env);
    expect(loaded.source).toBe(file);
    expect(loaded.name).toBe('laptop');
    expectSameKey(key, loaded.key);
    expect(listSigningKeys(env)).toEqual(['laptop']);
  });

  it('refuses to overwrite an existing key and leaves it unchanged', () => {
    const first = generateSigningKey();
    const file = saveSigningKey('ci', first, env);
    expectSigningKeyError(() => saveSigningKey('ci', generateSigningKey(), env), /already exists/);
    expect(fs.readFileSync(file, 'utf8')).toBe(first.toPem());
    expect(saveSigningKey('ci-2', generateSigningKey(), env)).toBe(path.join(keyDir, 'ci-2.key')); // control
  });

  it('refuses key names outside [A-Za-z0-9._-]{1,64} or not starting with a letter or a digit', () => {
    const key = generateSigningKey();
    for (const name of ['', '../escape', 'a/b', 'with space', 'x'.repeat(65), 'ü', '..', '.hidden', '-x']) {
      expectSigningKeyError(() => saveSigningKey(name, key, env), /is not a valid key name/);
    }
    expect(fs.existsSync(path.join(configHome, 'escape.key'))).toBe(false);
    expect(saveSigningKey('A.b_c-9', key, env)).toBe(path.join(keyDir, 'A.b_c-9.key')); // control
    expect(saveSigningKey('x'.repeat(64), key, env)).toBe(path.join(keyDir, `${'x'.repeat(64)}.key`));
  });

  it('refuses a key file others can read, with the chmod fix; loads it once fixed', () => {
    const file = saveSigningKey('work', generateSigningKey(), env);
    fs.chmodSync(file, 0o644);
    const error = expectSigningKeyError(() => loadSigningKey('work', env), /mode 0644/);
    expect(error.message).toContain(`chmod 600 ${file}`);
    fs.chmodSync(file, 0o600);
    expect(loadSigningKey('work', env).name).toBe('work');
  });

  it('refuses a key file writable by the group', () => {
    const file = saveSigningKey('work', generateSigningKey(), env);
    fs.chmodSync(file, 0o620);
    expectSigningKeyError(() => loadSigningKey('work', env), /chmod 600/);
  });

  it('picks the only key when no name is given, and lists the names when there are several', () => {
    const only = generateSigningKey();
    saveSigningKey('beta', only, env);
    expectSameKey(only, loadSigningKey(undefined, env).key);

    saveSigningKey('alpha', generateSigningKey(), env);
    expect(listSigningKeys(env)).toEqual(['alpha', 'beta']);
    expectSigningKeyError(() => loadSigningKey(undefined, env), /\(alpha, beta\).*--key <name>/);
    expectSameKey(only, loadSigningKey('beta', env).key); // control: a name resolves it
  });

  it('says what to do when there is no key, or no key of that name', () => {
    expect(listSigningKeys(env)).toEqual([]);
    expectSigningKeyError(() => loadSigningKey(undefined, env), /no signing key found.*delegate-git keygen/);
    saveSigningKey('present', generateSigningKey(), env);
    expectSigningKeyError(
      () => loadSigningKey('absent', env),
      /no signing key named "absent".*available: present/,
    );
  });

  it('gives a clear error for a garbage key file and for a directory in place of a file', () => {
    fs.mkdirSync(keyDir, { recursive: true, mode: 0o700 });
    const garbage = path.join(keyDir, 'garbage.key');
    fs.writeFileSync(garbage, 'not a key at all\n', { mode: 0o600 });
    expectSigningKeyError(
      () => loadSigningKey('garbage', env),
      `the signing key file ${garbage} is not a PEM`,
    );
    fs.mkdirSync(path.join(keyDir, 'folder.key'));
    expect(listSigningKeys(env)).toEqual(['garbage']);
    expectSigningKeyError(() => loadSigningKey('folder', env), /is not a regular file/);
  });

  it('reads a key written by `openssl genpkey -algorithm ed25519`, and openssl reads ours', (context) => {
    if (!hasOpenssl) context.skip('openssl is not on PATH');
    fs.mkdirSync(keyDir, { recursive: true, mode: 0o700 });
    const file = path.join(keyDir, 'openssl.key');
    const gen = spawnSync('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', file], {
      encoding: 'utf8',
    });
    expect(gen.status, gen.stderr).toBe(0);
    fs.chmodSync(file, 0o600);
    const loaded = loadSigningKey('openssl', env).key;
    const derPublic = spawnSync('openssl', ['pkey', '-in', file, '-pubout', '-outform', 'DER']);
    expect(derPublic.status).toBe(0);
    expect(hexOf(derPublic.stdout.subarray(-32))).toBe(hexOf(loaded.publicKey.raw));

    const ours = saveSigningKey('ours', generateSigningKey(), env);
    const read = spawnSync('openssl', ['pkey', '-in', ours, '-noout'], { encoding: 'utf8' });
    expect(read.status, read.stderr).toBe(0);
  });
});

describe('DELEGATE_GIT_SIGNING_KEY', () => {
  it('overrides the key files, as PEM', () => {
    saveSigningKey('local', generateSigningKey(), env);
    const ci = generateSigningKey();
    const loaded = loadSigningKey('local', { ...env, DELEGATE_GIT_SIGNING_KEY: ci.toPem() });
    expect(loaded.source).toBe('DELEGATE_GIT_SIGNING_KEY');
    expect(loaded.name).toBeUndefined();
    expectSameKey(ci, loaded.key);
  });

  it('accepts the standard base64 of a 32-byte seed', () => {
    const seedB64 = Buffer.from(RFC_SEED, 'hex').toString('base64');
    const loaded = loadSigningKey(undefined, { ...env, DELEGATE_GIT_SIGNING_KEY: seedB64 });
    expect(hexOf(loaded.key.publicKey.raw)).toBe(RFC_PUBLIC);
  });

  it('refuses anything else, and counts an empty value as unset', () => {
    const bad = [
      'not-a-key',
      Buffer.alloc(31).toString('base64'),
      Buffer.from(RFC_SEED, 'hex').toString('base64url'),
    ];
    for (const value of bad) {
      expectSigningKeyError(
        () => loadSigningKey(undefined, { ...env, DELEGATE_GIT_SIGNING_KEY: value }),
        /DELEGATE_GIT_SIGNING_KEY environment variable is neither/,
      );
    }
    const local = generateSigningKey();
    saveSigningKey('local', local, env);
    expectSameKey(local, loadSigningKey(undefined, { ...env, DELEGATE_GIT_SIGNING_KEY: '' }).key);
  });
});
