import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DelegateGitError } from '@delegate-git/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  canonicaliseAgainst,
  canonicalisePath,
  checkEmissionPath,
  isPathWithin,
  resolveWorkspace,
} from '../src/containment.js';

// Layout (real directories and symlinks):
//   base/session/            session root
//     ws/                    workspace
//       src/a.ts
//       link-in  -> ws/src           (symlink inside, pointing inside)
//       link-out -> base/outside     (symlink inside, pointing out)
//       dangling -> base/outside/new (dangling symlink pointing out)
//       loop     -> loop
//     ws-extra/              sibling whose name starts with "ws"
//   base/outside/            outside everything
//   base/allowed/            an emitAllowlist root
//   base/session-link -> base/session
let base: string;
let session: string;
let ws: string;
let outside: string;
let allowed: string;

beforeAll(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'dg-containment-')));
  session = path.join(base, 'session');
  ws = path.join(session, 'ws');
  outside = path.join(base, 'outside');
  allowed = path.join(base, 'allowed');
  fs.mkdirSync(path.join(ws, 'src'), { recursive: true });
  fs.mkdirSync(path.join(session, 'ws-extra'));
  fs.mkdirSync(outside);
  fs.mkdirSync(allowed);
  fs.writeFileSync(path.join(ws, 'src', 'a.ts'), 'export const a = 1;\n');
  fs.symlinkSync(path.join(ws, 'src'), path.join(ws, 'link-in'));
  fs.symlinkSync(outside, path.join(ws, 'link-out'));
  fs.symlinkSync('../../outside/new', path.join(ws, 'dangling'));
  fs.symlinkSync('loop', path.join(ws, 'loop'));
  fs.symlinkSync(session, path.join(base, 'session-link'));
});

afterAll(() => {
  fs.rmSync(base, { recursive: true, force: true });
});

describe('canonicalisePath', () => {
  it('keeps an existing real path', () => {
    expect(canonicalisePath(path.join(ws, 'src', 'a.ts'))).toBe(path.join(ws, 'src', 'a.ts'));
  });

  it('re-appends a tail that does not exist yet to the real deepest ancestor', () => {
    expect(canonicalisePath(path.join(base, 'session-link', 'ws', 'new', 'deep.ts'))).toBe(
      path.join(ws, 'new', 'deep.ts'),
    );
  });

  it('resolves symlinks inside and out', () => {
    expect(canonicalisePath(path.join(ws, 'link-in', 'a.ts'))).toBe(path.join(ws, 'src', 'a.ts'));
    expect(canonicalisePath(path.join(ws, 'link-out', 'x.ts'))).toBe(path.join(outside, 'x.ts'));
  });

  it('follows a dangling symlink to where a write would land', () => {
    expect(canonicalisePath(path.join(ws, 'dangling'))).toBe(path.join(outside, 'new'));
    expect(canonicalisePath(path.join(ws, 'dangling', 'child.ts'))).toBe(
      path.join(outside, 'new', 'child.ts'),
    );
  });

  it('normalises `..` and `.` segments', () => {
    expect(canonicalisePath(path.join(ws, 'src', '..', 'src', '.', 'a.ts'))).toBe(
      path.join(ws, 'src', 'a.ts'),
    );
  });

  it('refuses a symlink loop', () => {
    expect(() => canonicalisePath(path.join(ws, 'loop', 'x'))).toThrow(DelegateGitError);
    expect(() => canonicalisePath(path.join(ws, 'loop', 'x'))).toThrow(/too many levels of symbolic links/);
  });

  it('refuses a relative path rather than resolving it against process.cwd()', () => {
    expect(() => canonicalisePath('src/a.ts')).toThrow(/must be absolute/);
    expect(canonicaliseAgainst(ws, 'src/a.ts')).toBe(path.join(ws, 'src', 'a.ts'));
  });
});

describe('isPathWithin', () => {
  const root = path.join(path.sep, 'w', 'src');
  it.each([
    [root, true],
    [path.join(root, 'a.ts'), true],
    [path.join(root, 'deep', 'b.ts'), true],
    [path.join(root, '..foo'), true],
    [path.join(path.sep, 'w', 'src-extra', 'a.ts'), false],
    [path.join(path.sep, 'w', 'srcx'), false],
    [path.join(path.sep, 'w'), false],
    [path.join(path.sep, 'other', 'src'), false],
  ])('%s → %s', (candidate, expected) => {
    expect(isPathWithin(root, candidate)).toBe(expected);
  });
});

