/**
 * `delegate-git scan`: the credential scan `delegate` runs, on files or standard input. A finding names where it is
 * and which rule found it, never the secret; a file that cannot be read stops the scan with exit 2. Each refusal is
 * paired with a control that passes.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, makeStory, type Story, writeFiles } from '../support/cli-story.js';

// Secret-shaped values are assembled at runtime so no credential-looking literal sits in the repository.
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const githubToken = () =>
  ['ghp', Array.from(randomBytes(36), (b) => ALNUM[b % ALNUM.length]).join('')].join('_');

let story: Story;
let dir: string;
const token = githubToken();
const dbPassword = Array.from(randomBytes(12), (b) => ALNUM[b % ALNUM.length]).join('');

beforeAll(() => {
  story = makeStory();
  dir = story.root;
  const digest = createHash('sha256').update('x').digest('hex');
  writeFiles(dir, {
    'leak.ts': `export const a = 1;\nconst token = "${token}";\n`,
    'clean.ts': `// digest ${digest}, request ${randomUUID()}\nexport const b = 2;\n`,
    '.env': `PORT=5432\nDATABASE_URL=postgres://${['admin', dbPassword].join(':')}@db.example.com:5432/app\n`,
    'package-lock.json': `${JSON.stringify(
      {
        packages: {
          'node_modules/lodash': {
            version: '4.17.21',
            integrity: `sha512-${createHash('sha512').update('lodash').digest('base64')}`,
          },
        },
      },
      null,
      2,
    )}\n`,
  });
});

afterAll(() => story.cleanup());

describe('delegate-git scan', () => {
  it('names the file, line, column and rule of a credential, never the credential; a clean file exits 0', () => {
    const found = cli(story, dir, ['scan', 'clean.ts', 'leak.ts']);
    expect(found.code).toBe(1);
    expect(found.stdout).toBe('leak.ts:2:16 github ghp_…\n');
    expect(found.stdout + found.stderr).not.toContain(token);
    expect(found.stderr).toContain('1 finding(s) in 2 source(s)');

    const clean = cli(story, dir, ['scan', 'clean.ts']);
    expect(clean.code, clean.stderr).toBe(0);
    expect(clean.stdout).toBe('');
  });

  it('finds the password of a database URL (any scheme, not only http); a lockfile’s integrity digests pass', () => {
    const found = cli(story, dir, ['scan', '.env']);
    expect(found.code).toBe(1);
    expect(found.stdout).toBe('.env:2:14 url-password post…\n');
    expect(found.stdout + found.stderr).not.toContain(dbPassword);

    const lockfile = cli(story, dir, ['scan', 'package-lock.json']);
    expect(lockfile.code, lockfile.stdout + lockfile.stderr).toBe(0);
    expect(lockfile.stdout).toBe('');
  });

  it('finds a URL password holding #, ?, /, ^, | or [, or after a user name holding @ (rt53 f04); URLs with `:` and `@` in the path, remotes, addresses and templates pass', () => {
    // Joined at runtime: the red team's strings, and the symbols it named.
    const url = (scheme: string, user: string, password: string, rest: string) =>
      `${scheme}://${[user, password].join(':')}@${rest}`;
    const found = [
      url('postgres', 'app', 'Tr0ub4dor#3x', 'db.internal:5432/app'),
      url('postgres', 'app', 'Tr0ub4dor?3x', 'db.internal/app'),
      url('postgres', 'app', 'Tr0ub/4dor3x', 'db.internal/app'),
      url('mysql', 'root', 'Tr0ub^4dor3x', 'db/app'),
      url('smtp', 'alerts@example.com', 'Tr0ub4dor3x', 'smtp.example.com:587'),
      url('mysql', 'root', 'Tr0ub|4dor3x', 'db/app'),
      url('mysql', 'root', 'Tr0ub[4dor3x', 'db/app'),
    ];
    for (const line of found) {
      const run = cli(story, dir, ['scan'], story.env, `DATABASE_URL=${line}\n`);
      expect(run.code, line).toBe(1);
      expect(run.stdout).toBe(`-:1:14 url-password ${line.slice(0, 4)}…\n`);
      expect(run.stdout + run.stderr).not.toContain('Tr0ub');
    }
    const controls = [
      'https://example.com/a@b',
      'https://host/x:y@z',
      'http://localhost:8080/path@v2',
      'git@github.com:org/repo.git',
      'user@host:path',
      'Write to admin@example.com: it answers within a day.',
      '[docs](https://example.com/a:b@c)',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell interpolation, not a template placeholder
      'http://user:${PASSWORD}@host',
      'postgres://user:<password>@host',
    ].join('\n');
    const clean = cli(story, dir, ['scan'], story.env, `${controls}\n`);
    expect(clean.code, clean.stdout).toBe(0);
    expect(clean.stdout).toBe('');
  });

  it('reads standard input when no file is named, or for "-"', () => {
    const text = `KEY=${token}\n`;
    for (const args of [['scan'], ['scan', '-']]) {
      const found = cli(story, dir, args, story.env, text);
      expect(found.code).toBe(1);
      expect(found.stdout).toBe('-:1:5 github ghp_…\n');
    }
    expect(cli(story, dir, ['scan'], story.env, 'nothing secret here\n').code).toBe(0);
  });

  it('--json lists the findings by source', () => {
    const run = cli(story, dir, ['scan', '--json', 'leak.ts', 'clean.ts']);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual({
      scanned: 2,
      findings: [{ source: 'leak.ts', rule: 'github', line: 2, column: 16, preview: 'ghp_…' }],
    });
  });

  it('stops with exit 2, scanning nothing, at a file it cannot read or a directory', () => {
    for (const [name, reason] of [
      ['missing.ts', 'cannot read missing.ts (ENOENT)'],
      ['.', '. is a directory'],
    ] as const) {
      const run = cli(story, dir, ['scan', 'leak.ts', name]);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(reason);
      expect(run.stderr).toContain('Nothing was scanned.');
    }
    expect(cli(story, dir, ['scan', '--verbose']).code).toBe(2); // an unknown flag
  });
});
