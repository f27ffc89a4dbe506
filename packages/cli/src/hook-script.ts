/**
 * What a hook script's text says about when its lines run, read without running it: where init puts the gate's line
 * in a husky script so that it runs, and whether a script someone else wrote runs the gate. Pure functions over the
 * text, shared by hook-install.ts (which `delegate` does not load) and hooks-in-effect.ts. They read shell as most
 * hooks are written, not as a shell parses it; where a line cannot be read so, they take it that the gate may not run.
 */

import path from 'node:path';

/** A top-level line after which nothing in the script runs (`exec npx lint-staged`, `exit 0`, `return 0` in dash). */
const ENDS_SCRIPT = /^(?:exec|exit|return)(?:\s|$)/;
/**
 * Anywhere else (in a branch, after `;` or `&&`), any of those, or what may run them unseen (`eval`, a sourced
 * script), or a here-document: no later line can be known to run.
 */
const MAY_END_SCRIPT = /(?:^|[\s;&|()])(?:exec|exit|return|eval|source|\.)(?:[\s;)]|$)|<</;
/** A line that carries on into the next (`lint &&`, `a |`, a continued line): nothing can go between them. */
const CARRIES_ON = /(?:&&|\|\||\||\\)\s*$/;
/** A closing `exit` or `return` whose status is the last command's: one placed before it would change that status. */
const PASSES_STATUS_ON = /^(?:exit|return)(?:\s+"?\$\?"?)?\s*(?:[;#].*)?$/;
/** husky 8's own first line, sourcing its setup script (which only sets husky up). */
const HUSKY_SETUP = /^\.\s+"\$\(dirname -- "\$0"\)\/_\/husky\.sh"\s*$/;

/**
 * The line init adds to `.husky/<name>`: it runs this clone's installed hook, which knows where its delegate-git is;
 * in a clone that has not run init, a delegate-git on PATH or in the project's node_modules (husky 8 does not put
 * that on PATH); in neither, it says to run init and refuses the commit, as a hook that cannot judge must. It ends
 * the script when the gate refuses, as husky 8 without `sh -e` (or a script that sets `+e`) would not.
 */
export function huskyLine(name: string): string {
  const runner = `"$(git rev-parse --git-common-dir)/delegate-git/hooks/${name}"`;
  const missing =
    name === 'pre-push'
      ? 'a ledger behind the one on the remote is not taken in before the push'
      : name.startsWith('post-')
        ? 'the records this pull fetched were not taken in'
        : 'the commit is refused';
  const advice = `delegate-git: this clone has not run \`npx delegate-git init\` and has no delegate-git installed, so husky cannot run its ${name} gate: ${missing}. Run \`npx delegate-git init\` here.`;
  // pre-push is told the remote (its arguments) and refuses nothing: git decides the push. The other lines are as
  // earlier releases wrote them (a post- hook's exit status git ignores).
  const args = name === 'pre-push' ? ' "$@"' : '';
  const orElse = name === 'pre-push' ? '' : ' exit 1;';
  return `h=${runner}; if [ -x "$h" ]; then "$h"${args} || exit $?; elif d=$(PATH="node_modules/.bin:$PATH"; command -v delegate-git); then "$d" hook ${name}${args} || exit $?; else echo '${advice}' >&2;${orElse} fi`;
}

/** The lines earlier releases added, which init replaces. */
export function huskyLinesBefore(name: string): string[] {
  const runner = `h="$(git rev-parse --git-common-dir)/delegate-git/hooks/${name}"`;
  return [
    `${runner}; if [ -x "$h" ]; then "$h"; else npx --no-install delegate-git hook ${name}; fi`,
    // npx asks the registry for a package it does not find, and fails with npm's error, not ours.
    `${runner}; if [ -x "$h" ]; then "$h" || exit $?; else npx --no-install delegate-git hook ${name} || exit $?; fi`,
  ];
}

/**
 * `script` with the gate's line where it runs: at the end, so that what the script does first (a formatter restaging
 * files) is what the gate judges; before a closing `exec`, or an `exit` or `return` with a status of its own, that is
 * the last command at the top level; or, where the script may end elsewhere (an `exit` in a branch, or followed by
 * more lines, which may be a branch's end), where the line before would carry on into it (`&&`, `|`, `\`), or where
 * the closing `exit` passes on the last command's status (`exit`, `exit $?`), first: after the shebang and husky 8's
 * setup line (which runs the script again from its start). The lines init wrote before (`earlier`, and `line`
 * itself) are taken out and `line` placed again. Only init's own line counts: a script that merely names the gate
 * (in an `echo`, say) may not run it.
 */
export function withHuskyLine(script: string, line: string, earlier: readonly string[] = []): string {
  const lines = script.split('\n').filter((l) => l !== line && !earlier.includes(l));
  const last = lines.findLastIndex(isCode);
  const end = last !== -1 && ENDS_SCRIPT.test(lines[last]!) ? last : -1;
  const before = end === -1 ? lines : lines.slice(0, end);
  const carriedOn = end > 0 && CARRIES_ON.test(lines[before.findLastIndex(isCode)] ?? '');
  const mayEnd = before.some((l) => isCode(l) && MAY_END_SCRIPT.test(l) && !HUSKY_SETUP.test(l));
  const at =
    mayEnd || carriedOn || (end !== -1 && PASSES_STATUS_ON.test(lines[end]!)) ? firstLine(lines) : end;
  if (at !== -1) return [...lines.slice(0, at), line, ...lines.slice(at)].join('\n');
  const rest = lines.join('\n');
  return `${rest}${rest === '' || rest.endsWith('\n') ? '' : '\n'}${line}\n`;
}

/** Where the first command goes: after the shebang, and after husky 8's setup line when the script opens with it. */
function firstLine(lines: readonly string[]): number {
  const shebang = lines[0]?.startsWith('#!') ? 1 : 0;
  const setup = lines.findIndex((l, i) => i >= shebang && l.trim() !== '');
  return setup !== -1 && HUSKY_SETUP.test(lines[setup]!) ? setup + 1 : shebang;
}

/** Whether `line`, placed in `script`, runs after every other command of it (at most a closing `exit` follows). */
export function runsLast(script: string, line: string): boolean {
  const code = script.split('\n').filter(isCode);
  const closing = code.at(-1)!;
  return closing === line || (code.at(-2) === line && /^(?:exit|return)(?:\s|$)/.test(closing));
}

/** A line holding a command: neither blank nor a comment. */
function isCode(line: string): boolean {
  return line.trim() !== '' && !/^\s*#/.test(line);
}

/**
 * Whether `script` runs the gate of `hook` (as git runs it, with no arguments but its own): a line of its own that
 * calls it (gateCall), with nothing before it that may end the script first. Any `exit`, `exec` or `return` before
 * it counts, in a branch or not (telling a branch from the top level takes a shell parser, and a branch's script can
 * fool a lesser one), as do `eval`, a sourced script (husky 8's own setup line aside), and a here-document or a quote
 * left open, which may hold the line as text; and so does a line before it that carries on into it (`false &&`). What the line calls is
 * taken on its name: a program a branch put at `./tools/delegate-git` passes for the gate (docs/threat-model.md).
 */
export function callsGate(script: string, hook = 'pre-commit'): boolean {
  const lines = script.split('\n');
  const at = lines.findIndex((line) => gateCall(line, hook));
  if (at === -1) return false;
  const before = lines.slice(0, at).filter(isCode);
  const mayEnd = (line: string) => MAY_END_SCRIPT.test(line) && !HUSKY_SETUP.test(line);
  if (before.some((line) => mayEnd(line) || leavesQuoteOpen(line))) return false;
  return !CARRIES_ON.test(before.at(-1) ?? '');
}

/** Whether a quote (`'`, `"`, or a backquote) opened on `line` is still open at its end: the next lines are its text. */
function leavesQuoteOpen(line: string): boolean {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote === null) {
      if (c === '\\') i++;
      else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) break;
      else if (c === "'" || c === '"' || c === '`') quote = c;
    } else if (c === '\\' && quote !== "'") i++;
    else if (c === quote) quote = null;
  }
  return quote !== null;
}

