import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DelegateGitError } from '@delegate-git/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Emission, type EmittedFile, parseEmission } from '../src/emission.js';
import {
  applyWritePlan,
  CHANGED_SINCE_WRITTEN,
  partialWriteOutcome,
  planWrites,
  putBack,
  type WritePlanOptions,
} from '../src/write-plan.js';

const F = '```';
const original = 'export function add(a, b) {\n  return a + b;\n}\n';

let base: string;
let ws: string;

beforeEach(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'dg-write-plan-')));
  ws = path.join(base, 'ws');
  fs.mkdirSync(path.join(ws, 'src'), { recursive: true });
  fs.mkdirSync(path.join(ws, 'test'));
  fs.mkdirSync(path.join(ws, 'src-extra'));
  fs.mkdirSync(path.join(base, 'outside'));
  fs.writeFileSync(path.join(ws, 'src', 'a.ts'), original);
  fs.writeFileSync(path.join(ws, 'test', 'a.test.ts'), 'test("adds", () => {});\n');
  fs.symlinkSync(path.join(ws, 'src'), path.join(ws, 'link-in'));
});

afterEach(() => {
  fs.rmSync(base, { recursive: true, force: true });
});

function options(overrides: Partial<WritePlanOptions> = {}): WritePlanOptions {
  return {
    workspace: ws,
    contractFiles: [],
    // The whole workspace: these tests are about the other gates. No targets at all writes nothing (scope.test.ts).
    targetFiles: ['.'],
    unitScope: 'enforce',
    emitAllowlist: [],
    ...overrides,
  };
}

function emission(...files: Array<[string, string]>): Emission {
  const emitted: EmittedFile[] = files.map(([p, body]) => ({ path: p, body, source: 'header' }));
  return { files: emitted, duplicates: [], errors: [] };
}

const patchBody = (search: string, replace: string) =>
  `<<<<<<< SEARCH\n${search}\n=======\n${replace}\n>>>>>>> REPLACE\n`;

const read = (relative: string) => fs.readFileSync(path.join(ws, relative), 'utf8');

