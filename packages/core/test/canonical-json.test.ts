import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { vectorsDir } from '../../../test/support/paths.js';
import {
  canonicalBytes,
  canonicalize,
  isCanonicalJson,
  nestsDeeperThan,
  parseCanonicalJson,
  parseStrictJson,
} from '../src/canonical-json.js';
import { DelegateGitError } from '../src/errors.js';
import { refusalWith } from './support.js';

const jcsDir = path.join(vectorsDir, 'jcs');
const vectorNames = fs
  .readdirSync(path.join(jcsDir, 'input'))
  .filter((name) => name.endsWith('.json'))
  .map((name) => name.slice(0, -'.json'.length))
  .sort();

function readVector(kind: 'input' | 'output' | 'outhex', name: string, under = ''): Buffer {
  const file = kind === 'outhex' ? `${name}.txt` : `${name}.json`;
  return fs.readFileSync(path.join(jcsDir, under, kind, file));
}

/** outhex files hold the expected bytes as space- and newline-separated hex pairs. */
function fromOuthex(text: Buffer): Buffer {
  return Buffer.from(text.toString('ascii').replace(/\s+/g, ''), 'hex');
}

/** `hex,expected` lines; the hex is an IEEE-754 double, possibly without leading zeros. */
function readNumberLines(file: string): { hex: string; value: number; expected: string }[] {
  return fs
    .readFileSync(path.join(jcsDir, file), 'ascii')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [hex = '', expected = ''] = line.split(',');
      return { hex, value: Buffer.from(hex.padStart(16, '0'), 'hex').readDoubleBE(0), expected };
    });
}

function refusal(action: () => unknown): DelegateGitError {
  return refusalWith('CANONICAL_JSON', action);
}

describe('canonicalize against the RFC 8785 reference vectors', () => {
  it('finds the six upstream vectors', () => {
    expect(vectorNames).toEqual(['arrays', 'french', 'structures', 'unicode', 'values', 'weird']);
  });

  for (const name of vectorNames) {
    it(`input/${name}.json gives output/${name}.json byte for byte`, () => {
      const input = readVector('input', name).toString('utf8');
      const expected = readVector('output', name);
      const bytes = canonicalBytes(parseStrictJson(input));
      expect(bytes.equals(expected)).toBe(true);
      expect(bytes.equals(fromOuthex(readVector('outhex', name)))).toBe(true);
      expect(canonicalize(JSON.parse(input))).toBe(expected.toString('utf8'));
    });
  }

  it('extra/simpleString: a top-level string with leading spaces', () => {
    const input = readVector('input', 'simpleString', 'extra').toString('utf8');
    const expected = readVector('output', 'simpleString', 'extra');
    const bytes = canonicalBytes(parseStrictJson(input));
    expect(bytes.equals(expected)).toBe(true);
    expect(bytes.equals(fromOuthex(readVector('outhex', 'simpleString', 'extra')))).toBe(true);
  });

  it('serializes the 26 RFC 8785 Appendix B number samples', () => {
    const lines = readNumberLines('numbers.txt');
    expect(lines).toHaveLength(26);
    const mismatches = lines.filter(({ value, expected }) => canonicalize(value) !== expected);
    expect(mismatches).toEqual([]);
  });

  it('serializes all 10,000 lines of es6testfile_10k.txt', () => {
    const lines = readNumberLines('es6testfile_10k.txt');
    expect(lines).toHaveLength(10_000);
    const mismatches = lines.filter(({ value, expected }) => canonicalize(value) !== expected);
    expect(mismatches).toEqual([]);
  });

  it('refuses NaN and Infinity from numbers-invalid.txt', () => {
    const lines = readNumberLines('numbers-invalid.txt');
    expect(lines.map(({ hex }) => hex)).toEqual(['7fffffffffffffff', '7ff0000000000000']);
    for (const { value } of lines) {
      expect(refusal(() => canonicalize(value)).message).toMatch(/the number (NaN|Infinity) at \$/);
      refusal(() => canonicalize({ nested: [value] }));
    }
    refusal(() => canonicalize(Number.NEGATIVE_INFINITY));
  });
});

