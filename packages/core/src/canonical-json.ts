/**
 * Canonical JSON (RFC 8785, JCS) and the strict parser that guards it.
 *
 * Every ledger payload is signed over its JCS bytes, and verifiers require a payload to be exactly the JCS of
 * itself. Reading records with plain `JSON.parse` would undermine that: it silently keeps the last of two
 * duplicate keys, accepts lone surrogates (which have no UTF-8 form, so two texts could decode alike) and
 * rounds integers past 2^53 without a word. Two verifiers could then read different values from the same
 * signed bytes. `parseStrictJson` refuses all of these (RFC 7493, I-JSON) before any record is trusted.
 *
 * Serialization itself is the `canonicalize` package; this module only refuses the values it would otherwise
 * drop or rewrite silently (`undefined` in arrays, functions, Maps...), so that what is signed is what was meant.
 */
import canonicalizeJcs from 'canonicalize';
import { DelegateGitError } from './errors.js';
import { shownText } from './shown-path.js';
import { isWellFormed } from './well-formed.js';

/** Thrown inside the value walk; each level prepends its key so the final message names the full path. */
class UnrepresentableValue extends Error {
  readonly path: (string | number)[] = [];
}

function refuseValue(what: string): never {
  throw new UnrepresentableValue(what);
}

function describePath(segments: readonly (string | number)[]): string {
  let path = '$';
  for (const segment of segments) {
    if (typeof segment === 'number') path += `[${segment}]`;
    else path += /^[A-Za-z_$][\w$]*$/.test(segment) ? `.${segment}` : `[${JSON.stringify(segment)}]`;
  }
  return path;
}

/**
 * Walks `value` as JSON.stringify would and refuses what JCS cannot represent faithfully. Object properties
 * whose value is `undefined` are left out, as JSON.stringify does, so optional fields can be written naturally.
 * `ancestors` holds the containers on the current path, to report a cycle instead of overflowing the stack.
 */
function assertRepresentable(value: unknown, ancestors: Set<object>): void {
  switch (typeof value) {
    case 'string':
      if (!isWellFormed(value)) refuseValue('a string with a lone surrogate');
      return;
    case 'number':
      if (!Number.isFinite(value)) refuseValue(`the number ${value}`);
      return;
    case 'boolean':
      return;
    case 'object':
      break;
    default:
      // undefined, bigint, function, symbol
      refuseValue(typeof value === 'bigint' ? `the BigInt ${value}n` : `a value of type ${typeof value}`);
  }
  if (value === null) return;

  const container = value as object;
  if (ancestors.has(container)) refuseValue('a circular reference');
  ancestors.add(container);
  try {
    if (typeof (container as { toJSON?: unknown }).toJSON === 'function') {
      // Dates and similar: what gets serialized is the toJSON result, so that is what must be representable.
      const replacement: unknown = (container as { toJSON(): unknown }).toJSON();
      assertRepresentable(replacement, ancestors);
      return;
    }
    if (Array.isArray(container)) {
      for (let index = 0; index < container.length; index++) {
        try {
          assertRepresentable(container[index], ancestors);
        } catch (error) {
          if (error instanceof UnrepresentableValue) error.path.unshift(index);
          throw error;
        }
      }
      return;
    }
    const prototype: unknown = Object.getPrototypeOf(container);
    if (prototype !== Object.prototype && prototype !== null) {
      const kind = (container as { constructor?: { name?: string } }).constructor?.name ?? 'unknown';
      refuseValue(`a ${kind} object (only plain objects and arrays are JSON)`);
    }
    const members = container as Record<string, unknown>;
    for (const key of Object.keys(members)) {
      const member = members[key];
      if (member === undefined) continue;
      try {
        if (!isWellFormed(key)) refuseValue('a key with a lone surrogate');
        assertRepresentable(member, ancestors);
      } catch (error) {
        if (error instanceof UnrepresentableValue) error.path.unshift(key);
        throw error;
      }
    }
  } finally {
    ancestors.delete(container);
  }
}

/**
 * RFC 8785 (JCS) serialization via the `canonicalize` npm package. Throws DelegateGitError('CANONICAL_JSON')
 * for values JCS cannot represent (NaN, Infinity, undefined, functions, BigInt, lone surrogates, cycles,
 * non-plain objects such as Map). Object properties set to `undefined` are omitted, as in JSON.stringify.
 */
