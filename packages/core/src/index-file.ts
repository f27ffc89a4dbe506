/**
 * Git's index file (`.git/index`, gitformat-index(5)), read without git: the staged entries and the trees its cache
 * already names. Only what the pre-commit hook's quick answer needs, and only the layouts it can read with
 * certainty; anything else (a split or sparse index, an unmerged entry, an intent-to-add entry, an extension that
 * must be understood) is "not readable here", and the caller asks git instead.
 */

/** A directory of the cache-tree extension: its tree id while still valid (null once a change invalidated it). */
export interface CacheTreeNode {
  oid: Buffer | null;
  /** How many index entries the directory holds (meaningful while valid). */
  entryCount: number;
  /** By name (latin1). */
  children: Map<string, CacheTreeNode>;
}

/**
 * The stage 0 entries, in the index's order (bytewise by path). No entry is decoded up front (the file is decoded
 * once, as latin1, and a name is a slice of it when asked for): an index holds tens of thousands of entries, the
 * quick answer looks at the few in directories a change touched, and this runs once per process, before V8 has
 * compiled anything, where every call per entry counts.
 */
export class GitIndex {
  /** The whole file as latin1 (one character per byte), decoded once: names and ids are slices of it. */
  private readonly text: string;

  constructor(
    readonly data: Buffer,
    readonly count: number,
    readonly oidBytes: number,
    private readonly entryAt: Uint32Array,
    private readonly nameEnd: Uint32Array,
    /** Version 4 compresses paths against the previous one, so they are decoded while reading. */
    private readonly names: string[] | null,
    readonly cacheTree: CacheTreeNode | null,
  ) {
    this.text = data.toString('latin1');
  }

  /** Entry `i`'s path bytes as a latin1 string (one character per byte: exact for hashing and tree names). */
  nameOf(i: number): string {
    if (this.names) return this.names[i]!;
    const nameAt = this.entryAt[i]! + STAT_BYTES + this.oidBytes + 2;
    const extended = this.data[nameAt - 2]! & (EXTENDED >> 8);
    return this.text.slice(nameAt + (extended ? 2 : 0), this.nameEnd[i]!);
  }

  /** Entry `i`'s object id as latin1 (its raw bytes, as a tree object holds them). */
  oidBytesOf(i: number): string {
    const at = this.entryAt[i]! + STAT_BYTES;
    return this.text.slice(at, at + this.oidBytes);
  }

  /** Entry `i`'s path decoded as UTF-8, as the policy's globs and the ledger name it. */
  pathOf(i: number): string {
    const name = this.nameOf(i);
    return NOT_ASCII.test(name) ? Buffer.from(name, 'latin1').toString('utf8') : name;
  }

  /** 0o100644, 0o100755, 0o120000 or 0o160000. */
  modeOf(i: number): number {
    const d = this.data;
    const at = this.entryAt[i]! + MODE_AT;
    return ((d[at]! << 24) | (d[at + 1]! << 16) | (d[at + 2]! << 8) | d[at + 3]!) >>> 0;
  }

  oidOf(i: number): Buffer {
    const at = this.entryAt[i]! + STAT_BYTES;
    return this.data.subarray(at, at + this.oidBytes);
  }

  /**
   * Whether entry `i`'s object id is this one, given in lowercase hex: compared byte by byte, since converting
   * 10,000 ids to hex costs the hook more than this (every string it allocates counts, in a process this short).
   */
  hasOid(i: number, hex: string): boolean {
    if (hex.length !== this.oidBytes * 2) return false;
    const at = this.entryAt[i]! + STAT_BYTES;
    for (let k = 0; k < this.oidBytes; k++) {
      const high = nibble(hex.charCodeAt(2 * k));
      const low = nibble(hex.charCodeAt(2 * k + 1));
      if (high < 0 || low < 0 || this.data[at + k] !== ((high << 4) | low)) return false;
    }
    return true;
  }

  /** The entry at exactly this path (binary search: the index is sorted bytewise), or -1. */
  find(name: string): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const at = this.nameOf(mid);
      if (at === name) return mid;
      if (at < name) lo = mid + 1;
      else hi = mid;
    }
    return -1;
  }
}

/** A lowercase hex digit's value, or -1. */
function nibble(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  return -1;
}

const HEADER = 12;
const STAT_BYTES = 40; // ctime, mtime, dev, ino, mode, uid, gid, size: ten 32-bit fields
const MODE_AT = 24;
const EXTENDED = 0x4000;
const STAGE_MASK = 0x3000;
const NAME_MASK = 0x0fff;
const INTENT_TO_ADD = 0x2000;
const NOT_ASCII = /[\x80-\xff]/;

