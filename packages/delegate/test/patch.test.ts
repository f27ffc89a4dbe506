import { describe, expect, it } from 'vitest';
import { applySearchReplace, parseSearchReplace, type SearchReplaceBlock } from '../src/patch.js';

function patch(...pairs: Array<[string, string]>): string {
  return pairs
    .map(([search, replace]) => `<<<<<<< SEARCH\n${search}\n=======\n${replace}\n>>>>>>> REPLACE\n`)
    .join('Some words between blocks.\n');
}

const source =
  'export function add(a, b) {\n  return a + b;\n}\n\nexport function sub(a, b) {\n  return a - b;\n}\n';

describe('parseSearchReplace', () => {
  it('returns null for a body that is not a patch', () => {
    expect(parseSearchReplace('export const a = 1;\n=======\n')).toBeNull();
  });

  it('parses blocks, ignoring text around them, with LF joins', () => {
    const body = `Intro\n${patch(['a\nb', 'c'], ['d', 'e\nf'])}Outro\n`;
    expect(parseSearchReplace(body)).toEqual([
      { search: 'a\nb', replace: 'c' },
      { search: 'd', replace: 'e\nf' },
    ]);
  });

  it('accepts CRLF and indented markers (markers are whole lines after trimming)', () => {
    const body = '  <<<<<<< SEARCH\r\nold line\r\n=======  \r\nnew line\r\n\t>>>>>>> REPLACE\r\n';
    expect(parseSearchReplace(body)).toEqual([{ search: 'old line', replace: 'new line' }]);
  });

  it('a divider inside the replacement is replacement text', () => {
    expect(parseSearchReplace(patch(['old text', 'a\n=======\nb']))).toEqual([
      { search: 'old text', replace: 'a\n=======\nb' },
    ]);
  });

  it('a new SEARCH restarts the block', () => {
    const body = '<<<<<<< SEARCH\nabandoned\n<<<<<<< SEARCH\nreal search\n=======\nreal\n>>>>>>> REPLACE\n';
    expect(parseSearchReplace(body)).toEqual([{ search: 'real search', replace: 'real' }]);
  });

  it.each([
    ['never divided', '<<<<<<< SEARCH\nold\n'],
    ['never closed', '<<<<<<< SEARCH\nold\n=======\nnew\n'],
    ['closed blocks then an unclosed one', `${patch(['complete one', 'x'])}<<<<<<< SEARCH\ncut off`],
  ])('an unclosed SEARCH (%s) yields an empty list, so it is refused and never written whole', (_n, body) => {
    expect(parseSearchReplace(body)).toEqual([]);
    expect(applySearchReplace(source, [])).toEqual({
      ok: false,
      reason: 'no complete search/replace block (a `<<<<<<< SEARCH` needs `=======` and `>>>>>>> REPLACE`)',
    });
  });
});