/** What runs a JavaScript CLI: node itself, or a package runner, with its options and subcommand. */
const RUNNER = /^(?:node|nodejs|npx|pnpm|yarn|bunx|bun)$/;
const RUNNER_WORD = /^(?:-.*|exec|dlx|x)$/;
/** The CLI by its file name: the package's bin (`delegate-git`), or the script itself (`.../bin/delegate-git.js`). */
const GATE_PROGRAM = /^delegate-git(?:\.[cm]?js)?$/;
/** What may close the line: the gate's refusal ending the script, and a comment. */
const OR_EXIT = /\s*\|\|\s*exit(?:\s+(?:\d+|"?\$\?"?))?\s*(?:#.*)?$/;

/**
 * Whether `line` is one of its own calling the gate of `hook`: husky's line as init writes it (or wrote it before), or
 * a simple command `[exec] [node|npx ...] <path>/delegate-git hook <hook> ["$@"]`, closed at most by `|| exit [status]`
 * and a comment. Not a mention (`exit 0 # delegate-git hook pre-commit`, `: delegate-git hook pre-commit`), nor a call
 * that may not happen (`true || delegate-git hook pre-commit`).
 */
export function gateCall(line: string, hook: string): boolean {
  const trimmed = line.trim();
  if (trimmed === huskyLine(hook) || huskyLinesBefore(hook).includes(trimmed)) return true;
  const words = commandWords(trimmed.replace(OR_EXIT, ''));
  if (words === null) return false;
  let i = words[0] === 'exec' ? 1 : 0;
  if (RUNNER.test(path.posix.basename(words[i] ?? ''))) {
    i++;
    while (i < words.length - 1 && RUNNER_WORD.test(words[i]!) && !GATE_PROGRAM.test(words[i]!)) i++;
  }
  const rest = words.slice(i);
  return (
    GATE_PROGRAM.test(path.posix.basename(rest[0] ?? '')) &&
    rest[1] === 'hook' &&
    rest[2] === hook &&
    (rest.length === 3 || (rest.length === 4 && rest[3] === '$@'))
  );
}

/**
 * The words of a line that is one simple command, with their quotes taken off (`'...'`, and `"..."` without a
 * substitution); null when it holds anything else (`;`, `&&`, `|`, a redirection, `$(...)`, a backslash), whose
 * effect on the words around it this does not follow. A `#` starting a word ends the line.
 */
function commandWords(line: string): string[] | null {
  const words: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else if (c === '#' && word === null) break;
    else if (c === "'" || c === '"') {
      const end = line.indexOf(c, i + 1);
      const quoted = end === -1 ? null : line.slice(i + 1, end);
      if (quoted === null || (c === '"' && /[\\`]|\$\(/.test(quoted))) return null;
      word = (word ?? '') + quoted;
      i = end;
    } else if (/[\\;&|<>()`]/.test(c)) return null;
    else word = (word ?? '') + c;
  }
  if (word !== null) words.push(word);
  return words;
}