describe('canonicalize refuses values JSON would drop or rewrite silently', () => {
  it('names the path of the refused value', () => {
    const error = refusal(() => canonicalize({ a: { 'b c': [1, Number.NaN] } }));
    expect(error.message).toContain('$.a["b c"][1]');
  });

  it('refuses undefined, functions, symbols and BigInt', () => {
    refusal(() => canonicalize(undefined));
    refusal(() => canonicalize(() => 1));
    refusal(() => canonicalize(Symbol('s')));
    expect(refusal(() => canonicalize({ n: 10n })).message).toContain('BigInt 10n');
    // JSON.stringify would write null for these array elements.
    refusal(() => canonicalize([1, undefined]));
    // biome-ignore lint/suspicious/noSparseArray: a hole is the case under test
    refusal(() => canonicalize([1, , 3]));
    refusal(() => canonicalize({ f: () => 1 }));
  });

  it('omits object properties set to undefined, as JSON.stringify does (control)', () => {
    expect(canonicalize({ b: 1, a: undefined })).toBe('{"b":1}');
  });

  it('refuses lone surrogates in strings and keys, accepts a pair (control)', () => {
    refusal(() => canonicalize('\ud800'));
    refusal(() => canonicalize({ '\udc00': 1 }));
    expect(canonicalize('\ud83d\ude02')).toBe('"\ud83d\ude02"');
  });

  it('refuses cycles and non-plain objects, accepts shared references and toJSON (control)', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(refusal(() => canonicalize(cyclic)).message).toContain('circular');
    refusal(() => canonicalize(new Map([['a', 1]])));
    refusal(() => canonicalize({ s: new Set([1]) }));
    const shared = { x: 1 };
    expect(canonicalize({ b: shared, a: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
    expect(canonicalize({ at: new Date(Date.UTC(2025, 0, 2)) })).toBe('{"at":"2025-01-02T00:00:00.000Z"}');
    expect(canonicalize(Object.assign(Object.create(null), { z: 1, y: 2 }))).toBe('{"y":2,"z":1}');
  });

  it('gives UTF-8 bytes', () => {
    expect(canonicalBytes({ é: '€' }).toString('hex')).toBe('7b22c3a9223a22e282ac227d');
  });
});

describe('parseStrictJson', () => {
  it('accepts every reference input and returns what JSON.parse returns (control)', () => {
    for (const name of vectorNames) {
      const input = readVector('input', name).toString('utf8');
      expect(parseStrictJson(input)).toStrictEqual(JSON.parse(input));
    }
  });

  it('refuses duplicate keys at the top level, with key and offset', () => {
    expect(refusal(() => parseStrictJson('{"a":1,"b":2,"a":3}')).message).toContain(
      'duplicate key "a" at offset 13',
    );
    expect(parseStrictJson('{"a":1,"b":2,"c":3}')).toEqual({ a: 1, b: 2, c: 3 });
  });

  it('refuses duplicate keys nested in objects and arrays', () => {
    expect(refusal(() => parseStrictJson('{"x":{"k":1,"k":1}}')).message).toContain('duplicate key "k"');
    expect(refusal(() => parseStrictJson('[1,[{"a":{},"b":[],"a":null}]]')).message).toContain(
      'duplicate key "a"',
    );
    // The same key in sibling or nested objects is not a duplicate (control).
    expect(parseStrictJson('{"k":{"k":1},"j":[{"k":2},{"k":3}]}')).toEqual({
      k: { k: 1 },
      j: [{ k: 2 }, { k: 3 }],
    });
  });

  it('compares keys after decoding escapes', () => {
    expect(refusal(() => parseStrictJson('{"a":1,"\\u0061":2}')).message).toContain('duplicate key "a"');
    expect(parseStrictJson('{"a":1,"\\u0062":2}')).toEqual({ a: 1, b: 2 });
  });

  it('does not mistake strings that look like keys for keys (control)', () => {
    expect(parseStrictJson('{"a":"a","b":["a","a"],"c":"{\\"a\\":1,\\"a\\":2}"}')).toEqual({
      a: 'a',
      b: ['a', 'a'],
      c: '{"a":1,"a":2}',
    });
  });

  it('keeps an own "__proto__" key as JSON.parse does', () => {
    const value = parseStrictJson('{"__proto__":{"x":1}}') as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    refusal(() => parseStrictJson('{"__proto__":1,"__proto__":2}'));
  });

  it('refuses lone surrogates, escaped or raw, in strings and keys', () => {
    expect(refusal(() => parseStrictJson('"\\ud800"')).message).toContain('lone surrogate at offset 1');
    expect(refusal(() => parseStrictJson('["x\\udc00"]')).message).toContain('lone surrogate at offset 3');
    refusal(() => parseStrictJson('{"\\ud83d":1}'));
    refusal(() => parseStrictJson('"\\ud83d\\u0041"')); // high followed by a non-surrogate
    refusal(() => parseStrictJson('"\\ud83d\\ud83d\\ude02"')); // two highs, then one low
    refusal(() => parseStrictJson('"\ud800"'));
    refusal(() => parseStrictJson('{"k":"ab\udfff"}'));
    refusal(() => parseStrictJson('{"\ud800":1}'));
  });

  it('accepts surrogate pairs, escaped or raw, and an escaped backslash before "ud800" (control)', () => {
    expect(parseStrictJson('"\\ud83d\\ude02"')).toBe('\ud83d\ude02');
    expect(parseStrictJson('{"\ud83d\ude02":"\ud83d\ude02"}')).toEqual({ '\ud83d\ude02': '\ud83d\ude02' });
    expect(parseStrictJson('"\\\\ud800"')).toBe('\\ud800');
  });

  it('refuses numbers outside I-JSON', () => {
    expect(refusal(() => parseStrictJson('1e400')).message).toContain(
      'number 1e400 at offset 0 is out of range',
    );
    refusal(() => parseStrictJson('[-1E+400]'));
    expect(refusal(() => parseStrictJson('{"n":9007199254740993}')).message).toContain(
      'integer 9007199254740993 at offset 5',
    );
    refusal(() => parseStrictJson('-9007199254740992'));
    refusal(() => parseStrictJson('123456789012345678901234567890'));
  });

  it('accepts numbers within I-JSON (control)', () => {
    expect(parseStrictJson('9007199254740991')).toBe(9007199254740991);
    expect(parseStrictJson('-9007199254740991')).toBe(-9007199254740991);
    // Fractions and exponents may round (that is IEEE-754, not an error); only integer literals must be exact.
    const text = '[1e308,1E30,9007199254740993.0,0.12345678901234567,-0,1e-400]';
    expect(parseStrictJson(text)).toStrictEqual(JSON.parse(text));
  });

  it('refuses what JSON.parse refuses', () => {
    expect(refusal(() => parseStrictJson('{"a":1} x')).message).toMatch(/^Not strict JSON: not valid JSON/);
    refusal(() => parseStrictJson('{"a":1}{}'));
    refusal(() => parseStrictJson('{"a":1,}'));
    refusal(() => parseStrictJson('// c\n{"a":1}'));
    refusal(() => parseStrictJson("{'a':1}"));
    refusal(() => parseStrictJson('\ufeff{}'));
    refusal(() => parseStrictJson(''));
    expect(parseStrictJson(' {"a":1} \n')).toEqual({ a: 1 });
  });
});

/** Deterministic PRNG (mulberry32), so a failing case can be reproduced from its index. */
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Builds random JSON text from pieces whose strictness is known, so the expected verdict does not depend on the
 * parser under test: keys are compared by decoded value, whatever their spelling.
 */
function randomRecordText(random: () => number): { text: string; flaws: string[] } {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const space = () => pick(['', '', '', ' ', '\n  ', '\t']);
  const flaws: string[] = [];
  const keySpellings: readonly (readonly [string, string])[] = [
    ['a', 'a'],
    ['a', '\\u0061'],
    ['b', 'b'],
    ['é', 'é'],
    ['é', '\\u00e9'],
    ['\ud83d\ude02', '\ud83d\ude02'],
    ['\ud83d\ude02', '\\ud83d\\ude02'],
    ['\ud83d\ude02', '\\uD83D\\uDE02'],
    ['k"', 'k\\"'],
    ['', ''],
    ...['c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].map((key) => [key, key] as const),
  ];
  const stringPieces = [
    'x',
    'é',
    '\\n',
    '\\\\',
    '\\"',
    '\\/',
    '\ud83d\ude02',
    '\\ud83d\\ude02',
    '\\\\ud800',
    '{\\"a\\":1,\\"a\\":2}',
  ];
  const loneSurrogates = [
    '\ud800',
    '\udfff',
    '\\ud800',
    '\\uDC00',
    '\\ud83d\\u0041',
    '\\ud83d\\ud83d\\ude02',
  ];
  const numbers: readonly (readonly [string, boolean])[] = [
    ['0', false],
    ['-1', false],
    ['1.5', false],
    ['2.5E-3', false],
    ['1e20', false],
    ['1e-400', false],
    ['9007199254740991', false],
    ['-9007199254740991', false],
    ['12345678901234567890.5', false],
    ['1e400', true],
    ['-1E+400', true],
    ['9007199254740992', true],
    ['-9007199254740993', true],
    ['123456789012345678', true],
  ];
  const stringText = (): string => {
    let body = '';
    const count = Math.floor(random() * 4);
    for (let i = 0; i < count; i++) body += pick(stringPieces);
    if (random() < 0.03) {
      flaws.push('lone surrogate');
      body = `x${pick(loneSurrogates)}x${body}`;
    }
    return `"${body}"`;
  };
  const valueText = (depth: number): string => {
    const kind = depth === 0 ? 4 + Math.floor(random() * 2) : Math.floor(random() * (depth > 3 ? 4 : 6));
    if (kind === 0) return pick(['true', 'false', 'null']);
    if (kind === 1) {
      if (random() < 0.8) return pick(numbers.slice(0, 9))[0];
      const [literal, bad] = pick(numbers);
      if (bad) flaws.push('number');
      return literal;
    }
    if (kind <= 3) return stringText();
    const size = Math.floor(random() * 5);
    const parts: string[] = [];
    if (kind === 4) {
      for (let i = 0; i < size; i++) parts.push(space() + valueText(depth + 1) + space());
      return `[${parts.join(',')}]`;
    }
    const seen = new Set<string>();
    for (let i = 0; i < size; i++) {
      const [key, spelling] = pick(keySpellings);
      if (seen.has(key)) flaws.push('duplicate key');
      seen.add(key);
      parts.push(`${space()}"${spelling}"${space()}:${space()}${valueText(depth + 1)}${space()}`);
    }
    return `{${parts.join(',')}}`;
  };
  const text = space() + valueText(0) + space();
  return { text, flaws };
}

describe('parseStrictJson on generated texts', () => {
  it('accepts exactly the texts without a flaw, and returns what JSON.parse returns', () => {
    const random = seededRandom(8785);
    let accepted = 0;
    const refusedFor = new Map<string, number>();
    for (let index = 0; index < 3000; index++) {
      const { text, flaws } = randomRecordText(random);
      const context = `case ${index}: ${JSON.stringify(text)}`;
      if (flaws.length > 0) {
        expect(() => parseStrictJson(text), context).toThrow(DelegateGitError);
        if (flaws.length === 1) refusedFor.set(flaws[0]!, (refusedFor.get(flaws[0]!) ?? 0) + 1);
      } else {
        expect(parseStrictJson(text), context).toStrictEqual(JSON.parse(text));
        accepted++;
      }
    }
    // Both verdicts must be well represented, or the generator proves little.
    expect(accepted).toBeGreaterThan(900);
    expect(accepted).toBeLessThan(2600);
    for (const flaw of ['duplicate key', 'lone surrogate', 'number']) {
      expect(refusedFor.get(flaw), flaw).toBeGreaterThan(50);
    }
  });
});

describe('isCanonicalJson', () => {
  it('is true for every reference output', () => {
    for (const name of vectorNames) {
      expect(isCanonicalJson(readVector('output', name).toString('utf8'))).toBe(true);
    }
    expect(isCanonicalJson(readVector('output', 'simpleString', 'extra').toString('utf8'))).toBe(true);
  });

  it('is false for every reference input that differs from its output', () => {
    const differing = vectorNames.filter(
      (name) => !readVector('input', name).equals(readVector('output', name)),
    );
    expect(differing).toEqual(vectorNames);
    for (const name of differing) {
      expect(isCanonicalJson(readVector('input', name).toString('utf8'))).toBe(false);
    }
    expect(isCanonicalJson(readVector('input', 'simpleString', 'extra').toString('utf8'))).toBe(false);
  });

  it('is false for canonical-looking text the strict parser refuses', () => {
    expect(isCanonicalJson('{"a":1,"a":1}')).toBe(false);
    expect(isCanonicalJson('"\\ud800"')).toBe(false);
    expect(isCanonicalJson('9007199254740992')).toBe(false);
    expect(isCanonicalJson('{"a":1,"b":2}')).toBe(true);
    expect(isCanonicalJson('{"b":1,"a":2}')).toBe(false);
  });
});

describe('parseCanonicalJson (the fast path the record decoder uses)', () => {
  /** The slow, obviously right answer: strict parse, then the text must be its own canonical form. */
  function slowAnswer(text: string): { ok: boolean; value?: unknown } {
    return isCanonicalJson(text) ? { ok: true, value: JSON.parse(text) } : { ok: false };
  }

  function expectSameAnswer(text: string): boolean {
    const fast = parseCanonicalJson(text);
    const slow = slowAnswer(text);
    expect(fast.ok, JSON.stringify(text)).toBe(slow.ok);
    if (fast.ok) expect(fast.value).toStrictEqual(slow.value);
    return fast.ok;
  }

  it('agrees with the strict path on every reference input and output', () => {
    for (const name of vectorNames) {
      expect(expectSameAnswer(readVector('output', name).toString('utf8'))).toBe(true);
      expect(expectSameAnswer(readVector('input', name).toString('utf8'))).toBe(false);
    }
  });

  it('agrees on generated texts and on their canonical forms', () => {
    const random = seededRandom(32);
    let canonicalAccepted = 0;
    for (let index = 0; index < 2000; index++) {
      const { text, flaws } = randomRecordText(random);
      expectSameAnswer(text);
      if (flaws.length === 0 && expectSameAnswer(canonicalize(JSON.parse(text)))) canonicalAccepted++;
    }
    expect(canonicalAccepted).toBeGreaterThan(600);
  });

  it('accepts canonical text the fast path cannot prove (integer-like keys, big numbers) through the strict path', () => {
    expect(parseCanonicalJson('{"1":0,"10":0,"2":0}')).toEqual({ ok: true, value: { 1: 0, 10: 0, 2: 0 } });
    expect(parseCanonicalJson('{"10":0,"9":0}').ok).toBe(true);
    expect(parseCanonicalJson('1e+21')).toEqual({ ok: true, value: 1e21 });
    expect(parseCanonicalJson('{"a":[1,"x",null,true,{"b":-0.5}]}').ok).toBe(true);
  });

  it('refuses what the strict parser refuses, with its reason', () => {
    const refused = (text: string) => {
      const r = parseCanonicalJson(text);
      expect(r.ok, text).toBe(false);
      return r.ok ? '' : r.reason;
    };
    expect(refused('{"a":1,"a":1}')).toMatch(/^not strict JSON \(.*duplicate key "a"/);
    expect(refused('"\\ud800"')).toMatch(/lone surrogate/);
    expect(refused('9007199254740992')).toMatch(/beyond/);
    expect(refused('{"b":1,"a":2}')).toBe('not canonical JSON (RFC 8785)');
    expect(refused('{"a": 1}')).toBe('not canonical JSON (RFC 8785)');
    expect(refused('"\\ud83d\\ude00"')).toBe('not canonical JSON (RFC 8785)');
    expect(refused('1.0')).toBe('not canonical JSON (RFC 8785)');
    expect(refused('{')).toMatch(/^not strict JSON/);
  });
});

describe('nestsDeeperThan', () => {
  const nested = (opener: '[' | '{', depth: number) =>
    opener === '['
      ? `${'['.repeat(depth)}${']'.repeat(depth)}`
      : `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;

  it('counts arrays and objects together, refusing one level past the limit; control: at the limit it passes', () => {
    for (const opener of ['[', '{'] as const) {
      expect(nestsDeeperThan(nested(opener, 4), 4)).toBe(false);
      expect(nestsDeeperThan(nested(opener, 5), 4)).toBe(true);
    }
    expect(nestsDeeperThan('[{"a":[{}]}]', 3)).toBe(true);
    expect(nestsDeeperThan('[{"a":[{}]}]', 4)).toBe(false);
  });

  it('many brackets side by side, or inside strings, are not depth (the full scan decides when the count is high)', () => {
    expect(nestsDeeperThan(`[${'[],'.repeat(100)}[]]`, 4)).toBe(false);
    expect(nestsDeeperThan(`{"a":"${'{['.repeat(100)}","b":"\\\\"}`, 4)).toBe(false);
    // An escaped quote does not end the string: what follows it is still text.
    expect(nestsDeeperThan(`["\\"${'['.repeat(10)}"]`, 4)).toBe(false);
    // An escaped backslash does: the brackets after it nest.
    expect(nestsDeeperThan(`["\\\\",${'['.repeat(10)}${']'.repeat(10)}]`, 4)).toBe(true);
  });
});
