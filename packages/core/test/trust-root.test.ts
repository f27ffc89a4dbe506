import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { vectorsDir } from '../../../test/support/paths.js';
import { keyFilesOf, testKey, testPolicy, trustRootOf } from '../../../test/support/records.js';
import { DelegateGitError } from '../src/errors.js';
import { loadGovernance, withRevocationsOf } from '../src/governance.js';
import { POLICY_PATH, policyText } from '../src/policy.js';
import type { Snapshot } from '../src/snapshot.js';
import {
  keyFileRefusal,
  keyFileText,
  keyRefusal,
  parseKeyFile,
  parseTrustRoot,
  type TrustedKey,
} from '../src/trust-root.js';
import { refusalWith } from './support.js';

const FILE = '.delegate-git/keys/alice.json';
const alice = testKey({ name: 'alice', roles: ['delegator', 'reviewer'] });
const aliceFile: Record<string, unknown> = { ...alice.keyFile };

function textOf(fields: Record<string, unknown>): string {
  return `${JSON.stringify(fields, null, 2)}\n`;
}

/** The DelegateGitError parseKeyFile throws for `text`, or a failure when it accepts it. */
function refusalOf(text: string, file = FILE): DelegateGitError {
  return refusalWith('TRUST_ROOT', () => parseKeyFile(text, file));
}

