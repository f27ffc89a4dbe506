import { describe, expect, it } from 'vitest';
import { looksLikeSource, parseEmission } from '../src/emission.js';
import { parseSearchReplace } from '../src/patch.js';

const F = '```';
const none = { targetFiles: [] as string[] };

describe('parseEmission: header form', () => {
  const headers: Array<[string, string, string]> = [
    ['double quotes with a language tag', `${F}ts file="src/a.ts"`, 'src/a.ts'],
    ['single quotes', `${F}ts file='src/a.ts'`, 'src/a.ts'],
    ['unquoted', `${F}ts file=src/a.ts`, 'src/a.ts'],
    ['filename=, any case', `${F}python FILENAME="tool.py"`, 'tool.py'],
    ['no language tag', `${F} file="a.ts"`, 'a.ts'],
    ['`patch` is only a language tag', `${F}patch file="src/a.ts"`, 'src/a.ts'],
    ['trailing whitespace', `${F}ts file="a.ts"  `, 'a.ts'],
  ];
  it.each(headers)('%s', (_name, header, expected) => {
    const emission = parseEmission(`Here you go.\n${header}\nexport const a = 1;\n${F}\nDone.`, none);
    expect(emission).toEqual({
      files: [{ path: expected, body: 'export const a = 1;\n', source: 'header' }],
      duplicates: [],
      errors: [],
    });
  });

  it('a path with whitespace or quotes inside is not a header (control: the marker line still names it)', () => {
    const emission = parseEmission(`${F}ts file="my file.ts"\nconst a = 1;\n${F}\n`, none);
    expect(emission.files).toEqual([]);
  });

  it('keeps a CRLF body byte for byte in a reply whose prose is LF (the model chose CRLF for that file)', () => {
    const emission = parseEmission(`Here:\n\n${F}bat file="a.bat"\r\nline1\r\nline2\r\n${F}\n`, none);
    expect(emission.files[0]?.body).toBe('line1\r\nline2\r\n');
  });

  it('reads a reply whose every line ends in CRLF (its transport) as LF (ux57 f18)', () => {
    const emission = parseEmission(`Sure:\r\n\r\n${F}ts file="a.ts"\r\nline1\r\nline2\r\n${F}\r\n`, none);
    expect(emission.files[0]?.body).toBe('line1\nline2\n');
    // A patch block in such a reply still matches an LF file, as before (patch.ts splits on either).
    const patch = parseEmission(
      `${F}ts file="a.ts"\r\n<<<<<<< SEARCH\r\nline1\r\n=======\r\nline one\r\n>>>>>>> REPLACE\r\n${F}\r\n`,
      none,
    );
    expect(patch.files[0]?.body).toBe('<<<<<<< SEARCH\nline1\n=======\nline one\n>>>>>>> REPLACE\n');
  });

  it('an empty named block is an empty file', () => {
    expect(parseEmission(`${F}py file="pkg/__init__.py"\n${F}\n`, none).files).toEqual([
      { path: 'pkg/__init__.py', body: '', source: 'header' },
    ]);
  });
});

describe('parseEmission: marker form', () => {
  const markers: Array<[string, string, string]> = [
    ['// FILE:', '// FILE: src/a.ts', 'src/a.ts'],
    ['# FILE:', '# FILE: tool.py', 'tool.py'],
    ['/* FILE: */', '/* FILE: style.css */', 'style.css'],
    ['[FILE: ]', '[FILE: notes.md]', 'notes.md'],
    ['quoted path', '// FILE: "src/b.ts"', 'src/b.ts'],
  ];
  it.each(markers)('%s', (_name, marker, expected) => {
    const emission = parseEmission(`${F}ts\n${marker}\nconst a = 1;\n${F}\n`, none);
    expect(emission).toEqual({
      files: [{ path: expected, body: 'const a = 1;\n', source: 'marker' }],
      duplicates: [],
      errors: [],
    });
  });

  it('the marker counts only on the first body line (control: a later FILE comment is body)', () => {
    const emission = parseEmission(`${F}ts\nconst a = 1;\n// FILE: src/a.ts\n${F}\n`, none);
    expect(emission.files).toEqual([]);
  });
});

