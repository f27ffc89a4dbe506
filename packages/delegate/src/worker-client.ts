/**
 * The worker client: one OpenAI-compatible chat completion against the operator's local endpoint. It streams (so
 * progress is visible and a stalled generation can be timed out), falls back to a JSON body when the server does
 * not speak SSE, strips reasoning, and never retries: a long generation silently repeated would double the cost
 * and hide the failure.
 *
 * The request goes through node:http (node:https only for an https endpoint), not the global fetch: loading
 * undici costs a delegation about 50 ms, and its pooled connection kept the process alive for up to 150 ms after
 * the reply (measured by bench/delegate.mjs; DESIGN 6 allows 100 ms of overhead in all).
 */
import http, { type IncomingMessage } from 'node:http';
import { pipeline } from 'node:stream';
import { monotonicMs } from './clock.js';

export interface WorkerMessage {
  role: 'system' | 'user';
  content: string;
}

export interface WorkerProgress {
  completionTokens: number;
  elapsedMs: number;
  tokensPerSecond: number;
}

export interface WorkerRequest {
  /** Base URL (`http://127.0.0.1:1234/v1`) or a full `.../chat/completions` URL. */
  endpoint: string;
  model: string;
  apiKey?: string;
  /** Deadline for the whole exchange, streaming included. */
  timeoutMs: number;
  messages: WorkerMessage[];
  maxTokens?: number;
  temperature?: number;
  onProgress?: (progress: WorkerProgress) => void;
  /** Called once the request has been handed to the connection: the model's time starts, the caller's may be used. */
  onSent?: () => void;
}

export interface WorkerReply {
  /** The answer with reasoning removed (`reasoning_content`/`reasoning` deltas dropped, `<think>…</think>` cut). */
  content: string;
  finishReason: string | null;
  /** The server stopped at the token limit (`finish_reason: 'length'`): the emission is incomplete. */
  truncated: boolean;
  /** `counted: true` means the server reported no usage and these numbers are our estimate. */
  usage: { prompt: number; completion: number; counted: boolean };
  durationMs: number;
  model: string;
  endpointHost: string;
}

export type WorkerErrorKind = 'unreachable' | 'timeout' | 'http' | 'protocol';

