/**
 * The worker client: one OpenAI-compatible chat completion against the operator's local endpoint. It streams (so
 * progress is visible and a stalled generation can be timed out), falls back to a JSON body when the server does
 * not speak SSE, strips reasoning, and never retries a generation: a long generation silently repeated would double
 * the cost and hide the failure (a request refused for its stream_options, before anything was generated, is sent
 * once more without them).
 *
 * The request goes through node:http (node:https only for an https endpoint), not the global fetch: loading
 * undici costs a delegation about 50 ms, and its pooled connection kept the process alive for up to 150 ms after
 * the reply (measured by bench/delegate.mjs; DESIGN 6 allows 100 ms of overhead in all).
 */
import http, { type IncomingMessage } from 'node:http';
import { pipeline } from 'node:stream';
import { monotonicMs } from './clock.js';
import { linesInBlocks, parseEmission } from './emission.js';
import {
  asRecord,
  describeNetworkError,
  extractServerMessage,
  httpAdvice,
  oneLine,
  unreachableAdvice,
} from './worker-advice.js';

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
  /**
   * Once the reply has begun, the longest silence allowed between two pieces of it: a server that stalls mid-reply
   * ends here, not at the deadline. Unset: only the deadline. Before the first byte (the prompt being read) there is
   * no such limit.
   */
  idleTimeoutMs?: number;
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
  /**
   * `estimated: true` means the server reported no usage (or numbers that are not token counts, which are dropped) and
   * these numbers are our estimate.
   */
  usage: { prompt: number; completion: number; estimated: boolean };
  /** Our estimate of the prompt's tokens as sent, whatever the server counted. */
  promptSent: number;
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

const DEFAULT_WORKER_TEMPERATURE = 0.2;
const DEFAULT_WORKER_MAX_TOKENS = 2048;

/** An error body is read up to this many bytes: enough for any server's message, bounded against a stream. */
const MAX_ERROR_BODY_BYTES = 16_000;

/**
 * A reply (or one event of its stream) larger than this is refused: code for one unit is a few hundred kilobytes at
 * most, and a server that streams without end would otherwise take the process's memory.
 */
const MAX_REPLY_CHARS = 32 * 1024 * 1024;

/**
 * The finish reasons of a reply that ended because the model was done. `length` is a truncation (reported as such);
 * any other (`content_filter`, vLLM's `abort`, `tool_calls`, an empty string) or none at all means the text may stop
 * anywhere, so it is never parsed as a complete answer.
 */
const FINISHED = new Set(['stop', 'eos', 'eos_token', 'stop_sequence', 'end_turn']);

/** The silence allowed once the usage followed the model's finish, before the reply is taken as whole. */
const AFTER_FINISH_MS = 2000;

/** What the worker was waiting for when nothing at all came back. */
const WAITING = 'waiting for the response';

function succeeded(response: IncomingMessage): boolean {
  const status = response.statusCode ?? 0;
  return status >= 200 && status <= 299;
}

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

/** One chat completion; every failure, a malformed endpoint included, is a rejection with a WorkerError. */
export async function callWorker(req: WorkerRequest, signal?: AbortSignal): Promise<WorkerReply> {
  return new WorkerCall(req, signal).run();
}

/** One exchange with the worker: the request, the server's refusal if it refuses, and the reply read whole. */
class WorkerCall {
  private readonly url: URL;
  private readonly host: string;
  private readonly started = monotonicMs();
  private readonly deadline: AbortSignal;
  /** The caller's abort or the deadline. */
  private readonly stop: AbortSignal;

  constructor(
    private readonly req: WorkerRequest,
    private readonly signal?: AbortSignal,
  ) {
    this.url = resolveCompletionsUrl(req.endpoint);
    this.host = this.url.host;
    this.deadline = AbortSignal.timeout(req.timeoutMs);
    this.stop = signal ? AbortSignal.any([signal, this.deadline]) : this.deadline;
  }

  async run(): Promise<WorkerReply> {
    const response = await this.answered();
    const collector = new ReplyCollector(this.started, this.req.onProgress);
    await this.read(response, collector);
    return collector.finish({ req: this.req, endpointHost: this.host });
  }

