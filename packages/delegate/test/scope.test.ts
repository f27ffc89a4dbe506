import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateUnitScope, type UnitScopeMode } from '../src/scope.js';

let ws: string;

beforeAll(() => {
  ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'dg-scope-')));
  fs.mkdirSync(path.join(ws, 'src', 'deep'), { recursive: true });
  fs.mkdirSync(path.join(ws, 'src-extra'));
  fs.writeFileSync(path.join(ws, 'src', 'a.ts'), '');
  fs.symlinkSync(path.join(ws, 'src'), path.join(ws, 'src-link'));
});

afterAll(() => {
  fs.rmSync(ws, { recursive: true, force: true });
});

function decide(relative: string, targetFiles: string[], unitScope: UnitScopeMode = 'enforce') {
  return evaluateUnitScope(path.join(ws, relative), { workspace: ws, targetFiles, unitScope });
}

describe('evaluateUnitScope: allowed', () => {
  it.each([
    ['the exact file', 'src/a.ts', ['src/a.ts']],
    ['a file not yet created', 'src/new.ts', ['src/new.ts']],
    ['`./` spelling', 'src/a.ts', ['./src/a.ts']],
    ['inner `..` spelling', 'src/a.ts', ['src/../src/a.ts']],
    ['a directory covers its subtree', 'src/deep/x.ts', ['src']],
    ['a directory with a trailing slash', 'src/deep/x.ts', ['src/']],
    ['an absolute target', 'src/a.ts', ['<abs>']],
    ['a target spelled through a symlink', 'src/a.ts', ['src-link/a.ts']],
    ['any of several targets', 'lib/b.ts', ['src/a.ts', 'lib']],
  ])('%s', (_name, relative, targets) => {
    const resolved = targets.map((t) => (t === '<abs>' ? path.join(ws, 'src', 'a.ts') : t));
    expect(decide(relative, resolved)).toEqual({ ok: true });
  });
});

describe('evaluateUnitScope: refused', () => {
  it.each([
    ['a prefix sibling of a directory target', 'src-extra/a.ts', ['src']],
    ['a prefix sibling with a trailing slash', 'src-extra/a.ts', ['src/']],
    ['a different file in the same directory', 'src/b.ts', ['src/a.ts']],
    ['the parent of a target', 'src', ['src/a.ts']],
  ])('%s, naming the declared list and the way to lift it', (_name, relative, targets) => {
    expect(decide(relative, targets)).toEqual({
      ok: false,
      reason:
        `\`${relative}\` is outside the unit's declared targetFiles (${targets.map((t) => `\`${t}\``).join(', ')}); ` +
        'not written. Declare it in the unit\'s targetFiles, or an operator can set unitScope: "off" to lift the check.',
    });
  });

  // A unit that leaves targetFiles out (or empties it) may write nothing: it used to mean "anywhere in the
  // workspace" (red-team round 18, f06).
  it.each([
    ['no targets', 'src/a.ts', []],
    ['no targets, a CI workflow', '.github/workflows/release.yml', []],
    ['no targets, package.json', 'package.json', []],
    ['blank targets only', '.gitattributes', [' ', '']],
  ])('%s: refused, saying the unit declares no targetFiles', (_name, relative, targets) => {
    expect(decide(relative, targets)).toEqual({
      ok: false,
      reason:
        `\`${relative}\` was not written: the unit declares no targetFiles, so nothing may be written. Declare the ` +
        'files it may write in the unit\'s targetFiles, or an operator can set unitScope: "off" to lift the check.',
    });
  });

  it('no targets under unitScope "off" writes as before; the same file declared is written (controls)', () => {
    expect(decide('.github/workflows/release.yml', [], 'off')).toEqual({ ok: true });
    expect(decide('package.json', [' '], 'off')).toEqual({ ok: true });
    expect(decide('package.json', ['package.json'])).toEqual({ ok: true });
    expect(decide('package.json', []).ok).toBe(false);
  });

  it('unitScope "off" lifts the check (control for the refusals above)', () => {
    expect(decide('src-extra/a.ts', ['src'], 'off')).toEqual({ ok: true });
    expect(decide('src-extra/a.ts', ['src'], 'enforce').ok).toBe(false);
  });
});
