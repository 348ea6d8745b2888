// The `cidr:` and `prefix:` rules of one descriptor key at one level of the rule tree, indexed so
// that a lookup costs the same with 10 rules or 100,000 (docs/ratelimit.md, "Matching by CIDR and
// prefix"): CIDR blocks per IP version as the sorted, disjoint address ranges they cut the address
// space into (a big list starts with one read of a 16-bit table that leaves one to a few rows to
// look at), prefixes in a radix tree (at most one step per character of the request value, one
// string comparison per edge). The longest matching block or prefix wins. Built once when the
// rules load; a lookup allocates nothing.
import { isIpv4Mapped, parseIpv4, parseIpv6, type Cidr } from './ip-address.js';

/**
 * The blocks of one IP version as the disjoint address ranges they cut the address space into,
 * each with the value of the longest block that covers it (blocks are nested or disjoint, so that
 * is the innermost one): at most 2n + 1 ranges for n blocks, kept as one flat typed array of
 * (start words, value) rows sorted by start. A lookup finds the last range starting at or before
 * the address. A big table first reads a 65,536-slot index for the 16 bits after the bits every
 * block shares (`top`), which narrows the search to the ranges of that slot (for the bench's
 * random lists one to three rows, read from one cache line); a small one is searched whole. So a
 * lookup of a list of 100,000 blocks reads two small arrays (about 2.5 MB for IPv4 and IPv6
 * together) instead of walking a trie's nodes spread over tens of megabytes, each node a cache
 * and TLB miss. Blocks are kept as added (`blocks`) and the ranges derived when the table is
 * trimmed, or at the first lookup after an add.
 */
class BlockTable {
  /** Words per address: 1 (IPv4) or 4 (IPv6); a row is these words and the value. */
  private readonly width: number;
  /**
   * Every block as added: `width` words of its address, its length, its value. A plain array while
   * blocks are added, packed into `packed` when built (no room kept for growth, off the JS heap).
   */
  private blocks: number[] = [];
  private packed: Float64Array | undefined;
  /** Blocks by `<words>/<bits>`, to refuse a block twice (dropped when built; rebuilt on the next add). */
  private seen: Set<string> | undefined = new Set<string>();
  /** A /0 block's value (-1: none). */
  private all = -1;
  /** The ranges, `width + 1` words per row (the value as uint32: -1 is 0xffffffff); undefined until built. */
  private rows: Uint32Array | undefined;
  /** Rows in `rows`. */
  private count = 0;
  /** Slot x: the row holding the first address of the slot; slot 65536: the last row. Undefined for a small table. */
  private top: Int32Array | undefined;
  /** Leading bits (a multiple of 16) every block but a /0 has in common, skipped by `top`. */
  private skip = 0;
  private skipWords: Uint32Array = new Uint32Array(4);
  /** The first-level table threshold of the last trim (rows). */
  private topMinRows = TOP_TABLE_MIN_ROWS;

  constructor(private readonly bits: 32 | 128) {
    this.width = bits / 32;
  }

  /** Adds the block of the first `bits` bits of `words`; false (nothing changed) when that block is already present. */
  insert(words: readonly number[], bits: number, index: number): boolean {
    if (this.packed !== undefined) {
      this.blocks = Array.from(this.packed);
      this.packed = undefined;
    }
    if (this.seen === undefined) {
      this.seen = new Set<string>();
      const stride = this.width + 2;
      for (let at = 0; at < this.blocks.length; at += stride) this.seen.add(this.blocks.slice(at, at + stride - 1).join('/'));
    }
    const id = [...words.slice(0, this.width), bits].join('/');
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    for (let w = 0; w < this.width; w++) this.blocks.push(words[w]! >>> 0);
    this.blocks.push(bits, index);
    if (bits === 0) this.all = index;
    this.rows = undefined;
    this.top = undefined;
    return true;
  }

