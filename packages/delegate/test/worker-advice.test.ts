/**
 * What a worker's failure is said as (worker-advice.ts): each advice points at what is likely wrong, and no advice
 * prints a credential the endpoint carries (rt39 f05, f06, f07).
 */
import { describe, expect, it } from 'vitest';
import {
  extractServerMessage,
  httpAdvice,
  oneLine,
  promptSeemsCut,
  shownUrl,
  unreachableAdvice,
} from '../src/worker-advice.js';

const url = new URL('http://127.0.0.1:1234/v1/chat/completions');
const NOW = Date.parse('2026-12-02T08:00:00Z');
const advice = (status: number, more: Partial<Parameters<typeof httpAdvice>[0]> = {}) =>
  httpAdvice({ status, url, message: null, now: NOW, ...more });

describe('oneLine', () => {
  it('makes a lone surrogate U+FFFD, sent or made by the cut: the model name is signed into the ledger', () => {
    expect(oneLine('m\ud800')).toBe('m\ufffd');
    expect(oneLine('\udc00m')).toBe('\ufffdm');
    expect(oneLine(`${'a'.repeat(299)}\ud83d\ude00`)).toBe(`${'a'.repeat(299)}\ufffd…`);
  });

  it('control: a whole pair is kept', () => {
    expect(oneLine('qwen \ud83d\ude00')).toBe('qwen \ud83d\ude00');
  });
});

describe('worker advice', () => {
  it('never shows a user name, password or query of the endpoint; control: a plain endpoint is shown whole', () => {
    const secret = new URL('http://proxyuser:S3cret@127.0.0.1:1234/v1/chat/completions?api_key=sk-live-0123');
    const shown = shownUrl(secret);
    expect(shown).toBe('http://***:***@127.0.0.1:1234/v1/chat/completions?***');
    expect(advice(404, { url: secret })).not.toMatch(/S3cret|proxyuser|sk-live/);
    expect(advice(404)).toContain('the request went to http://127.0.0.1:1234/v1/chat/completions)');
  });

  it('reads Retry-After as seconds or as a date, and a 503 that asks to wait as a model not ready', () => {
    expect(advice(429, { retryAfter: '17' })).toContain('it asks to wait 17 s');
    expect(advice(429, { retryAfter: 'Wed, 02 Dec 2026 08:01:30 GMT' })).toContain('it asks to wait 90 s');
    expect(advice(429, { retryAfter: 'soon' })).toBe('The server is busy; try again later.');
    expect(advice(503, { retryAfter: '30' })).toContain(
      'not ready yet (loading the model?) (it asks to wait 30 s)',
    );
    expect(advice(503, { message: 'Loading model' })).toContain('not ready yet');
    // Control: another server error is the server's log to read.
    expect(advice(503, { message: 'internal' })).toBe("Check the server's log.");
  });

  it('a redirect says where to point worker.endpoint; a 400 says the request was refused as sent, not only the model', () => {
    expect(advice(301, { location: 'https://llm.example/v1/chat/completions?key=x' })).toContain(
      'set worker.endpoint to https://llm.example/v1/chat/completions?***',
    );
    expect(advice(308, { location: '/v2/chat/completions' })).toContain(
      'set worker.endpoint to http://127.0.0.1:1234/v2/chat/completions',
    );
    expect(advice(400)).toContain('The server refused the request as sent');
    expect(advice(418)).toBe("Check the model name and the server's log.");
  });

  it("an HTML error page is named by its title, not pasted; JSON and plain text keep the server's words", () => {
    const page =
      '<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title><style>b{}</style></head><body>x</body></html>';
    expect(extractServerMessage(page)).toBe(
      'an HTML page ("502 Bad Gateway"), not the model server\'s JSON (a proxy in front of it?)',
    );
    expect(extractServerMessage('{"error":{"message":"model not found"}}')).toBe('model not found');
    expect(extractServerMessage('plain words')).toBe('plain words');
  });

  it('an untrusted certificate says how to trust it; a refused connection says to start the server', () => {
    const tls = Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    expect(unreachableAdvice(tls)).toContain('NODE_EXTRA_CA_CERTS');
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(unreachableAdvice(refused)).toContain('Check that the local model server is running');
  });
});

describe('promptSeemsCut', () => {
  it('a server count under half of what was sent says the prompt was cut (rt45 f05); a close count, a small prompt or no count do not', () => {
    expect(promptSeemsCut({ prompt: 3, estimated: false, sent: 8000 })).toBe(true);
    expect(promptSeemsCut({ prompt: 2048, estimated: false, sent: 8000 })).toBe(true);
    expect(promptSeemsCut({ prompt: 7000, estimated: false, sent: 8000 })).toBe(false);
    expect(promptSeemsCut({ prompt: 3, estimated: false, sent: 500 })).toBe(false);
    expect(promptSeemsCut({ prompt: 3, estimated: true, sent: 8000 })).toBe(false);
  });
});