export function canonicalize(value: unknown): string {
  try {
    assertRepresentable(value, new Set());
  } catch (error) {
    if (error instanceof UnrepresentableValue) {
      throw new DelegateGitError(
        'CANONICAL_JSON',
        `Cannot write canonical JSON: ${error.message} at ${describePath(error.path)}. ` +
          'Only finite numbers, well-formed strings, booleans, null, plain objects and arrays can be signed.',
      );
    }
    if (error instanceof RangeError) {
      throw new DelegateGitError(
        'CANONICAL_JSON',
        `Cannot write canonical JSON: the value is nested too deeply.`,
        {
          cause: error,
        },
      );
    }
    throw error;
  }
  return serializeChecked(value);
}

/** The library call, for values already known to be representable. */
function serializeChecked(value: unknown): string {
  let text: string | undefined;
  try {
    text = canonicalizeJcs(value);
  } catch (error) {
    // Not expected after the walk above; kept so no library error escapes without the project's code.
    throw new DelegateGitError(
      'CANONICAL_JSON',
      `Cannot write canonical JSON: ${(error as Error).message}.`,
      {
        cause: error,
      },
    );
  }
  if (text === undefined) {
    throw new DelegateGitError('CANONICAL_JSON', 'Cannot write canonical JSON: the value has no JSON form.');
  }
  return text;
}

/** UTF-8 bytes of canonicalize(value). */
export function canonicalBytes(value: unknown): Buffer {
  return Buffer.from(canonicalize(value), 'utf8');
}

const MAX_KEY_SHOWN = 60;
const NOT_VALID = 'not valid JSON (';

/**
 * A value a line chose, quoted in a reason: cut short, since a reason is printed by every view of the ledger (a job
 * summary too), and the line's author chose its length.
 */
export function quotedValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > MAX_KEY_SHOWN + 2
    ? `${text.slice(0, MAX_KEY_SHOWN)}... (${text.length} characters)`
    : text;
}

function showKey(key: string): string {
  return JSON.stringify(key.length > MAX_KEY_SHOWN ? `${key.slice(0, MAX_KEY_SHOWN)}...` : key);
}

const NOT_STRICT = 'Not strict JSON: ';
const STRICT_RULES =
  '. Records must be I-JSON (RFC 7493): unique keys, no lone surrogates, integers within +-(2^53-1), finite numbers.';

function refuseText(what: string): never {
  throw new DelegateGitError('CANONICAL_JSON', `${NOT_STRICT}${what}${STRICT_RULES}`);
}

/** What parseStrictJson found wrong, without the sentence about records: "duplicate key "roles" at offset 12". */
export function strictJsonProblem(error: unknown): string {
  const message = (error as Error).message;
  if (!message.startsWith(NOT_STRICT) || !message.endsWith(STRICT_RULES)) return message;
  const what = message.slice(NOT_STRICT.length, -STRICT_RULES.length);
  return what.startsWith(NOT_VALID) && what.endsWith(')') ? what.slice(NOT_VALID.length, -1) : what;
}

