import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../../test/support/paths.js';
import { isAllowlistedToken, scanForCredentials, shannonEntropy } from '../src/credential-scan.js';

// Secret-shaped values are assembled at runtime so no credential-looking literal sits in the repository.
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
function randomFrom(alphabet: string, length: number): string {
  return Array.from(randomBytes(length), (byte) => alphabet[byte % alphabet.length]).join('');
}
function shuffled(alphabet: string): string {
  return [...alphabet]
    .map((char) => ({ char, key: randomBytes(4).readUInt32LE() }))
    .sort((a, b) => a.key - b.key)
    .map(({ char }) => char)
    .join('');
}
const githubToken = () => ['ghp', randomFrom(ALNUM, 36)].join('_');
const awsKeyId = () => ['AK', 'IA', randomFrom('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 16)].join('');
const pemHeader = (kind: string) => ['-----BEGIN', kind, 'PRIVATE', 'KEY-----'].join(' ');

describe('scanForCredentials: provider rules', () => {
  it('flags a GitHub token with its line and column, and the finding does not carry the token', async () => {
    const token = githubToken();
    const text = `const a = 1;\nconst token = "${token}";\n`;
    const findings = await scanForCredentials(text);
    expect(findings).toEqual([{ rule: 'github', line: 2, column: 16, preview: 'ghp_…' }]);
    expect(JSON.stringify(findings)).not.toContain(token.slice(4, 12));
  });

  it('flags a bare AWS access key id (enabled on purpose: upstream leaves it off)', async () => {
    const findings = await scanForCredentials(`region = eu-west-1\naws_key = ${awsKeyId()}\n`);
    expect(findings).toEqual([{ rule: 'aws', line: 2, column: 11, preview: 'AKIA…' }]);
  });

  it('flags a private key header on its own, and a full PEM block once', async () => {
    const header = await scanForCredentials(`notes\n${pemHeader('RSA')}\n`);
    expect(header).toEqual([{ rule: 'private-key-header', line: 2, column: 1, preview: '----…' }]);

    const body = Array.from({ length: 4 }, () => randomFrom(ALNUM, 64)).join('\n');
    const block = `${pemHeader('RSA')}\n${body}\n${pemHeader('RSA').replace('BEGIN', 'END')}\n`;
    const findings = await scanForCredentials(block);
    expect(findings).toHaveLength(1);
    expect(['privatekey', 'private-key-header']).toContain(findings[0]!.rule);
  });

  it('a secretlint-disable comment in the scanned text does not switch the scanner off', async () => {
    const text = `// secretlint-disable-next-line\nconst t = "${githubToken()}";\n`;
    expect((await scanForCredentials(text)).map((f) => f.rule)).toEqual(['github']);
  });
});

describe('scanForCredentials: entropy backstop and its allowlist', () => {
  it('flags a random 40-character token that no provider rule knows', async () => {
    // Distinct characters in random order, so its entropy (log2(40) ≈ 5.3 bits/char) never dips by chance.
    const token = shuffled(`${ALNUM}+/`).slice(0, 40);
    expect(shannonEntropy(token)).toBeGreaterThanOrEqual(4.5);
    const findings = await scanForCredentials(`export DEPLOY_TOKEN=${token}\n`);
    expect(findings).toEqual([{ rule: 'entropy', line: 1, column: 21, preview: `${token.slice(0, 4)}…` }]);
  });

  it('does not flag a sha256 hex digest, a UUID or a git object id (controls)', async () => {
    const sha256 = createHash('sha256').update(randomBytes(16)).digest('hex');
    const gitId = createHash('sha1').update(randomBytes(16)).digest('hex');
    const uuid = randomUUID();
    const text = `integrity: sha256:${sha256}\nid = "${uuid}"\ncommit ${gitId}\n`;
    expect(await scanForCredentials(text)).toEqual([]);
    for (const token of [sha256, gitId, uuid, sha256.toUpperCase()])
      expect(isAllowlistedToken(token)).toBe(true);
  });

  it('the allowlist is shape-exact: a random mixed-case token of digest length is not allowlisted', () => {
    expect(isAllowlistedToken(randomFrom(ALNUM, 40))).toBe(false);
    expect(isAllowlistedToken(`${createHash('sha1').update('x').digest('hex')}g`)).toBe(false);
  });

  it('ordinary source code is not flagged (this package’s own sources)', async () => {
    for (const file of ['prompt.ts', 'verification-runner.ts', 'context.ts']) {
      const text = fs.readFileSync(path.join(repoRoot, 'packages', 'delegate', 'src', file), 'utf8');
      expect(await scanForCredentials(text, { source: file }), file).toEqual([]);
    }
    const prose = 'add a password field to the login form; read the api key from an environment variable';
    expect(await scanForCredentials(prose)).toEqual([]);
  });
});
