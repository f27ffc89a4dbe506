/**
 * Emission parsing: the worker's reply (free text from a model) → the files it names. Pure: no I/O, no path
 * resolution; containment, scope and the create-or-patch decision happen later, per file (write-plan.ts).
 *
 * Two ways to name a file, both inside a fenced block:
 *   ```ts file="src/a.ts"          (header form; `filename=` too, quotes optional)
 *   ```ts\n// FILE: src/a.ts       (marker form: `// FILE:`, `# FILE:`, `/* FILE: … *\/`, `[FILE: …]` first line)
 * A block ends at a closing fence that stands on its own line (only whitespace around it) and is at least as
 * long as the opening one, in both forms. A fence line carrying an info string (```` ```ts ````) inside a body
 * opens a nested block whose bare fence closes it, so a Markdown file with code examples, or a patch quoting a
 * fence, is not cut short. (A nested block opened by a bare fence is indistinguishable from the outer close;
 * the worker can use a longer outer fence, ```` ```` ````, as CommonMark allows.) A block that never closes is
 * refused as truncated, never written partially.
 *
 * The fallback (unnamed blocks → declared targets, or the whole reply → the single target) runs only when the
 * reply named no file at all: a named file that is later refused must never be re-routed to a target path,
 * which would walk around the containment, contract and scope refusals.
 */
import path from 'node:path';
import { parseSearchReplace } from './patch.js';

export type EmissionSource = 'header' | 'marker' | 'fallback';

export interface EmittedFile {
  /** As the worker spelled it (quotes stripped); resolved against the workspace later, never here. */
  path: string;
  body: string;
  source: EmissionSource;
}

export interface Emission {
  files: EmittedFile[];
  /** Paths named again after their first occurrence; the later occurrences are ignored. */
  duplicates: string[];
  /** One message per thing the parser refused (a truncated block, an unroutable reply). */
  errors: string[];
}

interface FenceOpen {
  char: '`' | '~';
  length: number;
  info: string;
}

interface Block {
  fence: FenceOpen;
  /** The lines (of the reply split at \n) it spans, its fences included; to the last line when never closed. */
  from: number;
  to: number;
  /** Body lines, without the line holding a `// FILE:` marker. */
  lines: string[];
  name: { path: string; source: 'header' | 'marker' } | null;
  closed: boolean;
}

const FENCE_LINE = /^[ \t]*(`{3,}|~{3,})(.*?)[ \t]*\r?$/;
const HEADER_INFO = /^(?:[\w-]+[ \t]+)?(?:file|filename)=(?:"([^"\s>]+)"|'([^'\s>]+)'|([^"'\s>]+))$/i;
const MARKER_LINE =
  /^[ \t]*(?:\/\/[ \t]*FILE:(.+?)|#[ \t]*FILE:(.+?)|\/\*[ \t]*FILE:(.+?)\*\/|\[FILE:(.+?)\])[ \t]*\r?$/i;

function parseFence(line: string): FenceOpen | null {
  const match = FENCE_LINE.exec(line);
  if (match === null) return null;
  const run = match[1]!;
  const info = match[2]!.trim();
  // A backtick fence's info string may not contain backticks (CommonMark), so ```x``` is inline code.
  if (run[0] === '`' && info.includes('`')) return null;
  return { char: run[0] as '`' | '~', length: run.length, info };
}