describe('planWrites: create and patch', () => {
  it('plans a new file (parents need not exist) and writes nothing until applied', async () => {
    const plan = planWrites(emission(['src/new/b.ts', 'export const b = "é";\n']), options());
    expect(plan.errors).toEqual([]);
    expect(plan.files).toEqual([
      {
        path: 'src/new/b.ts',
        absolute: path.join(ws, 'src', 'new', 'b.ts'),
        mode: 'created',
        content: Buffer.from('export const b = "é";\n'),
        hunks: 0,
        lines: 1,
        bytes: 23,
      },
    ]);
    expect(fs.existsSync(path.join(ws, 'src', 'new'))).toBe(false);
    applyWritePlan(plan);
    expect(read('src/new/b.ts')).toBe('export const b = "é";\n');
  });

  it('plans a patch of an existing file from a parsed reply', async () => {
    const reply = `${F}ts file="src/a.ts"\n${patchBody('  return a + b;', '  return b + a;')}${F}\n`;
    const plan = planWrites(parseEmission(reply, { targetFiles: [] }), options());
    expect(plan.errors).toEqual([]);
    expect(plan.files).toHaveLength(1);
    expect(plan.files[0]).toMatchObject({ path: 'src/a.ts', mode: 'patched', hunks: 1, lines: 3 });
    expect(read('src/a.ts')).toBe(original);
    applyWritePlan(plan);
    expect(read('src/a.ts')).toBe(original.replace('a + b', 'b + a'));
  });

  it('refuses a unified diff sent as a file, new or existing (ux57 f05); control: a file named .patch holding one is written', () => {
    const diff =
      '--- /dev/null\n+++ b/src/strip.js\n@@ -0,0 +1,2 @@\n+export const a = 1;\n+export const b = 2;\n';
    const plan = planWrites(
      emission(['src/strip.js', diff], ['src/a.ts', diff], ['fixes/strip.patch', diff]),
      options(),
    );
    expect(plan.errors).toEqual([
      expect.stringMatching(
        /^`src\/strip\.js`: the block is a unified diff .* which delegate-git does not apply; not written/,
      ),
      expect.stringMatching(/^`src\/a\.ts`: the block is a unified diff/),
    ]);
    expect(plan.files.map((f) => f.path)).toEqual(['fixes/strip.patch']);
  });

  it('refuses the other shapes a diff comes in (rt58 f06), not a file that only quotes one further down (rt58 f02)', () => {
    const refused = [
      '@@\n-export const a = 1;\n+export const a = 2;\n',
      '@@ -1 +1 @@\n-a\n+b\n',
      'diff --git a/src/x.js b/src/x.js\nindex 1..2\n',
      '*** Begin Patch\n*** Add File: src/x.js\n+export {};\n*** End Patch\n',
      '\n--- a/src/x.js\n+++ b/src/x.js\n',
    ];
    const quoted = [
      '# Changes\n\n~~~diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n~~~\n',
      'export const fixture = `\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n`;\n',
      '--- a heading underlined\nnot a diff\n',
    ];
    const plan = planWrites(
      emission(
        ...refused.map((body, i): [string, string] => [`src/refused-${i}.js`, body]),
        ...quoted.map((body, i): [string, string] => [`docs/quoted-${i}.md`, body]),
        ['src/a.ts', patchBody('  return a + b;', '  return a + b; // --- +++ @@')],
      ),
      options(),
    );
    expect(plan.errors).toHaveLength(refused.length);
    expect(plan.files.map((f) => f.path)).toEqual([
      ...quoted.map((_, i) => `docs/quoted-${i}.md`),
      'src/a.ts',
    ]);
  });

  it('counts lines as a reader would', async () => {
    const plan = planWrites(
      emission(['one.txt', 'a\nb'], ['two.txt', 'a\nb\n'], ['empty.txt', '']),
      options(),
    );
    expect(plan.files.map((f) => [f.path, f.lines, f.bytes])).toEqual([
      ['one.txt', 2, 3],
      ['two.txt', 2, 4],
      ['empty.txt', 0, 0],
    ]);
  });

  it('refuses a whole file over an existing one, naming the SEARCH/REPLACE form', async () => {
    const plan = planWrites(emission(['src/a.ts', 'export const replaced = true;\n']), options());
    expect(plan.files).toEqual([]);
    expect(plan.errors).toEqual([
      '`src/a.ts` already exists; a whole-file block may only create a new file. To change an existing file, emit ' +
        'a search/replace patch: `<<<<<<< SEARCH` / exact current text / `=======` / new text / `>>>>>>> REPLACE`',
    ]);
  });

  it('refuses even a whole file identical to the existing one, and a directory', async () => {
    const plan = planWrites(emission(['src/a.ts', original], ['src', 'x\n']), options());
    expect(plan.files).toEqual([]);
    expect(plan.errors).toHaveLength(2);
    expect(plan.errors[1]).toMatch(/^`src` already exists/);
  });

  it('refuses a patch of a file that does not exist', async () => {
    const plan = planWrites(
      emission(['src/missing.ts', patchBody('const a = 1;', 'const a = 2;')]),
      options(),
    );
    expect(plan.errors).toEqual([
      '`src/missing.ts` does not exist; a search/replace block edits a file rather than creating one. To create ' +
        'it, emit the whole file in a fenced block instead',
    ]);
    expect(fs.existsSync(path.join(ws, 'src', 'missing.ts'))).toBe(false);
  });

  it('refuses a patch of a directory', async () => {
    const plan = planWrites(emission(['src', patchBody('const a = 1;', 'const a = 2;')]), options());
    expect(plan.errors).toEqual(['`src` is not a regular file; a patch can only edit a file']);
  });

  it.each([
    ['existing target', 'src/a.ts'],
    ['missing target', 'src/new.ts'],
  ])('refuses an unclosed SEARCH (%s): never written whole', async (_name, target) => {
    const plan = planWrites(emission([target, '<<<<<<< SEARCH\n  return a + b;\n=======\n']), options());
    expect(plan.files).toEqual([]);
    expect(plan.errors).toEqual([
      `\`${target}\`: a \`<<<<<<< SEARCH\` block was opened and never closed with \`=======\` and ` +
        '`>>>>>>> REPLACE`; the patch was refused and nothing written (the reply may have been cut off)',
    ]);
  });

  it.each([
    ['ambiguous', 'export function', 'matched more than once (2 times)'],
    ['missing', '  return a * b;', 'has no exact match'],
    ['short', 'a + b', 'is shorter than 8 characters'],
    ['identical', '  return a + b;', 'identical'],
  ])('refuses a %s SEARCH with the file named', async (kind, search, expected) => {
    fs.writeFileSync(path.join(ws, 'src', 'a.ts'), `${original}export function sub() {}\n`);
    const replace = kind === 'identical' ? search : 'changed text here';
    const plan = planWrites(emission(['src/a.ts', patchBody(search, replace)]), options());
    expect(plan.files).toEqual([]);
    expect(plan.errors).toHaveLength(1);
    expect(plan.errors[0]).toMatch(/^`src\/a\.ts`: patch refused, the file left as it was: /);
    expect(plan.errors[0]).toContain(expected);
  });

  it('keeps a CRLF file CRLF through plan and apply', async () => {
    fs.writeFileSync(path.join(ws, 'src', 'a.ts'), original.replace(/\n/g, '\r\n'));
    const plan = planWrites(
      emission(['src/a.ts', patchBody('  return a + b;', '  return a + b + 0;')]),
      options(),
    );
    applyWritePlan(plan);
    expect(fs.readFileSync(path.join(ws, 'src', 'a.ts'))).toEqual(
      Buffer.from('export function add(a, b) {\r\n  return a + b + 0;\r\n}\r\n'),
    );
  });

  it('refuses to patch a file that is not UTF-8', async () => {
    fs.writeFileSync(path.join(ws, 'src', 'latin1.txt'), Buffer.from('caf\xe9 au lait, please\n', 'latin1'));
    const plan = planWrites(emission(['src/latin1.txt', patchBody('au lait, please', 'noir')]), options());
    expect(plan.errors).toEqual([
      '`src/latin1.txt` is not UTF-8 text; it cannot be patched without altering its bytes',
    ]);
  });

  it('keeps the permission bits of a patched file', async () => {
    const script = path.join(ws, 'run.sh');
    fs.writeFileSync(script, '#!/bin/sh\necho "old message"\n');
    fs.chmodSync(script, 0o750);
    const plan = planWrites(
      emission(['run.sh', patchBody('echo "old message"', 'echo "new message"')]),
      options(),
    );
    applyWritePlan(plan);
    expect(fs.statSync(script).mode & 0o777).toBe(0o750);
    expect(fs.readFileSync(script, 'utf8')).toContain('new message');
  });
});

