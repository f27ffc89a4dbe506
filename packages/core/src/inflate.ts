/**
 * A small zlib (RFC 1950) / DEFLATE (RFC 1951) decoder, for the one loose object the pre-commit hook reads: HEAD's
 * commit, right after it was made. node:zlib would cost the hook 3–4 ms to load for a few hundred bytes. It decodes
 * canonical Huffman codes a bit at a time (as zlib's own reference decoder, puff, does): slow per byte, and there are
 * few bytes. The caller checks what it returns against the object's id, so a decoding mistake can only miss.
 */

const MAX_BITS = 15;
const LENGTH_BASE = [
  3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195,
  227, 258,
];
const LENGTH_EXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DIST_BASE = [
  1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097,
  6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA = [
  0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13,
];
/** The order code length code lengths are sent in (RFC 1951 3.2.7). */
const CLEN_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

class Corrupt extends Error {}

/** A canonical Huffman code: how many codes of each length, and the symbols in code order. */
interface Huffman {
  counts: Uint16Array;
  symbols: Uint16Array;
}

function huffman(lengths: ArrayLike<number>, n: number): Huffman {
  const counts = new Uint16Array(MAX_BITS + 1);
  for (let s = 0; s < n; s++) counts[lengths[s]!]!++;
  counts[0] = 0;
  const offsets = new Uint16Array(MAX_BITS + 1);
  for (let len = 1; len < MAX_BITS; len++) offsets[len + 1] = offsets[len]! + counts[len]!;
  const symbols = new Uint16Array(n);
  for (let s = 0; s < n; s++) if (lengths[s] !== 0) symbols[offsets[lengths[s]!]!++] = s;
  return { counts, symbols };
}

let fixed: { lengths: Huffman; distances: Huffman } | null = null;

function fixedCodes(): { lengths: Huffman; distances: Huffman } {
  if (!fixed) {
    const lengths = new Uint8Array(288);
    lengths.fill(8, 0, 144);
    lengths.fill(9, 144, 256);
    lengths.fill(7, 256, 280);
    lengths.fill(8, 280, 288);
    fixed = { lengths: huffman(lengths, 288), distances: huffman(new Uint8Array(30).fill(5), 30) };
  }
  return fixed;
}

class Decoder {
  private at: number;
  private bitBuffer = 0;
  private bitCount = 0;
  private out: Uint8Array;
  private written = 0;

  constructor(
    private readonly input: Uint8Array,
    start: number,
    private readonly limit: number,
  ) {
    this.at = start;
    this.out = new Uint8Array(Math.min(limit, Math.max(256, input.length * 4)));
  }

  run(): Uint8Array {
    let last = 0;
    while (!last) {
      last = this.bits(1);
      const type = this.bits(2);
      if (type === 0) this.stored();
      else if (type === 1) this.codes(fixedCodes().lengths, fixedCodes().distances);
      else if (type === 2) this.dynamic();
      else throw new Corrupt();
    }
    return this.out.subarray(0, this.written);
  }

  private bits(need: number): number {
    let value = this.bitBuffer;
    while (this.bitCount < need) {
      if (this.at >= this.input.length) throw new Corrupt();
      value |= this.input[this.at++]! << this.bitCount;
      this.bitCount += 8;
    }
    this.bitBuffer = value >>> need;
    this.bitCount -= need;
    return value & ((1 << need) - 1);
  }

  private emit(byte: number): void {
    if (this.written === this.out.length) {
      if (this.out.length >= this.limit) throw new Corrupt();
      const bigger = new Uint8Array(Math.min(this.limit, this.out.length * 2));
      bigger.set(this.out);
      this.out = bigger;
    }
    this.out[this.written++] = byte;
  }

  private stored(): void {
    this.bitBuffer = 0;
    this.bitCount = 0;
    if (this.at + 4 > this.input.length) throw new Corrupt();
    const len = this.input[this.at]! | (this.input[this.at + 1]! << 8);
    const nlen = this.input[this.at + 2]! | (this.input[this.at + 3]! << 8);
    if (len !== (~nlen & 0xffff) || this.at + 4 + len > this.input.length) throw new Corrupt();
    this.at += 4;
    for (let i = 0; i < len; i++) this.emit(this.input[this.at++]!);
  }

  private decode(h: Huffman): number {
    let code = 0; // bits read so far, first bit as the highest
    let first = 0; // the first code of the current length
    let index = 0; // where that length's symbols start
    for (let len = 1; len <= MAX_BITS; len++) {
      code |= this.bits(1);
      const count = h.counts[len]!;
      if (code - count < first) return h.symbols[index + (code - first)]!;
      index += count;
      first = (first + count) << 1;
      code <<= 1;
    }
    throw new Corrupt();
  }

  private codes(lengths: Huffman, distances: Huffman): void {
    for (;;) {
      const symbol = this.decode(lengths);
      if (symbol < 256) this.emit(symbol);
      else if (symbol === 256) return;
      else {
        const s = symbol - 257;
        if (s >= 29) throw new Corrupt();
        const length = LENGTH_BASE[s]! + this.bits(LENGTH_EXTRA[s]!);
        const d = this.decode(distances);
        if (d >= 30) throw new Corrupt();
        const distance = DIST_BASE[d]! + this.bits(DIST_EXTRA[d]!);
        if (distance > this.written) throw new Corrupt();
        for (let i = 0; i < length; i++) this.emit(this.out[this.written - distance]!);
      }
    }
  }

  private dynamic(): void {
    const nlen = this.bits(5) + 257;
    const ndist = this.bits(5) + 1;
    const ncode = this.bits(4) + 4;
    if (nlen > 286 || ndist > 30) throw new Corrupt();
    const clens = new Uint8Array(19);
    for (let i = 0; i < ncode; i++) clens[CLEN_ORDER[i]!] = this.bits(3);
    const clenCode = huffman(clens, 19);
    const lengths = new Uint8Array(nlen + ndist);
    for (let i = 0; i < nlen + ndist; ) {
      const symbol = this.decode(clenCode);
      if (symbol < 16) {
        lengths[i++] = symbol;
        continue;
      }
      let repeat: number;
      let value = 0;
      if (symbol === 16) {
        if (i === 0) throw new Corrupt();
        value = lengths[i - 1]!;
        repeat = 3 + this.bits(2);
      } else if (symbol === 17) repeat = 3 + this.bits(3);
      else repeat = 11 + this.bits(7);
      if (i + repeat > nlen + ndist) throw new Corrupt();
      lengths.fill(value, i, i + repeat);
      i += repeat;
    }
    if (lengths[256] === 0) throw new Corrupt(); // no end-of-block code
    this.codes(huffman(lengths, nlen), huffman(lengths.subarray(nlen), ndist));
  }
}

/**
 * The bytes a zlib stream holds, or null when it is not one this decoder reads (a preset dictionary, damage, or more
 * than `limit` bytes of output). The trailing Adler-32 is not checked: the caller checks the whole object's id.
 */
export function inflateZlib(data: Uint8Array, limit = 1 << 20): Uint8Array | null {
  if (data.length < 2) return null;
  const cmf = data[0]!;
  const flg = data[1]!;
  if ((cmf & 0x0f) !== 8 || cmf >> 4 > 7 || ((cmf << 8) | flg) % 31 !== 0 || flg & 0x20) return null;
  try {
    return new Decoder(data, 2, limit).run();
  } catch (e) {
    if (e instanceof Corrupt) return null;
    throw e;
  }
}