describe('parseKeyFile', () => {
  it('accepts exactly the documented fields (control for every refusal below)', () => {
    const key = parseKeyFile(
      textOf({
        ...aliceFile,
        notBefore: '2026-01-01T00:00:00Z',
        notAfter: '2027-01-01T00:00:00.500Z',
        revoked: '2026-06-01T00:00:00Z',
      }),
      FILE,
    );
    expect(key).toMatchObject({
      name: 'alice',
      email: 'alice@example.com',
      keyid: alice.signer.publicKey.keyid,
      notBefore: Date.UTC(2026, 0, 1),
      notAfter: Date.UTC(2027, 0, 1, 0, 0, 0, 500),
      revoked: Date.UTC(2026, 5, 1),
      file: FILE,
    });
    expect([...key.roles].sort()).toEqual(['delegator', 'reviewer']);
    expect(key.publicKey.base64).toBe(alice.signer.publicKey.base64);
  });

  it('accepts the minimal file: the window and revocation are optional', () => {
    const key = parseKeyFile(keyFileText(alice.keyFile), FILE);
    expect(key.notBefore).toBeUndefined();
    expect(key.notAfter).toBeUndefined();
    expect(key.revoked).toBeUndefined();
  });

  it('refuses an unknown field, naming the file and the field', () => {
    const error = refusalOf(textOf({ ...aliceFile, expires: '2027-01-01T00:00:00Z' }));
    expect(error.code).toBe('TRUST_ROOT');
    expect(error.message).toMatch(
      /^\.delegate-git\/keys\/alice\.json: the file has unknown field\(s\) "expires"\./,
    );
  });

  it.each([
    ['name', 7],
    ['name', ''],
    ['email', null],
    ['publicKey', 12],
    ['roles', 'delegator'],
    ['roles', []],
    ['roles', ['admin']],
    ['notAfter', 1780000000000],
  ])('refuses field %s = %j, naming the file and the field', (field, value) => {
    const error = refusalOf(textOf({ ...aliceFile, [field]: value }));
    expect(error.code).toBe('TRUST_ROOT');
    expect(error.message).toContain(`${FILE}: field ${field}`);
  });

  it('refuses a missing required field', () => {
    const { email: _email, ...rest } = aliceFile;
    expect(refusalOf(textOf(rest)).message).toContain(`${FILE}: field email`);
  });

  it('refuses text that is not JSON', () => {
    const error = refusalOf('{ "name": ');
    expect(error.code).toBe('TRUST_ROOT');
    expect(error.message).toMatch(/^\.delegate-git\/keys\/alice\.json is not valid JSON/);
  });

  it('names a byte order mark as the cause, and shows no invisible character of the text it quotes (rt44 f04); control: the same file without it', () => {
    const bom = refusalOf(`\ufeff${textOf(aliceFile)}`);
    expect(bom.code).toBe('TRUST_ROOT');
    expect(bom.message).toContain(
      'is not valid JSON (it starts with a byte order mark; save it as UTF-8 without one)',
    );
    expect(bom.message).not.toContain('\ufeff');
    const hidden = refusalOf(`\u200b${textOf(aliceFile)}`);
    expect(hidden.message).toContain('\\u200b');
    expect(hidden.message).not.toContain('\u200b');
    expect(parseKeyFile(textOf(aliceFile), FILE).name).toBe('alice');
  });

  it('refuses a keyid that is not 64 lowercase hex digits', () => {
    const error = refusalOf(textOf({ ...aliceFile, keyid: alice.signer.publicKey.keyid.toUpperCase() }));
    expect(error.message).toContain(`${FILE}: field keyid must be 64 lowercase hex digits`);
  });

  it('refuses a keyid that does not match the public key', () => {
    const bob = testKey({ name: 'bob', roles: ['delegator'] });
    const error = refusalOf(textOf({ ...aliceFile, keyid: bob.signer.publicKey.keyid }));
    expect(error.code).toBe('TRUST_ROOT');
    expect(error.message).toContain(
      `${FILE}: keyid ${bob.signer.publicKey.keyid} does not match its public key (expected ${alice.signer.publicKey.keyid})`,
    );
  });

  describe('refuses a public key that breaks the signature rule (speccheck vectors)', () => {
    const cases = JSON.parse(
      fs.readFileSync(path.join(vectorsDir, 'ed25519', 'speccheck_cases.json'), 'utf8'),
    ) as Array<{
      pub_key: string;
    }>;
    const keyFileFor = (hex: string) => {
      const raw = Buffer.from(hex, 'hex');
      return textOf({
        ...aliceFile,
        publicKey: raw.toString('base64'),
        keyid: createHash('sha256').update(raw).digest('hex'),
      });
    };
    it.each([
      [0, /the public key is small order/],
      [2, /the public key is mixed order \(torsion component\)/],
      [10, /the public key is not canonical/],
    ])('speccheck case %i', (index, message) => {
      const error = refusalOf(keyFileFor(cases[index]!.pub_key));
      expect(error.code).toBe('TRUST_ROOT');
      expect(error.message.startsWith(`${FILE}: `)).toBe(true);
      expect(error.message).toMatch(message);
    });

    it('control: the same file with a generated key is accepted', () => {
      expect(() =>
        parseKeyFile(keyFileFor(Buffer.from(alice.signer.publicKey.base64, 'base64').toString('hex')), FILE),
      ).not.toThrow();
    });
  });

  it.each([
    ['no padding', alice.signer.publicKey.base64.replace(/=$/, '')],
    ['url-safe alphabet', Buffer.from(alice.signer.publicKey.base64, 'base64').toString('base64url')],
    ['31 bytes', Buffer.alloc(31, 1).toString('base64')],
  ])('refuses a public key that is not strict base64 of 32 bytes: %s', (_, publicKey) => {
    const error = refusalOf(textOf({ ...aliceFile, publicKey }));
    expect(error.message.startsWith(`${FILE}: `)).toBe(true);
    expect(error.message).toMatch(/the public key is (not standard base64|the wrong length)/);
  });

  it.each([
    '2026-01-01',
    '2026-01-01 00:00:00Z',
    '2026-01-01T00:00:00+01:00',
    '2026-01-01T00:00:00',
    '2026-02-30T00:00:00Z',
    '2026-01-01T24:00:00Z',
  ])('refuses the time %j, naming the file and the field', (time) => {
    const error = refusalOf(textOf({ ...aliceFile, notAfter: time }));
    expect(error.code).toBe('TRUST_ROOT');
    expect(error.message).toMatch(
      /^\.delegate-git\/keys\/alice\.json: field notAfter (must be an RFC 3339 UTC time|is not a real date)/,
    );
  });
});

