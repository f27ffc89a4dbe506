import { createHash } from 'node:crypto';

/** The SHA-256 of a ledger line (its UTF-8 bytes), in hex: how a line is named whatever its place in a note. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
