import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { DelegateGitError } from '@delegate-git/core/errors';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';

const help = `
Usage: delegate-git scan [<file>…] [--json]

Scans files, or standard input when no file is named (or the file is "-"), for credentials with the detectors
\`delegate\` runs before any context leaves the machine and before a failure is recorded: secretlint's recommended
rules (cloud, GitHub, Slack, npm… tokens), private-key headers, passwords in URLs of any scheme
(scheme://user:password@host; placeholders such as $DB_PASSWORD, changeme or **** excepted), and random-looking
tokens of 20 characters or more at 4.5 bits a character or more (hex digests, git object ids, UUIDs and the
integrity digests of lockfiles, HTML and go.sum excepted). Each finding is printed as
<file>:<line>:<column> <rule> <preview>; the preview is the first 4 characters, never the secret.

Exit codes: 0 nothing found, 1 at least one finding, 2 a file could not be read (nothing is scanned then).

Example:
  delegate-git scan src/config.ts .env.example
  git diff --cached | delegate-git scan
  git ls-files -z src | xargs -0 delegate-git scan --json
`;

/** A file larger than this is refused rather than scanned in part (the rules read whole texts). */
const MAX_BYTES = 16 * 1024 * 1024;

interface Source {
  name: string;
  text: string;
}

export default {
  summary: 'scan files or standard input for credentials, as delegate does',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values, positionals } = parseCommandArgs('scan', argv, { json: { type: 'boolean' } });
    if (positionals.length === 0 && process.stdin.isTTY)
      throw usageError('scan', 'Name the files to scan, or pipe text in (standard input is a terminal).');
    const names = positionals.length > 0 ? positionals : ['-'];
    const sources: Source[] = [];
    for (const name of names)
      sources.push({ name, text: name === '-' ? await readStdin() : readText(io.cwd, name) });
    const { scanForCredentials } = await import('@delegate-git/delegate');
    const findings = [];
    for (const { name, text } of sources)
      for (const f of await scanForCredentials(text, { source: name })) findings.push({ source: name, ...f });
    if (values.json) io.out(json({ scanned: sources.length, findings }));
    else {
      for (const f of findings) io.out(`${f.source}:${f.line}:${f.column} ${f.rule} ${f.preview}\n`);
      io.err(`delegate-git scan: ${findings.length} finding(s) in ${sources.length} source(s).\n`);
    }
    return findings.length > 0 ? 1 : 0;
  },
} satisfies CommandModule;

function readText(cwd: string, name: string): string {
  const file = path.resolve(cwd, name);
  try {
    const stat = statSync(file);
    if (stat.isDirectory())
      throw refusal(
        `${name} is a directory. Name files (for a tree: git ls-files -z <dir> | xargs -0 delegate-git scan).`,
      );
    if (stat.size > MAX_BYTES)
      throw refusal(
        `${name} is ${stat.size} bytes, over the ${MAX_BYTES}-byte limit; scan a smaller file or part of it.`,
      );
    return readFileSync(file, 'utf8');
  } catch (error) {
    if (error instanceof DelegateGitError) throw error;
    throw refusal(
      `cannot read ${name} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}).`,
    );
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > MAX_BYTES)
      throw refusal(`standard input is over the ${MAX_BYTES}-byte limit; scan it in parts.`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function refusal(message: string): DelegateGitError {
  return new DelegateGitError('USAGE', `${message} Nothing was scanned.`);
}