describe('applySearchReplace', () => {
  it('applies a unique exact match', () => {
    const result = applySearchReplace(source, [{ search: '  return a + b;', replace: '  return b + a;' }]);
    expect(result).toEqual({ ok: true, content: source.replace('a + b', 'b + a'), hunks: 1 });
  });

  it('applies blocks in order against the progressively edited text', () => {
    const blocks: SearchReplaceBlock[] = [
      { search: 'export function add(a, b) {', replace: 'export function plus(a, b) {' },
      {
        search: 'export function plus(a, b) {\n  return a + b;',
        replace: 'export function plus(a, b) {\n  return a+b;',
      },
    ];
    const result = applySearchReplace(source, blocks);
    expect(result.ok && result.content.startsWith('export function plus(a, b) {\n  return a+b;\n}')).toBe(
      true,
    );
    expect(result.ok && result.hunks).toBe(2);
  });

  it('inserts the replacement literally: $&, $1, $$ and $` are text', () => {
    const replace = "const price = '$&$1$$$`';";
    const result = applySearchReplace('const price = 0; // keep\n', [
      { search: 'const price = 0;', replace },
    ]);
    expect(result).toEqual({ ok: true, content: `${replace} // keep\n`, hunks: 1 });
  });

  it('matches a CRLF file and keeps its CRLF line endings', () => {
    const crlf = source.replace(/\n/g, '\r\n');
    const result = applySearchReplace(crlf, [
      { search: '{\n  return a + b;\n}', replace: '{\n  // sum\n  return a + b;\n}' },
    ]);
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(result.content).toBe(crlf.replace('{\r\n  return a + b;', '{\r\n  // sum\r\n  return a + b;'));
      expect(result.content.replace(/\r\n/g, '')).not.toContain('\n');
    }
  });

  it('keeps an LF file LF (control)', () => {
    const result = applySearchReplace(source, [
      { search: '  return a - b;', replace: '  return a -\n    b;' },
    ]);
    expect(result.ok && result.content.includes('\r')).toBe(false);
  });

  it('leaves the bytes of a mixed-ending file alone outside the edit', () => {
    const mixed = 'first line\r\nsecond line\nthird line\r\n';
    const result = applySearchReplace(mixed, [{ search: 'second line', replace: 'SECOND LINE' }]);
    expect(result).toEqual({ ok: true, content: 'first line\r\nSECOND LINE\nthird line\r\n', hunks: 1 });
  });

  it('no fuzzy matching: indentation is bytes', () => {
    const result = applySearchReplace(source, [{ search: 'return a + b;\n}', replace: 'return 0;\n}' }]);
    expect(result.ok).toBe(true); // control: the unindented text does occur
    const fuzzy = applySearchReplace(source, [{ search: '    return a + b;', replace: '    return 0;' }]);
    expect(fuzzy).toEqual({
      ok: false,
      reason:
        'SEARCH has no exact match in the file: "    return a + b;" (whitespace and indentation must match byte ' +
        'for byte; there is no fuzzy matching)',
    });
  });

  it('quotes only the first 60 characters of a missing SEARCH', () => {
    const search = `${'x'.repeat(70)}`;
    const result = applySearchReplace(source, [{ search, replace: 'y' }]);
    expect(!result.ok && result.reason).toContain(`"${'x'.repeat(60)}…"`);
    expect(!result.ok && result.reason).not.toContain('x'.repeat(61));
  });

  it('refuses a SEARCH that matches more than once', () => {
    const result = applySearchReplace(source, [{ search: 'export function', replace: 'function' }]);
    expect(result).toEqual({
      ok: false,
      reason:
        'SEARCH "export function" matched more than once (2 times); include enough surrounding lines to make it unique',
    });
  });

  it('counts overlapping occurrences as ambiguous', () => {
    const result = applySearchReplace('abcdabcdabcd\n', [{ search: 'abcdabcd', replace: 'x' }]);
    expect(!result.ok && result.reason).toContain('matched more than once (2 times)');
  });

  it('refuses an empty SEARCH', () => {
    expect(applySearchReplace(source, [{ search: '', replace: 'x' }])).toEqual({
      ok: false,
      reason: 'SEARCH is empty; an empty search cannot locate an edit',
    });
  });

  it.each([
    ['7 characters', 'a + b;;'],
    ['short after trimming', '   a + b;   \n'],
  ])('refuses a SEARCH shorter than 8 characters (%s) even when unique', (_name, search) => {
    expect(source.split(search.trim()).length - 1).toBeLessThanOrEqual(1);
    const result = applySearchReplace(source, [{ search, replace: 'zzzzzzzzzz' }]);
    expect(!result.ok && result.reason).toContain(
      'is shorter than 8 characters and too ambiguous to locate an edit',
    );
  });

  it('accepts a SEARCH of exactly 8 characters (control)', () => {
    expect(applySearchReplace(source, [{ search: 'a - b;\n}', replace: 'b - a;\n}' }]).ok).toBe(true);
  });

  it('refuses a block whose SEARCH equals its REPLACE', () => {
    expect(applySearchReplace(source, [{ search: '  return a + b;', replace: '  return a + b;' }])).toEqual({
      ok: false,
      reason: 'SEARCH and REPLACE are identical; the block would change nothing',
    });
  });

  it('applies all blocks or none, naming the failing block', () => {
    const result = applySearchReplace(source, [
      { search: '  return a + b;', replace: '  return b + a;' },
      { search: '  return a * b;', replace: '  return 0;' },
    ]);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toMatch(/^block 2: SEARCH has no exact match/);
    expect('content' in result).toBe(false);
  });

  it('a wholesale replacement is expressible as a patch of the entire old content', () => {
    const result = applySearchReplace(source, [{ search: source, replace: 'export const nothing = 0;\n' }]);
    expect(result).toEqual({ ok: true, content: 'export const nothing = 0;\n', hunks: 1 });
  });
});