const PLAIN_STRING_RUN = /[^"\\\ud800-\udfff]*/y;
const HIGH_SURROGATE_FIRST = 0xd800;
const LOW_SURROGATE_FIRST = 0xdc00;
const LOW_SURROGATE_LAST = 0xdfff;

/**
 * Scans a string literal starting at the opening quote and returns the index of the closing quote. Surrogates
 * are judged on the decoded UTF-16 code units, so a raw or \u-escaped high surrogate must be followed by a low
 * one, and a low one must follow a high one.
 */
function scanString(text: string, quote: number): number {
  // Most strings hold no escape and no surrogate: skip such a run with one regex step.
  PLAIN_STRING_RUN.lastIndex = quote + 1;
  PLAIN_STRING_RUN.test(text);
  let index = PLAIN_STRING_RUN.lastIndex;
  let pendingHigh = -1; // offset of a high surrogate still waiting for its low half
  for (;;) {
    let unit = text.charCodeAt(index);
    const unitStart = index;
    if (unit === 0x22 /* " */) break;
    if (unit === 0x5c /* \ */) {
      if (text.charCodeAt(index + 1) === 0x75 /* u */) {
        unit = Number.parseInt(text.slice(index + 2, index + 6), 16);
        index += 6;
      } else {
        unit = 0; // any other escape decodes to a non-surrogate
        index += 2;
      }
    } else {
      index += 1;
    }
    if (unit < HIGH_SURROGATE_FIRST || unit > LOW_SURROGATE_LAST) {
      if (pendingHigh >= 0) refuseText(`lone surrogate at offset ${pendingHigh}`);
    } else if (unit < LOW_SURROGATE_FIRST) {
      if (pendingHigh >= 0) refuseText(`lone surrogate at offset ${pendingHigh}`);
      pendingHigh = unitStart;
    } else {
      if (pendingHigh < 0) refuseText(`lone surrogate at offset ${unitStart}`);
      pendingHigh = -1;
    }
  }
  if (pendingHigh >= 0) refuseText(`lone surrogate at offset ${pendingHigh}`);
  return index;
}

function isNumberChar(code: number): boolean {
  // 0-9 . e E + -
  return (
    (code >= 0x30 && code <= 0x39) ||
    code === 0x2e ||
    code === 0x65 ||
    code === 0x45 ||
    code === 0x2b ||
    code === 0x2d
  );
}

/** Checks a number literal against I-JSON; returns the index just past it. */
function scanNumber(text: string, start: number): number {
  let index = start;
  let isIntegerLiteral = true;
  for (;;) {
    const code = text.charCodeAt(index);
    if (!isNumberChar(code)) break;
    if (code === 0x2e || code === 0x65 || code === 0x45) isIntegerLiteral = false;
    index++;
  }
  // Up to 15 digits fits 2^53-1 and cannot overflow, so most numbers need no conversion at all.
  if (index - start > 15) {
    const literal = text.slice(start, index);
    const parsed = Number(literal);
    if (!Number.isFinite(parsed)) refuseText(`number ${literal} at offset ${start} is out of range`);
    if (isIntegerLiteral && Math.abs(parsed) > Number.MAX_SAFE_INTEGER) {
      refuseText(`integer ${literal} at offset ${start} is beyond +-(2^53-1)`);
    }
  } else if (!isIntegerLiteral) {
    // Short literals with an exponent (1e400) can still overflow.
    const literal = text.slice(start, index);
    if (!Number.isFinite(Number(literal))) refuseText(`number ${literal} at offset ${start} is out of range`);
  }
  return index;
}

/**
 * Second pass over text that JSON.parse already accepted, so the grammar is known to be valid and only what
 * JSON.parse hides is checked: duplicate keys (compared after decoding escapes), lone surrogates and numbers.
 */
function checkStrict(text: string): void {
  // One entry per open container: the keys seen so far for an object, null for an array.
  const open: (Set<string> | null)[] = [];
  let expectKey = false;
  let index = 0;
  const length = text.length;
  while (index < length) {
    const code = text.charCodeAt(index);
    switch (code) {
      case 0x7b /* { */:
        open.push(new Set());
        expectKey = true;
        index++;
        break;
      case 0x5b /* [ */:
        open.push(null);
        expectKey = false;
        index++;
        break;
      case 0x7d /* } */:
      case 0x5d /* ] */:
        open.pop();
        expectKey = false;
        index++;
        break;
      case 0x2c /* , */:
        // Inside an object a comma is always followed by a key; commas only occur inside containers.
        expectKey = open[open.length - 1] instanceof Set;
        index++;
        break;
      case 0x3a /* : */:
        expectKey = false;
        index++;
        break;
      case 0x22 /* " */:
        {
          const end = scanString(text, index);
          if (expectKey) {
            const raw = text.slice(index + 1, end);
            const key = raw.includes('\\') ? (JSON.parse(text.slice(index, end + 1)) as string) : raw;
            const keys = open[open.length - 1]!;
            if (keys.has(key)) refuseText(`duplicate key ${showKey(key)} at offset ${index}`);
            keys.add(key);
          }
          index = end + 1;
          break;
        }
      case 0x74 /* t */:
      case 0x6e /* n */:
        index += 4;
        break;
      case 0x66 /* f */:
        index += 5;
        break;
      case 0x20:
      case 0x09:
      case 0x0a:
      case 0x0d:
        index++;
        break;
      default:
        // JSON.parse accepted the text, so anything else starts a number.
        index = scanNumber(text, index);
    }
  }
}

/**
 * Parses JSON text strictly for records: refuses duplicate object keys (at any depth), lone surrogates (raw or
 * \u-escaped, in keys and strings), numbers outside I-JSON (RFC 7493: overflow such as 1e400; integer literals
 * beyond +-(2^53-1)), and anything JSON.parse refuses. Returns the same value JSON.parse would.
 * Error messages give offsets as indexes into `text` (UTF-16 code units, as `text[offset]`).
 */
export function parseStrictJson(text: string): unknown {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) refuseText(TOO_DEEP);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    refuseText(`${NOT_VALID}${shownText((error as Error).message)})`);
  }
  checkStrict(text);
  return value;
}

/**
 * The deepest nesting of arrays and objects a record, a policy or a key file is read with: theirs is under ten. Text
 * nested millions deep (a few KB once compressed in a push) took the parser gigabytes and tens of seconds, and the
 * recursive checks after it their stack (rt41 f01), so it is refused before it is parsed.
 */
export const MAX_JSON_DEPTH = 64;

