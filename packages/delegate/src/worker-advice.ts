/**
 * What a worker's failure is said as: the server's own message, and what to look at next. Pure: the worker client
 * hands in what it read. Each advice points at the thing most likely wrong for that failure, and never prints a
 * credential the endpoint URL may carry.
 */
import { toWellFormed } from '@delegate-git/core/well-formed';

/**
 * A server's text on one line, bounded, with control characters (terminal escapes among them) made spaces. The
 * model's name goes through here too: it is recorded in the signed, append-only ledger, so a lone surrogate (sent,
 * or made by the cut at 300) becomes U+FFFD; left as it is, it would make the record impossible to sign.
 */
export function oneLine(text: string): string {
  const collapsed = text.replace(/[\u0000-\u001f\u007f-\u009f\s]+/g, ' ').trim();
  return toWellFormed(collapsed.length > 300 ? `${collapsed.slice(0, 300)}…` : collapsed);
}

/**
 * The human message an error body carries: OpenAI-style JSON (`{error:{message}}`, `{error:"…"}`, `{message}`), an
 * HTML page's title (a proxy's error page, not the model server's), or the text itself.
 */
export function extractServerMessage(text: string): string | null {
  if (!text.trim()) return null;
  if (/^\s*<(?:!doctype\s+html|html)\b/i.test(text)) {
    const title = /<title[^>]*>([^<]*)<\/title>/i.exec(text)?.[1];
    return `an HTML page${title?.trim() ? ` ("${oneLine(title)}")` : ''}, not the model server's JSON (a proxy in front of it?)`;
  }
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

/** The endpoint as it may be shown: a user name, password or query (where keys are often put) replaced by `***`. */
export function shownUrl(url: URL): string {
  const shown = new URL(url.href);
  if (shown.username) shown.username = '***';
  if (shown.password) shown.password = '***';
  if (shown.search) shown.search = '?***';
  return shown.href;
}

/** What an HTTP error response is said as, after its status and the server's message. */
export interface HttpFailure {
  status: number;
  url: URL;
  /** The server's message (extractServerMessage), if any. */
  message: string | null;
  location?: string;
  retryAfter?: string;
  /** Now, in ms since the epoch: a Retry-After may be a date. */
  now: number;
}

/** What to look at for an HTTP error status. */
export function httpAdvice({ status, url, message, location, retryAfter, now }: HttpFailure): string {
  const wait = retryAfter === undefined ? null : secondsToWait(retryAfter, now);
  const waitText = wait === null ? '' : ` (it asks to wait ${wait} s)`;
  if (status >= 300 && status <= 399)
    return location
      ? `The endpoint moved: set worker.endpoint to ${movedTo(location, url)} (a redirect is not followed, so the request and its key go only where you set).`
      : 'The endpoint answered with a redirect to nowhere: check worker.endpoint.';
  if (status === 401 || status === 403)
    return 'Check the API key (worker.apiKeyEnv names the environment variable that holds it).';
  if (status === 404) return `Check the endpoint (the request went to ${shownUrl(url)}) and the model name.`;
  if (status === 429) return `The server is busy${waitText}; try again later.`;
  if (status === 503 && (wait !== null || /\bload/i.test(message ?? '')))
    return `The model server is not ready yet (loading the model?)${waitText}; try again then.`;
  if (status >= 500) return "Check the server's log.";
  if (status === 400 || status === 422)
    return "The server refused the request as sent: its message above says what it did not take (the model name, worker.maxTokens, or a field it does not know); check the server's log.";
  return "Check the model name and the server's log.";
}

function movedTo(location: string, url: URL): string {
  try {
    return shownUrl(new URL(location, url));
  } catch {
    return oneLine(location);
  }
}

/** Seconds a Retry-After asks for: a number of seconds, or an HTTP date (counted from `now`). */
function secondsToWait(value: string, now: number): number | null {
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

/** `ECONNREFUSED (connect ECONNREFUSED 127.0.0.1:1234)`: the system's code first, from the error or its cause. */
export function describeNetworkError(error: unknown): string {
  const coded = withCode(error);
  if (coded) return `${coded.code}${coded.message ? ` (${coded.message})` : ''}`;
  if (error instanceof Error) return error.message;
  return String(error);
}

/** TLS's codes for a certificate Node does not trust (or that names another host). */
const UNTRUSTED_CERTIFICATE =
  /^(?:DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(?:_LOCALLY)?|CERT_HAS_EXPIRED|CERT_NOT_YET_VALID|ERR_TLS_CERT_ALTNAME_INVALID)$/;

/** What to look at when the endpoint could not be reached at all. */
export function unreachableAdvice(error: unknown): string {
  const code = withCode(error)?.code ?? '';
  if (UNTRUSTED_CERTIFICATE.test(code))
    return "The server's certificate is not one Node trusts: give Node the certificate of the authority that signed it (NODE_EXTRA_CA_CERTS=<file.pem>), or use the endpoint's http:// address on a local machine.";
  if (code === 'EPROTO' || code === 'ERR_SSL_WRONG_VERSION_NUMBER')
    return 'The endpoint does not speak TLS as its https:// address says (or speaks it where http:// was given): check the scheme and port of worker.endpoint.';
  return 'Check that the local model server is running and the endpoint in the operator settings is right.';
}

function withCode(error: unknown): { code: string; message?: string } | undefined {
  return [error, error instanceof Error ? error.cause : undefined].find(
    (candidate): candidate is { code: string; message?: string } =>
      typeof (candidate as { code?: unknown } | undefined)?.code === 'string',
  );
}

export function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

/**
 * Whether the server counted far fewer prompt tokens than were sent: Ollama cuts a prompt longer than its context
 * window (`num_ctx`) without a word, so the model answered without the start of the unit. A count below half of our
 * estimate (four characters a token, generous for code) says so; small prompts are left alone.
 */
export function promptSeemsCut(tokens: { prompt: number; estimated: boolean; sent: number }): boolean {
  return !tokens.estimated && tokens.sent >= 1000 && tokens.prompt < tokens.sent / 2;
}