describe('planWrites: the per-file gates, in order', () => {
  it('containment: `..`, absolute outside and symlinks leading out are refused; other files still plan', async () => {
    fs.symlinkSync(path.join(base, 'outside'), path.join(ws, 'link-out'));
    const plan = planWrites(
      emission(
        ['../outside/a.ts', 'x\n'],
        [path.join(base, 'outside', 'b.ts'), 'x\n'],
        ['link-out/c.ts', 'x\n'],
        ['src/ok.ts', 'x\n'],
      ),
      options(),
    );
    expect(plan.files.map((f) => f.path)).toEqual(['src/ok.ts']);
    expect(plan.errors).toHaveLength(3);
    for (const error of plan.errors) expect(error).toContain(`outside the workspace ${ws}; not written`);
    applyWritePlan(plan);
    expect(fs.readdirSync(path.join(base, 'outside'))).toEqual([]);
  });

  it('the policy and key files are refused when the caller says which they are; other files still plan', async () => {
    const governanceFile = (p: string) =>
      p === '.delegate-git/policy.json' || p.startsWith('.delegate-git/keys/');
    const plan = planWrites(
      emission(
        ['.delegate-git/policy.json', '{}\n'],
        ['.delegate-git/keys/mallory.json', '{}\n'],
        ['.delegate-git/notes.md', 'x\n'],
      ),
      options({ repositoryTop: ws, governanceFile }),
    );
    expect(plan.files.map((f) => f.path)).toEqual(['.delegate-git/notes.md']);
    expect(plan.errors).toEqual([
      "`.delegate-git/policy.json` is the policy or a key file of the trust root; only reviewers change those (a unit's verdict never promotes them). Not written.",
      "`.delegate-git/keys/mallory.json` is the policy or a key file of the trust root; only reviewers change those (a unit's verdict never promotes them). Not written.",
    ]);
  });

  it('an emitAllowlist root admits a path outside the workspace (control)', async () => {
    const plan = planWrites(
      emission(['../outside/a.ts', 'x\n']),
      options({ emitAllowlist: [path.join(base, 'outside')], targetFiles: ['../outside'] }),
    );
    expect(plan.errors).toEqual([]);
    expect(plan.files[0]?.path).toBe('../outside/a.ts');
  });

  it('contract files are unwritable, checked before scope, by patch or whole file', async () => {
    const contract = path.join(ws, 'test', 'a.test.ts');
    const plan = planWrites(
      emission(
        ['test/a.test.ts', patchBody('test("adds", () => {});', 'test("adds", () => { /* weakened */ });')],
        ['./test/../test/a.test.ts', 'x\n'],
        ['src/b.ts', 'export const b = 1;\n'],
      ),
      options({ contractFiles: [contract], targetFiles: ['src/b.ts'] }),
    );
    expect(plan.files.map((f) => f.path)).toEqual(['src/b.ts']);
    const message = (spelled: string) =>
      `\`${spelled}\` is a contract file declared by the architect; the worker may not write it (the contract is ` +
      'what the unit is verified against). Not written.';
    expect(plan.errors).toEqual([message('test/a.test.ts'), message('./test/../test/a.test.ts')]);
  });

  it('unit scope: a prefix sibling is refused, a directory target covers its subtree, `off` lifts it', async () => {
    const files = emission(['src/deep/new.ts', 'x\n'], ['src-extra/a.ts', 'x\n']);
    const enforced = planWrites(files, options({ targetFiles: ['src/'] }));
    expect(enforced.files.map((f) => f.path)).toEqual(['src/deep/new.ts']);
    expect(enforced.errors).toEqual([
      "`src-extra/a.ts` is outside the unit's declared targetFiles (`src/`); not written. Declare it in the " +
        'unit\'s targetFiles, or an operator can set unitScope: "off" to lift the check.',
    ]);
    const off = planWrites(files, options({ targetFiles: ['src/'], unitScope: 'off' }));
    expect(off.files.map((f) => f.path)).toEqual(['src/deep/new.ts', 'src-extra/a.ts']);
  });

  it('a later file reaching the same canonical path is a duplicate, ignored', async () => {
    const first = patchBody('  return a + b;', '  return b + a;');
    const plan = planWrites(
      {
        files: [
          { path: 'src/a.ts', body: first, source: 'header' },
          { path: 'link-in/a.ts', body: patchBody('  return a + b;', '  return 42;'), source: 'marker' },
        ],
        duplicates: ['./src/a.ts'],
        errors: [],
      },
      options(),
    );
    expect(plan.errors).toEqual([]);
    expect(plan.files).toHaveLength(1);
    expect(plan.files[0]?.content.toString()).toContain('return b + a;');
    expect(plan.duplicates).toEqual(['./src/a.ts', 'link-in/a.ts']);
  });
});

