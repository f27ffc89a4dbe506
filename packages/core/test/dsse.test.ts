import { createHash, createPublicKey, verify as nodeVerify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { subjectOf, TEST_CREATED_AT, testKey, testVerdictStatement } from '../../../test/support/records.js';
import { canonicalize, isCanonicalJson } from '../src/canonical-json.js';
import {
  decodeBase64Strict,
  decodeEnvelopeLine,
  IN_TOTO_PAYLOAD_TYPE,
  pae,
  readEnvelope,
  readUsualEnvelope,
} from '../src/dsse.js';
import { signStatement } from '../src/recording.js';

const alice = testKey({ name: 'alice', roles: ['delegator'] });
// A non-ASCII path makes every length in the PAE a byte count that differs from the character count.
const statement = testVerdictStatement([subjectOf('src/café.ts', 'export const x = "é";\n')]);
const signed = signStatement(statement, alice.signer);

/** A canonical envelope line around arbitrary payload bytes (signature copied from a real line). */
function lineWithBody(body: Buffer | string, fields: Record<string, unknown> = {}): string {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return canonicalize({
    payloadType: IN_TOTO_PAYLOAD_TYPE,
    payload: bytes.toString('base64'),
    signatures: signed.envelope.signatures,
    ...fields,
  });
}

const canonicalBody = canonicalize(statement);

/** The canonical body with raw JSON text inserted as the predicate's first field ("a" sorts first). */
function withPredicateField(text: string): string {
  return canonicalBody.replace('"predicate":{', `"predicate":{${text}`);
}

function reasonOf(line: string): string {
  const decoded = decodeEnvelopeLine(line);
  return decoded.ok ? 'decoded' : decoded.reason;
}

describe('pae', () => {
  it('gives the DSSE specification vector', () => {
    expect(pae('http://example.com/HelloWorld', Buffer.from('hello world')).toString('utf8')).toBe(
      'DSSEv1 29 http://example.com/HelloWorld 11 hello world',
    );
  });

  it('counts bytes, not characters', () => {
    expect(pae('t/é', Buffer.from('é', 'utf8')).toString('utf8')).toBe('DSSEv1 4 t/é 2 é');
    expect(pae('t', new Uint8Array()).toString('utf8')).toBe('DSSEv1 1 t 0 ');
  });
});

describe('signStatement', () => {
  it('writes one canonical JSON line whose payload is the JCS of the statement', () => {
    expect(signed.line).not.toMatch(/[\n\r]/);
    expect(signed.line).toBe(canonicalize(signed.envelope));
    expect(isCanonicalJson(signed.line)).toBe(true);
    expect(Object.keys(JSON.parse(signed.line))).toEqual(['payload', 'payloadType', 'signatures']);
    expect(signed.envelope.payloadType).toBe('application/vnd.in-toto+json');
    expect(Buffer.from(signed.envelope.payload, 'base64').toString('utf8')).toBe(canonicalBody);
    expect(signed.envelope.signatures).toEqual([
      { keyid: alice.signer.publicKey.keyid, sig: expect.any(String) },
    ]);
    expect(Buffer.from(signed.envelope.signatures[0]!.sig, 'base64')).toHaveLength(64);
  });

  it('signs the PAE of the payload bytes (the project verifier agrees)', () => {
    const sig = Buffer.from(signed.envelope.signatures[0]!.sig, 'base64');
    const message = pae(IN_TOTO_PAYLOAD_TYPE, Buffer.from(canonicalBody, 'utf8'));
    expect(alice.signer.publicKey.verify(message, sig, 'node')).toBe(true);
    expect(alice.signer.publicKey.verify(message, sig, 'noble')).toBe(true);
    // Control: the bare payload (no PAE) is not what was signed.
    expect(alice.signer.publicKey.verify(Buffer.from(canonicalBody, 'utf8'), sig)).toBe(false);
  });

  it('is deterministic: the same statement and key give the same line', () => {
    expect(signStatement(statement, alice.signer).line).toBe(signed.line);
  });
});

describe('a line checked by an independent DSSE verifier (plain node:crypto)', () => {
  /** DSSE v1 verification written from the specification, sharing no code with the project. */
  function independentVerify(line: string, rawPublicKey: Buffer): boolean {
    const envelope = JSON.parse(line) as {
      payloadType: string;
      payload: string;
      signatures: { sig: string }[];
    };
    const body = Buffer.from(envelope.payload, 'base64');
    const type = Buffer.from(envelope.payloadType, 'utf8');
    const message = Buffer.concat([
      Buffer.from(`DSSEv1 ${type.length} `, 'ascii'),
      type,
      Buffer.from(` ${body.length} `, 'ascii'),
      body,
    ]);
    const key = createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: rawPublicKey.toString('base64url') },
      format: 'jwk',
    });
    return envelope.signatures.some((s) => nodeVerify(null, message, key, Buffer.from(s.sig, 'base64')));
  }

  const raw = Buffer.from(alice.signer.publicKey.base64, 'base64');

  it('verifies the line as written', () => {
    expect(independentVerify(signed.line, raw)).toBe(true);
  });

  it('refuses the same line with one payload byte changed, or under another key (controls)', () => {
    const body = Buffer.from(canonicalBody.replace('UNIT_PASSED', 'UNIT_FAILED'), 'utf8');
    expect(independentVerify(lineWithBody(body), raw)).toBe(false);
    const bob = testKey({ name: 'bob', roles: ['delegator'] });
    expect(independentVerify(signed.line, Buffer.from(bob.signer.publicKey.base64, 'base64'))).toBe(false);
  });

  it('names the key by its keyid: hex SHA-256 of the raw public key', () => {
    expect(JSON.parse(signed.line).signatures[0].keyid).toBe(createHash('sha256').update(raw).digest('hex'));
  });
});

