import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../../test/support/paths.js';
import {
  isAllowlistedToken,
  isPlaceholderPassword,
  scanForCredentials,
  shannonEntropy,
  urlUserinfoPassword,
} from '../src/credential-scan.js';

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
/** `scheme://user:password@rest`, joined at runtime. */
const credentialUrl = (scheme: string, user: string, password: string, rest: string) =>
  `${scheme}://${[user, password].join(':')}@${rest}`;
/** Standard base64 of a digest of random bytes: the shape lockfiles, SRI and go.sum carry. */
const base64Digest = (algorithm: string) => createHash(algorithm).update(randomBytes(16)).digest('base64');

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

describe('scanForCredentials: passwords in URLs (url-password)', () => {
  const SCHEMES = [
    'postgres',
    'postgresql',
    'mysql',
    'mongodb',
    'mongodb+srv',
    'redis',
    'rediss',
    'amqp',
    'amqps',
  ];

  it('flags a password in a database or broker URL of any scheme; the preview is the scheme, never the password', async () => {
    for (const scheme of SCHEMES) {
      const password = randomFrom(ALNUM, 12);
      const text = `# app\nDATABASE_URL=${credentialUrl(scheme, 'admin', password, 'db.example.com:5432/app')}\n`;
      const findings = await scanForCredentials(text);
      expect(findings, scheme).toEqual([
        { rule: 'url-password', line: 2, column: 14, preview: `${scheme.slice(0, 4)}…` },
      ]);
      expect(JSON.stringify(findings)).not.toContain(password);
    }
  });

  it('flags an https password with symbols basicauth does not match; a plain one stays a single basicauth finding', async () => {
    const symbolic = `${randomFrom(ALNUM, 4)}!${randomFrom(ALNUM, 3)}$${randomFrom(ALNUM, 5)}`;
    const withSymbols = await scanForCredentials(
      `${credentialUrl('https', 'deploy', symbolic, 'git.example.com/x.git')}\n`,
    );
    expect(withSymbols).toEqual([{ rule: 'url-password', line: 1, column: 1, preview: 'http…' }]);

    const plain = await scanForCredentials(
      `${credentialUrl('https', 'admin', randomFrom(ALNUM, 12), 'db.example.com/prod')}\n`,
    );
    expect(plain).toEqual([{ rule: 'basicauth', line: 1, column: 1, preview: 'http…' }]);
  });

  it('one finding per secret: a long random password is not also an entropy hit, a provider token keeps its rule', async () => {
    const long = await scanForCredentials(
      credentialUrl('redis', 'default', shuffled(ALNUM).slice(0, 32), 'cache:6379'),
    );
    expect(long.map((f) => f.rule)).toEqual(['url-password']);
    // basicauth covers an https URL whatever else fires inside it; elsewhere the provider rule names the token.
    const https = await scanForCredentials(
      credentialUrl('git+https', 'x-access-token', githubToken(), 'github.com/o/r'),
    );
    expect(https.map((f) => f.rule)).toEqual(['basicauth']);
    const amqps = await scanForCredentials(
      credentialUrl('amqps', 'ci', githubToken(), 'broker.example.com/'),
    );
    expect(amqps.map((f) => f.rule)).toEqual(['github']);
  });

  it('flags a short password, a password-only URL (no user), percent-encoded symbols and a colon in the password', async () => {
    for (const url of [
      credentialUrl('mysql', 'root', 'k9', '10.0.0.5/app'),
      credentialUrl('redis', '', randomFrom(ALNUM, 10), 'localhost:6379/0'),
      credentialUrl(
        'postgresql',
        'app',
        `${randomFrom(ALNUM, 5)}%40${randomFrom(ALNUM, 5)}`,
        '/app?host=/run/pg',
      ),
      credentialUrl(
        'amqp',
        'guest',
        `${randomFrom(ALNUM, 5)}:${randomFrom(ALNUM, 5)}`,
        'rabbit.internal:5672/',
      ),
      credentialUrl('postgres', 'postgres', 'postgres', 'localhost/test'), // a default is still a password
    ])
      expect(
        (await scanForCredentials(`url: "${url}"\n`)).map((f) => f.rule),
        url,
      ).toEqual(['url-password']);
  });

  it('does not flag placeholders, template URLs, a user without a password, scp-style remotes or e-mail addresses (controls)', async () => {
    const controls = [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a .env interpolation, not a template placeholder
      ...['${DB_PASSWORD}', '$DB_PASSWORD', '$(DB_PASSWORD)', '<password>', '{{password}}', '%DB_PASS%'].map(
        (pw) => credentialUrl('postgres', 'app', pw, 'db.example.com:5432/app'),
      ),
      ...['password', 'PASSWORD', 'pass', 'YOUR_PASSWORD', 'changeme', 'secret', '****', 'xxx'].map((pw) =>
        credentialUrl('mongodb+srv', 'user', pw, 'cluster0.example.net/db'),
      ),
      'postgres://$PGUSER:$PGPASSWORD@$PGHOST/app',
      'postgres://%s:%s@%s/%s',
      'ssh://git@github.com/org/repo.git',
      'https://user@git.example.com/org/repo.git',
      'postgres://db.example.com:5432/app',
      'http://localhost:8080/path@v2',
      'git@github.com:org/repo.git',
      'mailto:admin@example.com',
      'write to admin@example.com or ops+alerts@example.co.uk',
    ];
    for (const line of controls) expect(await scanForCredentials(`${line}\n`), line).toEqual([]);
  });

  it('flags a password holding symbols outside RFC 3986 userinfo, or after a user name holding a raw @ (rt53 f04)', async () => {
    // The red team's five, joined at runtime, and the other symbols it named.
    const found = [
      credentialUrl('postgres', 'app', 'Tr0ub4dor#3x', 'db.internal:5432/app'),
      credentialUrl('postgres', 'app', 'Tr0ub4dor?3x', 'db.internal/app'),
      credentialUrl('postgres', 'app', 'Tr0ub/4dor3x', 'db.internal/app'),
      credentialUrl('mysql', 'root', 'Tr0ub^4dor3x', 'db/app'),
      credentialUrl('smtp', 'alerts@example.com', 'Tr0ub4dor3x', 'smtp.example.com:587'),
      credentialUrl('mysql', 'root', 'Tr0ub|4dor3x', 'db/app'),
      credentialUrl('mysql', 'root', 'Tr0ub[4dor3x', 'db/app'),
      credentialUrl('amqp', 'ops@example.com', `${randomFrom(ALNUM, 4)}#${randomFrom(ALNUM, 4)}`, 'mq:5672/'),
      credentialUrl('postgres', 'app', `${randomFrom(ALNUM, 4)}@${randomFrom(ALNUM, 4)}`, 'db/app'), // a raw @
      credentialUrl('redis', 'default', `${randomFrom(ALNUM, 4)}%${randomFrom(ALNUM, 4)}`, 'cache:6379'),
    ];
    for (const url of found) {
      const findings = await scanForCredentials(`DATABASE_URL=${url}\n`);
      expect(findings, url).toEqual([
        { rule: 'url-password', line: 1, column: 14, preview: `${url.slice(0, 4)}…` },
      ]);
    }
    // In quotes, in a markdown link and at the end of a sentence, too.
    const url = credentialUrl('postgres', 'app', 'Tr0ub4dor#3x', 'db.internal/app');
    for (const line of [`"${url}"`, `'${url}'`, `[db](${url})`, `see <${url}>.`])
      expect(
        (await scanForCredentials(`${line}\n`)).map((f) => f.rule),
        line,
      ).toEqual(['url-password']);
  });

  it('does not flag URLs whose path or query holds `:` and `@`, scp remotes, e-mail addresses, links, or templates (controls)', async () => {
    const controls = [
      'https://example.com/a@b',
      'https://host/x:y@z',
      'https://host/path?q=a:b@c',
      'https://host#a:b@c',
      'https://host:443/x@y',
      'https://me@host.example.com:8080/a@b',
      'ssh://git@github.com:22/org/repo@v1',
      'https://medium.com/@user',
      'https://unpkg.com/@scope/pkg@1.2.3/dist/x.js',
      'http://[::1]:8080/a@b',
      'git@github.com:org/repo.git',
      'user@host:path',
      'scp build.tar.gz deploy@host:/srv/www/',
      'Mail admin@example.com: it answers within a day.',
      '[docs](https://example.com/a:b@c)',
      '[site](https://example.com)[mail](mailto:ops@example.com)',
      "urls = ('https://example.com','a:b@c')",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell interpolation, not a template placeholder
      'http://user:${PASSWORD}@host',
      'postgres://user:<password>@host',
      'postgres://user:<%= db_password %>@host',
      'postgres://app:%(password)s@db/app',
      'postgres://app:@DB_PASSWORD@@db/app',
      `postgres://${['postgres', '[YOUR-PASSWORD]'].join(':')}@db.example.supabase.co:5432/postgres`,
      // A user and a password that stand for one, with a later `@` in the path: the userinfo ends at the first.
      credentialUrl('https', 'user', 'password', 'registry.example.com/@scope/pkg'),
    ];
    for (const line of controls) expect(await scanForCredentials(`${line}\n`), line).toEqual([]);
  });

  it('urlUserinfoPassword: the userinfo ends at the first `@` after a `:` whose host holds no further `@`', () => {
    expect(urlUserinfoPassword('app:p@ss@db/x')).toEqual({ password: 'p@ss', at: 8 });
    expect(urlUserinfoPassword('a@b.com:pw#1@smtp.host:587')).toEqual({ password: 'pw#1', at: 12 });
    expect(urlUserinfoPassword('u:pw@host/a@b')).toEqual({ password: 'pw', at: 4 });
    expect(urlUserinfoPassword(':pw@host')).toEqual({ password: 'pw', at: 3 });
    for (const rest of ['host/x:y@z', 'localhost:8080/path@v2', 'git@host', 'u:@host', 'host:5432/app', ''])
      expect(urlUserinfoPassword(rest), rest).toBeUndefined();
  });

  it('stays linear on long hostile lines: no `@`, many `:`, many `@`, many `://` (100 kB each)', async () => {
    for (const line of [
      'a'.repeat(100_000),
      'a:'.repeat(50_000),
      `x://a:${'@'.repeat(100_000)}`,
      'a://@'.repeat(20_000),
      'a://b:@/'.repeat(12_500),
      `https://${'u:'.repeat(50_000)}`,
    ]) {
      const started = performance.now();
      await scanForCredentials(line);
      expect(performance.now() - started, line.slice(0, 12)).toBeLessThan(2_000);
    }
  });

  it('isPlaceholderPassword: words, variable references, template slots and masks stand for a password; real-looking ones do not', () => {
    for (const pw of [
      'password',
      'Passwd',
      'your-password',
      'CHANGE_ME',
      'redacted',
      '$DB_PASSWORD',
      '$(PW)',
      '***',
      'x',
      '%DB_PASS%',
      '%s',
      '%(password)s',
      '@DB_PASSWORD@',
      '[YOUR-PASSWORD]',
    ])
      expect(isPlaceholderPassword(pw), pw).toBe(true);
    for (const pw of [
      'pw',
      'hunter2',
      'postgres',
      'password1',
      '$Summer2024',
      'S3cr!t$Pass',
      'xyz',
      '%Tr0ub4dor',
      '[Tr0ub4dor3x]',
      'Tr0ub[4]dor',
      '@Tr0ub4dor',
    ])
      expect(isPlaceholderPassword(pw), pw).toBe(false);
  });
});

