/**
 * A repository path as a person reads it in a line of output. Git allows any byte but NUL in a name, so a name can
 * hold a line break and pass for another line of a report (or of a hook's message to the pusher). Such a path is
 * shown C-quoted, as git quotes it (`"src/new\nline.ts"`); any other path, non-ASCII included, is shown as it is.
 */
const NEEDS_QUOTING = /[\x00-\x1f\x7f"\\]/;
const NEEDS_ESCAPE = /[\x00-\x1f\x7f"\\]/g;
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

export function shownPath(path: string): string {
  if (!NEEDS_QUOTING.test(path)) return path;
  const escaped = path.replace(
    NEEDS_ESCAPE,
    (c) => ESCAPES[c] ?? `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`,
  );
  return `"${escaped}"`;
}
