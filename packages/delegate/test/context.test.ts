import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ContextResult, type InjectedContext, readContext } from '../src/context.js';

let root: string;
let workspace: string;
const tenLines = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'dg-context-')));
  workspace = path.join(root, 'ws');
  fs.mkdirSync(path.join(workspace, 'src'), { recursive: true });
  fs.writeFileSync(path.join(workspace, 'src', 'a.ts'), tenLines);
  fs.writeFileSync(path.join(workspace, 'b.txt'), 'beta\n');
  fs.writeFileSync(path.join(root, 'outside.txt'), 'outside\n');
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

function injected(result: ContextResult): InjectedContext[] {
  if (!result.ok) throw new Error(`expected ok, got errors: ${result.errors.join('; ')}`);
  return result.context;
}
function refused(result: ContextResult): string[] {
  if (result.ok) throw new Error('expected a refusal');
  return result.errors;
}
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('readContext: ranges', () => {
  it('injects exactly the requested lines, with the slice hash and sizes', async () => {
    const [item] = injected(
      await readContext([{ path: 'src/a.ts', startLine: 2, endLine: 4 }], { workspace }),
    );
    const slice = 'line 2\nline 3\nline 4\n';
    expect(item).toEqual({
      path: 'src/a.ts',
      lineRange: [2, 4],
      lines: 3,
      bytes: Buffer.byteLength(slice),
      sha256: sha256(slice),
      text: slice,
    });
  });

  it('a request without a range injects the whole file with lineRange null', async () => {
    const [item] = injected(await readContext([{ path: 'src/a.ts' }], { workspace }));
    expect(item).toMatchObject({ lineRange: null, lines: 10, bytes: tenLines.length, text: tenLines });
    expect(item!.sha256).toBe(sha256(tenLines));
  });

  it('an over-long end is clamped, and the clamp is visible in lineRange', async () => {
    const [item] = injected(
      await readContext([{ path: 'src/a.ts', startLine: 8, endLine: 50 }], { workspace }),
    );
    expect(item).toMatchObject({ lineRange: [8, 10], lines: 3, text: 'line 8\nline 9\nline 10\n' });
  });

  it('a start beyond the end of the file is refused; the last line itself is fine (control)', async () => {
    const errors = refused(
      await readContext([{ path: 'src/a.ts', startLine: 11, endLine: 12 }], { workspace }),
    );
    expect(errors).toEqual(['src/a.ts: startLine 11 is beyond the end of the file (10 line(s))']);
    const [last] = injected(await readContext([{ path: 'src/a.ts', startLine: 10 }], { workspace }));
    expect(last).toMatchObject({ lineRange: [10, 10], text: 'line 10\n' });
  });

  it('invalid ranges are refused', async () => {
    for (const bad of [
      { path: 'src/a.ts', startLine: 0 },
      { path: 'src/a.ts', startLine: 3, endLine: 2 },
      { path: 'src/a.ts', startLine: 1.5 },
      { path: '  ' },
    ]) {
      expect(refused(await readContext([bad], { workspace }))).toHaveLength(1);
    }
  });
});

describe('readContext: byte budget (refuses, never truncates)', () => {
  it('a whole file of exactly the budget passes; one byte over is refused', async () => {
    const size = tenLines.length;
    expect(injected(await readContext([{ path: 'src/a.ts' }], { workspace, maxBytes: size }))).toHaveLength(
      1,
    );
    const errors = refused(await readContext([{ path: 'src/a.ts' }], { workspace, maxBytes: size - 1 }));
    expect(errors[0]).toMatch(/^src\/a\.ts: over the context budget: .* over the 70-byte limit/);
  });

  it('the budget covers the total across requests, ranged ones included', async () => {
    const requests = [{ path: 'b.txt' }, { path: 'src/a.ts', startLine: 1, endLine: 2 }];
    const total = 'beta\n'.length + 'line 1\nline 2\n'.length;
    expect(injected(await readContext(requests, { workspace, maxBytes: total }))).toHaveLength(2);
    const errors = refused(await readContext(requests, { workspace, maxBytes: total - 1 }));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^src\/a\.ts: over the context budget/);
  });

  it('one slice named again, however spelled, is read and counted once', async () => {
    const size = tenLines.length;
    const requests = [
      ...Array.from({ length: 20_000 }, () => ({ path: 'src/a.ts' })),
      { path: './src/a.ts' },
      { path: 'src//a.ts' },
    ];
    const context = injected(await readContext(requests, { workspace, maxBytes: size }));
    expect(context.map((c) => [c.path, c.lineRange])).toEqual([['src/a.ts', null]]);
  });

  it('control: two ranges of one file are two slices, both counted against the budget', async () => {
    const requests = [
      { path: 'src/a.ts', startLine: 1, endLine: 2 },
      { path: 'src/a.ts', startLine: 3, endLine: 3 },
    ];
    expect(injected(await readContext(requests, { workspace })).map((c) => c.lineRange)).toEqual([
      [1, 2],
      [3, 3],
    ]);
    const errors = refused(await readContext(requests, { workspace, maxBytes: 'line 1\nline 2\n'.length }));
    expect(errors).toEqual([expect.stringMatching(/^src\/a\.ts: over the context budget/)]);
  });

  it('the same refusal, for a path named again, is listed once', async () => {
    const requests = Array.from({ length: 1000 }, () => ({ path: '../outside.txt' }));
    expect(refused(await readContext(requests, { workspace }))).toEqual([
      '../outside.txt: outside the workspace',
    ]);
  });

  it('defaults to 32768 bytes', async () => {
    fs.writeFileSync(path.join(workspace, 'big.txt'), 'x'.repeat(32768));
    expect(injected(await readContext([{ path: 'big.txt' }], { workspace }))).toHaveLength(1);
    fs.appendFileSync(path.join(workspace, 'big.txt'), 'y');
    expect(refused(await readContext([{ path: 'big.txt' }], { workspace }))).toHaveLength(1);
  });
});

