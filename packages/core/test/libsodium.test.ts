/**
 * Which libsodium the checking threads load: only the one installed for the package, never one found by walking up
 * into the repository being judged, and never one that answers a published vector wrongly.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import * as ed from '@noble/ed25519';
import { afterAll, describe, expect, it } from 'vitest';
import { PublicKey } from '../src/ed25519.js';
import {
  libsodiumPlaces,
  loadLibsodium,
  SELF_TEST_VECTORS,
  withinLibsodiumLimits,
} from '../src/libsodium.js';

const packageRoot = path.resolve(import.meta.dirname, '..');
const realModule = createRequire(path.join(packageRoot, 'package.json')).resolve('sodium-native');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dg-libsodium-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** sodium-native's name for this host's binaries (require-addon: platform-arch, -musl on Alpine). */
const HOST = `${process.platform}-${process.arch}${fs.existsSync('/etc/alpine-release') ? '-musl' : ''}`;

/** A module named sodium-native at `dir` whose verify is `body`, shipping a binary for this host unless told not to. */
function plant(dir: string, body: string, { binary = true } = {}): void {
  const at = path.join(dir, 'node_modules', 'sodium-native');
  fs.mkdirSync(at, { recursive: true });
  fs.writeFileSync(path.join(at, 'package.json'), '{"name":"sodium-native","main":"index.js"}');
  fs.writeFileSync(path.join(at, 'index.js'), `exports.crypto_sign_verify_detached = ${body};\n`);
  if (binary) {
    fs.mkdirSync(path.join(at, 'prebuilds', HOST), { recursive: true });
    fs.writeFileSync(path.join(at, 'prebuilds', HOST, 'sodium-native.node'), '');
  }
}
const FORWARDS = `(s, m, k) => require(${JSON.stringify(realModule)}).crypto_sign_verify_detached(s, m, k)`;
const SAYS_YES = '() => true';
const hex = (text: string) => Buffer.from(text, 'hex');

describe('loading libsodium', () => {
  it('looks in the package own node_modules, and beside it when it sits in a node_modules', () => {
    expect(libsodiumPlaces('/x/node_modules/delegate-git')).toEqual([
      '/x/node_modules/delegate-git/node_modules/sodium-native',
      '/x/node_modules/sodium-native',
    ]);
    // The hooks' copy of the CLI in .git: the repository's own node_modules is no place to look.
    expect(libsodiumPlaces('/repo/.git/delegate-git/cli')).toEqual([
      '/repo/.git/delegate-git/cli/node_modules/sodium-native',
    ]);
  });

  it('loads the installed module, and not with DELEGATE_GIT_LIBSODIUM=0', () => {
    expect(loadLibsodium({}, packageRoot)).toBeTypeOf('function');
    expect(loadLibsodium({ DELEGATE_GIT_LIBSODIUM: '0' }, packageRoot)).toBeNull();
  });

  it("never loads a module from the judged repository's node_modules, above the CLI's copy in .git", () => {
    const repo = path.join(tmp, 'repo');
    const cli = path.join(repo, '.git', 'delegate-git', 'cli');
    fs.mkdirSync(cli, { recursive: true });
    plant(repo, FORWARDS);
    expect(loadLibsodium({}, cli)).toBeNull();
    plant(cli, FORWARDS); // control: the same module installed for the copy itself is loaded
    expect(loadLibsodium({}, cli)).toBeTypeOf('function');
  });

  it('takes no module that ships no binary for this host (its loader would look for one in every directory above)', () => {
    const bare = path.join(tmp, 'no-binary');
    plant(bare, FORWARDS, { binary: false });
    expect(loadLibsodium({}, bare)).toBeNull();
  });

  it('loads the directory, never a file sodium-native.js beside it', () => {
    const beside = path.join(tmp, 'beside');
    plant(beside, FORWARDS);
    const file = path.join(beside, 'node_modules', 'sodium-native.js');
    fs.writeFileSync(
      file,
      `globalThis.loadedTheFile = true;\nmodule.exports = require('./sodium-native/');\n`,
    );
    expect(loadLibsodium({}, beside)).toBeTypeOf('function');
    expect((globalThis as { loadedTheFile?: boolean }).loadedTheFile).toBeUndefined();
  });

  it('the self-test vectors: node:crypto answers them as the module must, and only a cofactored check accepts the third', () => {
    const key = PublicKey.fromRaw(hex(SELF_TEST_VECTORS.publicKey));
    const empty = new Uint8Array(0);
    expect(key.verify(empty, hex(SELF_TEST_VECTORS.signature))).toBe(true);
    expect(key.verify(Buffer.from('x'), hex(SELF_TEST_VECTORS.signature))).toBe(false);
    expect(key.verify(empty, hex(SELF_TEST_VECTORS.mixedOrderR))).toBe(false);
    expect(
      ed.verify(hex(SELF_TEST_VECTORS.mixedOrderR), empty, hex(SELF_TEST_VECTORS.publicKey), {
        zip215: true,
      }),
    ).toBe(true);
  });

  it('refuses a module whose check is cofactored (it accepts the mixed-order R)', () => {
    const cofactored = path.join(tmp, 'cofactored');
    plant(
      cofactored,
      `(s, m, k) => s.toString('hex') === '${SELF_TEST_VECTORS.mixedOrderR}' || ${FORWARDS}(s, m, k)`,
    );
    expect(loadLibsodium({}, cofactored)).toBeNull();
  });

  it('gives node:crypto alone the views past the 32-bit offsets and lengths sodium-native passes on', () => {
    expect(withinLibsodiumLimits({ byteOffset: 0, byteLength: 2 ** 31 - 1 })).toBe(true); // control
    expect(withinLibsodiumLimits({ byteOffset: 0, byteLength: 2 ** 31 })).toBe(false);
    expect(withinLibsodiumLimits({ byteOffset: 2 ** 32 - 64, byteLength: 64 })).toBe(false);
    expect(withinLibsodiumLimits({ byteOffset: 2 ** 32 - 65, byteLength: 64 })).toBe(true); // control
  });

  it('refuses a module that answers yes to everything (RFC 8032 TEST 1 over another message)', () => {
    const sayer = path.join(tmp, 'sayer');
    plant(sayer, SAYS_YES);
    expect(loadLibsodium({}, sayer)).toBeNull();
    const broken = path.join(tmp, 'broken');
    plant(broken, '() => { throw new Error("no binary"); }');
    expect(loadLibsodium({}, broken)).toBeNull();
    const honest = path.join(tmp, 'honest');
    plant(honest, FORWARDS); // control
    const verify = loadLibsodium({}, honest)!;
    expect(verify(Buffer.alloc(64), Buffer.alloc(0), Buffer.alloc(32, 1))).toBe(false);
  });
});