describe('scanForCredentials: integrity digests (lockfiles, SRI, go.sum)', () => {
  it('does not flag base64 integrity digests of their exact length: npm, pnpm, HTML SRI and go.sum lines', async () => {
    const text = [
      `      "integrity": "sha512-${base64Digest('sha512')}"`,
      `    resolution: {integrity: sha512-${base64Digest('sha512')}}`,
      `      integrity: sha1-${base64Digest('sha1')}`,
      `<script src="/a.js" integrity="sha384-${base64Digest('sha384')} sha256-${base64Digest('sha256')}"></script>`,
      `github.com/stretchr/testify v1.8.4 h1:${base64Digest('sha256')}`,
      `github.com/stretchr/testify v1.8.4/go.mod h1:${base64Digest('sha256')}`,
      `h1:${base64Digest('sha256')}`,
    ].join('\n');
    expect(await scanForCredentials(text)).toEqual([]);
  });

  it('the allowlist is length-exact per algorithm: another length after sha512-, or a secret on an integrity line, is found', async () => {
    // Distinct characters, so the entropy of each control is high however the draw falls.
    const secret = shuffled(`${ALNUM}+/`).slice(0, 60);
    const sha256 = createHash('sha256').update('x').digest('base64');
    expect(shannonEntropy(sha256)).toBeGreaterThanOrEqual(4.5);
    const controls = [
      `"integrity": "sha512-${secret}"`, // 60 characters: no digest's length
      `"integrity": "sha512-${sha256}"`, // a sha256's length under the sha512 name
      `"integrity": "${secret.slice(0, 40)}"`,
      `module v1.0.0 h1:${secret.slice(0, 40)}`,
      `module v1.0.0 xh1:${sha256}`,
      `API_SECRET=${sha256}`, // a bare base64 sha256 is what many API secrets look like
    ];
    for (const line of controls)
      expect(
        (await scanForCredentials(`${line}\n`)).map((f) => f.rule),
        line,
      ).toEqual(['entropy']);
    expect(isAllowlistedToken(`sha512-${base64Digest('sha512')}`)).toBe(true);
    expect(isAllowlistedToken(sha256, ' h1:')).toBe(true);
    expect(isAllowlistedToken(sha256)).toBe(false);
    expect(isAllowlistedToken(`sha384-${secret.slice(0, 63)}`)).toBe(false);
  });
});