describe('decodeEnvelopeLine', () => {
  it('round-trips a signed line: envelope, body and statement', () => {
    const decoded = decodeEnvelopeLine(signed.line);
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    expect(decoded.envelope).toEqual(signed.envelope);
    expect(decoded.body.toString('utf8')).toBe(canonicalBody);
    expect(decoded.statement).toEqual(statement);
    expect((decoded.statement as { predicate: { createdAt: string } }).predicate.createdAt).toBe(
      TEST_CREATED_AT,
    );
  });

  it('the test helper builds decodable lines (control for the refusals below)', () => {
    expect(reasonOf(lineWithBody(canonicalBody))).toBe('decoded');
  });

  it('refuses a payload or an envelope nested millions deep at once, before parsing it (rt41 f01); control: a statement nested 30 deep is read on', () => {
    const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const withDeep = (depth: number) =>
      canonicalBody.replace('"predicate":{', `"predicate":{"deep":${deep(depth)},`);
    const started = Date.now();
    expect(reasonOf(lineWithBody(withDeep(3_000_000)))).toBe(
      'payload is not strict JSON (arrays and objects nested more than 64 deep)',
    );
    const envelope = lineWithBody(canonicalBody).replace(
      '"signatures":',
      `"x":${deep(3_000_000)},"signatures":`,
    );
    expect(reasonOf(envelope)).toBe('not a DSSE envelope (arrays and objects nested more than 64 deep)');
    expect(Date.now() - started).toBeLessThan(2_000);
    // Control: nested less deep, the line is read on to the next check (here, its predicate's unknown field).
    expect(reasonOf(lineWithBody(withDeep(30)))).not.toContain('nested');
    // Brackets inside strings are text, not nesting.
    const textual = canonicalBody.replace('"predicate":{', `"predicate":{"deep":"${'['.repeat(1000)}",`);
    expect(reasonOf(lineWithBody(textual))).not.toContain('nested');
  });

  it('refuses an unknown payloadType', () => {
    expect(reasonOf(lineWithBody(canonicalBody, { payloadType: 'application/json' }))).toBe(
      'unknown payloadType "application/json"',
    );
  });

  it('refuses an extra envelope field', () => {
    expect(reasonOf(lineWithBody(canonicalBody, { comment: 'hi' }))).toBe('unknown envelope field "comment"');
  });

  it('refuses a malformed or missing signature list', () => {
    expect(reasonOf(lineWithBody(canonicalBody, { signatures: [] }))).toBe('no signatures');
    const extraField = [{ ...signed.envelope.signatures[0], note: 'x' }];
    expect(reasonOf(lineWithBody(canonicalBody, { signatures: extraField }))).toBe(
      'malformed signature entry (expected {keyid, sig})',
    );
    expect(reasonOf(lineWithBody(canonicalBody, { signatures: [{ keyid: 'k' }] }))).toBe(
      'malformed signature entry (expected {keyid, sig})',
    );
  });

  it('refuses an envelope line that is not canonical: key order or whitespace', () => {
    const { payloadType, payload, signatures } = signed.envelope;
    const reordered = JSON.stringify({ payloadType, payload, signatures });
    expect(JSON.parse(reordered)).toEqual(JSON.parse(signed.line));
    expect(reasonOf(reordered)).toBe('the envelope line is not canonical JSON (RFC 8785)');
    expect(reasonOf(signed.line.replace('{', '{ '))).toBe(
      'the envelope line is not canonical JSON (RFC 8785)',
    );
    expect(reasonOf(`${signed.line}\n`)).toBe('the envelope line is not canonical JSON (RFC 8785)');
  });

  it('refuses an envelope that is not strict JSON or not an object', () => {
    expect(reasonOf('[1]')).toBe('not a DSSE envelope (expected a JSON object)');
    // A duplicated key: JSON.parse keeps the last one, but the line is then not its own canonical form.
    const duplicated = signed.line.replace('"payloadType":', '"payloadType":"x","payloadType":');
    expect(JSON.parse(duplicated).payloadType).toBe('application/vnd.in-toto+json');
    expect(reasonOf(duplicated)).toBe('the envelope line is not canonical JSON (RFC 8785)');
    expect(decodeEnvelopeLine(signed.line).ok).toBe(true); // control
    expect(reasonOf('{')).toMatch(/^not strict JSON/);
  });

  it('refuses a payload whose base64 is not strict standard base64', () => {
    // A body of length 1 (mod 3) is padded with "==", leaving 4 unused bits in the last character.
    const body = [0, 1, 2]
      .map((n) => withPredicateField(`"a":"${'x'.repeat(n)}",`))
      .find((b) => Buffer.byteLength(b) % 3 === 1)!;
    const b64 = Buffer.from(body).toString('base64');
    expect(b64.endsWith('==')).toBe(true);
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const last = ALPHABET.indexOf(b64.at(-3)!);
    const nonZeroPadBits = `${b64.slice(0, -3)}${ALPHABET[last | 1]}==`;
    expect(Buffer.from(nonZeroPadBits, 'base64').toString()).toBe(body); // lenient decoders read the same bytes
    const variants = [
      b64.slice(0, -2),
      nonZeroPadBits,
      `${b64.slice(0, 8)}\n${b64.slice(8)}`,
      `${b64.slice(0, 8)} ${b64.slice(8)}`,
    ];
    const line = (payload: string) =>
      canonicalize({ payloadType: IN_TOTO_PAYLOAD_TYPE, payload, signatures: signed.envelope.signatures });
    expect(reasonOf(line(b64))).toBe('decoded');
    for (const payload of variants) expect(reasonOf(line(payload))).toBe('payload is not standard base64');
  });

  it('refuses a payload that is not the JCS of itself', () => {
    // Same statement, keys in insertion order rather than sorted.
    const reordered = JSON.stringify(statement);
    expect(reordered).not.toBe(canonicalBody);
    expect(reasonOf(lineWithBody(reordered))).toBe('payload is not canonical JSON (RFC 8785)');
    expect(reasonOf(lineWithBody(JSON.stringify(JSON.parse(canonicalBody), null, 1)))).toBe(
      'payload is not canonical JSON (RFC 8785)',
    );
    expect(reasonOf(lineWithBody(`${canonicalBody}\n`))).toBe('payload is not canonical JSON (RFC 8785)');
  });

  it('refuses a payload with a duplicate key', () => {
    const duplicated = canonicalBody.replace(
      '{"_type":',
      '{"_type":"https://in-toto.io/Statement/v1","_type":',
    );
    expect(JSON.parse(duplicated)).toEqual(statement); // plain JSON.parse would silently accept it
    expect(reasonOf(lineWithBody(duplicated))).toMatch(
      /^payload is not strict JSON \(.*duplicate key "_type"/,
    );
  });

  it('refuses a payload with a lone surrogate, escaped or as raw bytes', () => {
    expect(reasonOf(lineWithBody(withPredicateField('"a":"😀",')))).toBe('decoded'); // a surrogate pair: fine
    expect(reasonOf(lineWithBody(withPredicateField('"a":"\\ud800",')))).toMatch(
      /^payload is not strict JSON \(.*lone surrogate/,
    );
    expect(reasonOf(lineWithBody(withPredicateField('"a":"\\udc00x",')))).toMatch(/lone surrogate/);
    // U+D800 written as (CESU-8) bytes is not UTF-8 at all.
    const [head, tail] = withPredicateField('"a":"@",').split('@') as [string, string];
    const raw = Buffer.concat([Buffer.from(head), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(tail)]);
    expect(reasonOf(lineWithBody(raw))).toBe('payload is not valid UTF-8');
  });
});

describe('decodeBase64Strict', () => {
  it('accepts standard padded base64 and nothing else', () => {
    expect(decodeBase64Strict('aGk=')?.toString()).toBe('hi');
    expect(decodeBase64Strict('')?.length).toBe(0);
    expect(decodeBase64Strict('+/8=')).toEqual(Buffer.from([0xfb, 0xff]));
    for (const bad of ['aGk', 'aGl=', '-_8=', 'aG k=', 'aGk=\n', '=aGk', 'aGk=='])
      expect(decodeBase64Strict(bad)).toBeNull();
  });
});

describe('the usual line read by its shape gives what the general reading gives', () => {
  const key = testKey({ name: 'alice', roles: ['delegator'] });
  const lines = [0, 1, 2, 3].map(
    (i) => signStatement(testVerdictStatement([subjectOf(`src/f${i}.ts`, `${i}\n`)]), key.signer).line,
  );
  const [line] = lines as [string];
  const envelope = JSON.parse(line) as { payload: string; signatures: Array<{ keyid: string; sig: string }> };
  const sig = envelope.signatures[0]!;
  const twoSignatures = line.replace(/\]\}$/, `,{"keyid":"${sig.keyid}","sig":"${sig.sig}"}]}`);
  // Each changes the text of a valid line; some stay canonical (and valid or not), most do not.
  const variants = [
    ...lines,
    line.replace('{"payload"', '{ "payload"'),
    `${line}\n`,
    line.replace('"payloadType"', '"payloadType" '),
    line.replace(/"keyid":"[0-9a-f]+"/, `"keyid":"${sig.keyid.toUpperCase()}"`),
    line.replace(/"keyid":"[0-9a-f]+"/, '"keyid":""'),
    line.replace(/"keyid":"([0-9a-f]+)"/, '"keyid":"\\u0061$1"'),
    line.replace(/"sig":"([^"]+)"/, '"sig":"$1","x":1'),
    twoSignatures,
    line.replace(/"payload":"([^"]+)"/, (_, p: string) => `"payload":"${p.replace(/\//g, '\\/')}"`),
    line.replace(/"payload":"[^"]+"/, '"payload":""'),
    line.replace(/"payload":"[^"]+"/, '"payload":"===="'),
    line.replace(/"payload":"([^"]+)"/, '"payload":"$1A"'),
    line.replace('application/vnd.in-toto+json', 'application/vnd.in-toto+jsonx'),
    `{"payloadType":"application/vnd.in-toto+json","payload":"${envelope.payload}","signatures":[${JSON.stringify(sig)}]}`,
  ];

  it('agrees on every variant, and reads only lines of the usual shape', () => {
    let usual = 0;
    for (const v of variants) {
      const fast = readUsualEnvelope(v);
      if (fast === null) continue;
      usual++;
      expect(fast).toEqual(readEnvelope(v));
      expect(fast.ok).toBe(true);
    }
    // The signed lines and the few variants that stay canonical (an empty keyid, a changed payload).
    expect(usual).toBeGreaterThanOrEqual(lines.length + 3);
    // A canonical line of another shape (two signatures) is read the general way, which refuses it: anyone could add
    // an entry to a signed line and so copy the record into a new line that verifies.
    expect(readUsualEnvelope(twoSignatures)).toBeNull();
    expect(readEnvelope(twoSignatures)).toEqual({
      ok: false,
      reason:
        "2 signatures: a record carries exactly one (its signer's); anyone can add entries to a signed line",
    });
    expect(decodeEnvelopeLine(twoSignatures).ok).toBe(false);
    // Control: the same line with its one signature is valid, read either way.
    expect(readEnvelope(line).ok).toBe(true);
  });
});
