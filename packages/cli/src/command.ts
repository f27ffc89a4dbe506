import { isatty } from 'node:tty';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { DelegateGitError } from '@delegate-git/core/errors';
import type { QuickAnswer } from '@delegate-git/core/quiet-commit';
import { shownOutput } from '@delegate-git/core/shown-path';

export interface Io {
  out(text: string): void;
  err(text: string): void;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** True when a person can answer prompts. */
  interactive: boolean;
  /**
   * `interrupt`: the command listens for signals itself (delegate), and the question is abandoned when it aborts;
   * a Ctrl-C typed at the question reaches the command as the SIGINT it is.
   */
  prompt(question: string, interrupt?: AbortSignal): Promise<string>;
}

/** What the bin already worked out before it loaded the CLI: the pre-commit hook's quick answer, when not "passes". */
export interface Given {
  quickPreCommit?: QuickAnswer;
}

export interface CommandModule {
  summary: string;
  /** Full --help text, with an example. */
  help: string;
  run(argv: string[], io: Io, given?: Given): Promise<number>;
}

/**
 * The process's own streams. Everything written passes through shownOutput: much of it is text a pusher, a record
 * or a worker chose, and an escape sequence or a carriage return in it could redraw what a reviewer reads (the diff
 * attest asks about, a refusal) wherever a command forgot to quote it.
 */
export function processIo(): Io {
  return {
    out: untilClosed(process.stdout),
    err: untilClosed(process.stderr),
    cwd: process.cwd(),
    env: process.env,
    // isatty, not process.stdin.isTTY: touching process.stdin builds a stream for it (about 3 ms), and most
    // commands never read it.
    interactive: isatty(0) && isatty(2),
    async prompt(question, interrupt) {
      const { createInterface } = await import('node:readline/promises');
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      // A terminal in raw mode gives Ctrl-C to readline as a key, which would only close the question (an
      // AbortError the command cannot tell from a bug): sent on as a signal, it interrupts as anywhere else.
      if (interrupt) rl.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
      try {
        return await rl.question(shownOutput(question), { signal: interrupt });
      } finally {
        rl.close();
      }
    },
  };
}

/**
 * Writes to `stream` until its reader goes (`| head`, `grep -q`, a pager quit early): what is left has no reader, and
 * the command still ends with its answer, its exit code, instead of a crash that would read as a refusal (1). Output
 * that cannot be written at all (a full disk behind `>`) is said in a line, and the command exits 2: what it wrote
 * is not its whole answer.
 */
function untilClosed(stream: NodeJS.WriteStream): (text: string) => void {
  let closed = false;
  stream.on('error', (error: NodeJS.ErrnoException) => {
    closed = true;
    if (error.code === 'EPIPE') return;
    process.exitCode = 2; // the entry points keep the higher of this and the command's own code
    const name = stream === process.stdout ? 'standard output' : 'standard error';
    if (stream !== process.stderr)
      process.stderr.write(
        `delegate-git: could not write to ${name}: ${error.message}. Its output is incomplete.\n`,
      );
  });
  return (text) => {
    if (!closed) stream.write(shownOutput(text));
  };
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** util.parseArgs in strict mode; an unknown flag or a missing value is a usage error naming the command's help. */
export function parseCommandArgs<O extends Options>(
  command: string,
  argv: string[],
  options: O,
  allowPositionals = true,
) {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals });
  } catch (error) {
    // Node appends advice about passing a positional that starts with "-" after "--"; for a mistyped flag, which is
    // what nearly every such error is, it only hides the one sentence that matters.
    // Its sentences come on lines of their own; an error here is one paragraph.
    const message = (error as Error).message
      .replace(/ To specify a positional argument starting with a '-'.*$/s, '')
      .replace(/([.?!])?\n+/g, (_, stop: string | undefined) => `${stop ?? '.'} `);
    throw new DelegateGitError(
      'USAGE',
      `${message.replace(/\.$/, '')}. Run \`delegate-git ${command} --help\` for the options.`,
    );
  }
}

export function usageError(command: string, message: string): DelegateGitError {
  return new DelegateGitError('USAGE', `${message} Run \`delegate-git ${command} --help\` for the options.`);
}

export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
