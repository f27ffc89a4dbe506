/**
 * Text from a repository or a ledger as a person reads it in a line of output. Git allows any byte but NUL in a
 * name, and a record or a key file holds whatever its writer chose, so such text can hold a line break and pass for
 * another line of a report (or of a hook's message to the pusher, or a workflow command in CI), an escape sequence
 * that redraws the terminal, or a bidirectional override that shows `src/evil\u202esj.txt` as `src/eviltxt.js`.
 */

/** Characters that make text show other than it is: C0 and C1 controls, DEL, bidirectional marks, overrides and
 * isolates, and the line and paragraph separators. */
export const UNPRINTABLE =
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE.source, 'g');

const NEEDS_QUOTING = new RegExp(`${UNPRINTABLE.source}|["\\\\]`);
const NEEDS_ESCAPE = new RegExp(NEEDS_QUOTING.source, 'g');
const ESCAPES: Record<string, string> = {
  '\x07': '\\a',
  '\b': '\\b',
  '\t': '\\t',
  '\n': '\\n',
  '\v': '\\v',
  '\f': '\\f',
  '\r': '\\r',
  '"': '\\"',
  '\\': '\\\\',
};

/**
 * A repository path: C-quoted as git quotes it (`"src/new\nline.ts"`, other characters by the octal of their UTF-8
 * bytes) when it holds an unprintable character, a quote or a backslash; any other path, non-ASCII included, as it is.
 */
export function shownPath(path: string): string {
  if (!NEEDS_QUOTING.test(path)) return path;
  const escaped = path.replace(
    NEEDS_ESCAPE,
    (c) =>
      ESCAPES[c] ?? [...Buffer.from(c, 'utf8')].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join(''),
  );
  return `"${escaped}"`;
}

/** Free text on one line (a reason, a name, a comment): each unprintable character as `\uXXXX`. */
export function shownText(text: string): string {
  return text.replace(UNPRINTABLE_ALL, unicodeEscape);
}

/**
 * Output as written to a terminal or a log: each unprintable character but the line breaks and tabs the output is
 * made of as `\uXXXX`. Inside JSON, where such characters can only stand in strings, that escape means the same.
 */
export function shownOutput(text: string): string {
  return text.replace(UNPRINTABLE_ALL, (c) => (c === '\n' || c === '\t' ? c : unicodeEscape(c)));
}

function unicodeEscape(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}
