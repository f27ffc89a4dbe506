/**
 * What an exchange with the worker is, apart from how it is carried out: the request, the reply, the progress
 * reported while it streams, and the WorkerError every failure becomes. A module of its own so that the client
 * (worker-client.ts, which exports all of it) and the modules it reads the reply with share these without importing
 * one another.
 */

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
