/**
 * The worker's reply assembled from what the server sent, streamed chunks or one JSON completion, and checked before
 * any of it is taken as an answer: servers differ in how they say they are done, report usage and errors, and where
 * they put the text, and a reply that may stop anywhere must never be parsed as complete.
 */
import { monotonicMs } from './clock.js';
import { stripThinking } from './thinking.js';
import { asRecord, extractServerMessage, oneLine } from './worker-advice.js';
import { WorkerError, type WorkerProgress, type WorkerReply, type WorkerRequest } from './worker-exchange.js';
import { MAX_REPLY_CHARS, type StreamEvent, tooLarge } from './worker-http.js';

/**
 * The finish reasons of a reply that ended because the model was done. `length` is a truncation (reported as such);
 * any other (`content_filter`, vLLM's `abort`, `tool_calls`, an empty string) or none at all means the text may stop
 * anywhere, so it is never parsed as a complete answer.
 */
const FINISHED = new Set(['stop', 'eos', 'eos_token', 'stop_sequence', 'end_turn']);

/** Accumulates either stream chunks or one JSON completion into a WorkerReply. */
export class ReplyCollector {
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
      // What to do differs: a reasoning model can think through its whole budget; an empty reply is the server's.
      const next =
        reasoning > 0
          ? " A reasoning model may have spent its answer thinking: raise worker.maxTokens (and the server's own limit), or use a model that answers after it reasons, then run the unit again."
          : ' Check that the server has the model loaded and answers a chat request (worker.endpoint, worker.model), then run the unit again.';
      throw new WorkerError(
        'protocol',
        `The reply from the worker at ${endpointHost} holds no answer${reasoning > 0 ? ` (only ${reasoning} characters of reasoning)` : ''}.${this.unreadText() || next}`,
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

const DONE = Symbol('done');

export function parseJson(text: string, endpointHost: string): unknown {
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