  /** The value of the longest block containing the IPv4 address `addr`, or -1. */
  lookup32(addr: number): number {
    const rows = this.rows ?? this.build();
    let lo = 0;
    let hi = this.count - 1;
    const top = this.top;
    if (top !== undefined) {
      // The bits every block shares (0 or 16 here) must match; then one read for the next 16.
      const skip = this.skip;
      if (skip !== 0 && addr >>> 16 !== this.skipWords[0]! >>> 16) return this.all;
      const x = (addr >>> (16 - skip)) & 0xffff;
      lo = top[x]!;
      hi = top[x + 1]!;
    }
    // The last row in [lo, hi] starting at or before addr (row lo does).
    while (hi - lo > 3) {
      const mid = (lo + hi + 1) >>> 1;
      if (rows[mid * 2]! <= addr) lo = mid;
      else hi = mid - 1;
    }
    while (lo < hi && rows[lo * 2 + 2]! <= addr) lo++;
    return rows[lo * 2 + 1]! | 0;
  }

  /** The value of the longest block containing the IPv6 address `words`, or -1. */
  lookup128(words: Uint32Array): number {
    const rows = this.rows ?? this.build();
    let lo = 0;
    let hi = this.count - 1;
    const top = this.top;
    if (top !== undefined) {
      // The bits every block shares (a multiple of 16) must match; then one read for the next 16.
      const skip = this.skip;
      for (let w = 0; w < skip >>> 5; w++) if (words[w] !== this.skipWords[w]) return this.all;
      if ((skip & 31) !== 0 && words[skip >>> 5]! >>> 16 !== this.skipWords[skip >>> 5]! >>> 16) return this.all;
      const x = (words[skip >>> 5]! >>> (16 - (skip & 31))) & 0xffff;
      lo = top[x]!;
      hi = top[x + 1]!;
    }
    const w0 = words[0]!;
    const w1 = words[1]!;
    const w2 = words[2]!;
    const w3 = words[3]!;
    while (hi - lo > 3) {
      const mid = (lo + hi + 1) >>> 1;
      if (startsAtOrBefore(rows, mid * 5, w0, w1, w2, w3)) lo = mid;
      else hi = mid - 1;
    }
    while (lo < hi && startsAtOrBefore(rows, lo * 5 + 5, w0, w1, w2, w3)) lo++;
    return rows[lo * 5 + 4]! | 0;
  }

  /** The leading bits the first-level table skips, or undefined when there is no table (a small list, or not built). */
  get topSkip(): number | undefined {
    return this.top === undefined ? undefined : this.skip;
  }

  /**
   * Builds the ranges (and, from `topMinRows` rows up, the first-level table) and gives back the
   * room kept for growth.
   */
  trim(topMinRows: number): void {
    this.topMinRows = topMinRows;
    this.rows = undefined;
    this.build();
  }

