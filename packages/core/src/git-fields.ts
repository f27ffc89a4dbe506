import { isUtf8 } from 'node:buffer';

/**
 * NUL-separated fields of git output (paths and records). A field that is not UTF-8 (a file name git stores as other
 * bytes) is read byte for byte, each byte above ASCII as a lone surrogate (U+DC80–U+DCFF): decoded with replacement
 * characters, two such names, or one and a name holding U+FFFD, would read alike, and a record for one would promote
 * the other. No record can name a lone surrogate (records are I-JSON), so such a file is never promoted.
 */
export function splitZ(out: Buffer): string[] {
  if (isUtf8(out))
    return out
      .toString('utf8')
      .split('\0')
      .filter((s) => s.length > 0);
  const fields: string[] = [];
  let start = 0;
  while (start < out.length) {
    let end = out.indexOf(0, start);
    if (end === -1) end = out.length;
    if (end > start) fields.push(decodedExactly(out.subarray(start, end)));
    start = end + 1;
  }
  return fields;
}

function decodedExactly(field: Buffer): string {
  if (isUtf8(field)) return field.toString('utf8');
  let text = '';
  for (const byte of field) text += String.fromCharCode(byte < 0x80 ? byte : 0xdc00 + byte);
  return text;
}
