/**
 * Which libsodium the checking threads load: only the one installed for the package, never one found by walking up
 * into the repository being judged, and never one that answers a published vector wrongly.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { libsodiumPlaces, loadLibsodium } from '../src/libsodium.js';

const packageRoot = path.resolve(import.meta.dirname, '..');
const realModule = createRequire(path.join(packageRoot, 'package.json')).resolve('sodium-native');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dg-libsodium-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A module named sodium-native at `dir` whose verify is `body`. */
function plant(dir: string, body: string): void {
  const at = path.join(dir, 'node_modules', 'sodium-native');
  fs.mkdirSync(at, { recursive: true });
  fs.writeFileSync(path.join(at, 'package.json'), '{"name":"sodium-native","main":"index.js"}');
  fs.writeFileSync(path.join(at, 'index.js'), `exports.crypto_sign_verify_detached = ${body};\n`);
}
const FORWARDS = `(s, m, k) => require(${JSON.stringify(realModule)}).crypto_sign_verify_detached(s, m, k)`;
const SAYS_YES = '() => true';

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