  /**
   * The response to the request, once its status says it answers. A server that does not know stream_options (it
   * only asks for the usage at the end) is asked again without it: refused before it generated anything, so nothing
   * is repeated.
   */
  private async answered(): Promise<IncomingMessage> {
    const { req } = this;
    const body = {
      model: req.model,
      messages: req.messages,
      temperature: req.temperature ?? DEFAULT_WORKER_TEMPERATURE,
      max_tokens: req.maxTokens ?? DEFAULT_WORKER_MAX_TOKENS,
      stream: true,
      stream_options: { include_usage: true },
    };
    const response = await this.send(body);
    if (succeeded(response)) return response;
    const refused = await this.refusal(response);
    if (response.statusCode !== 400 || !refused.message.includes('stream_options')) throw refused;
    const { stream_options: _usage, ...plain } = body;
    const again = await this.send(plain);
    if (succeeded(again)) return again;
    throw await this.refusal(again);
  }

  private async send(payload: object): Promise<IncomingMessage> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'text/event-stream, application/json',
      // Compression would hold streamed chunks back; a server that compresses anyway is still decoded below.
      'accept-encoding': 'identity',
    };
    if (this.req.apiKey) headers.authorization = `Bearer ${this.req.apiKey}`;
    const sent = () => {
      this.req.onSent?.();
      this.req.onProgress?.({
        completionTokens: 0,
        elapsedMs: monotonicMs() - this.started,
        tokensPerSecond: 0,
      });
    };
    try {
      return await post(this.url, headers, Buffer.from(JSON.stringify(payload), 'utf8'), this.stop, sent);
    } catch (error) {
      const translated = this.timeoutOr(error, WAITING);
      if (translated !== error) throw translated;
      throw new WorkerError(
        'unreachable',
        `Could not reach the worker at ${this.host}: ${describeNetworkError(error)}. ${unreachableAdvice(error)}`,
        undefined,
        { cause: error },
      );
    }
  }

  /** An HTTP error status, said with the server's message and what to look at. */
  private async refusal(response: IncomingMessage): Promise<WorkerError> {
    const text = await readText(responseBody(response, this.stop), MAX_ERROR_BODY_BYTES).catch(() => '');
    const status = response.statusCode ?? 0;
    const message = extractServerMessage(text);
    const advice = httpAdvice({
      status,
      url: this.url,
      message,
      location: response.headers.location,
      retryAfter: response.headers['retry-after'],
      now: Date.now(),
    });
    return new WorkerError(
      'http',
      `The worker at ${this.host} answered HTTP ${status}${message ? `: ${message}` : ''}. ${advice}`,
      status,
    );
  }

  /** Reads the reply into `collector`: a stream of events, or one JSON completion. */
  private async read(response: IncomingMessage, collector: ReplyCollector): Promise<void> {
    const contentType = (response.headers['content-type'] ?? '').toLowerCase();
    const silence = new SilenceWatch(this.req.idleTimeoutMs);
    const onEvent = (event: StreamEvent) => {
      const more = collector.acceptEvent(event, this.host);
      // Once the usage followed the model's finish, only [DONE] is still to come, at once: a server that then keeps
      // the stream open has still answered (rt39 f02).
      if (collector.endSaid) silence.windDown(AFTER_FINISH_MS);
      return more;
    };
    try {
      const chunks = silence.watch(responseBody(response, AbortSignal.any([this.stop, silence.signal])));
      if (contentType.includes('text/event-stream')) await readEventStream(chunks, onEvent, this.host);
      else {
        const text = await readText(chunks, MAX_REPLY_CHARS + 1);
        if (text.length > MAX_REPLY_CHARS) throw tooLarge(this.host);
        // Some servers label a stream text/plain or application/json: its first field gives it away.
        if (/^\s*(?:data|event|error|:)/.test(text))
          await readEventStream([Buffer.from(text, 'utf8')], onEvent, this.host);
        else collector.acceptCompletion(parseJson(text, this.host));
      }
    } catch (error) {
      const silent = silence.signal.aborted && !this.stop.aborted;
      // Finished, and the stream left open after it: the reply is whole.
      if (!(silent && collector.endSaid)) throw this.readFailure(error, silent, collector);
    } finally {
      silence.stop();
    }
  }

  private readFailure(error: unknown, silent: boolean, collector: ReplyCollector): unknown {
    if (silent)
      return new WorkerError(
        'timeout',
        `The worker at ${this.host} stopped sending for ${this.req.idleTimeoutMs} ms in the middle of its reply (${collector.tokens} token(s) in): it stalled. Check the model server (its log, memory, GPU), or raise worker.idleTimeoutMs in the operator settings if it pauses that long on purpose.`,
        undefined,
        { cause: error },
      );
    const translated = this.timeoutOr(error, 'while the reply was streaming');
    if (translated !== error || error instanceof WorkerError) return translated;
    return new WorkerError(
      'protocol',
      `The reply from the worker at ${this.host} broke off: ${describeNetworkError(error)}.`,
      undefined,
      { cause: error },
    );
  }

  /** The caller's own abort is passed through as its reason; only our deadline becomes a 'timeout'. */
  private timeoutOr(error: unknown, during: string): unknown {
    if (this.signal?.aborted) return this.signal.reason;
    if (!this.deadline.aborted) return error;
    const { timeoutMs } = this.req;
    return new WorkerError(
      'timeout',
      during === WAITING
        ? `The worker at ${this.host} sent nothing within ${timeoutMs} ms: it took the request and never answered (a model still loading, or a server that is stuck). Check the model server, or raise worker.timeoutMs in the operator settings if it takes that long to start answering.`
        : `The worker at ${this.host} did not finish within ${timeoutMs} ms (${during}). Raise worker.timeoutMs in the operator settings, or give the unit a smaller task.`,
      undefined,
      { cause: error },
    );
  }
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
  /** The usage came after a finish_reason, and no text since (endSaid). */
  private usageAfterFinish = false;
  /** What the reply held that is not read as its answer (noticeUnread). */
  private readonly unread = new Set<string>();
  private read = 'delta.content';

  constructor(
    private readonly started: number,
    private readonly onProgress?: (progress: WorkerProgress) => void,
  ) {}

  /** The pieces of answer or reasoning received so far (about one token each). */
  get tokens(): number {
    return this.tokenChunks;
  }

  /**
   * The model said it was finished and the server sent the usage after it (a chunk of no choices), with no text
   * since: only [DONE] is left to come. A finish_reason alone is not enough: a server may send one with every piece,
   * an empty one included (rt42 f02, rt43 f03).
   */
  get endSaid(): boolean {
    return this.usageAfterFinish;
  }

  /**
   * One server-sent event; false once the stream said it is done (`[DONE]`), so nothing after it is read. An error
   * can come as an `error` event, as llama.cpp's `error:` field, or as an `error` member of a chunk; whatever follows
   * it (llama.cpp still sends `[DONE]`) does not make the reply complete.
   */
  acceptEvent(event: StreamEvent, endpointHost: string): boolean {
    if (event.error !== null || event.type === 'error') {
      const text = event.error ?? event.data ?? '';
      const message = extractServerMessage(text) ?? 'no message';
      throw new WorkerError('protocol', `The worker reported an error mid-reply: ${message}`);
    }
    if (event.data === null) return true;
    let chunk: unknown;
    try {
      chunk = parseJson(event.data, endpointHost);
    } catch (error) {
      if (!event.cut) throw error;
      throw new WorkerError(
        'protocol',
        `The reply from the worker at ${endpointHost} broke off in mid-event.`,
      );
    }
    return this.acceptChunk(chunk, endpointHost);
  }

  acceptChunk(chunk: unknown, endpointHost: string): boolean {
    if (chunk === DONE) {
      this.sawDone = true;
      return false;
    }
    const record = asRecord(chunk);
    this.rejectInlineError(record);
    this.sawAnything = true;
    if (typeof record.model === 'string') this.model = oneLine(record.model);
    this.acceptUsage(record.usage);
    const choice = firstChoice(record.choices);
    const delta = asRecord(choice.delta);
    this.noticeUnread(choice, delta, 'delta.content');
    const piece = textOf(delta.content);
    const reasoning = reasoningText(delta);
    if (piece) this.content += piece;
    if (this.content.length > MAX_REPLY_CHARS) throw tooLarge(endpointHost);
    if (reasoning) this.reasoningChars += reasoning.length;
    if (piece || reasoning) {
      // Servers emit about one token per chunk; the count is only used when no usage arrives.
      this.tokenChunks += 1;
      this.reportProgress();
    }
    if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
    const usageOnly = Array.isArray(record.choices) && record.choices.length === 0;
    this.usageAfterFinish = usageOnly && this.finishReason !== null;
    return true;
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
    if (typeof record.model === 'string') this.model = oneLine(record.model);
    this.acceptUsage(record.usage);
    const choice = firstChoice(choices);
    const message = asRecord(choice.message);
    this.noticeUnread(choice, message, 'message.content');
    this.content = textOf(message.content);
    this.reasoningChars = reasoningText(message).length;
    if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
  }

  finish({ req, endpointHost }: { req: WorkerRequest; endpointHost: string }): WorkerReply {
    const reason = this.finishReason;
    if (!this.sawAnything || reason === null) {
      throw new WorkerError(
        'protocol',
        this.sawAnything
          ? `The reply from the worker at ${endpointHost} ended before the model said it was finished (no finish_reason${this.sawDone ? ', though [DONE] came' : ''}), so it may stop anywhere and was not parsed.${this.unreadText()}`
          : `The reply from the worker at ${endpointHost} held no chunk of an answer at all (an event stream without \`data:\` events${this.sawDone ? ' but [DONE]' : ''}; a JSON body labelled text/event-stream?).`,
      );
    }
    if (reason !== 'length' && !FINISHED.has(reason)) {
      throw new WorkerError(
        'protocol',
        `The worker stopped its reply early (finish_reason ${JSON.stringify(reason)}), so it may stop anywhere and was not parsed.`,
      );
    }
    const content = stripThinking(this.content);
    if (reason !== 'length' && content.trim() === '') {
      const reasoning = this.reasoningChars + (this.content.length - content.length);
      throw new WorkerError(
        'protocol',
        `The reply from the worker at ${endpointHost} holds no answer${reasoning > 0 ? ` (only ${reasoning} characters of reasoning)` : ''}.${this.unreadText()}`,
      );
    }
    const durationMs = Math.round(monotonicMs() - this.started);
    const sent = estimateTokens(req.messages.reduce((sum, m) => sum + m.content.length, 0));
    const usage = this.serverUsage
      ? { ...this.serverUsage, estimated: false }
      : {
          prompt: sent,
          // One chunk a token is the usual stream, but a server may send the whole reply in one: the larger.
          completion: Math.max(this.tokenChunks, estimateTokens(this.content.length + this.reasoningChars)),
          estimated: true,
        };
    return {
      content,
      finishReason: reason,
      truncated: reason === 'length',
      usage,
      promptSent: sent,
      durationMs,
      model: this.model ?? req.model,
      endpointHost,
    };
  }

  /**
   * The server's token counts, when it sends them and they are counts. The numbers are signed into the ledger, whose
   * readers refuse anything that is not I-JSON: 2^53+1, Infinity (`1e400`), -1 or 0.5 taken as sent would give a
   * signed line no gate accepts, or fail signing after the files were written. A usage holding such a number is
   * dropped whole (the reply is then counted by us, as when a server sends none); a later usage replaces an earlier.
   */
  private acceptUsage(usage: unknown): void {
    const record = asRecord(usage);
    const prompt = record.prompt_tokens ?? null;
    const completion = record.completion_tokens ?? null;
    if (prompt === null && completion === null) return;
    if (!isTokenCountOrAbsent(prompt) || !isTokenCountOrAbsent(completion)) {
      this.serverUsage = null;
      return;
    }
    this.serverUsage = { prompt: prompt ?? 0, completion: completion ?? 0 };
  }

  /** What a choice held that is not read as the answer (tool calls, a completions-API `text`), to be named. */
  private noticeUnread(choice: Record<string, unknown>, part: Record<string, unknown>, read: string): void {
    if (Array.isArray(part.tool_calls) && part.tool_calls.length > 0) this.unread.add('tool calls');
    if (typeof choice.text === 'string' && choice.text !== '')
      this.unread.add('a `text` field (the completions API)');
    if (read === 'delta.content' && typeof choice.message === 'object' && choice.message !== null)
      this.unread.add('`message` in place of `delta` in its stream');
    if (
      part.content !== undefined &&
      part.content !== null &&
      typeof part.content !== 'string' &&
      !Array.isArray(part.content)
    )
      this.unread.add(`a ${read} that is no text`);
    this.read = read;
  }

  private unreadText(): string {
    if (this.unread.size === 0) return '';
    return ` It held ${[...this.unread].join(', ')}; delegate-git reads the answer as text from ${this.read}.`;
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

/**
 * Aborts `signal` when `ms` pass with no byte of the reply, counted from its first byte: the total deadline alone
 * lets a server that stalls mid-reply hold the operator for minutes, with a progress line that no longer moves.
 */
class SilenceWatch {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  readonly signal = this.controller.signal;

  constructor(private ms: number | undefined) {}

  async *watch(chunks: AsyncIterable<Buffer>): AsyncIterable<Buffer> {
    for await (const chunk of chunks) {
      this.restart();
      yield chunk;
    }
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  /** From now on, at most `ms` of silence (counted from now). */
  windDown(ms: number): void {
    if (this.ms !== undefined && this.ms <= ms) return;
    this.ms = ms;
    this.restart();
  }

  private restart(): void {
    if (this.ms === undefined) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.controller.abort(), this.ms);
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

/** One server-sent event: its `event:` type, its `data:` lines joined, and llama.cpp's `error:` field. */
interface StreamEvent {
  type: string | null;
  data: string | null;
  error: string | null;
  /** Its last line had no end: the stream closed in the middle of it. */
  cut?: boolean;
}

/**
 * A server-sent events reader: lines end with CRLF, LF or CR; `data:` lines accumulate and a blank line dispatches
 * the event; `event:` names it; `error:` is how llama.cpp reports a failure mid-stream. An event cut off by the end
 * of the stream is dispatched too (the collector then finds the reply unfinished).
 */
async function readEventStream(
  chunks: AsyncIterable<Buffer> | Iterable<Buffer>,
  /** False: the stream is done, and nothing after this event is read. */
  onEvent: (event: StreamEvent) => boolean,
  endpointHost: string,
): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  let scanned = 0; // the buffer before this holds no line end
  let event: StreamEvent = { type: null, data: null, error: null };
  let done = false;
  const dispatch = () => {
    if (event.data !== null || event.error !== null || event.type === 'error') done = !onEvent(event);
    event = { type: null, data: null, error: null };
  };
  const field = (line: string) => {
    const colon = line.indexOf(':');
    if (colon === 0) return; // a comment (`: keep-alive`)
    const name = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (name === 'data') {
      event.data = event.data === null ? value : `${event.data}\n${value}`;
      // An event whose data lines never end (no blank line) grows here, not in the buffer.
      if (event.data.length > MAX_REPLY_CHARS) throw tooLarge(endpointHost);
    } else if (name === 'event') event.type = value;
    else if (name === 'error') event.error = value;
  };
  const consumeLines = (final: boolean) => {
    for (;;) {
      const at = buffer.slice(scanned).search(/[\r\n]/);
      if (at === -1) {
        scanned = buffer.length;
        break;
      }
      const end = scanned + at;
      // A CR at the end of what arrived may be the first half of a CRLF: it is looked at again with the next
      // chunk, so the search resumes at it, not past it (past it, the CR would stay glued to the line).
      if (buffer[end] === '\r' && end === buffer.length - 1 && !final) {
        scanned = end;
        break;
      }
      const next = buffer[end] === '\r' && buffer[end + 1] === '\n' ? end + 2 : end + 1;
      const line = buffer.slice(0, end);
      buffer = buffer.slice(next);
      scanned = 0;
      if (line === '') dispatch();
      else field(line);
      if (done) return;
    }
    if (buffer.length > MAX_REPLY_CHARS) throw tooLarge(endpointHost);
    if (final) {
      if (buffer !== '') {
        field(buffer.replace(/\r$/, ''));
        event.cut = true;
      }
      buffer = '';
      dispatch();
    }
  };
  // The pieces of a line still arriving, none holding a line end: appended to the buffer only once one comes, so a
  // long line costs its length once, not once per chunk (one 16 MB line took 16 s searched whole per chunk; rt49 f03).
  const pieces: string[] = [];
  let piecesLength = 0;
  for await (const bytes of chunks) {
    const text = decoder.decode(bytes, { stream: true });
    if (!/[\r\n]/.test(text) && !buffer.endsWith('\r')) {
      pieces.push(text);
      piecesLength += text.length;
      if (buffer.length + piecesLength > MAX_REPLY_CHARS) throw tooLarge(endpointHost);
      continue;
    }
    buffer += pieces.join('') + text;
    pieces.length = 0;
    piecesLength = 0;
    consumeLines(false);
    if (done) return;
  }
  buffer += pieces.join('') + decoder.decode();
  consumeLines(true);
}

function tooLarge(endpointHost: string): WorkerError {
  return new WorkerError(
    'protocol',
    `The reply from the worker at ${endpointHost} is larger than ${MAX_REPLY_CHARS / 1024 / 1024} MB; nothing of it was used.`,
  );
}

/** The choice with index 0 (a server may interleave several chunks of choices), or the only one if none is numbered. */
function firstChoice(choices: unknown): Record<string, unknown> {
  const list = Array.isArray(choices) ? choices.map(asRecord) : [];
  const numbered = list.some((c) => typeof c.index === 'number');
  return (numbered ? list.find((c) => c.index === 0) : list[0]) ?? {};
}

/** A message's text: a string, or the text parts of an array of content parts (as multimodal messages carry it). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map(asRecord)
    .filter((part) => part.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text as string)
    .join('');
}

function reasoningText(record: Record<string, unknown>): string {
  if (typeof record.reasoning_content === 'string') return record.reasoning_content;
  if (typeof record.reasoning === 'string') return record.reasoning;
  return '';
}

/**
 * Null (the server left the field out) or a number of tokens as a signed record may hold it: a whole, non-negative,
 * exactly representable number.
 */
function isTokenCountOrAbsent(value: unknown): value is number | null {
  return value === null || (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0);
}

function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}
