/**
 * The worker client: one OpenAI-compatible chat completion against the operator's local endpoint. It streams (so
 * progress is visible and a stalled generation can be timed out), falls back to a JSON body when the server does
 * not speak SSE, strips reasoning, and never retries a generation: a long generation silently repeated would double
 * the cost and hide the failure (a request refused for its stream_options, before anything was generated, is sent
 * once more without them).
 *
 * The client's public entry: the exchange's types and its error (worker-exchange.ts) are exported from here. The
 * transport is in worker-http.ts, the reply's assembly in reply-collector.ts, the removal of reasoning in
 * thinking.ts.
 */
import type { IncomingMessage } from 'node:http';
import { monotonicMs } from './clock.js';
import { parseJson, ReplyCollector } from './reply-collector.js';
import {
  describeNetworkError,
  extractServerMessage,
  httpAdvice,
  unreachableAdvice,
} from './worker-advice.js';
import { WorkerError, type WorkerReply, type WorkerRequest } from './worker-exchange.js';
import {
  get,
  MAX_REPLY_CHARS,
  post,
  readEventStream,
  readText,
  responseBody,
  SilenceWatch,
  type StreamEvent,
  tooLarge,
} from './worker-http.js';

export {
  WorkerError,
  type WorkerErrorKind,
  type WorkerMessage,
  type WorkerProgress,
  type WorkerReply,
  type WorkerRequest,
} from './worker-exchange.js';

const DEFAULT_WORKER_TEMPERATURE = 0.2;
const DEFAULT_WORKER_MAX_TOKENS = 2048;

/** An error body is read up to this many bytes: enough for any server's message, bounded against a stream. */
const MAX_ERROR_BODY_BYTES = 16_000;

/** How long a 404's refusal waits for the server's list of models, and how many of them it names. */
const MODELS_WAIT_MS = 3000;
const MODELS_SHOWN = 20;
/** A list with each model's metadata runs past an error body's bound (rt58 f09); a list past this one is not read. */
const MODELS_MAX_BYTES = 1024 * 1024;

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
      // Compression would hold streamed chunks back; a server that compresses anyway is still decoded (responseBody).
      'accept-encoding': 'identity',
      ...this.authorization(),
    };
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

  private authorization(): Record<string, string> {
    return this.req.apiKey ? { authorization: `Bearer ${this.req.apiKey}` } : {};
  }

  /**
   * The model ids the server lists at `<endpoint>/models` (OpenAI's GET /v1/models), or null when it lists none in
   * time: a 404 for a model name the server does not have said nothing of the names it has (ux57 f17).
   */
  private async offeredModels(): Promise<string[] | null> {
    const url = new URL(this.url);
    url.pathname = url.pathname.replace(/\/chat\/completions\/?$/, '/models');
    const signal = AbortSignal.any([this.stop, AbortSignal.timeout(MODELS_WAIT_MS)]);
    try {
      const response = await get(url, { accept: 'application/json', ...this.authorization() }, signal);
      const text = await readText(responseBody(response, signal), MODELS_MAX_BYTES);
      if ((response.statusCode ?? 0) < 200 || (response.statusCode ?? 0) > 299) return null;
      const data = (JSON.parse(text) as { data?: unknown }).data;
      if (!Array.isArray(data)) return null;
      return data
        .map((m) => (m as { id?: unknown })?.id)
        .filter((id): id is string => typeof id === 'string' && id !== '' && id.length <= 200);
    } catch {
      return null;
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
    const models = status === 404 ? await this.offeredModels() : null;
    const offered =
      models && models.length > 0 && !models.includes(this.req.model)
        ? ` The server offers ${models.length === 1 ? 'one model' : `${models.length} models`}: ${models.slice(0, MODELS_SHOWN).join(', ')}${models.length > MODELS_SHOWN ? ', …' : ''}; name one with \`delegate-git config set worker.model <name>\`.`
        : '';
    return new WorkerError(
      'http',
      `The worker at ${this.host} answered HTTP ${status}${message ? `: ${message}` : ''}. ${advice}${offered}`,
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