export class WorkerError extends Error {
  override readonly name = 'WorkerError';
  constructor(
    readonly kind: WorkerErrorKind,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export const DEFAULT_WORKER_TEMPERATURE = 0.2;
export const DEFAULT_WORKER_MAX_TOKENS = 2048;

/** An error body is read up to this many bytes: enough for any server's message, bounded against a stream. */
const MAX_ERROR_BODY_BYTES = 16_000;

/** `http://host:port/v1` → `http://host:port/v1/chat/completions`; a full completions URL is kept. */
export function resolveCompletionsUrl(endpoint: string): URL {
  let url: URL;
  try {
    url = new URL(endpoint.trim());
  } catch {
    throw new WorkerError(
      'unreachable',
      `The worker endpoint "${endpoint}" is not a valid URL. Set the endpoint in the operator settings to a base URL such as http://127.0.0.1:1234/v1.`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new WorkerError(
      'unreachable',
      `The worker endpoint "${endpoint}" must use http or https. Set it to a base URL such as http://127.0.0.1:1234/v1.`,
    );
  }
  if (!/\/chat\/completions\/?$/.test(url.pathname)) {
    url.pathname = `${url.pathname.replace(/\/+$/, '')}/chat/completions`;
  }
  return url;
}

export async function callWorker(req: WorkerRequest, signal?: AbortSignal): Promise<WorkerReply> {
  const url = resolveCompletionsUrl(req.endpoint);
  const endpointHost = url.host;
  const started = monotonicMs();
  const deadline = AbortSignal.timeout(req.timeoutMs);
  const combined = signal ? AbortSignal.any([signal, deadline]) : deadline;

  // The caller's own abort is passed through as its reason; only our deadline becomes a 'timeout'.
  const translate = (error: unknown, during: string): unknown => {
    if (signal?.aborted) return signal.reason;
    if (deadline.aborted) {
      return new WorkerError(
        'timeout',
        `The worker at ${endpointHost} did not finish within ${req.timeoutMs} ms (${during}). Raise the worker timeout in the operator settings, or give the unit a smaller task.`,
        undefined,
        { cause: error },
      );
    }
    return error;
  };

  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'text/event-stream, application/json',
    // Compression would hold streamed chunks back; a server that compresses anyway is still decoded below.
    'accept-encoding': 'identity',
  };
  if (req.apiKey) headers.authorization = `Bearer ${req.apiKey}`;
  const body = {
    model: req.model,
    messages: req.messages,
    temperature: req.temperature ?? DEFAULT_WORKER_TEMPERATURE,
    max_tokens: req.maxTokens ?? DEFAULT_WORKER_MAX_TOKENS,
    stream: true,
    stream_options: { include_usage: true },
  };

  let response: IncomingMessage;
  try {
    response = await post(url, headers, Buffer.from(JSON.stringify(body), 'utf8'), combined, req.onSent);
  } catch (error) {
    const translated = translate(error, 'waiting for the response');
    if (translated !== error) throw translated;
    throw new WorkerError(
      'unreachable',
      `Could not reach the worker at ${endpointHost}: ${describeNetworkError(error)}. Check that the local model server is running and the endpoint in the operator settings is right.`,
      undefined,
      { cause: error },
    );
  }

  const status = response.statusCode ?? 0;
  if (status < 200 || status > 299) {
    const text = await readText(responseBody(response, combined), MAX_ERROR_BODY_BYTES).catch(() => '');
    const serverMessage =
      extractServerMessage(text) ??
      (response.headers.location ? `redirected to ${oneLine(response.headers.location)}` : null);
    throw new WorkerError(
      'http',
      `The worker at ${endpointHost} answered HTTP ${status}${serverMessage ? `: ${serverMessage}` : ''}. Check the model name and the server's log.`,
      status,
    );
  }

  const collector = new ReplyCollector(started, req.onProgress);
  const contentType = response.headers['content-type'] ?? '';
  try {
    const chunks = responseBody(response, combined);
    if (contentType.includes('text/event-stream')) {
      await readEventStream(chunks, (data) => collector.acceptChunk(parseJson(data, endpointHost)));
    } else {
      collector.acceptCompletion(parseJson(await readText(chunks), endpointHost));
    }
  } catch (error) {
    const translated = translate(error, 'while the reply was streaming');
    if (translated !== error || error instanceof WorkerError) throw translated;
    throw new WorkerError(
      'protocol',
      `The reply from the worker at ${endpointHost} broke off: ${describeNetworkError(error)}.`,
      undefined,
      { cause: error },
    );
  }

  return collector.finish({ req, endpointHost });
}

/** Accumulates either stream chunks or one JSON completion into a WorkerReply. */
class ReplyCollector {
  private content = '';
  private reasoningChars = 0;
  private tokenChunks = 0;
  private finishReason: string | null = null;
  private serverUsage: { prompt: number; completion: number } | null = null;
  private model: string | null = null;
  private sawDone = false;
  private sawAnything = false;

  constructor(
    private readonly started: number,
    private readonly onProgress?: (progress: WorkerProgress) => void,
  ) {}

  acceptChunk(chunk: unknown): void {
    if (chunk === DONE) {
      this.sawDone = true;
      return;
    }
    const record = asRecord(chunk);
    this.rejectInlineError(record);
    this.sawAnything = true;
    if (typeof record.model === 'string') this.model = record.model;
    this.acceptUsage(record.usage);
    const choices = Array.isArray(record.choices) ? record.choices : [];
    const choice = asRecord(choices[0]);
    const delta = asRecord(choice.delta);
    const piece = typeof delta.content === 'string' ? delta.content : '';
    const reasoning = reasoningText(delta);
    if (piece) this.content += piece;
    if (reasoning) this.reasoningChars += reasoning.length;
    if (piece || reasoning) {
      // Servers emit about one token per chunk; the count is only used when no usage arrives.
      this.tokenChunks += 1;
      this.reportProgress();
    }
    if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
  }

  acceptCompletion(completion: unknown): void {
    const record = asRecord(completion);
    this.rejectInlineError(record);
    const choices = Array.isArray(record.choices) ? record.choices : [];
    if (choices.length === 0) {
      throw new WorkerError(
        'protocol',
        'The worker answered without any choices; is this an OpenAI-compatible endpoint?',
      );
    }
    this.sawAnything = true;
    this.sawDone = true;
    if (typeof record.model === 'string') this.model = record.model;
    this.acceptUsage(record.usage);
    const choice = asRecord(choices[0]);
    const message = asRecord(choice.message);
    this.content = typeof message.content === 'string' ? message.content : '';
    this.reasoningChars = reasoningText(message).length;
    if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
  }

  finish({ req, endpointHost }: { req: WorkerRequest; endpointHost: string }): WorkerReply {
    if (!this.sawAnything || (!this.sawDone && this.finishReason === null)) {
      throw new WorkerError(
        'protocol',
        `The stream from the worker at ${endpointHost} ended before the reply was finished (no finish_reason, no [DONE]).`,
      );
    }
    const durationMs = Math.round(monotonicMs() - this.started);
    const usage = this.serverUsage
      ? { ...this.serverUsage, counted: false }
      : {
          prompt: estimateTokens(req.messages.reduce((sum, m) => sum + m.content.length, 0)),
          completion:
            this.tokenChunks > 0
              ? this.tokenChunks
              : estimateTokens(this.content.length + this.reasoningChars),
          counted: true,
        };
    return {
      content: stripThinking(this.content),
      finishReason: this.finishReason,
      truncated: this.finishReason === 'length',
      usage,
      durationMs,
      model: this.model ?? req.model,
      endpointHost,
    };
  }

  private acceptUsage(usage: unknown): void {
    const record = asRecord(usage);
    if (typeof record.prompt_tokens === 'number' || typeof record.completion_tokens === 'number') {
      this.serverUsage = {
        prompt: typeof record.prompt_tokens === 'number' ? record.prompt_tokens : 0,
        completion: typeof record.completion_tokens === 'number' ? record.completion_tokens : 0,
      };
    }
  }

  private rejectInlineError(record: Record<string, unknown>): void {
    if (record.error !== undefined && record.error !== null) {
      const message = extractServerMessage(JSON.stringify(record)) ?? 'unknown error';
      throw new WorkerError('protocol', `The worker reported an error mid-reply: ${message}`);
    }
  }

  private reportProgress(): void {
    if (!this.onProgress) return;
    const elapsedMs = monotonicMs() - this.started;
    this.onProgress({
      completionTokens: this.tokenChunks,
      elapsedMs,
      tokensPerSecond: elapsedMs > 0 ? this.tokenChunks / (elapsedMs / 1000) : 0,
    });
  }
}

/** Removes `<think>…</think>` blocks; an unclosed `<think>` swallows the rest; a lone leading `</think>` (the
 * opening tag lived in the chat template) drops everything before it. */
export function stripThinking(text: string): string {
  let result = text.replace(/<think>[\s\S]*?<\/think>/g, '');
  const open = result.indexOf('<think>');
  if (open !== -1) result = result.slice(0, open);
  const close = result.indexOf('</think>');
  if (close !== -1) result = result.slice(close + '</think>'.length);
  return result.replace(/^\s*\n/, '');
}

const DONE = Symbol('done');

function parseJson(text: string, endpointHost: string): unknown {
  if (text.trim() === '[DONE]') return DONE;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new WorkerError(
      'protocol',
      `The worker at ${endpointHost} sent something that is not JSON: ${JSON.stringify(text.slice(0, 120))}`,
      undefined,
      { cause: error },
    );
  }
}

/**
 * One POST; resolves with the response once its headers arrived. A fresh connection (`agent: false`, so
 * `Connection: close`): nothing pooled outlives the exchange or holds the process open after it.
 */
async function post(
  url: URL,
  headers: Record<string, string>,
  body: Buffer,
  signal: AbortSignal,
  onSent?: () => void,
): Promise<IncomingMessage> {
  const transport = url.protocol === 'https:' ? await import('node:https') : http;
  return new Promise((resolve, reject) => {
    const request = transport.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(body.length) },
        signal,
        agent: false,
      },
      resolve,
    );
    // Later socket errors reach the response stream too; this listener only has to exist.
    request.on('error', reject);
    if (onSent) request.once('finish', onSent);
    request.end(body);
  });
}