describe('parseEmission: a fence inside a body does not truncate it', () => {
  const inlineFence = 'const fence = "```";\nconst x = fence + "ts"; // ```\n';
  const markdown = `# Usage\n\n${F}sh\nnpm install thing\n${F}\n\nMore text.\n`;

  it.each([
    ['header form', `${F}ts file="a.ts"\n`],
    ['marker form', `${F}ts\n// FILE: a.ts\n`],
  ])('%s: a fence that does not stand alone is body', (_name, opening) => {
    const emission = parseEmission(`${opening}${inlineFence}${F}\nafter\n`, none);
    expect(emission.files[0]?.body).toBe(inlineFence);
    expect(emission.errors).toEqual([]);
  });

  it.each([
    ['header form', `${F}md file="README.md"\n`],
    ['marker form', `${F}md\n[FILE: README.md]\n`],
  ])('%s: a nested tagged block inside Markdown stays in the body', (_name, opening) => {
    const emission = parseEmission(
      `${opening}${markdown}${F}\n\n${F}ts file="b.ts"\nconst b = 2;\n${F}\n`,
      none,
    );
    expect(emission.files).toEqual([
      { path: 'README.md', body: markdown, source: opening.includes('file=') ? 'header' : 'marker' },
      { path: 'b.ts', body: 'const b = 2;\n', source: 'header' },
    ]);
  });

  it('an inner tagged fence that is never closed leaves the block unclosed: refused, not cut short', () => {
    const emission = parseEmission(`${F}md file="doc.md"\nintro\n${F}ts\nconst a = 1;\n${F}\n`, none);
    expect(emission.files).toEqual([]);
    expect(emission.errors).toEqual([
      '`doc.md`: the block has no closing fence (the reply may have been cut off); not written',
    ]);
  });

  it('a longer outer fence may hold bare inner fences', () => {
    const body = `${F}\nplain block\n${F}\n`;
    const emission = parseEmission(`\`\`\`\`md file="doc.md"\n${body}\`\`\`\`\n`, none);
    expect(emission.files[0]?.body).toBe(body);
  });

  it('an indented closing fence on its own line closes the block (control)', () => {
    const emission = parseEmission(`${F}ts file="a.ts"\nconst a = 1;\n   ${F}  \nnot body\n`, none);
    expect(emission.files[0]?.body).toBe('const a = 1;\n');
  });
});

describe('parseEmission: truncation, order, duplicates', () => {
  it('a named block with no closing fence is refused, not written partially', () => {
    const emission = parseEmission(
      `${F}ts file="ok.ts"\nconst a = 1;\n${F}\n${F}ts file="cut.ts"\nconst b =`,
      none,
    );
    expect(emission.files.map((f) => f.path)).toEqual(['ok.ts']);
    expect(emission.errors).toEqual([
      '`cut.ts`: the block has no closing fence (the reply may have been cut off); not written',
    ]);
  });

  it('keeps the order of appearance across both forms', () => {
    const reply = `${F}ts\n// FILE: first.ts\n1\n${F}\n${F}ts file="second.ts"\n2\n${F}\n${F}\n# FILE: third.py\n3\n${F}\n`;
    expect(parseEmission(reply, none).files.map((f) => [f.path, f.source])).toEqual([
      ['first.ts', 'marker'],
      ['second.ts', 'header'],
      ['third.py', 'marker'],
    ]);
  });

  it('a later occurrence of the same path (any spelling) is ignored and reported', () => {
    const reply = `${F}ts file="src/a.ts"\nfirst\n${F}\n${F}ts\n// FILE: ./src/a.ts\nsecond\n${F}\n${F}ts file="src/b.ts"\nb\n${F}\n`;
    const emission = parseEmission(reply, none);
    expect(emission.files).toEqual([
      { path: 'src/a.ts', body: 'first\n', source: 'header' },
      { path: 'src/b.ts', body: 'b\n', source: 'header' },
    ]);
    expect(emission.duplicates).toEqual(['./src/a.ts']);
    expect(emission.errors).toEqual([]);
  });

  it('patch blocks for one file, prose between, are one patch in order (ux57 f04); a whole file named again is still ignored', () => {
    const pair = (a: string, b: string) => `<<<<<<< SEARCH\n${a}\n=======\n${b}\n>>>>>>> REPLACE\n`;
    const reply =
      `First the import:\n${F}patch file="src/a.ts"\n${pair('import x;', 'import y;')}${F}\n` +
      `Then the call:\n${F}patch file="./src/a.ts"\n${pair('x();', 'y();')}${F}\n` +
      `${F}ts file="src/b.ts"\nb\n${F}\n${F}patch file="src/b.ts"\n${pair('b', 'c')}${F}\n`;
    const emission = parseEmission(reply, none);
    expect(emission.files).toEqual([
      { path: 'src/a.ts', body: pair('import x;', 'import y;') + pair('x();', 'y();'), source: 'header' },
      { path: 'src/b.ts', body: 'b\n', source: 'header' },
    ]);
    expect(emission.duplicates).toEqual(['src/b.ts']);
  });

  it('a second patch block for a file with an unclosed SEARCH refuses the whole patch (none of it applies)', () => {
    const first = '<<<<<<< SEARCH\nconst a = 1;\n=======\nconst a = 2;\n>>>>>>> REPLACE\n';
    const reply = `${F}patch file="a.ts"\n${first}${F}\n${F}patch file="a.ts"\n<<<<<<< SEARCH\nconst b = 1;\n${F}\n`;
    const [file] = parseEmission(reply, none).files;
    expect(parseSearchReplace(file!.body)).toEqual([]);
  });

  it('a patch body keeps its markers for the patcher', () => {
    const patch = '<<<<<<< SEARCH\nconst a = 1;\n=======\nconst a = 2;\n>>>>>>> REPLACE\n';
    expect(parseEmission(`${F}patch file="a.ts"\n${patch}${F}\n`, none).files[0]?.body).toBe(patch);
  });
});

