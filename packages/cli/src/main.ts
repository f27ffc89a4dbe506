/**
 * Entry point: dispatches to one command per file. Commands are imported on demand, so a hook run loads only the
 * gate's modules.
 */
import { InterruptedError, isDelegateGitError } from '@delegate-git/core/errors';
import { shownText } from '@delegate-git/core/shown-path';
import { TOOL } from '@delegate-git/core/statement';
import { type CommandModule, type Given, type Io, processIo } from './command.js';

const COMMANDS: Record<string, () => Promise<{ default: CommandModule }>> = {
  init: () => import('./commands/init.js'),
  keygen: () => import('./commands/keygen.js'),
  keys: () => import('./commands/keys.js'),
  check: () => import('./commands/check.js'),
  show: () => import('./commands/show.js'),
  log: () => import('./commands/log.js'),
  report: () => import('./commands/report.js'),
  attest: () => import('./commands/attest.js'),
  hook: () => import('./commands/hook.js'),
  sync: () => import('./commands/sync.js'),
  verify: () => import('./commands/verify.js'),
  delegate: () => import('./commands/delegate.js'),
  config: () => import('./commands/config.js'),
  worker: () => import('./commands/worker.js'),
  scan: () => import('./commands/scan.js'),
};

export const VERSION = TOOL.version;

export async function main(argv: string[], io: Io = processIo(), given: Given = {}): Promise<number> {
  const [name, ...rest] = argv;
  // `delegate-git help <command>`, as `git help <command>`: that command's help.
  if (name === 'help' && rest.length > 0) return main([rest[0]!, '--help'], io, given);
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.out(await overview());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-V') {
    io.out(`delegate-git ${VERSION}\n`);
    return 0;
  }
  // Own names only: `constructor` or `__proto__` is no command.
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!load) {
    io.err(
      `delegate-git: unknown command "${name}". Run \`delegate-git --help\` for the list of commands.\n`,
    );
    return 2;
  }
  const command = (await load()).default;
  if (rest.includes('--help') || rest.includes('-h')) {
    io.out(`${command.help.trim()}\n`);
    return 0;
  }
  try {
    return await command.run(rest, io, given);
  } catch (error) {
    if (isDelegateGitError(error)) {
      // One paragraph, whatever text of a repository or a record it quotes.
      io.err(`delegate-git ${name}: ${shownText(error.message)}\n`);
      return error instanceof InterruptedError ? error.exitCode : 2;
    }
    const system = systemError(error);
    if (system) {
      io.err(`delegate-git ${name}: ${shownText(system)}\n`);
      return 2;
    }
    io.err(`delegate-git ${name}: unexpected error: ${(error as Error).stack ?? String(error)}\n`);
    return 2;
  }
}

async function overview(): Promise<string> {
  const lines = await Promise.all(
    Object.entries(COMMANDS).map(
      async ([name, load]) => `  ${name.padEnd(10)} ${(await load()).default.summary}`,
    ),
  );
  return [
    'delegate-git: signed delegation verdicts in git notes, and gates that refuse unpromoted edits.',
    '',
    'Usage: delegate-git <command> [options]     (delegate-git <command> --help for details)',
    '',
    'Commands:',
    ...lines,
    '',
    'Exit codes for gates: 0 every governed file asked about is promoted, 1 at least one is not, 2 could not answer.',
    '',
  ].join('\n');
}

/**
 * What the system refused, as one paragraph: a full disk, a read-only file system or a permission is the operator's to
 * fix, not a bug to report with a stack. Every file delegate-git writes is replaced whole, so nothing is half-written.
 */
function systemError(error: unknown): string | null {
  const e = error as NodeJS.ErrnoException;
  if (typeof e?.code !== 'string' || typeof e.syscall !== 'string') return null;
  const what = SYSTEM_CODES[e.code];
  if (!what) return null;
  const where = e.path ? ` ${e.path}` : '';
  return `${e.syscall}${where} failed: ${what} (${e.code}). Nothing was left half-written; fix that and run the command again.`;
}

const SYSTEM_CODES: Record<string, string> = {
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space is left on the device',
  EDQUOT: 'the disk quota is used up',
  EACCES: 'permission denied',
  EPERM: 'the operation is not permitted',
  ENOTDIR: 'a part of the path is not a directory',
  EISDIR: 'it is a directory',
  EMFILE: 'too many files are open',
};