describe('parseTrustRoot', () => {
  const bob = testKey({ name: 'bob', roles: ['reviewer'] });

  it('indexes keys by keyid and name', () => {
    const root = trustRootOf([alice, bob]);
    expect(root.keys.map((k) => k.name)).toEqual(['alice', 'bob']);
    expect(root.byKeyid(bob.signer.publicKey.keyid)?.name).toBe('bob');
    expect(root.byName('alice')?.keyid).toBe(alice.signer.publicKey.keyid);
    expect(root.byKeyid('0'.repeat(64))).toBeUndefined();
    expect(root.byName('carol')).toBeUndefined();
  });

  it('has a digest that ignores the order files were listed in and follows their content', () => {
    const files = keyFilesOf([alice, bob]);
    const digest = parseTrustRoot(files).digest;
    expect(parseTrustRoot([...files].reverse()).digest).toBe(digest);
    const changed = files.map((f, i) =>
      i === 1 ? { ...f, text: f.text.replace('"reviewer"', '"delegator"') } : f,
    );
    expect(parseTrustRoot(changed).digest).not.toBe(digest);
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses two files for the same key, naming both', () => {
    const twin = {
      path: '.delegate-git/keys/alice-copy.json',
      text: keyFileText({ ...alice.keyFile, name: 'alice2' }),
    };
    const files = [...keyFilesOf([alice, bob]), twin];
    expect(() => parseTrustRoot(files)).toThrow(DelegateGitError);
    expect(() => parseTrustRoot(files)).toThrow(
      '.delegate-git/keys/alice.json and .delegate-git/keys/alice-copy.json describe the same key or name.',
    );
  });

  it('refuses two keys with the same name', () => {
    const other = testKey({ name: 'alice', roles: ['reviewer'] });
    const files = [
      ...keyFilesOf([alice]),
      { path: '.delegate-git/keys/z.json', text: keyFileText(other.keyFile) },
    ];
    expect(() => parseTrustRoot(files)).toThrow(
      /\.delegate-git\/keys\/z\.json and \.delegate-git\/keys\/alice\.json/,
    );
  });

  it('refuses the whole trust root when one file is bad, naming that file', () => {
    const files = [...keyFilesOf([alice]), { path: '.delegate-git/keys/broken.json', text: '{}' }];
    expect(() => parseTrustRoot(files)).toThrow(/^\.delegate-git\/keys\/broken\.json: field name/);
  });

  it('is empty for no files (loadGovernance decides what that means)', () => {
    expect(parseTrustRoot([]).keys).toEqual([]);
  });
});

describe('keyRefusal', () => {
  const key = (fields: Partial<TrustedKey>): TrustedKey =>
    ({ ...parseKeyFile(keyFileText(alice.keyFile), FILE), ...fields }) as TrustedKey;
  const at = (iso: string) => Date.parse(iso);

  it('accepts the right role inside the window, boundaries included', () => {
    const windowed = key({ notBefore: at('2026-01-01T00:00:00Z'), notAfter: at('2026-12-31T00:00:00Z') });
    expect(keyRefusal(windowed, 'delegator', at('2026-06-01T00:00:00Z'))).toBeNull();
    expect(keyRefusal(windowed, 'reviewer', at('2026-01-01T00:00:00Z'))).toBeNull();
    expect(keyRefusal(windowed, 'reviewer', at('2026-12-31T00:00:00Z'))).toBeNull();
  });

  it('refuses outside the window', () => {
    const windowed = key({ notBefore: at('2026-01-01T00:00:00Z'), notAfter: at('2026-12-31T00:00:00Z') });
    expect(keyRefusal(windowed, 'delegator', at('2025-12-31T23:59:59.999Z'))).toBe(
      "signer alice's key was not yet valid when the record was made",
    );
    expect(keyRefusal(windowed, 'delegator', at('2026-12-31T00:00:00.001Z'))).toBe(
      "signer alice's key had expired when the record was made",
    );
  });

  it('refuses a role the key does not have', () => {
    expect(keyRefusal(key({ roles: new Set(['reviewer']) }), 'delegator', 0)).toBe(
      'signer alice does not have the delegator role',
    );
  });

  it('refuses a revoked key whatever the record claims its time was', () => {
    const revoked = key({ revoked: at('2026-06-01T00:00:00Z') });
    expect(keyRefusal(revoked, 'delegator', at('2026-01-01T00:00:00Z'))).toBe(
      "signer alice's key was revoked",
    );
    expect(keyRefusal(revoked, 'delegator', at('2027-01-01T00:00:00Z'))).toBe(
      "signer alice's key was revoked",
    );
  });
});