  /** Derives the ranges from the blocks (see the class comment); returns the rows. */
  private build(): Uint32Array {
    const W = this.width;
    const stride = W + 2;
    const total = BigInt(this.bits);
    if (this.packed === undefined) {
      this.packed = Float64Array.from(this.blocks);
      this.blocks = [];
    }
    const blocks = this.packed;
    const n = blocks.length / stride;
    // Blocks as (start, end, value), sorted by start, then the longer (outer) block first.
    const list: { start: bigint; end: bigint; value: number; bits: number }[] = [];
    for (let b = 0; b < n; b++) {
      let start = 0n;
      for (let w = 0; w < W; w++) start = (start << 32n) | BigInt(blocks[b * stride + w]!);
      const bits = blocks[b * stride + W]!;
      list.push({ start, end: start + (1n << (total - BigInt(bits))) - 1n, value: blocks[b * stride + W + 1]!, bits });
    }
    list.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.bits - b.bits));
    // A sweep with the open blocks on a stack: a range starts at every block's start (its value)
    // and after every block's end (the enclosing block's value, or -1).
    const starts: bigint[] = [];
    const values: number[] = [];
    const emit = (at: bigint, value: number): void => {
      const last = starts.length - 1;
      if (last >= 0 && starts[last] === at) {
        values[last] = value;
        if (last > 0 && values[last - 1] === value) {
          starts.pop();
          values.pop();
        }
      } else if (last < 0 || values[last] !== value) {
        starts.push(at);
        values.push(value);
      }
    };
    const limit = 1n << total;
    const open: { end: bigint; value: number }[] = [];
    const close = (before: bigint): void => {
      while (open.length > 0 && open[open.length - 1]!.end < before) {
        const done = open.pop()!;
        if (done.end + 1n < limit) emit(done.end + 1n, open.length > 0 ? open[open.length - 1]!.value : -1);
      }
    };
    emit(0n, -1);
    for (const b of list) {
      close(b.start);
      emit(b.start, b.value);
      open.push(b);
    }
    close(limit);
    const count = starts.length;
    const rows = new Uint32Array(count * (W + 1));
    for (let i = 0; i < count; i++) {
      let s = starts[i]!;
      for (let w = W - 1; w >= 0; w--) {
        rows[i * (W + 1) + w] = Number(s & 0xffffffffn);
        s >>= 32n;
      }
      rows[i * (W + 1) + W] = values[i]! >>> 0;
    }
    this.rows = rows;
    this.count = count;
    this.seen = undefined;
    this.top = undefined;
    if (count >= this.topMinRows) this.buildTop(list, starts);
    return rows;
  }

  /**
   * The first-level table: after the leading bits all blocks but a /0 share (`skip`, a multiple of
   * 16 that no block is shorter than: 0 for most IPv4 lists, 32 for blocks all under
   * 2001:db8::/32), slot x of the next 16 bits holds the row containing that slot's first
   * address, so a lookup searches only the rows between slot x's and slot x + 1's.
   */
  private buildTop(list: readonly { start: bigint; bits: number }[], starts: readonly bigint[]): void {
    const total = this.bits;
    let common = total - 16;
    const first = list.find((b) => b.bits > 0);
    for (const b of list) {
      if (b.bits === 0) continue;
      common = Math.min(common, b.bits);
      const diff = b.start ^ first!.start;
      if (diff !== 0n) common = Math.min(common, total - diff.toString(2).length);
    }
    const skip = first === undefined ? 0 : common - (common % 16);
    this.skip = skip;
    this.skipWords = new Uint32Array(4);
    const base = first === undefined || skip === 0 ? 0n : (first.start >> BigInt(total - skip)) << BigInt(total - skip);
    for (let w = 0; w < this.width; w++) this.skipWords[w] = Number((base >> BigInt(total - 32 * (w + 1))) & 0xffffffffn);
    const top = new Int32Array(65537);
    const shift = BigInt(total - skip - 16);
    let row = 0;
    for (let x = 0; x < 65536; x++) {
      const at = base | (BigInt(x) << shift);
      while (row + 1 < starts.length && starts[row + 1]! <= at) row++;
      top[x] = row;
    }
    top[65536] = starts.length - 1;
    this.top = top;
  }
}

/** True when the row at `at` starts at or before the address w0..w3 (128-bit comparison, most significant word first). */
function startsAtOrBefore(rows: Uint32Array, at: number, w0: number, w1: number, w2: number, w3: number): boolean {
  const s0 = rows[at]!;
  if (s0 !== w0) return s0 < w0;
  const s1 = rows[at + 1]!;
  if (s1 !== w1) return s1 < w1;
  const s2 = rows[at + 2]!;
  if (s2 !== w2) return s2 < w2;
  return rows[at + 3]! <= w3;
}

/**
 * A table of this many ranges or more gets the first-level table (256 KB); a smaller one is
 * searched whole (at most 11 steps in 16 KB for IPv4) and would spend more on the table than on its rows.
 */
const TOP_TABLE_MIN_ROWS = 2048;

/** A radix tree node: the edge label leading to it, children by the label's first character. */
interface PrefixNode {
  label: string;
  children: Map<number, PrefixNode> | undefined;
  value: number;
}

class PrefixTree {
  private readonly root: PrefixNode = { label: '', children: undefined, value: -1 };

  /** Adds `prefix`; false when it is already present. */
  insert(prefix: string, index: number): boolean {
    let node = this.root;
    let pos = 0;
    for (;;) {
      if (pos === prefix.length) {
        if (node.value !== -1) return false;
        node.value = index;
        return true;
      }
      const c = prefix.charCodeAt(pos);
      const child = node.children?.get(c);
      if (child === undefined) {
        (node.children ??= new Map()).set(c, { label: prefix.slice(pos), children: undefined, value: index });
        return true;
      }
      // Common length of the child's label and the rest of the prefix.
      const label = child.label;
      let k = 0;
      while (k < label.length && pos + k < prefix.length && label.charCodeAt(k) === prefix.charCodeAt(pos + k)) k++;
      if (k < label.length) {
        // Split the edge at k: a middle node takes the common part.
        const middle: PrefixNode = { label: label.slice(0, k), children: new Map([[label.charCodeAt(k), child]]), value: -1 };
        child.label = label.slice(k);
        node.children!.set(c, middle);
        node = middle;
      } else {
        node = child;
      }
      pos += k;
    }
  }