const TOO_DEEP = `arrays and objects nested more than ${MAX_JSON_DEPTH} deep`;

/** Whether JSON `text` nests arrays and objects deeper than `limit`, found without parsing it (one pass, no memory). */
export function nestsDeeperThan(text: string, limit: number): boolean {
  // Text with no more brackets than the limit cannot nest deeper, and counting them is native string search: a
  // record has about ten, and the scan below runs in the interpreter in a short-lived hook.
  if (!moreOpenersThan(text, limit)) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === 0x5c /* \ */) i++;
      else if (code === 0x22 /* " */) inString = false;
    } else if (code === 0x22) inString = true;
    else if (code === 0x5b /* [ */ || code === 0x7b /* { */) {
      if (++depth > limit) return true;
    } else if (code === 0x5d /* ] */ || code === 0x7d /* } */) depth--;
  }
  return false;
}

/** Whether `text` holds more than `limit` opening brackets (`[` and `{`, in strings too). */
function moreOpenersThan(text: string, limit: number): boolean {
  let count = 0;
  for (const opener of ['[', '{']) {
    for (let i = text.indexOf(opener); i !== -1; i = text.indexOf(opener, i + 1))
      if (++count > limit) return true;
  }
  return false;
}

/** True iff `text` is exactly canonicalize(parseStrictJson(text)). */
export function isCanonicalJson(text: string): boolean {
  let value: unknown;
  try {
    value = parseStrictJson(text);
  } catch (error) {
    if (error instanceof DelegateGitError) return false;
    throw error;
  }
  // A strictly parsed value is always representable, so the walk in canonicalize() can be skipped.
  return serializeChecked(value) === text;
}

export type CanonicalParse = { ok: true; value: unknown } | { ok: false; reason: string };

/**
 * Parses text that must be exactly its own JCS form (a record payload), with the answers of
 * `parseStrictJson` + `canonicalize` but most of the time at the cost of one JSON.parse and one JSON.stringify:
 * JCS is JSON.stringify with object keys sorted by UTF-16 code units, so when the parsed value's keys are sorted,
 * no integer is beyond 2^53-1 and no escaped surrogate appears (all canonical text can hold), stringify
 * reproducing the text proves it canonical; duplicate keys, whitespace and non-canonical numbers or escapes make
 * it differ. Anything the fast path cannot prove goes through the strict parser, which decides and names why.
 */
export function parseCanonicalJson(text: string): CanonicalParse {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) return { ok: false, reason: `not strict JSON (${TOO_DEEP})` };
  try {
    const value: unknown = JSON.parse(text);
    if (!ESCAPED_SURROGATE.test(text) && sortedAndSafe(value) && JSON.stringify(value) === text)
      return { ok: true, value };
  } catch {
    // Not JSON at all: the strict parser below says so in its own words.
  }
  let value: unknown;
  try {
    value = parseStrictJson(text);
  } catch (error) {
    if (error instanceof DelegateGitError) return { ok: false, reason: `not strict JSON (${error.message})` };
    throw error;
  }
  return serializeChecked(value) === text
    ? { ok: true, value }
    : { ok: false, reason: 'not canonical JSON (RFC 8785)' };
}

const ESCAPED_SURROGATE = /\\u[dD][89a-fA-F]/;

/** Object keys in JCS order at every depth (Object.keys keeps JSON.parse's order) and only I-JSON-safe integers. */
function sortedAndSafe(value: unknown): boolean {
  if (typeof value === 'number')
    return !(Number.isInteger(value) && Math.abs(value) > Number.MAX_SAFE_INTEGER);
  if (typeof value !== 'object' || value === null) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (!sortedAndSafe(item)) return false;
    return true;
  }
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    if (i > 0 && !(keys[i - 1]! < keys[i]!)) return false;
    if (!sortedAndSafe((value as Record<string, unknown>)[keys[i]!])) return false;
  }
  return true;
}

/**
 * Why JSON text is in an encoding other than UTF-8 without a byte order mark, or null: the cause named (units,
 * policy and key files), where the parser's message would quote an invisible character.
 */
export function encodingProblem(text: string): string | null {
  if (text.startsWith('\ufeff')) return 'starts with a byte order mark; save it as UTF-8 without one';
  // UTF-16 read as UTF-8: its BOM (FF FE or FE FF) is two invalid bytes, and ASCII has a NUL before or after each
  // character. No JSON text holds a raw NUL.
  if (text.startsWith('\ufffd\ufffd') || text.slice(0, 4).includes('\u0000'))
    return 'is not UTF-8 (it looks like UTF-16); save it as UTF-8';
  return null;
}