describe('loadGovernance', () => {
  // A snapshot whose listing and reads disagree, as when the index changes under a long-running cat-file.
  const snapshot = (readable: boolean): Snapshot => {
    const policy = policyText(testPolicy());
    const [key] = keyFilesOf([alice]);
    return {
      label: 'the index',
      listFiles: async () => [key!.path],
      readFile: async (file) =>
        file === POLICY_PATH
          ? Buffer.from(policy)
          : readable && file === key!.path
            ? Buffer.from(key!.text)
            : null,
    };
  };

  it('refuses a key file it lists but cannot read, naming it, instead of judging it empty', async () => {
    await expect(loadGovernance(snapshot(false))).rejects.toThrow(
      /The key file \.delegate-git\/keys\/alice\.json is listed in the index but could not be read/,
    );
    expect((await loadGovernance(snapshot(true))).trustRoot.keys.map((k) => k.name)).toEqual(['alice']);
  });
});

describe('keyFileRefusal: a key file keeps its key, and a listed key its content', () => {
  const bob = testKey({ name: 'bob', roles: ['reviewer'] });
  const before = trustRootOf([alice, bob]);
  const bobFile = '.delegate-git/keys/bob.json';
  const revoked = keyFileText({ ...bob.keyFile, revoked: '2026-06-01T00:00:00Z' });

  it('control: the same key file revoked in place, a new key in a new file, a key moved as it is', () => {
    expect(keyFileRefusal(before, bobFile, revoked)).toBeNull();
    const carol = testKey({ name: 'carol', roles: ['reviewer'] });
    expect(keyFileRefusal(before, '.delegate-git/keys/carol.json', keyFileText(carol.keyFile))).toBeNull();
    expect(keyFileRefusal(before, 'trust/bob.json', keyFileText(bob.keyFile))).toBeNull();
  });

  it('refuses another key in a key file (a rotation in place), which would orphan the old key’s records', () => {
    const rotated = testKey({ name: 'bob', roles: ['reviewer'] });
    expect(keyFileRefusal(before, bobFile, keyFileText(rotated.keyFile))).toBe(
      `its key changes (keyid ${bob.keyFile.keyid.slice(0, 12)} becomes ${rotated.keyFile.keyid.slice(0, 12)}): a key file keeps its key; to rotate a key, revoke it and add the new one in a file of its own`,
    );
  });

  it('refuses a listed key elsewhere with other content: a stale unrevoked copy cannot join when the keys directory moves', () => {
    const revokedRoot = parseTrustRoot([
      { path: 'trust/alice.json', text: keyFileText(alice.keyFile) },
      { path: 'trust/bob.json', text: revoked },
    ]);
    expect(keyFileRefusal(revokedRoot, bobFile, keyFileText(bob.keyFile))).toBe(
      'the key bob is in the trust root already as trust/bob.json, with other content: a key keeps its file as it is when the keys directory moves',
    );
    expect(keyFileRefusal(revokedRoot, bobFile, revoked)).toBeNull(); // moved as it is
  });
});

describe('withRevocationsOf', () => {
  const bob = testKey({ name: 'bob', roles: ['reviewer'] });
  const BOB = '.delegate-git/keys/bob.json';
  const governanceOf = (files: Array<{ path: string; text: string }>) => ({
    policy: testPolicy(),
    trustRoot: parseTrustRoot(files),
    source: 'test',
  });
  const branch = governanceOf([
    { path: FILE, text: keyFileText(alice.keyFile) },
    { path: BOB, text: keyFileText(bob.keyFile) },
  ]);

  it("revokes on a branch the keys the default branch revokes, as of the default branch's date", () => {
    const main = governanceOf([
      { path: FILE, text: keyFileText(alice.keyFile) },
      { path: BOB, text: keyFileText({ ...bob.keyFile, revoked: '2026-06-01T00:00:00Z' }) },
    ]);
    const bound = withRevocationsOf(branch, main);
    expect(bound.trustRoot.byName('bob')!.revoked).toBe(Date.UTC(2026, 5, 1));
    expect(bound.trustRoot.byName('alice')!.revoked).toBeUndefined();
    expect(bound.trustRoot.digest).not.toBe(branch.trustRoot.digest);
    // Another thread rebuilds the same trust root from the sources.
    expect(parseTrustRoot(bound.trustRoot.sources).byName('bob')!.revoked).toBe(Date.UTC(2026, 5, 1));
  });

  it('control: a key the default branch removed or never revoked stays as the branch lists it (the same object)', () => {
    const main = governanceOf([{ path: FILE, text: keyFileText(alice.keyFile) }]);
    expect(withRevocationsOf(branch, main)).toBe(branch);
    expect(withRevocationsOf(branch, branch)).toBe(branch);
  });
});