describe('planWrites: names the file system or a record cannot take are refusals of that file', () => {
  it('a name over 255 bytes, or a path over the limit, is refused as too long; the other file still plans', async () => {
    const chain = `src/${Array.from({ length: 25 }, () => 'd'.repeat(200)).join('/')}/x.js`;
    const plan = planWrites(
      emission([`src/${'a'.repeat(300)}.js`, 'x\n'], [chain, 'x\n'], ['src/ok.js', 'x\n']),
      options(),
    );
    expect(plan.files.map((f) => f.path)).toEqual(['src/ok.js']);
    expect(plan.errors).toHaveLength(2);
    for (const error of plan.errors) expect(error).toMatch(/: name too long \(.*\); not written$/);
  });

  it('any other error looking the path up refuses that file, naming the error', async () => {
    const real = fs.lstatSync;
    const spy = vi.spyOn(fs, 'lstatSync').mockImplementation(((p: fs.PathLike, o?: fs.StatSyncOptions) => {
      if (String(p).endsWith('eio.js'))
        throw Object.assign(new Error('EIO: i/o error, lstat'), { code: 'EIO' });
      return real(p, o);
    }) as typeof fs.lstatSync);
    try {
      const plan = planWrites(emission(['src/eio.js', 'x\n'], ['src/ok.js', 'x\n']), options());
      expect(plan.files.map((f) => f.path)).toEqual(['src/ok.js']);
      expect(plan.errors).toEqual([
        '`src/eio.js` could not be looked up (EIO: i/o error, lstat); not written',
      ]);
    } finally {
      spy.mockRestore();
    }
  });

  it('a name no record can hold (a backslash) is refused, by the predicate record() uses', async () => {
    const plan = planWrites(
      emission(['src/q"b\\c.js', 'x\n'], ['src/q"b.js', 'x\n'], ['src/ok.js', 'x\n']),
      options({ repositoryTop: ws }),
    );
    // Control: a quote alone is a repository path, so it is written and recorded.
    expect(plan.files.map((f) => f.path)).toEqual(['src/q"b.js', 'src/ok.js']);
    expect(plan.errors).toEqual([
      '`src/q"b\\c.js`: no record can name it (a repository path holds no backslash, and no empty, `.` or `..` ' +
        'segment), so it could never be recorded nor promoted. Not written.',
    ]);
  });

  it('a file and a directory under one name: the later of the two is refused, in either order', async () => {
    const plan = planWrites(
      emission(['src/m/x.js', 'x\n'], ['src/m', 'm\n'], ['src/n', 'n\n'], ['src/n/x.js', 'x\n']),
      options(),
    );
    expect(plan.files.map((f) => f.path)).toEqual(['src/m/x.js', 'src/n']);
    expect(plan.errors).toEqual([
      '`src/m` is also the directory of `src/m/x.js`, planned earlier in this reply; one name cannot be a file and ' +
        'a directory. Not written.',
      '`src/n/x.js` would go under `src/n`, which this reply writes as a file; one name cannot be a file and a ' +
        'directory. Not written.',
    ]);
    applyWritePlan(plan);
    expect(read('src/m/x.js')).toBe('x\n');
    expect(read('src/n')).toBe('n\n');
  });

  it('a file under an existing file is refused, by whole file or patch', async () => {
    const plan = planWrites(
      emission(['src/a.ts/x.js', 'x\n'], ['src/a.ts/y.js', patchBody('a', 'b')]),
      options(),
    );
    expect(plan.files).toEqual([]);
    for (const spelled of ['src/a.ts/x.js', 'src/a.ts/y.js'])
      expect(plan.errors).toContain(
        `\`${spelled}\` would go under \`src/a.ts\`, which is a file, not a directory; not written`,
      );
  });

  it('control: files sharing a directory, new or existing, all plan and are written', async () => {
    const plan = planWrites(
      emission(['src/m/x.js', 'x\n'], ['src/m/y.js', 'y\n'], ['src/m/deep/z.js', 'z\n'], ['src/b.ts', 'b\n']),
      options({ repositoryTop: ws }),
    );
    expect(plan.errors).toEqual([]);
    applyWritePlan(plan);
    expect(['src/m/x.js', 'src/m/y.js', 'src/m/deep/z.js', 'src/b.ts'].map(read)).toEqual([
      'x\n',
      'y\n',
      'z\n',
      'b\n',
    ]);
  });
});

