import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { DelegateGitError } from '@delegate-git/core';
import { shownText } from '@delegate-git/core/shown-path';
import { type ScriptedReply, startReplayWorker } from '@delegate-git/delegate';
import { type CommandModule, type Io, parseCommandArgs, usageError } from '../command.js';

const help = `
Usage: delegate-git worker replay <recording.json> [--port <n>] [--host <addr>] [--loop]

Serves a RECORDED conversation as an OpenAI-compatible worker (POST /v1/chat/completions, streaming or not,
GET /v1/models), so a delegation pipeline can be replayed exactly in CI, with no model. Replies are given in
order; when the recording is used up the server answers 500 (or starts over with --loop). It prints the URL
to use as worker.endpoint and runs until interrupted.

A recording: {"recording": "<what it is>", "model": "<id>", "replies": [{"content": "<reply text>",
"reasoning"?, "finishReason"?: "stop" | "length", "usage"?, "status"?, "delayMs"?, "model"?}]}

To use a real local model instead, point worker.endpoint at it:
  LM Studio  http://127.0.0.1:1234/v1     Ollama     http://127.0.0.1:11434/v1
  vLLM       http://127.0.0.1:8000/v1     llama.cpp  http://127.0.0.1:8080/v1

Example:
  delegate-git worker replay demo/recording.json --port 18080 &
  delegate-git config set worker.endpoint http://127.0.0.1:18080/v1
`;

export default {
  summary: 'serve a recorded conversation as an OpenAI-compatible worker',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values, positionals } = parseCommandArgs('worker', argv, {
      port: { type: 'string' },
      host: { type: 'string' },
      loop: { type: 'boolean' },
    });
    const [sub, file, ...extra] = positionals;
    if (sub !== 'replay' || !file || extra.length > 0)
      throw usageError('worker', 'Use: delegate-git worker replay <recording.json>.');
    const port = values.port === undefined ? 0 : Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw usageError('worker', `--port must be 0-65535 (got ${values.port}).`);
    const recording = await readRecording(path.resolve(io.cwd, file));
    const server = await startReplayWorker(recording.replies, {
      port,
      host: values.host,
      loop: values.loop,
      model: recording.model,
    });
    io.out(
      `replay worker (a RECORDING, not a model: ${shownText(recording.recording ?? file)}) listening on ${server.url}\n`,
    );
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await server.close();
    return 0;
  },
} satisfies CommandModule;

async function readRecording(
  file: string,
): Promise<{ recording?: string; model?: string; replies: ScriptedReply[] }> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new DelegateGitError('USAGE', `Cannot read the recording ${file}: ${(error as Error).message}.`);
  }
  const r = value as { recording?: unknown; model?: unknown; replies?: unknown };
  if (
    typeof r !== 'object' ||
    r === null ||
    !Array.isArray(r.replies) ||
    r.replies.some((x) => typeof x !== 'object' || x === null)
  ) {
    throw new DelegateGitError(
      'USAGE',
      `${file} is not a recording: expected {"replies": [{"content": "..."}, ...]}.`,
    );
  }
  return {
    recording: typeof r.recording === 'string' ? r.recording : undefined,
    model: typeof r.model === 'string' ? r.model : undefined,
    replies: r.replies as ScriptedReply[],
  };
}
