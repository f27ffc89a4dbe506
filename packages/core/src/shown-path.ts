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
/** The same but for the line breaks and tabs output is made of: a replace that matched every line break (to keep it)
 * called back once per line, 38 ms for a report of 20,000 lines. */
const IN_OUTPUT =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const IN_OUTPUT_ALL = new RegExp(IN_OUTPUT.source, 'g');

/**
 * Characters a path shows as nothing at all (soft hyphen, zero-width space and joiners, word joiner, byte order mark,
 * tag characters): `src/a\u200b.js` would read as the promoted `src/a.js`. Quoted in paths only: in a name or a
 * comment they may belong to its script (a joiner in Persian or Hindi).
 */
const INVISIBLE = /[\u00ad\u180e\u200b-\u200d\u2060-\u2064\ufeff]|\udb40[\udc00-\udc7f]/;

const NEEDS_QUOTING = new RegExp(`${UNPRINTABLE.source}|${INVISIBLE.source}|["\\\\]`);
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
 * bytes) when it holds an unprintable or invisible character, a quote or a backslash; any other path, non-ASCII
 * included, as it is.
 */
export function shownPath(path: string): string {
  if (!NEEDS_QUOTING.test(path)) return neutralCommands(path);
  return neutralCommands(`"${path.replace(NEEDS_ESCAPE, pathEscape)}"`);
}

/**
 * The start of shownPath(path) that fits `maxLength` characters, cut between characters rather than inside an escape,
 * or null when all of it fits (a `##[` it holds may add a few). For a place of bounded size, the job summary: quoting
 * all of a path of megabytes to show its start would take long, and it is quoted or not as the whole path is.
 */
export function shownPathStart(path: string, maxLength: number): string | null {
  const quoted = NEEDS_QUOTING.test(path);
  let out = quoted ? '"' : '';
  for (const c of path) {
    const shown = quoted && NEEDS_QUOTING.test(c) ? pathEscape(c) : c;
    if (out.length + shown.length > maxLength) return neutralCommands(out);
    out += shown;
  }
  return quoted && out.length + 1 > maxLength ? neutralCommands(out) : null;
}

function pathEscape(c: string): string {
  return ESCAPES[c] ?? [...Buffer.from(c, 'utf8')].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('');
}

/**
 * Free text on one line (a reason, a name, a comment): each unprintable character as `\uXXXX`. A backslash is kept as
 * it is, so the text `\u000d` reads the same as an escaped carriage return: where that matters (the content a reviewer
 * approves), say which lines held such characters (attest does).
 */
export function shownText(text: string): string {
  return neutralCommands(UNPRINTABLE.test(text) ? text.replace(UNPRINTABLE_ALL, unicodeEscape) : text);
}

const HIDDEN = new RegExp(`${UNPRINTABLE.source}|${INVISIBLE.source}`);

/**
 * Text that stays where it is put and is read out of context (a notes commit's message, which every clone keeps for
 * good and `git log` prints raw; a parse error quoting a file): on one line, every unprintable or invisible character
 * as `\uXXXX` (a NUL in a commit is refused by git fsck, so a ledger holding one could never be pushed to a checking
 * server), and at most `maxLength` characters, cut with `…` between characters rather than inside an escape.
 */
export function shownLine(text: string, maxLength = Number.POSITIVE_INFINITY): string {
  let out = '';
  for (const c of text) {
    const shown = HIDDEN.test(c) ? c.split('').map(unicodeEscape).join('') : c;
    if (out.length + shown.length > maxLength) return `${neutralCommands(out)}…`;
    out += shown;
  }
  return neutralCommands(out);
}

/**
 * Output as written to a terminal or a log: each unprintable character but the line breaks and tabs the output is
 * made of as `\uXXXX`. Inside JSON, where such characters can only stand in strings, that escape means the same.
 */
export function shownOutput(text: string): string {
  return neutralCommands(IN_OUTPUT.test(text) ? text.replace(IN_OUTPUT_ALL, unicodeEscape) : text);
}

/** Whether `text` holds a character shownOutput would escape. */
export function holdsUnprintable(text: string): boolean {
  return IN_OUTPUT.test(text);
}

/**
 * GitHub's runner takes `##[command]data` anywhere in a line of either stream as a workflow command (the older form;
 * `::command::` counts only at the start of a line, which no line of ours leaves to chosen text). Its `#` is written
 * `\u0023` there, the same character inside a JSON string.
 */
function neutralCommands(text: string): string {
  return text.includes('##[') ? text.replaceAll('##[', '#\\u0023[') : text;
}

function unicodeEscape(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}