describe('applyWritePlan: all or nothing', () => {
  it('a failure mid-way restores the files already written and removes created ones', async () => {
    const plan = planWrites(
      emission(
        ['src/a.ts', patchBody('  return a + b;', '  return b + a;')],
        ['fresh/dir/b.ts', 'export const b = 1;\n'],
        ['blocker.txt/c.ts', 'export const c = 1;\n'],
        ['src/later.ts', 'never reached\n'],
      ),
      options(),
    );
    expect(plan.errors).toEqual([]);
    expect(plan.files.map((f) => f.path)).toEqual([
      'src/a.ts',
      'fresh/dir/b.ts',
      'blocker.txt/c.ts',
      'src/later.ts',
    ]);
    // After planning, which refuses a file under a file: something else put it there in between.
    fs.writeFileSync(path.join(ws, 'blocker.txt'), 'I am a file, not a directory\n');

    let failure: unknown = null;
    try {
      applyWritePlan(plan);
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(DelegateGitError);
    expect((failure as DelegateGitError).code).toBe('IO');
    expect((failure as DelegateGitError).message).toMatch(
      /^could not write blocker\.txt\/c\.ts: .+; the 2 file\(s\) already written were restored; nothing was changed$/,
    );
    expect(read('src/a.ts')).toBe(original);
    expect(fs.existsSync(path.join(ws, 'fresh'))).toBe(false);
    expect(fs.existsSync(path.join(ws, 'src', 'later.ts'))).toBe(false);
    expect(read('blocker.txt')).toBe('I am a file, not a directory\n');
    const leftovers = fs.readdirSync(ws, { recursive: true }).filter((name) => String(name).endsWith('.tmp'));
    expect(leftovers).toEqual([]);
  });

  it('the same plan without the failing file applies completely (control)', async () => {
    const plan = planWrites(
      emission(
        ['src/a.ts', patchBody('  return a + b;', '  return b + a;')],
        ['fresh/dir/b.ts', 'export const b = 1;\n'],
      ),
      options(),
    );
    applyWritePlan(plan);
    expect(read('src/a.ts')).toContain('return b + a;');
    expect(read('fresh/dir/b.ts')).toBe('export const b = 1;\n');
    const leftovers = fs.readdirSync(ws, { recursive: true }).filter((name) => String(name).endsWith('.tmp'));
    expect(leftovers).toEqual([]);
  });

  it('a file changed between plan and apply is restored to what it was at apply time', async () => {
    const plan = planWrites(
      emission(['src/a.ts', patchBody('  return a + b;', '  return b + a;')], ['blocker.txt/c.ts', 'x\n']),
      options(),
    );
    fs.writeFileSync(path.join(ws, 'blocker.txt'), 'now a file\n');
    fs.writeFileSync(path.join(ws, 'src', 'a.ts'), 'edited by someone else\n');
    expect(() => applyWritePlan(plan)).toThrow(/restored/);
    expect(read('src/a.ts')).toBe('edited by someone else\n');
  });
});

describe('putBack: a written plan undone (an interrupted delegation)', () => {
  it('gives a patched file its previous bytes and mode back, removes created files and the directories made for them', async () => {
    fs.chmodSync(path.join(ws, 'src', 'a.ts'), 0o640);
    fs.mkdirSync(path.join(ws, 'kept'));
    const plan = planWrites(
      emission(
        ['src/a.ts', patchBody('  return a + b;', '  return b + a;')],
        ['fresh/dir/b.ts', 'export const b = 1;\n'],
        ['kept/new/c.ts', 'export const c = 1;\n'],
      ),
      options(),
    );
    expect(plan.errors).toEqual([]);
    const written = applyWritePlan(plan);
    expect(read('src/a.ts')).toContain('return b + a;');
    // Something else wrote beside c.ts: that directory is not the run's to remove.
    fs.writeFileSync(path.join(ws, 'kept', 'new', 'other.txt'), 'not the worker’s\n');

    expect(putBack(written)).toEqual([]);
    expect(fs.readFileSync(path.join(ws, 'src', 'a.ts'))).toEqual(Buffer.from(original));
    expect(fs.statSync(path.join(ws, 'src', 'a.ts')).mode & 0o7777).toBe(0o640);
    expect(fs.existsSync(path.join(ws, 'fresh'))).toBe(false);
    expect(fs.existsSync(path.join(ws, 'kept', 'new', 'c.ts'))).toBe(false);
    expect(fs.readdirSync(path.join(ws, 'kept', 'new'))).toEqual(['other.txt']);
  });

  it('tries every file and names those it could not put back, with why', async () => {
    const plan = planWrites(
      emission(
        ['src/a.ts', patchBody('  return a + b;', '  return b + a;')],
        ['fresh/b.ts', 'export const b = 1;\n'],
      ),
      options(),
    );
    const written = applyWritePlan(plan);
    // The created file became a directory with something in it: removing the file cannot remove that.
    fs.rmSync(path.join(ws, 'fresh', 'b.ts'));
    fs.mkdirSync(path.join(ws, 'fresh', 'b.ts'));
    fs.writeFileSync(path.join(ws, 'fresh', 'b.ts', 'inside'), 'x');

    const unrestored = putBack(written);
    expect(unrestored.map((u) => u.file.path)).toEqual(['fresh/b.ts']);
    expect(unrestored[0]?.reason).toMatch(/directory/i);
    // The other file was still put back.
    expect(read('src/a.ts')).toBe(original);
  });

  it('with keepChanged, leaves a file edited since the worker wrote it (and one deleted), and puts back the others', async () => {
    const plan = planWrites(
      emission(
        ['src/a.ts', patchBody('  return a + b;', '  return b + a;')],
        ['fresh/b.ts', 'export const b = 1;\n'],
        ['fresh/c.ts', 'export const c = 1;\n'],
      ),
      options(),
    );
    const written = applyWritePlan(plan);
    const edited = `${read('src/a.ts')}// mine, while the verification ran\n`;
    fs.writeFileSync(path.join(ws, 'src', 'a.ts'), edited);
    fs.rmSync(path.join(ws, 'fresh', 'c.ts'));

    const unrestored = putBack(written, { keepChanged: true });
    expect(unrestored.map((u) => [u.file.path, u.reason, u.changed])).toEqual([
      ['fresh/c.ts', CHANGED_SINCE_WRITTEN, true],
      ['src/a.ts', CHANGED_SINCE_WRITTEN, true],
    ]);
    expect(read('src/a.ts')).toBe(edited);
    // Control: the file still as the worker wrote it is removed (the run created it).
    expect(fs.existsSync(path.join(ws, 'fresh', 'b.ts'))).toBe(false);
  });
});

describe('partialWriteOutcome: what a failed write says of the files written before it', () => {
  it('all restored', () => {
    expect(partialWriteOutcome(2, [], new Map())).toBe(
      'the 2 file(s) already written were restored; nothing was changed',
    );
  });

  it('one not restored: named, with where what it held is kept (the journal, set aside) when it is', () => {
    const unrestored = [
      { file: { path: 'src/a.js', absolute: '/w/src/a.js' }, reason: 'EIO: i/o error' },
      { file: { path: 'src/n.js', absolute: '/w/src/n.js' }, reason: 'EBUSY' },
    ];
    expect(partialWriteOutcome(2, unrestored, new Map([['/w/src/a.js', '/w/.git/kept/1/0']]))).toBe(
      'restoring these files also failed, check them by hand: src/a.js (EIO: i/o error; what it held before is kept in /w/.git/kept/1/0), src/n.js (EBUSY)',
    );
  });
});
