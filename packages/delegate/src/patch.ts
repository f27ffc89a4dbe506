/**
 * SEARCH/REPLACE patch blocks: the only way a worker may change an existing file. A patch is matched byte for
 * byte (only CRLF/LF is reconciled), each SEARCH must occur exactly once, and a patch applies completely or not
 * at all. There is no fuzzy matching: an edit that lands somewhere the worker did not mean is worse than a
 * refused one.
 *
 *   <<<<<<< SEARCH
 *   exact existing text
 *   =======
 *   replacement text
 *   >>>>>>> REPLACE
 */

export interface SearchReplaceBlock {
  /** Lines between the SEARCH marker and the divider, joined with LF. */
  search: string;
  /** Lines between the divider and the REPLACE marker, joined with LF. */
  replace: string;
}

export type PatchResult = { ok: true; content: string; hunks: number } | { ok: false; reason: string };

export const SEARCH_MARKER = '<<<<<<< SEARCH';
export const DIVIDER_MARKER = '=======';
export const REPLACE_MARKER = '>>>>>>> REPLACE';

/** A SEARCH shorter than this (after trimming) is refused as ambiguous even when it happens to be unique. */
const MIN_SEARCH_CHARS = 8;

const QUOTED_SEARCH_CHARS = 60;

/**
 * Parses patch blocks from a body. Returns null if the body has no SEARCH marker (it is not a patch). Returns an
 * empty list if any SEARCH was left unclosed, even after complete blocks: applying the complete ones and dropping
 * the rest would be a partial edit, and writing the body as a whole file would write the markers.
 */
export function parseSearchReplace(body: string): SearchReplaceBlock[] | null {
  const lines = body.split(/\r?\n/);
  const blocks: SearchReplaceBlock[] = [];
  let sawSearch = false;
  let state: 'outside' | 'search' | 'replace' = 'outside';
  let search: string[] = [];
  let replace: string[] = [];

  for (const line of lines) {
    const marker = line.trim();
    if (marker === SEARCH_MARKER) {
      // A new SEARCH restarts a block, whatever state the previous one was in.
      sawSearch = true;
      state = 'search';
      search = [];
      replace = [];
    } else if (state === 'search' && marker === DIVIDER_MARKER) {
      state = 'replace';
    } else if (state === 'replace' && marker === REPLACE_MARKER) {
      blocks.push({ search: search.join('\n'), replace: replace.join('\n') });
      state = 'outside';
    } else if (state === 'search') {
      search.push(line);
    } else if (state === 'replace') {
      replace.push(line);
    }
    // Text outside blocks (explanations, the fence's leftovers) is ignored.
  }

  if (!sawSearch) return null;
  if (state !== 'outside') return [];
  return blocks;
}

function countOccurrences(text: string, needle: string): { count: number; first: number } {
  let count = 0;
  let first = -1;
  // Overlapping occurrences count: `abcabcabc` holds `abcabc` twice, and either could be the one meant.
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) {
    if (first === -1) first = at;
    count++;
  }
  return { count, first };
}

function quoteStart(text: string): string {
  return JSON.stringify(text.length > QUOTED_SEARCH_CHARS ? `${text.slice(0, QUOTED_SEARCH_CHARS)}…` : text);
}

type LineEndings = 'lf' | 'crlf' | 'mixed';

function lineEndingsOf(content: string): LineEndings {
  const crlf = (content.match(/\r\n/g) ?? []).length;
  if (crlf === 0) return 'lf';
  const lf = (content.match(/\n/g) ?? []).length;
  return crlf === lf ? 'crlf' : 'mixed';
}

/**
 * Applies blocks in order to `content`, each against the text the previous one produced. A CRLF file is matched
 * as LF and written back as CRLF. A file with mixed line endings is matched as it is (so the lines the patch
 * does not touch keep their exact bytes), which means a SEARCH spanning a CRLF line there will not match.
 */
export function applySearchReplace(content: string, blocks: readonly SearchReplaceBlock[]): PatchResult {
  if (blocks.length === 0) {
    return {
      ok: false,
      reason: `no complete search/replace block (a \`${SEARCH_MARKER}\` needs \`${DIVIDER_MARKER}\` and \`${REPLACE_MARKER}\`)`,
    };
  }
  const endings = lineEndingsOf(content);
  let text = endings === 'crlf' ? content.replace(/\r\n/g, '\n') : content;

  for (const [index, block] of blocks.entries()) {
    const label = blocks.length === 1 ? 'SEARCH' : `block ${index + 1}: SEARCH`;
    if (block.search === '') {
      return { ok: false, reason: `${label} is empty; an empty search cannot locate an edit` };
    }
    if (block.search.trim().length < MIN_SEARCH_CHARS) {
      return {
        ok: false,
        reason:
          `${label} ${quoteStart(block.search)} is shorter than ${MIN_SEARCH_CHARS} characters and too ambiguous ` +
          'to locate an edit; include a few surrounding lines',
      };
    }
    if (block.search === block.replace) {
      return { ok: false, reason: `${label} and REPLACE are identical; the block would change nothing` };
    }
    const { count, first } = countOccurrences(text, block.search);
    if (count === 0) {
      return {
        ok: false,
        reason:
          `${label} has no exact match in the file: ${quoteStart(block.search)} ` +
          '(whitespace and indentation must match byte for byte; there is no fuzzy matching)',
      };
    }
    if (count > 1) {
      return {
        ok: false,
        reason: `${label} ${quoteStart(block.search)} matched more than once (${count} times); include enough surrounding lines to make it unique`,
      };
    }
    // Concatenation, not String.replace: `$&`, `$1` and `$$` in the replacement are literal text.
    text = text.slice(0, first) + block.replace + text.slice(first + block.search.length);
  }

  return { ok: true, content: endings === 'crlf' ? text.replace(/\n/g, '\r\n') : text, hunks: blocks.length };
}