function stripQuotes(text: string): string {
  const trimmed = text.trim();
  const quoted = /^(["'`])(.*)\1$/.exec(trimmed);
  return quoted === null ? trimmed : quoted[2]!.trim();
}

function headerPath(info: string): string | null {
  const match = HEADER_INFO.exec(info);
  if (match === null) return null;
  return match[1] ?? match[2] ?? match[3] ?? null;
}

function markerPath(line: string): string | null {
  const match = MARKER_LINE.exec(line);
  if (match === null) return null;
  const spelled = stripQuotes(match[1] ?? match[2] ?? match[3] ?? match[4] ?? '');
  return spelled === '' ? null : spelled;
}

/** Splits the reply into fenced blocks (in order) using the own-line closing rule and nested-fence tracking. */
function scanBlocks(reply: string): Block[] {
  const lines = reply.split('\n');
  const blocks: Block[] = [];
  let index = 0;
  while (index < lines.length) {
    const fence = parseFence(lines[index]!);
    index++;
    if (fence === null) continue;

    const block: Block = {
      fence,
      from: index - 1,
      to: lines.length - 1,
      lines: [],
      name: null,
      closed: false,
    };
    const fromHeader = headerPath(fence.info);
    if (fromHeader !== null) {
      block.name = { path: fromHeader, source: 'header' };
    } else if (index < lines.length) {
      const fromMarker = markerPath(lines[index]!);
      if (fromMarker !== null) {
        block.name = { path: fromMarker, source: 'marker' };
        index++;
      }
    }

    let nested = 0;
    while (index < lines.length) {
      const line = lines[index]!;
      index++;
      const inner = parseFence(line);
      if (inner !== null && inner.char === fence.char) {
        if (inner.info !== '') {
          nested++;
        } else if (nested > 0) {
          nested--;
        } else if (inner.length >= fence.length) {
          block.closed = true;
          block.to = index - 1;
          break;
        }
      }
      block.lines.push(line);
    }
    blocks.push(block);
  }
  return blocks;
}

/** Whether each line of the reply (split at \n) lies in a fenced block, its fences included. */
export function linesInBlocks(reply: string): boolean[] {
  const inside = reply.split('\n').map(() => false);
  for (const block of scanBlocks(reply)) inside.fill(true, block.from, block.to + 1);
  return inside;
}

function bodyOf(block: Block): string {
  return block.lines.map((line) => `${line}\n`).join('');
}

// Case-sensitive on purpose: `Import the module first.` is a sentence, `import x from 'y'` is code.
const CODE_LINE =
  /^\s*(?:\/\/|\/\*|#|<!--|--|import\b|export\b|const\b|let\b|var\b|function\b|class\b|interface\b|type\b|def\b|package\b|using\b|public\b|private\b|<!(?:DOCTYPE|doctype)\b|<[a-z][\w-]*[\s>/])/;
const PROSE_LINE =
  /^\s*(?:I['\u2019]ll\b|I will\b|I['\u2019]ve\b|Here['\u2019]s\b|Here is\b|Sure\b|Certainly\b|Let me\b|First,|To do this\b)/;
const TOOL_CALL_MARKUP = /<\/?(?:tool_call|tool_use|function_call|function_calls|invoke)\b|"tool_calls"\s*:/i;

/** The whole-reply fallback writes only what reads as source, never an explanation or a tool-call transcript. */
export function looksLikeSource(reply: string): boolean {
  if (TOOL_CALL_MARKUP.test(reply)) return false;
  const lines = reply.split(/\r?\n/);
  if (lines.some((line) => PROSE_LINE.test(line))) return false;
  return lines.some((line) => CODE_LINE.test(line));
}

/** Spelling-level identity for duplicate detection (`./a.ts` = `a.ts`); symlink aliases are caught later. */
function pathKey(spelled: string): string {
  return path.posix.normalize(spelled);
}

function fallbackFiles(
  reply: string,
  blocks: Block[],
  targetFiles: string[],
  errors: string[],
): EmittedFile[] {
  // Only a file can receive a body; a target spelled as a directory (`src/`) covers scope but is no destination.
  const hints = targetFiles
    .map((target) => target.trim())
    .filter((target) => target !== '' && !target.endsWith('/'));
  if (hints.length === 0) return [];

  if (blocks.some((block) => !block.closed)) {
    errors.push('the reply ends inside a fenced block (it may have been cut off); nothing was written');
    return [];
  }
  const bodies = blocks.filter((block) => block.lines.some((line) => line.trim() !== ''));
  if (bodies.length > 0) {
    // Routing by position is a guess; it is only made when the counts leave no room for a different guess.
    if (bodies.length !== hints.length) {
      errors.push(
        `the reply names no file and has ${bodies.length} fenced block(s) for ${hints.length} target file(s), ` +
          'so which block belongs to which file is unknown; nothing was written. Name each file in its fence: ' +
          '```lang file="path"',
      );
      return [];
    }
    return bodies.map((block, i) => ({ path: hints[i]!, body: bodyOf(block), source: 'fallback' }));
  }
  if (blocks.length === 0 && hints.length === 1 && looksLikeSource(reply)) {
    return [{ path: hints[0]!, body: reply.endsWith('\n') ? reply : `${reply}\n`, source: 'fallback' }];
  }
  errors.push(
    'the reply has no fenced block naming a file and does not look like source code; nothing was written. ' +
      'Name each file in its fence: ```lang file="path"',
  );
  return [];
}

/** A body of complete SEARCH/REPLACE pairs only (an unclosed one is refused whole, never joined to another). */
function isPatch(body: string): boolean {
  const pairs = parseSearchReplace(body);
  return pairs !== null && pairs.length > 0;
}

/**
 * Whether every line of a reply ends in CRLF: the line endings of its transport (a server, or a model that writes
 * them everywhere), not of its files (ux57 f18). Such a reply is read as LF, so a file it creates has git's usual
 * endings, and the blob a record names is the one `git add` stores. A reply that mixes the two is read as it came: a
 * block in CRLF among LF prose is the model's choice for that file.
 */
function transportCrlf(reply: string): boolean {
  const lineFeeds = reply.split('\n').length - 1;
  return lineFeeds > 0 && reply.split('\r\n').length - 1 === lineFeeds;
}

export function parseEmission(received: string, opts: { targetFiles: string[] }): Emission {
  const reply = transportCrlf(received) ? received.replaceAll('\r\n', '\n') : received;
  const blocks = scanBlocks(reply);
  const files: EmittedFile[] = [];
  const duplicates: string[] = [];
  const errors: string[] = [];
  const seen = new Map<string, EmittedFile>();
  let namedSeen = false;

  for (const block of blocks) {
    if (block.name === null) continue;
    namedSeen = true;
    const spelled = block.name.path;
    if (!block.closed) {
      errors.push(
        `\`${spelled}\`: the block has no closing fence (the reply may have been cut off); not written`,
      );
      continue;
    }
    const key = pathKey(spelled);
    const body = bodyOf(block);
    const earlier = seen.get(key);
    if (earlier !== undefined) {
      // Patch blocks for one file, one per hunk with prose between (as small models write them), are its pairs in
      // order: one patch, applied all or none (an unclosed pair refuses it whole). Anything else named again is
      // ignored: the first block is used.
      if (isPatch(earlier.body) && parseSearchReplace(body) !== null) earlier.body = `${earlier.body}${body}`;
      else duplicates.push(spelled);
      continue;
    }
    const file: EmittedFile = { path: spelled, body, source: block.name.source };
    seen.set(key, file);
    files.push(file);
  }

  if (!namedSeen) files.push(...fallbackFiles(reply, blocks, opts.targetFiles, errors));
  return { files, duplicates, errors };
}
