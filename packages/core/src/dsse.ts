/**
 * DSSE envelopes (DESIGN 3.1). A note line is the JCS serialization of one envelope; the signed bytes are the
 * DSSE pre-authentication encoding of the JCS statement, so any standard DSSE verifier can check a line as is.
 */
import { isUtf8 } from 'node:buffer';
import { MAX_JSON_DEPTH, nestsDeeperThan, parseCanonicalJson, quotedValue } from './canonical-json.js';

export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';

export interface EnvelopeSignature {
  keyid: string;
  sig: string;
}

export interface Envelope {
  payloadType: string;
  payload: string;
  signatures: EnvelopeSignature[];
}

/** "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, LEN a decimal byte count. */
export function pae(payloadType: string, body: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  const head = Buffer.from(`DSSEv1 ${type.length} ${payloadType} ${body.length} `, 'utf8');
  return Buffer.concat([head, body]);
}

export type DecodedLine =
  | { ok: true; envelope: Envelope; body: Buffer; statement: unknown }
  | { ok: false; reason: string };

/** Standard base64, strictly: padding required and the text must round-trip. */
export function decodeBase64Strict(text: string): Buffer | null {
  // Node's decoder skips characters outside the alphabet; the round trip below refuses them, and any missing padding.
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : null;
}

/**
 * Parses one note line into an envelope and its statement without judging signatures. Refuses a line that is not
 * itself canonical, an unknown payload type, and a payload that is not exactly JCS of itself.
 */
export function decodeEnvelopeLine(line: string): DecodedLine {
  const read = readUsualEnvelope(line) ?? readEnvelope(line);
  if (!read.ok) return read;
  const { envelope } = read;
  const body = decodeBase64Strict(envelope.payload);
  if (!body) return { ok: false, reason: 'payload is not standard base64' };
  if (!isUtf8(body)) return { ok: false, reason: 'payload is not valid UTF-8' };
  const statement = parseCanonicalJson(body.toString('utf8'));
  if (!statement.ok) return { ok: false, reason: `payload is ${statement.reason}` };
  return { ok: true, envelope, body, statement: statement.value };
}

type ReadEnvelope = { ok: true; envelope: Envelope } | { ok: false; reason: string };

/**
 * The form nearly every line has: one signature, and strings (base64, a hex keyid) that JCS writes as they are, keys
 * in JCS order. A line of exactly this shape is canonical by construction, so it is read by this expression rather
 * than parsed and serialized again (a third of decoding a record); any other line is read by readEnvelope, which
 * decides and says why. Exported for the test that holds the two to the same answers.
 */
export function readUsualEnvelope(line: string): ReadEnvelope | null {
  const usual = USUAL_LINE.exec(line);
  if (!usual) return null;
  const [, payload, keyid, sig] = usual as unknown as [string, string, string, string];
  return { ok: true, envelope: { payload, payloadType: IN_TOTO_PAYLOAD_TYPE, signatures: [{ keyid, sig }] } };
}

const USUAL_LINE =
  /^\{"payload":"([A-Za-z0-9+/=]*)","payloadType":"application\/vnd\.in-toto\+json","signatures":\[\{"keyid":"([0-9a-f]*)","sig":"([A-Za-z0-9+/=]*)"\}\]\}$/;

/** Any line: parsed as JSON, held to the envelope's fields, and to being written exactly as JCS writes it. */
export function readEnvelope(line: string): ReadEnvelope {
  if (nestsDeeperThan(line, MAX_JSON_DEPTH))
    return {
      ok: false,
      reason: `not a DSSE envelope (arrays and objects nested more than ${MAX_JSON_DEPTH} deep)`,
    };
  let value: unknown;
  try {
    // Plain JSON.parse is enough here: the line must equal the canonical form rebuilt below, which a duplicate key,
    // stray whitespace or a different key order cannot. (Measured: the strict parser and canonicalize cost as
    // much as the signature check over a large ledger.)
    value = JSON.parse(line);
  } catch (error) {
    return { ok: false, reason: `not strict JSON (${(error as Error).message})` };
  }
  if (!isObject(value)) return { ok: false, reason: 'not a DSSE envelope (expected a JSON object)' };
  const extra = Object.keys(value).filter(
    (k) => k !== 'payloadType' && k !== 'payload' && k !== 'signatures',
  );
  if (extra.length > 0) return { ok: false, reason: `unknown envelope field ${quotedValue(extra[0])}` };
  const { payloadType, payload, signatures } = value;
  if (payloadType !== IN_TOTO_PAYLOAD_TYPE) {
    return { ok: false, reason: `unknown payloadType ${quotedValue(payloadType)}` };
  }
  if (typeof payload !== 'string') return { ok: false, reason: 'payload is not a string' };
  if (!Array.isArray(signatures) || signatures.length === 0) return { ok: false, reason: 'no signatures' };
  // A record is signed by one key. Other entries would be ignored once one verifies, so anyone could copy a record
  // into a new line (the entry repeated, a bogus one added) that counts again in every tally, no key needed.
  if (signatures.length > 1)
    return {
      ok: false,
      reason: `${signatures.length} signatures: a record carries exactly one (its signer's); anyone can add entries to a signed line`,
    };
  const [s] = signatures;
  if (!isObject(s) || typeof s.keyid !== 'string' || typeof s.sig !== 'string' || Object.keys(s).length !== 2)
    return { ok: false, reason: 'malformed signature entry (expected {keyid, sig})' };
  if (canonicalEnvelope(value as unknown as Envelope) !== line)
    return { ok: false, reason: 'the envelope line is not canonical JSON (RFC 8785)' };
  return { ok: true, envelope: value as unknown as Envelope };
}

function canonicalEnvelope(e: Envelope): string {
  const [s] = e.signatures;
  const sig = `{"keyid":${JSON.stringify(s!.keyid)},"sig":${JSON.stringify(s!.sig)}}`;
  return `{"payload":${JSON.stringify(e.payload)},"payloadType":${JSON.stringify(e.payloadType)},"signatures":[${sig}]}`;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
