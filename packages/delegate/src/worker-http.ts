/**
 * The HTTP under the worker client: one POST, and its body read as bytes (decoded, torn down on abort, watched for
 * silence), as text or as server-sent events, each bounded in size. What the events mean is reply-collector.ts's.
 *
 * The request goes through node:http (node:https only for an https endpoint), not the global fetch: loading
 * undici costs a delegation about 50 ms, and its pooled connection kept the process alive for up to 150 ms after
 * the reply (measured by bench/delegate.mjs; DESIGN 6 allows 100 ms of overhead in all).
 */
import http, { type IncomingMessage } from 'node:http';
import { pipeline } from 'node:stream';
import { WorkerError } from './worker-exchange.js';

/**
 * A reply (or one event of its stream) larger than this is refused: code for one unit is a few hundred kilobytes at
 * most, and a server that streams without end would otherwise take the process's memory.
 */
export const MAX_REPLY_CHARS = 32 * 1024 * 1024;

/**
 * One POST; resolves with the response once its headers arrived. A fresh connection (`agent: false`, so
 * `Connection: close`): nothing pooled outlives the exchange or holds the process open after it.
 */
export async function post(
  url: URL,
  headers: Record<string, string>,
  body: Buffer,
  signal: AbortSignal,
  onSent?: () => void,
): Promise<IncomingMessage> {
  return exchange('POST', url, { ...headers, 'content-length': String(body.length) }, body, signal, onSent);
}

/** One GET, as `post` sends its request. */
export async function get(
  url: URL,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  return exchange('GET', url, headers, null, signal);
}

async function exchange(
  method: 'GET' | 'POST',
  url: URL,
  headers: Record<string, string>,
  body: Buffer | null,
  signal: AbortSignal,
  onSent?: () => void,
): Promise<IncomingMessage> {
  const transport = url.protocol === 'https:' ? await import('node:https') : http;
  return new Promise((resolve, reject) => {
    const request = transport.request(url, { method, headers, signal, agent: false }, resolve);
    // Later socket errors reach the response stream too; this listener only has to exist.
    request.on('error', reject);
    if (onSent) request.once('finish', onSent);
    request.end(body ?? undefined);
  });
}

/**
 * The response's body as a stream of bytes, decoded when the server compressed it anyway (as fetch would), and
 * torn down when `signal` aborts while it is read: a stalled stream must end at the deadline.
 */
export async function* responseBody(response: IncomingMessage, signal: AbortSignal): AsyncIterable<Buffer> {
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
export class SilenceWatch {
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
export async function readText(
  chunks: AsyncIterable<Buffer>,
  limit = Number.POSITIVE_INFINITY,
): Promise<string> {
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
export interface StreamEvent {
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
export async function readEventStream(
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

export function tooLarge(endpointHost: string): WorkerError {
  return new WorkerError(
    'protocol',
    `The reply from the worker at ${endpointHost} is larger than ${MAX_REPLY_CHARS / 1024 / 1024} MB; nothing of it was used.`,
  );
}