/** The index, or null when it is in a layout read only by git. `oidBytes`: 20 (SHA-1) or 32 (SHA-256). */
export function parseGitIndex(data: Buffer, oidBytes: number): GitIndex | null {
  if (data.length < HEADER + oidBytes || data.toString('latin1', 0, 4) !== 'DIRC') return null;
  const version = data.readUInt32BE(4);
  if (version < 2 || version > 4) return null;
  const count = data.readUInt32BE(8);
  const end = data.length - oidBytes;
  const entryAt = new Uint32Array(count);
  const nameEnd = new Uint32Array(count);
  const names: string[] | null = version === 4 ? new Array(count) : null;
  let at = HEADER;
  let previous = '';
  // Bytes are read directly, not through readUInt16BE and friends (see GitIndex).
  for (let i = 0; i < count; i++) {
    const start = at;
    const flagsAt = start + STAT_BYTES + oidBytes;
    if (flagsAt + 2 > end) return null;
    const flags = (data[flagsAt]! << 8) | data[flagsAt + 1]!;
    let nameAt = flagsAt + 2;
    if (flags & EXTENDED) {
      if (version < 3) return null;
      if (data[nameAt]! & (INTENT_TO_ADD >> 8)) return null; // not part of the commit, and git's diff differs
      nameAt += 2;
    }
    if (flags & STAGE_MASK) return null; // unmerged: git refuses the commit anyway
    let nul: number;
    if (names) {
      // The path is the previous one less N bytes, then a NUL-terminated suffix; no padding.
      const { value: drop, next } = readOffsetVarint(data, nameAt, end);
      nul = data.indexOf(0, next);
      if (drop > previous.length || nul < 0 || nul >= end) return null;
      previous = previous.slice(0, previous.length - drop) + data.toString('latin1', next, nul);
      names[i] = previous;
      at = nul + 1;
    } else {
      const short = flags & NAME_MASK;
      nul = short < NAME_MASK ? nameAt + short : data.indexOf(0, nameAt);
      if (nul < 0 || nul >= end || data[nul] !== 0) return null;
      // Entries are padded with 1 to 8 NULs to a multiple of 8 bytes from the entry's start.
      at = start + ((nul - start + 8) & ~7);
    }
    entryAt[i] = start;
    nameEnd[i] = nul;
  }
  const cacheTree = readExtensions(data, at, end, oidBytes);
  if (cacheTree === undefined) return null;
  return new GitIndex(data, count, oidBytes, entryAt, nameEnd, names, cacheTree);
}

/** git's offset varint (varint.c): each continuation adds one before shifting, so encodings are unique. */
function readOffsetVarint(data: Buffer, at: number, end: number): { value: number; next: number } {
  let c = data[at++] ?? 0;
  let value = c & 127;
  while (c & 128 && at < end) {
    c = data[at++]!;
    value = ((value + 1) << 7) | (c & 127);
  }
  return { value, next: at };
}

/** The cache tree (null when there is none), or undefined for an extension only git may read (`link`: split index,
 * `sdir`: sparse index). */
function readExtensions(
  data: Buffer,
  at: number,
  end: number,
  oidBytes: number,
): CacheTreeNode | null | undefined {
  let tree: CacheTreeNode | null = null;
  while (at + 8 <= end) {
    const signature = data.toString('latin1', at, at + 4);
    const size = data.readUInt32BE(at + 4);
    const body = at + 8;
    if (body + size > end) return undefined;
    // An extension whose signature starts with a capital letter is optional; any other must be understood.
    if (signature === 'TREE') {
      const read = readCacheTree(data, body, body + size, oidBytes);
      if (read === undefined) return undefined;
      tree = read;
    } else if (!/^[A-Z]/.test(signature)) return undefined;
    at = body + size;
  }
  return at === end ? tree : undefined;
}

/**
 * The TREE extension, in data[from, to): nodes in pre-order, each "<name>\0<entry count> <subtree count>\n" then,
 * when the entry count is not -1 (invalidated by a later change), the tree's id. Read byte by byte: it has a node per
 * directory, and Buffer's methods cost microseconds a call before V8 has compiled them.
 */
function readCacheTree(
  data: Buffer,
  from: number,
  to: number,
  oidBytes: number,
): CacheTreeNode | null | undefined {
  if (from === to) return null;
  let at = from;
  const number = (stop: number): number | undefined => {
    const negative = data[at] === 45; // '-'
    if (negative) at++;
    let value = 0;
    const first = at;
    for (; at < to && data[at] !== stop; at++) {
      const digit = data[at]! - 48;
      if (digit < 0 || digit > 9) return undefined;
      value = value * 10 + digit;
    }
    if (at === first || at >= to) return undefined;
    at++;
    return negative ? -value : value;
  };
  const node = (): [string, CacheTreeNode] | undefined => {
    let name = '';
    for (; at < to && data[at] !== 0; at++) name += String.fromCharCode(data[at]!);
    if (at++ >= to) return undefined;
    const entryCount = number(32); // ' '
    const subtrees = number(10); // '\n'
    if (entryCount === undefined || subtrees === undefined) return undefined;
    let oid: Buffer | null = null;
    if (entryCount >= 0) {
      if (at + oidBytes > to) return undefined;
      oid = data.subarray(at, at + oidBytes);
      at += oidBytes;
    }
    const children = new Map<string, CacheTreeNode>();
    for (let i = subtrees; i > 0; i--) {
      const child = node();
      if (!child) return undefined;
      children.set(child[0], child[1]);
    }
    return [name, { oid, entryCount, children }];
  };
  const root = node();
  return root && at === to ? root[1] : undefined;
}
