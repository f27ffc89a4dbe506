import { describe, expect, it } from 'vitest';
import { makeTempRepo } from '../../../test/support/git-repo.js';
import {
  holdsUnprintable,
  shownLine,
  shownOutput,
  shownPath,
  shownPathStart,
  shownText,
} from '../src/shown-path.js';

describe('shownPath', () => {
  it('shows an ordinary path as it is, non-ASCII and spaces included (control)', () => {
    for (const p of ['src/a.ts', 'src/dir with space/ü ñ.ts', '.github/workflows/ci.yml', "it's.ts"])
      expect(shownPath(p)).toBe(p);
  });

  it('C-quotes a path holding a control character, a double quote or a backslash, exactly as git does', () => {
    const names = [
      'new\nline.ts',
      'tab\there.ts',
      'quote"d.ts',
      'back\\slash.ts',
      'bell\x07.ts',
      'esc\x1b[31m.ts',
      'del\x7f.ts',
    ];
    const repo = makeTempRepo();
    try {
      repo.commit(Object.fromEntries(names.map((name) => [name, 'x\n'])));
      // git's own quoting, with non-ASCII left alone as shownPath leaves it.
      const listed = repo.gitText(['-c', 'core.quotePath=false', 'ls-files']).split('\n').filter(Boolean);
      expect(names.map(shownPath).sort()).toEqual([...listed].sort());
    } finally {
      repo.cleanup();
    }
    expect(shownPath('new\nline.ts')).toBe('"new\\nline.ts"');
  });

  it('quotes a path holding a bidirectional override or a C1 control by the octal of its UTF-8 bytes, as git does', () => {
    expect(shownPath('src/evil\u202esj.txt')).toBe('"src/evil\\342\\200\\256sj.txt"');
    expect(shownPath('c1\u0085.ts')).toBe('"c1\\302\\205.ts"');
    // git quotes every non-ASCII byte unless core.quotePath is off; these it would quote either way.
    const repo = makeTempRepo();
    try {
      repo.commit({ 'src/evil\u202esj.txt': 'x\n' });
      expect(repo.gitText(['ls-files']).trim()).toBe(shownPath('src/evil\u202esj.txt'));
    } finally {
      repo.cleanup();
    }
  });
});

describe('shownPathStart', () => {
  it('is the start of shownPath, quoted as the whole path is, cut between escapes; null when all of it fits (control)', () => {
    expect(shownPathStart('src/a.ts', 10)).toBeNull();
    expect(shownPathStart('src/a\nb.ts', 13)).toBeNull(); // "src/a\nb.ts" is 13 characters
    expect(shownPathStart('src/a\nb.ts', 12)).toBe('"src/a\\nb.ts');
    expect(shownPathStart('src/abcdef.ts', 8)).toBe('src/abcd');
    // Quoted for a character past the cut, as shownPath quotes it; never cut inside \342\200\213 or a surrogate pair.
    expect(shownPathStart(`src/${'x'.repeat(20)}\u200b`, 8)).toBe('"src/xxx');
    expect(shownPathStart('src/\u200b\u200b', 28)).toBe('"src/\\342\\200\\213');
    expect(shownPathStart('src/\u200b\u200b', 16)).toBe('"src/');
    expect(shownPathStart('src/\u{1f600}\u{1f600}', 7)).toBe('src/\u{1f600}');
    for (const path of ['src/a\u200b.ts', 'new\nline.ts', `src/${'\u{1f600}\ufeff'.repeat(50)}`])
      for (let n = 1; n < 200; n++)
        expect(shownPath(path).startsWith(shownPathStart(path, n) ?? shownPath(path))).toBe(true);
  });
});

describe('shownText and shownOutput', () => {
  it('shownText keeps text on one line: every control and bidirectional character as \\u', () => {
    expect(shownText('a\nb\r\x1b[2K\tc\u202ed\u2028')).toBe(
      'a\\u000ab\\u000d\\u001b[2K\\u0009c\\u202ed\\u2028',
    );
    expect(shownText('Zoë “quoted” path/ä')).toBe('Zoë “quoted” path/ä');
  });

  it('shownOutput keeps the line breaks and tabs output is made of, and nothing else unprintable', () => {
    expect(shownOutput('line 1\n\tline 2\r\x1b[8m\n')).toBe('line 1\n\tline 2\\u000d\\u001b[8m\n');
    // In JSON such characters stand only in strings, where the escape means the same.
    const json = JSON.stringify({ name: 'a\u202eb\u0085' });
    expect(JSON.parse(shownOutput(json))).toEqual({ name: 'a\u202eb\u0085' });
    expect(shownOutput(json)).not.toMatch(/[\u202e\u0085]/);
  });

  it('writes the older workflow command form `##[` so no runner takes it, in paths and text alike', () => {
    expect(shownText('see ##[group]ok')).toBe('see #\\u0023[group]ok');
    expect(shownOutput('{"a":"##[add-mask]x"}\n')).toBe('{"a":"#\\u0023[add-mask]x"}\n');
    expect(JSON.parse(shownOutput('{"a":"##[add-mask]x"}'))).toEqual({ a: '##[add-mask]x' });
    expect(shownPath('src/##[error]x.js')).not.toContain('##[');
  });

  it('quotes a path holding an invisible character, which would read as another path; a name may hold a joiner', () => {
    expect(shownPath('src/a\u200b.js')).toBe('"src/a\\342\\200\\213.js"');
    expect(shownPath('src/a\ufeff.js')).not.toBe('src/a\ufeff.js');
    expect(shownText('می\u200cخواهم')).toBe('می\u200cخواهم');
  });

  it('holdsUnprintable ignores the tabs and line breaks text is made of', () => {
    expect(holdsUnprintable('a\tb\n')).toBe(false);
    expect(holdsUnprintable('a\rb')).toBe(true);
    expect(holdsUnprintable('a\u202eb')).toBe(true);
  });
});

describe('shownLine', () => {
  it('shows ordinary text as it is, non-ASCII, quotes and backslashes included (control)', () => {
    for (const t of ['fix the parser', 'ü ñ 日本 "q" \\ ok', '']) expect(shownLine(t)).toBe(t);
  });

  it('escapes controls, DEL, C1, bidi, line separators and invisible characters, a tag character by both halves', () => {
    expect(shownLine('a\u0000b\u001b[2J\u007f\u009b\u202e\u2028\u200b\ufeff\n')).toBe(
      'a\\u0000b\\u001b[2J\\u007f\\u009b\\u202e\\u2028\\u200b\\ufeff\\u000a',
    );
    expect(shownLine('x\u{e0041}y')).toBe('x\\udb40\\udc41y');
  });

  it('cuts at maxLength between characters, never inside an escape or a surrogate pair', () => {
    expect(shownLine('abcdef', 6)).toBe('abcdef');
    expect(shownLine('abcdefg', 6)).toBe('abcdef…');
    expect(shownLine('abcd\u0000', 6)).toBe('abcd…');
    expect(shownLine('abcde😀', 6)).toBe('abcde…');
  });
});
