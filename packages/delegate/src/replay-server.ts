/**
 * A replaying worker: a real OpenAI-compatible chat server that answers with recorded replies, in order. It speaks
 * the wire formats local model servers do (SSE chunks with optional `reasoning_content` deltas and a usage chunk,
 * or a plain JSON completion), so a delegation pipeline can be replayed byte for byte in CI, and the tests drive
 * the real worker client over real HTTP. `delegate-git worker replay <recording.json>` serves it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedReply {
  content?: string;
  /** Sent as `reasoning_content` deltas before the content (streaming) or as `message.reasoning_content`. */
  reasoning?: string;
  finishReason?: 'stop' | 'length';
  /** Omitted: derived from the content and sent when asked for. `null`: the server never reports usage. */
  usage?: { prompt_tokens: number; completion_tokens: number } | null;
  /** An HTTP error status (>= 400) answered with `errorBody`. */
  status?: number;
  errorBody?: unknown;
  /** Wait this long before answering (drives client timeouts). */
  delayMs?: number;
  /** The model the reply names (default: the one the request named): a server may claim any. */
  model?: string;
  /** Characters per streamed content chunk (default 4). */
  chunkSize?: number;
  /** Answer with a plain JSON completion even when the request asked to stream (a server without SSE). */
  json?: boolean;
}

export interface ChatRequestBody {
  model?: string;
  messages?: Array<{ role: string; content: string }>;
  stream?: boolean;
  [field: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  /** The parsed JSON body (`{raw}` when it was not a JSON object). */
  body: ChatRequestBody;
  headers: Record<string, string | string[] | undefined>;
}

export interface ReplayWorker {
  /** Base URL, e.g. `http://127.0.0.1:45678/v1`. */
  url: string;
  /** Chat-completion requests received, in order. */
  requests: RecordedRequest[];
  requestCount(): number;
  enqueue(...replies: ScriptedReply[]): void;
  close(): Promise<void>;
}

const REPLAY_MODEL_ID = 'replay-worker';

const EMPTY_QUEUE_ERROR = {
  error: { message: 'replay worker: the recording has no reply left', type: 'server_error', code: null },
};

export interface ReplayOptions {
  host?: string;
  port?: number;
  /** Start over from the first reply when the recording is used up. */
  loop?: boolean;
  /** Model id reported by GET /models and in replies when the request names none. */
  model?: string;
}

export async function startReplayWorker(
  replies: ScriptedReply[] = [],
  opts: ReplayOptions = {},
): Promise<ReplayWorker> {
  const queue: ScriptedReply[] = [...replies];
  const modelId = opts.model ?? REPLAY_MODEL_ID;
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let completionCounter = 0;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void handle(req, res, Buffer.concat(chunks).toString('utf8')).catch(() => {
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, rawBody: string): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method === 'GET' && path.endsWith('/models')) {
      sendJson(res, 200, {
        object: 'list',
        data: [{ id: modelId, object: 'model', created: 0, owned_by: 'delegate-git-replay' }],
      });
      return;
    }
    if (req.method !== 'POST' || !path.endsWith('/chat/completions')) {
      sendJson(res, 404, {
        error: { message: `no route ${req.method} ${path}`, type: 'invalid_request_error' },
      });
      return;
    }
    let body: ChatRequestBody;
    try {
      const parsed: unknown = JSON.parse(rawBody);
      body = typeof parsed === 'object' && parsed !== null ? (parsed as ChatRequestBody) : { raw: parsed };
    } catch {
      body = { raw: rawBody };
    }
    requests.push({ method: req.method, path, body, headers: { ...req.headers } });

    const reply = queue.shift();
    if (reply && opts.loop) queue.push(reply);
    if (!reply) {
      sendJson(res, 500, EMPTY_QUEUE_ERROR);
      return;
    }
    if (reply.delayMs) await sleep(reply.delayMs);
    if (res.destroyed) return;
    if (reply.status && reply.status >= 400) {
      sendJson(
        res,
        reply.status,
        reply.errorBody ?? { error: { message: `scripted HTTP ${reply.status}`, type: 'server_error' } },
      );
      return;
    }

    const request = (typeof body === 'object' && body !== null ? body : {}) as {
      model?: string;
      stream?: boolean;
      stream_options?: { include_usage?: boolean };
    };
    const id = `chatcmpl-replay-${++completionCounter}`;
    const model = reply.model ?? request.model ?? modelId;
    const content = reply.content ?? '';
    const finishReason = reply.finishReason ?? 'stop';
    const chunkSize = Math.max(1, reply.chunkSize ?? 4);
    const contentChunks = splitEvery(content, chunkSize);
    const reasoningChunks = splitEvery(reply.reasoning ?? '', chunkSize);
    const usage =
      reply.usage === null
        ? null
        : (reply.usage ?? {
            prompt_tokens: 17,
            completion_tokens: contentChunks.length + reasoningChunks.length,
          });

    if (!request.stream || reply.json) {
      const message: Record<string, unknown> = { role: 'assistant', content };
      if (reply.reasoning) message.reasoning_content = reply.reasoning;
      const completion: Record<string, unknown> = {
        id,
        object: 'chat.completion',
        created: 0,
        model,
        choices: [{ index: 0, message, finish_reason: finishReason }],
      };
      if (usage) {
        completion.usage = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
      }
      sendJson(res, 200, completion);
      return;
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (payload: unknown) => {
      if (!res.destroyed) res.write(`data: ${JSON.stringify(payload)}\n\n`);
    };
    const chunk = (delta: Record<string, unknown>, finish: string | null) => ({
      id,
      object: 'chat.completion.chunk',
      created: 0,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    send(chunk({ role: 'assistant', content: '' }, null));
    for (const piece of reasoningChunks) send(chunk({ reasoning_content: piece }, null));
    for (const piece of contentChunks) send(chunk({ content: piece }, null));
    send(chunk({}, finishReason));
    const wantsUsage = request.stream_options?.include_usage === true || reply.usage !== undefined;
    if (usage && wantsUsage) {
      send({
        id,
        object: 'chat.completion.chunk',
        created: 0,
        model,
        choices: [],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      });
    }
    if (!res.destroyed) res.end('data: [DONE]\n\n');
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://${opts.host ?? '127.0.0.1'}:${port}/v1`,
    requests,
    requestCount: () => requests.length,
    enqueue: (...more) => {
      queue.push(...more);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function sendJson(res: http.ServerResponse, status: number, payload: unknown): void {
  if (res.destroyed) return;
  const text = JSON.stringify(payload);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function splitEvery(text: string, size: number): string[] {
  const parts: string[] = [];
  for (let i = 0; i < text.length; i += size) parts.push(text.slice(i, i + size));
  return parts;
}
