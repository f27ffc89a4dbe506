/**
 * A push as any client may send it: git's receive-pack protocol (version 0) spoken by hand to a local bare repository,
 * with exactly the commands given (a ref named twice, old ids of the pusher's choosing) and a pack of what they bring.
 * `git push` never sends such commands; a pusher's own client can, over ssh or http just the same (rt51 f01, f02).
 */
import { spawnSync } from 'node:child_process';
import { gitOk, type Run, type Story } from './cli-story.js';

const ZERO = /^0+$/;

function pktLine(text: string): Buffer {
  const body = Buffer.from(text);
  return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, '0')), body]);
}

/**
 * Sends `commands` ("<old> <new> <ref>") from the repository `from` to the bare repository `server`. `stdout`: git's
 * report, one "ok <ref>" or "ng <ref> <why>" line per command; `stderr`: what the hooks said.
 */
export function rawPush(story: Story, server: string, from: string, commands: readonly string[]): Run {
  const wants = commands.map((c) => c.split(' ')[1]!).filter((id) => !ZERO.test(id));
  // What the server has and the sender knows: left out of the pack, as git push does.
  const haves = gitOk(story, server, ['for-each-ref', '--format=%(objectname)'])
    .split('\n')
    .filter(
      (id) =>
        id !== '' && spawnSync('git', ['cat-file', '-e', id], { cwd: from, env: story.env }).status === 0,
    );
  const pack =
    wants.length === 0
      ? Buffer.alloc(0)
      : spawnSync('git', ['pack-objects', '--stdout', '--revs'], {
          cwd: from,
          env: story.env,
          input: `${[...wants, ...haves.map((id) => `^${id}`)].join('\n')}\n`,
          maxBuffer: 1 << 28,
        }).stdout;
  const request = Buffer.concat([
    ...commands.map((c, i) => pktLine(i === 0 ? `${c}\0report-status\n` : `${c}\n`)),
    Buffer.from('0000'),
    pack,
  ]);
  const run = spawnSync('git', ['receive-pack', server], {
    env: story.env,
    input: request,
    maxBuffer: 1 << 28,
  });
  const report = [...run.stdout.toString('latin1').matchAll(/[0-9a-f]{4}((?:ok|ng) refs\/[^\n]*)\n/g)].map(
    (m) => m[1],
  );
  return { code: run.status ?? 1, stdout: report.join('\n'), stderr: run.stderr.toString('utf8') };
}