describe('readContext: containment', () => {
  it('refuses `..`, absolute paths and symlinks leading outside the workspace', async () => {
    fs.symlinkSync(path.join(root, 'outside.txt'), path.join(workspace, 'link.txt'));
    for (const outsidePath of [
      '../outside.txt',
      path.join(root, 'outside.txt'),
      'link.txt',
      'src/../../outside.txt',
    ]) {
      expect(refused(await readContext([{ path: outsidePath }], { workspace }))).toEqual([
        `${outsidePath}: outside the workspace`,
      ]);
    }
  });

  it('paths that stay inside are fine, spelled any way; a link to a slice already named is that slice', async () => {
    fs.symlinkSync(path.join(workspace, 'b.txt'), path.join(workspace, 'inner-link.txt'));
    const context = injected(
      await readContext(
        [
          { path: 'src/../b.txt' },
          { path: path.join(workspace, 'src', 'a.ts'), endLine: 1 },
          { path: 'inner-link.txt' },
        ],
        {
          workspace,
        },
      ),
    );
    // The link names the slice `src/../b.txt` named: read once.
    expect(context.map((item) => item.path)).toEqual(['b.txt', 'src/a.ts']);
  });

  it('refuses a file under a .git directory, below the workspace or below the repository', async () => {
    fs.mkdirSync(path.join(workspace, '.git'));
    fs.writeFileSync(path.join(workspace, '.git', 'config'), '[core]\n');
    expect(refused(await readContext([{ path: '.git/config' }], { workspace }))).toEqual([
      '.git/config: inside a git directory',
    ]);
    // A workspace inside a .git directory: every file in it is in a git directory.
    const inGit = path.join(workspace, '.git');
    expect(refused(await readContext([{ path: 'config' }], { workspace: inGit }))).toEqual([
      'config: inside a git directory',
    ]);
    // A git directory of another name, as the repository says (a gitfile or GIT_DIR put it there).
    fs.mkdirSync(path.join(workspace, 'meta'));
    fs.writeFileSync(path.join(workspace, 'meta', 'config'), '[core]\n');
    const gitDirs = [path.join(workspace, 'meta')];
    expect(refused(await readContext([{ path: 'meta/config' }], { workspace, gitDirs }))).toEqual([
      'meta/config: inside a git directory',
    ]);
    // Control: a name that merely starts with .git is read.
    fs.writeFileSync(path.join(workspace, '.gitignore'), 'dist\n');
    expect(injected(await readContext([{ path: '.gitignore' }], { workspace, gitDirs }))).toHaveLength(1);
  });

  it('one bad request refuses the whole injection', async () => {
    const errors = refused(await readContext([{ path: 'b.txt' }, { path: 'missing.ts' }], { workspace }));
    expect(errors).toEqual(['missing.ts: no such file']);
  });

  it('directories and binary files are refused', async () => {
    fs.writeFileSync(path.join(workspace, 'blob.bin'), Buffer.from([0x89, 0x50, 0x00, 0x01]));
    expect(refused(await readContext([{ path: 'src' }], { workspace }))).toEqual(['src: not a regular file']);
    expect(refused(await readContext([{ path: 'blob.bin' }], { workspace }))[0]).toMatch(/not UTF-8 text/);
  });
});

describe('readContext: credential scan', () => {
  it('a secret in the context refuses the injection, naming file, line and rule but not the secret', async () => {
    const body = Array.from(
      randomBytes(36),
      (b) => 'abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789'[b % 56],
    ).join('');
    const token = ['ghp', body].join('_');
    fs.writeFileSync(
      path.join(workspace, 'config.ts'),
      `// settings\nexport const a = 1;\nconst t = '${token}';\n`,
    );
    const errors = refused(
      await readContext([{ path: 'config.ts', startLine: 2, endLine: 3 }], { workspace }),
    );
    expect(errors).toEqual(['credential in config.ts:3 (github)']);
    expect(errors.join('\n')).not.toContain(body.slice(0, 8));
  });

  it('the same file without the secret passes (control)', async () => {
    fs.writeFileSync(path.join(workspace, 'config.ts'), '// settings\nexport const a = 1;\n');
    expect(injected(await readContext([{ path: 'config.ts' }], { workspace }))).toHaveLength(1);
  });
});