  /** The value of the longest prefix of `value` present, or -1. */
  lookup(value: string): number {
    let node = this.root;
    let best = node.value;
    let pos = 0;
    while (pos < value.length) {
      const child = node.children?.get(value.charCodeAt(pos));
      if (child === undefined || !value.startsWith(child.label, pos)) break;
      node = child;
      pos += child.label.length;
      if (node.value >= 0) best = node.value;
    }
    return best;
  }
}

const SCRATCH_V6 = new Uint32Array(4);

/**
 * The cidr and prefix rules of one descriptor key at one level. `T` is what a rule maps to (the
 * rule tree's node). A value that is an IP address is looked up among the CIDR blocks first; when
 * none contains it (or it is no address), among the prefixes.
 */
export class ValueIndex<T> {
  /**
   * The targets; a block's or prefix's value is an index here. Blocks added one after another for
   * one target (a list's) share its entry, so a hit in a list of 100,000 reads one hot array slot,
   * not one of 100,000.
   */
  private readonly targets: T[] = [];
  private v4: BlockTable | undefined;
  private v6: BlockTable | undefined;
  private prefixes: PrefixTree | undefined;

  /** Adds a CIDR block; false when the same block is already present. */
  addCidr(cidr: Cidr, target: T): boolean {
    const table = cidr.version === 4 ? (this.v4 ??= new BlockTable(32)) : (this.v6 ??= new BlockTable(128));
    return table.insert(cidr.words, cidr.bits, this.idOf(target));
  }

  /** The index of `target` in `targets`: the last entry when it is the same target, else a new one (an entry left by a refused add is harmless). */
  private idOf(target: T): number {
    const last = this.targets.length - 1;
    return last >= 0 && this.targets[last] === target ? last : this.targets.push(target) - 1;
  }

  /**
   * Builds the ranges of the blocks added so far and gives a table of `topTableMinRows` ranges or
   * more its first-level table (tests pass a smaller bound); adding after this still works (the
   * ranges are built again at the next trim or lookup).
   */
  trim(topTableMinRows = TOP_TABLE_MIN_ROWS): void {
    this.v4?.trim(topTableMinRows);
    this.v6?.trim(topTableMinRows);
  }

  /**
   * Per IP version, the leading bits the first-level table of a big list skips (undefined: no
   * table, or not built since the last add); for tests and diagnostics.
   */
  firstLevel(): { readonly v4: number | undefined; readonly v6: number | undefined } {
    return { v4: this.v4?.topSkip, v6: this.v6?.topSkip };
  }

  /** Adds a prefix; false when it is already present. */
  addPrefix(prefix: string, target: T): boolean {
    return (this.prefixes ??= new PrefixTree()).insert(prefix, this.idOf(target));
  }

  /** The target of the longest CIDR block containing `value`, else of its longest prefix; undefined when none. */
  lookup(value: string): T | undefined {
    if (this.v4 !== undefined || this.v6 !== undefined) {
      const found = this.lookupAddress(value);
      if (found >= 0) return this.targets[found];
    }
    if (this.prefixes === undefined) return undefined;
    const p = this.prefixes.lookup(value);
    return p >= 0 ? this.targets[p] : undefined;
  }

  private lookupAddress(value: string): number {
    // 45 characters is the longest IPv6 text (with an embedded IPv4 address); IPv4 has no ':'.
    if (value.length < 2 || value.length > 45) return -1;
    const colon = value.indexOf(':');
    if (colon < 0) {
      const v4 = parseIpv4(value);
      return v4 >= 0 && this.v4 !== undefined ? this.v4.lookup32(v4) : -1;
    }
    const words = SCRATCH_V6;
    if (!parseIpv6(value, words)) return -1;
    if (isIpv4Mapped(words)) return this.v4 !== undefined ? this.v4.lookup32(words[3]!) : -1;
    return this.v6 !== undefined ? this.v6.lookup128(words) : -1;
  }
}