describe('resolveWorkspace', () => {
  const opts = () => ({ sessionRoot: session, emitAllowlist: [allowed] });

  it.each([undefined, '', '   '])('no request (%j) → the session root', (requested) => {
    expect(resolveWorkspace(requested, opts())).toEqual({ ok: true, dir: session, source: 'session-root' });
  });

  it('relative requests resolve against the session root, not the process directory', () => {
    expect(resolveWorkspace('ws', opts())).toEqual({ ok: true, dir: ws, source: 'within-session-root' });
    expect(resolveWorkspace('ws/../ws/src', opts())).toEqual({
      ok: true,
      dir: path.join(ws, 'src'),
      source: 'within-session-root',
    });
    expect(resolveWorkspace('.', opts())).toEqual({ ok: true, dir: session, source: 'within-session-root' });
  });

  it('a session root spelled through a symlink is canonical', () => {
    expect(
      resolveWorkspace(undefined, { sessionRoot: path.join(base, 'session-link'), emitAllowlist: [] }),
    ).toEqual({
      ok: true,
      dir: session,
      source: 'session-root',
    });
  });

  it('outside the session root but inside an emitAllowlist root', () => {
    expect(resolveWorkspace(path.join(allowed, 'pkg'), opts())).toEqual({
      ok: true,
      dir: path.join(allowed, 'pkg'),
      source: 'emitAllowlist',
    });
  });

  it.each([
    ['a `..` escape', '../outside'],
    ['an absolute path elsewhere', '<abs-out>'],
    ['a symlink leading out', 'ws/link-out'],
  ])('refuses %s, naming emitAllowlist', (_name, spelled) => {
    const requested = spelled === '<abs-out>' ? outside : spelled;
    const result = resolveWorkspace(requested, opts());
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.reason).toContain(`workspaceDir ${JSON.stringify(requested)} resolves to ${outside}`);
      expect(result.reason).toContain('emitAllowlist');
    }
  });

  it.each(['.git', '.git/hooks', 'ws/../.GIT/hooks'])('refuses a workspace inside .git: %s', (requested) => {
    expect(resolveWorkspace(requested, opts())).toEqual({
      ok: false,
      reason: `workspaceDir ${JSON.stringify(requested)} is inside a git directory, where a unit may never work (hooks and config there run code)`,
    });
    // Control: a directory whose name merely starts with .git is a workspace like any other.
    expect(resolveWorkspace('.github', opts()).ok).toBe(true);
  });

  it("refuses another repository's .git under an emitAllowlist root, and a git directory of any name", () => {
    const other = path.join(allowed, 'other');
    fs.mkdirSync(path.join(other, '.git', 'hooks'), { recursive: true });
    expect(resolveWorkspace(path.join(other, '.git', 'hooks'), opts()).ok).toBe(false);
    expect(resolveWorkspace(path.join(other), opts()).ok).toBe(true); // control: its work tree is allowed
    // A git directory named otherwise (a gitfile, a symbolic link or GIT_DIR put it there): known by gitDirs.
    const meta = path.join(session, 'meta');
    fs.mkdirSync(path.join(meta, 'hooks'), { recursive: true });
    const withGitDir = { ...opts(), gitDirs: [meta] };
    expect(resolveWorkspace('meta/hooks', withGitDir).ok).toBe(false);
    expect(resolveWorkspace('ws', withGitDir).ok).toBe(true); // control
  });

  it('relative emitAllowlist entries resolve against the session root', () => {
    expect(resolveWorkspace('../outside', { sessionRoot: session, emitAllowlist: ['../outside'] })).toEqual({
      ok: true,
      dir: outside,
      source: 'emitAllowlist',
    });
  });
});

