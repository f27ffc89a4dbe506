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
    const body = requestBodyOf(rawBody);
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
    const answer = answerOf(reply, body, `chatcmpl-replay-${++completionCounter}`, modelId);
    if (!body.stream || reply.json) {
      sendJson(res, 200, completionOf(answer));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const payload of streamOf(answer, body, reply)) {
      if (res.destroyed) return;
      res.write(`data: ${JSON.stringify(payload)}\n\n`);
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

/** The request's JSON body; `{raw}` when it was not a JSON object. */
function requestBodyOf(rawBody: string): ChatRequestBody {
  try {
    const parsed: unknown = JSON.parse(rawBody);
    return typeof parsed === 'object' && parsed !== null ? (parsed as ChatRequestBody) : { raw: parsed };
  } catch {
    return { raw: rawBody };
  }
}

/** One scripted reply as the server answers it, before it is put on the wire as a completion or a stream. */
interface Answer {
  id: string;
  model: string;
  content: string;
  reasoning: string | undefined;
  finishReason: 'stop' | 'length';
  contentChunks: string[];
  reasoningChunks: string[];
  usage: { prompt_tokens: number; completion_tokens: number } | null;
}

function answerOf(reply: ScriptedReply, request: ChatRequestBody, id: string, modelId: string): Answer {
  const content = reply.content ?? '';
  const chunkSize = Math.max(1, reply.chunkSize ?? 4);
  const contentChunks = splitEvery(content, chunkSize);
  const reasoningChunks = splitEvery(reply.reasoning ?? '', chunkSize);
  return {
    id,
    model: reply.model ?? request.model ?? modelId,
    content,
    reasoning: reply.reasoning,
    finishReason: reply.finishReason ?? 'stop',
    contentChunks,
    reasoningChunks,
    usage:
      reply.usage === null
        ? null
        : (reply.usage ?? {
            prompt_tokens: 17,
            completion_tokens: contentChunks.length + reasoningChunks.length,
          }),
  };
}

function usageOf(usage: NonNullable<Answer['usage']>) {
  return { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
}

/** A plain JSON `chat.completion`, as a server that does not stream answers. */
function completionOf(a: Answer): Record<string, unknown> {
  const message: Record<string, unknown> = { role: 'assistant', content: a.content };
  if (a.reasoning) message.reasoning_content = a.reasoning;
  return {
    id: a.id,
    object: 'chat.completion',
    created: 0,
    model: a.model,
    choices: [{ index: 0, message, finish_reason: a.finishReason }],
    ...(a.usage ? { usage: usageOf(a.usage) } : {}),
  };
}

/**
 * The SSE payloads of a streamed answer: a role chunk, reasoning deltas, content deltas, the finish chunk, and a
 * usage chunk with no choices when the request asked for one (or the recording fixed the usage).
 */
function streamOf(a: Answer, request: ChatRequestBody, reply: ScriptedReply): unknown[] {
  const chunk = (delta: Record<string, unknown>, finish: string | null) => ({
    id: a.id,
    object: 'chat.completion.chunk',
    created: 0,
    model: a.model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const streamOptions = request.stream_options as { include_usage?: boolean } | undefined;
  const wantsUsage = streamOptions?.include_usage === true || reply.usage !== undefined;
  return [
    chunk({ role: 'assistant', content: '' }, null),
    ...a.reasoningChunks.map((piece) => chunk({ reasoning_content: piece }, null)),
    ...a.contentChunks.map((piece) => chunk({ content: piece }, null)),
    chunk({}, a.finishReason),
    ...(a.usage && wantsUsage
      ? [
          {
            id: a.id,
            object: 'chat.completion.chunk',
            created: 0,
            model: a.model,
            choices: [],
            usage: usageOf(a.usage),
          },
        ]
      : []),
  ];
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
