/**
 * The reasoning a reply starts with, cut off before the reply is parsed as an answer: reasoning models put their
 * thoughts (and drafts, fenced like the answer's files) in front of it, in several shapes, and a draft read as the
 * answer would be written. Pure text handling, apart from the reading of the reply that calls it.
 */
import { linesInBlocks, parseEmission } from './emission.js';

/**
 * Removes the reasoning a reply starts with: `<think>…</think>` blocks at its start (an unclosed one is all
 * reasoning); when the opening tag lived in the chat template, everything up to the first `</think>`, where no code
 * fence comes before it, or else up to the reasoning's closing tag after its drafts (reasoningCloseAfterDrafts: a
 * reasoning model drafts in fenced blocks); and gpt-oss's harmony channels, of which only the final one answers.
 * Never anything after the answer has begun: a file may hold the text `<think>` itself, and the answer's prose may
 * name the tag.
 */
export function stripThinking(text: string): string {
  if (/^\s*<\|(?:channel|start)\|>/.test(text)) {
    const final = text.indexOf(HARMONY_FINAL);
    return final === -1
      ? ''
      : text.slice(final + HARMONY_FINAL.length).replace(/<\|(?:end|return)\|>\s*$/, '');
  }
  let rest = text;
  for (;;) {
    const start = rest.search(/\S/);
    if (start === -1 || !rest.startsWith('<think>', start)) break;
    const close = rest.indexOf('</think>', start);
    rest = close === -1 ? '' : rest.slice(close + '</think>'.length);
  }
  if (rest === text) {
    const close = text.indexOf('</think>');
    const end =
      close !== -1 && !text.slice(0, close).includes('```') ? close : reasoningCloseAfterDrafts(text);
    if (end !== -1) rest = text.slice(end + '</think>'.length);
  }
  return rest.replace(/^\s*\n/, '');
}

/** gpt-oss's marker of the channel that holds the answer (the others hold its analysis). */
const HARMONY_FINAL = '<|channel|>final<|message|>';

/**
 * Where the reasoning's closing tag is, after drafts, or -1: the first line outside every fenced block that is
 * `</think>` alone, or that ends with it where a file named in a block before it is named again after it (the draft
 * and the answer). An answer's prose may end a line with the tag it talks about (rt42 f03); reasoning may close its
 * last sentence with it (rt43 f04).
 */
function reasoningCloseAfterDrafts(text: string): number {
  const inBlock = linesInBlocks(text);
  let offset = 0;
  for (const [i, line] of text.split('\n').entries()) {
    const at = offset + line.lastIndexOf('</think>');
    offset += line.length + 1;
    if (inBlock[i] || !/<\/think>[ \t]*\r?$/.test(line)) continue;
    if (/^[ \t]*<\/think>/.test(line) || namedAgain(text.slice(0, at), text.slice(at))) return at;
  }
  return -1;
}

/** Whether a file named in a block of `before` is named in a block of `after` too. */
function namedAgain(before: string, after: string): boolean {
  const named = new Set(parseEmission(before, { targetFiles: [] }).files.map((f) => f.path));
  return parseEmission(after, { targetFiles: [] }).files.some((f) => named.has(f.path));
}