/**
 * The response's body as a stream of bytes, decoded when the server compressed it anyway (as fetch would), and
 * torn down when `signal` aborts while it is read: a stalled stream must end at the deadline.
 */
async function* responseBody(response: IncomingMessage, signal: AbortSignal): AsyncIterable<Buffer> {
  const encoding = (response.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  let source: NodeJS.ReadableStream = response;
  if (encoding !== 'identity' && encoding !== '') {
    const zlib = await import('node:zlib');
    const decoder =
      encoding === 'gzip' || encoding === 'x-gzip'
        ? zlib.createGunzip()
        : encoding === 'deflate'
          ? zlib.createInflate()
          : encoding === 'br'
            ? zlib.createBrotliDecompress()
            : null;
    if (!decoder) {
      response.destroy();
      throw new WorkerError('protocol', `The worker sent its reply in an unknown encoding "${encoding}".`);
    }
    source = pipeline(response, decoder, () => {});
  }
  const abort = () => response.destroy(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
  if (signal.aborted) abort();
  signal.addEventListener('abort', abort, { once: true });
  try {
    for await (const chunk of source) yield chunk as Buffer;
  } finally {
    signal.removeEventListener('abort', abort);
    response.destroy();
  }
}

/** The whole body as text (UTF-8, a BOM dropped, as fetch's text() does), at most `limit` bytes of it. */
async function readText(chunks: AsyncIterable<Buffer>, limit = Number.POSITIVE_INFINITY): Promise<string> {
  const parts: Buffer[] = [];
  let length = 0;
  for await (const chunk of chunks) {
    parts.push(chunk);
    length += chunk.length;
    if (length >= limit) break;
  }
  const bytes = Buffer.concat(parts);
  return new TextDecoder().decode(length > limit ? bytes.subarray(0, limit) : bytes);
}

/** Minimal SSE reader: `data:` lines accumulate, a blank line dispatches the event. */
async function readEventStream(chunks: AsyncIterable<Buffer>, onData: (data: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  const dispatch = () => {
    if (data.length > 0) onData(data.join('\n'));
    data = [];
  };
  const consumeLines = (final: boolean) => {
    let newline = buffer.indexOf('\n');
    while (newline !== -1) {
      const line = buffer.slice(0, newline).replace(/\r$/, '');
      buffer = buffer.slice(newline + 1);
      if (line === '') dispatch();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      newline = buffer.indexOf('\n');
    }
    if (final) {
      if (buffer.startsWith('data:')) data.push(buffer.slice(5).replace(/^ /, ''));
      buffer = '';
      dispatch();
    }
  };
  for await (const bytes of chunks) {
    buffer += decoder.decode(bytes, { stream: true });
    consumeLines(false);
  }
  buffer += decoder.decode();
  consumeLines(true);
}

/** The human message an OpenAI-style error body carries (`{error:{message}}`, `{error:"…"}`, `{message}`). */
function extractServerMessage(text: string): string | null {
  if (!text.trim()) return null;
  try {
    const parsed = asRecord(JSON.parse(text));
    const error = parsed.error;
    if (typeof error === 'string') return oneLine(error);
    const nested = asRecord(error);
    if (typeof nested.message === 'string') return oneLine(nested.message);
    if (typeof parsed.message === 'string') return oneLine(parsed.message);
    if (typeof parsed.detail === 'string') return oneLine(parsed.detail);
    return null;
  } catch {
    return oneLine(text);
  }
}

function oneLine(text: string): string {
  const collapsed = text.replace(/\s+/g, ' ').trim();
  return collapsed.length > 300 ? `${collapsed.slice(0, 300)}…` : collapsed;
}

/** `ECONNREFUSED (connect ECONNREFUSED 127.0.0.1:1234)`: the system's code first, from the error or its cause. */
function describeNetworkError(error: unknown): string {
  const withCode = [error, error instanceof Error ? error.cause : undefined].find(
    (candidate): candidate is { code: string; message?: string } =>
      typeof (candidate as { code?: unknown } | undefined)?.code === 'string',
  );
  if (withCode) return `${withCode.code}${withCode.message ? ` (${withCode.message})` : ''}`;
  if (error instanceof Error) return error.message;
  return String(error);
}

function reasoningText(record: Record<string, unknown>): string {
  if (typeof record.reasoning_content === 'string') return record.reasoning_content;
  if (typeof record.reasoning === 'string') return record.reasoning;
  return '';
}

function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}
