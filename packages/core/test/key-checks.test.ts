import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ed from '@noble/ed25519';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { vectorsDir } from '../../../test/support/paths.js';
import { PublicKey } from '../src/ed25519.js';
import { keepKeyChecks, recallKeyChecks } from '../src/key-checks.js';
import { generateSigningKey } from '../src/signing-key.js';

// The checked keys are remembered per process as well, so each test uses keys no other test has met.
const speccheck = JSON.parse(
  fs.readFileSync(path.join(vectorsDir, 'ed25519', 'speccheck_cases.json'), 'utf8'),
) as Array<{ pub_key: string }>;
/** speccheck cases 3 and 2: a key with a torsion component (mixed order). */
const mixedOrder = (i: 2 | 3) => new Uint8Array(Buffer.from(speccheck[i]!.pub_key, 'hex'));
/** A generated key plus a small-order point (speccheck case 0's key): a key no test has met before. */
const freshMixedOrderKey = () =>
  ed.Point.fromBytes(rawOf(generateSigningKey().publicKey))
    .add(ed.Point.fromBytes(Buffer.from(speccheck[0]!.pub_key, 'hex')))
    .toBytes();
const rawOf = (key: PublicKey) => new Uint8Array(Buffer.from(key.base64, 'base64'));
const hexOf = (key: PublicKey) => Buffer.from(key.base64, 'base64').toString('hex');

let cacheDir: string;
const file = () => path.join(cacheDir, 'sound-keys-1');
const listed = () =>
  fs.existsSync(file()) ? fs.readFileSync(file(), 'utf8').split('\n').filter(Boolean) : [];

beforeEach(() => {
  cacheDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'dg-key-checks-')), 'cache');
});
afterEach(() => {
  fs.rmSync(path.dirname(cacheDir), { recursive: true, force: true });
});

describe('keys found sound are remembered between runs', () => {
  it('writes the keys this run checked, and the next run takes them as checked', async () => {
    const recalled = recallKeyChecks(cacheDir);
    expect(recalled).toBe(0);
    const key = generateSigningKey().publicKey;
    await keepKeyChecks(cacheDir, recalled);
    expect(listed()).toContain(hexOf(key));
    expect(recallKeyChecks(cacheDir)).toBe(listed().length);
    expect(PublicKey.fromRaw(rawOf(key)).keyid).toBe(key.keyid);
  });

  it('never remembers a key that failed: it is refused again, and nothing is written for it', async () => {
    const recalled = recallKeyChecks(cacheDir);
    expect(() => PublicKey.fromRaw(mixedOrder(3))).toThrow('mixed order (torsion component)');
    await keepKeyChecks(cacheDir, recalled);
    expect(listed()).not.toContain(speccheck[3]!.pub_key);
    expect(() => PublicKey.fromRaw(mixedOrder(3))).toThrow('mixed order (torsion component)');
  });

  it('does not rewrite the file when the run found no new key', async () => {
    generateSigningKey();
    await keepKeyChecks(cacheDir, recallKeyChecks(cacheDir));
    const before = fs.statSync(file()).mtimeMs;
    fs.utimesSync(file(), new Date(0), new Date(0));
    await keepKeyChecks(cacheDir, recallKeyChecks(cacheDir));
    expect(fs.statSync(file()).mtimeMs).toBe(0);
    expect(before).toBeGreaterThan(0);
  });

  it('ignores lines that are not a key, and survives a cache directory it cannot write', async () => {
    fs.mkdirSync(cacheDir, { recursive: true });
    fs.writeFileSync(file(), `zz\n${'a'.repeat(63)}\n${speccheck[2]!.pub_key.toUpperCase()}\n`);
    recallKeyChecks(cacheDir);
    // Upper-case hex is not how a key is written there, so this key is still checked (and refused).
    expect(() => PublicKey.fromRaw(mixedOrder(2))).toThrow('mixed order (torsion component)');
    const blocked = path.join(path.dirname(cacheDir), 'not-a-dir');
    fs.writeFileSync(blocked, '');
    await expect(keepKeyChecks(path.join(blocked, 'cache'), 0)).resolves.toBeUndefined();
  });

  it('trusts the file as it trusts the hooks beside it: a key listed there skips the check', () => {
    // docs/threat-model.md, "Local caches": whoever can write the cache can rewrite the hook. This pins down that
    // a listed key is taken without the torsion check, so a change to that trust is a visible decision.
    const [unlisted, listedKey] = [freshMixedOrderKey(), freshMixedOrderKey()];
    fs.mkdirSync(cacheDir, { recursive: true });
    fs.writeFileSync(file(), `${Buffer.from(listedKey).toString('hex')}\n`);
    expect(recallKeyChecks(cacheDir)).toBe(1);
    expect(() => PublicKey.fromRaw(unlisted)).toThrow('mixed order (torsion component)');
    expect(() => PublicKey.fromRaw(listedKey)).not.toThrow();
  });
});