describe('checkEmissionPath', () => {
  const opts = () => ({ workspace: ws, emitAllowlist: [] as string[] });

  it.each([
    ['a relative path', 'src/a.ts', () => path.join(ws, 'src', 'a.ts')],
    ['a new nested path', 'src/new/b.ts', () => path.join(ws, 'src', 'new', 'b.ts')],
    ['`./` and inner `..`', './src/../src/a.ts', () => path.join(ws, 'src', 'a.ts')],
    ['an absolute path inside', '<abs>', () => path.join(ws, 'src', 'a.ts')],
    ['a symlink that stays inside', 'link-in/a.ts', () => path.join(ws, 'src', 'a.ts')],
    ['a name that starts with dots', '..hidden/x.ts', () => path.join(ws, '..hidden', 'x.ts')],
  ])('allows %s', (_name, spelled, expected) => {
    const input = spelled === '<abs>' ? path.join(ws, 'src', 'a.ts') : spelled;
    expect(checkEmissionPath(input, opts())).toEqual({ ok: true, absolute: expected() });
  });

  it.each([
    ['`..` traversal', '../ws-extra/a.ts', () => path.join(session, 'ws-extra', 'a.ts')],
    ['deep `..` traversal', 'src/../../../outside/a.ts', () => path.join(outside, 'a.ts')],
    ['an absolute path outside', '<abs-out>', () => path.join(outside, 'a.ts')],
    ['a symlink inside pointing out', 'link-out/a.ts', () => path.join(outside, 'a.ts')],
    ['a dangling symlink pointing out', 'dangling', () => path.join(outside, 'new')],
  ])('refuses %s, naming the workspace and emitAllowlist', (_name, spelled, resolved) => {
    const input = spelled === '<abs-out>' ? path.join(outside, 'a.ts') : spelled;
    expect(checkEmissionPath(input, opts())).toEqual({
      ok: false,
      reason:
        `\`${input}\` resolves to ${resolved()}, outside the workspace ${ws}; not written. Paths must stay inside ` +
        'the workspace (no `..`, no absolute paths elsewhere, no symlinks leading out); an operator can allow ' +
        'another root with emitAllowlist.',
    });
  });

  it('an emitAllowlist root lets the same paths through', () => {
    const withAllowlist = { workspace: ws, emitAllowlist: [outside] };
    expect(checkEmissionPath('link-out/a.ts', withAllowlist)).toEqual({
      ok: true,
      absolute: path.join(outside, 'a.ts'),
    });
    expect(checkEmissionPath(path.join(outside, 'b.ts'), withAllowlist).ok).toBe(true);
  });

  it.each(['.git/hooks/pre-commit', '.GIT/config', 'sub/.git/config'])(
    'refuses a path into .git: %s',
    (spelled) => {
      expect(checkEmissionPath(spelled, opts())).toEqual({
        ok: false,
        reason: `\`${spelled}\` is inside a git directory, which a unit may never write; not written`,
      });
    },
  );

  it('refuses a path in a git directory however the workspace reaches it, and in one of any name', () => {
    const inGit = path.join(session, '.git');
    fs.mkdirSync(inGit, { recursive: true });
    expect(checkEmissionPath('config', { workspace: inGit, emitAllowlist: [] })).toEqual({
      ok: false,
      reason: '`config` is inside a git directory, which a unit may never write; not written',
    });
    const withGitDir = { ...opts(), emitAllowlist: [session], gitDirs: [path.join(session, 'meta')] };
    expect(checkEmissionPath('../meta/hooks/pre-commit', withGitDir).ok).toBe(false);
    expect(checkEmissionPath('../metadata/x', withGitDir).ok).toBe(true); // control: a sibling name
    expect(checkEmissionPath('src/a.ts', withGitDir).ok).toBe(true);
  });

  it('refuses a path that shows other than it is: bidirectional overrides and line separators', () => {
    for (const spelled of ['src/\u202Esj.txt', 'src/a\u2028b.ts', 'src/\u2066x.ts'])
      expect(checkEmissionPath(spelled, opts()).ok).toBe(false);
  });

  it('allows names that merely contain ".git" (control)', () => {
    expect(checkEmissionPath('.gitignore', opts()).ok).toBe(true);
    expect(checkEmissionPath('docs/.github/x.md', opts()).ok).toBe(true);
  });

  it('refuses a symlink loop, an empty path and a NUL byte', () => {
    const loop = checkEmissionPath('loop/x.ts', opts());
    expect(!loop.ok && loop.reason).toMatch(
      /^`loop\/x\.ts`: .*too many levels of symbolic links; not written$/,
    );
    expect(checkEmissionPath('  ', opts())).toEqual({
      ok: false,
      reason: 'an empty path was named; not written',
    });
    expect(checkEmissionPath('src/\u001b[2Jx.ts', opts())).toEqual({
      ok: false,
      reason: '"src/\\u001b[2Jx.ts" contains a control character; not written',
    });
    expect(checkEmissionPath('src/ä tab.ts', opts()).ok).toBe(true); // control: other characters are names
    expect(checkEmissionPath('a\0.ts', opts())).toEqual({
      ok: false,
      reason: '`a\0.ts` contains a NUL byte; not written',
    });
  });

  it('refuses a name holding a lone surrogate, which no file system or record can spell; control: a whole pair', () => {
    const cases: Array<[string, string]> = [
      ['src/x\ud800y.js', 'src/x\\ud800y.js'],
      ['src/\udfffy.js', 'src/\\udfffy.js'],
    ];
    for (const [spelled, shown] of cases)
      expect(checkEmissionPath(spelled, opts())).toEqual({
        ok: false,
        reason: `"${shown}" is not a valid file name (it holds half of a UTF-16 surrogate pair); not written`,
      });
    expect(checkEmissionPath('src/\ud83d\ude00.js', opts()).ok).toBe(true);
  });
});