describe('parseEmission: fallback', () => {
  it('routes one unnamed block to the one target file', () => {
    const emission = parseEmission(`Sure.\n${F}ts\nexport const a = 1;\n${F}\n`, {
      targetFiles: ['src/a.ts'],
    });
    expect(emission).toEqual({
      files: [{ path: 'src/a.ts', body: 'export const a = 1;\n', source: 'fallback' }],
      duplicates: [],
      errors: [],
    });
  });

  it('routes blocks by position when the counts match, skipping directory targets', () => {
    const reply = `${F}\none\n${F}\ntext\n${F}\ntwo\n${F}\n${F}\n\n${F}\n`;
    const emission = parseEmission(reply, { targetFiles: ['a.ts', 'src/', ' b.ts '] });
    expect(emission.files).toEqual([
      { path: 'a.ts', body: 'one\n', source: 'fallback' },
      { path: 'b.ts', body: 'two\n', source: 'fallback' },
    ]);
  });

  it('never runs once any file was named, even one that will be refused later', () => {
    const reply = `${F}ts file="../outside.ts"\nx\n${F}\n${F}ts\nexport const a = 1;\n${F}\n`;
    const emission = parseEmission(reply, { targetFiles: ['src/a.ts'] });
    expect(emission.files).toEqual([{ path: '../outside.ts', body: 'x\n', source: 'header' }]);
    expect(emission.errors).toEqual([]);
  });

  it('never runs after a named block that was truncated', () => {
    const emission = parseEmission(`${F}ts file="a.ts"\nexport const`, { targetFiles: ['src/a.ts'] });
    expect(emission.files).toEqual([]);
    expect(emission.errors).toHaveLength(1);
  });

  it('refuses to guess when block and target counts differ', () => {
    const reply = `${F}ts\nexport const a = 1;\n${F}\nRun:\n${F}sh\nnpm test\n${F}\n`;
    const emission = parseEmission(reply, { targetFiles: ['a.ts'] });
    expect(emission.files).toEqual([]);
    expect(emission.errors[0]).toContain('has 2 fenced block(s) for 1 target file(s)');
  });

  it('refuses an unnamed block cut off at the end', () => {
    const emission = parseEmission(`${F}ts\nexport const a =`, { targetFiles: ['a.ts'] });
    expect(emission.files).toEqual([]);
    expect(emission.errors[0]).toContain('ends inside a fenced block');
  });

  it('writes a whole unfenced reply that reads as code to the single target', () => {
    const reply = "import { x } from './x.js';\n\nexport function f() {\n  return x;\n}";
    const emission = parseEmission(reply, { targetFiles: ['src/f.ts'] });
    expect(emission.files).toEqual([{ path: 'src/f.ts', body: `${reply}\n`, source: 'fallback' }]);
  });

  it.each([
    ['prose', 'The function should add two numbers and return the result.'],
    ['prose around code', "I'll write the function now.\nexport function f() {}\n"],
    ['a tool-call transcript', '<tool_call>{"name":"write_file"}</tool_call>\nexport const a = 1;'],
    ['sentence case keyword', 'Import the module first, then call it.'],
  ])('refuses a whole reply that is %s', (_name, reply) => {
    const emission = parseEmission(reply, { targetFiles: ['src/f.ts'] });
    expect(emission.files).toEqual([]);
    expect(emission.errors).toEqual([
      'the reply has no fenced block naming a file and does not look like source code; nothing was written. ' +
        'Name each file in its fence: ```lang file="path"',
    ]);
  });

  it('does not write a whole reply to one of several targets', () => {
    const emission = parseEmission('export const a = 1;\n', { targetFiles: ['a.ts', 'b.ts'] });
    expect(emission.files).toEqual([]);
    expect(emission.errors).toHaveLength(1);
  });

  it('without targets, an unnamed reply is an answer: no files, no errors', () => {
    expect(parseEmission(`Use this:\n${F}ts\nconst a = 1;\n${F}\n`, none)).toEqual({
      files: [],
      duplicates: [],
      errors: [],
    });
  });
});

describe('looksLikeSource', () => {
  it.each([
    ['// comment\nx()', true],
    ['def f():\n    pass', true],
    ['<!DOCTYPE html>\n<html></html>', true],
    ['<div class="a"></div>', true],
    ['Here is the code:\nconst a = 1;', false],
    ['Certainly! const a = 1;', false],
    ['Plain words only.', false],
  ])('%j → %s', (text, expected) => {
    expect(looksLikeSource(text)).toBe(expected);
  });
});
