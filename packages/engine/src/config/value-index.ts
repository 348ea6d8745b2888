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
 * the address. A big table first reads a 65,536-slot table for the 16 bits after the bits every
 * block shares (`slots`, 16 bytes a slot): most slots hold their few ranges themselves (for the
 * bench's random list of 100,000 blocks, 76 % of the IPv4 slots and 96 % of the IPv6 ones), so a
 * lookup reads one 16-byte slot; the others name the one to a few rows to search. One cache line
 * per lookup in most cases, two in the rest, where walking a trie's nodes would touch one line
 * per level spread over tens of megabytes, each a cache and TLB miss. (Before the ranges moved
 * into the slots a lookup read a 4-byte slot and then its rows: two or three lines; in a
 * decision, where the request's own allocation keeps pushing the tables out of the caches, each
 * line is a miss.) Blocks are kept as added (`blocks`) and the ranges derived when the table is
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
  /**
   * The first-level table (undefined for a small table): four words per slot of the 16 bits after
   * `skip`. Word 0 is the value at the slot's first address. When at most two ranges start inside
   * the slot, each at a 16-bit step (the bits after the 16 bits following the slot's are zero, always
   * so for IPv4), word 1 holds their 16-bit offsets (low half first; 0: none) and words 2 and 3
   * their values: the lookup reads this one 16-byte slot and no row. Otherwise word 1 is `SPILLED`
   * and words 2 and 3 bound the rows to search (the rows holding the slot's first and last address).
   */
  private slots: Uint32Array | undefined;
  /** Leading bits (a multiple of 16) every block but a /0 has in common, skipped by `slots`. */
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
    this.slots = undefined;
    return true;
  }

  /** The value of the longest block containing the IPv4 address `addr`, or -1. */
  lookup32(addr: number): number {
    const rows = this.rows ?? this.build();
    let lo = 0;
    let hi = this.count - 1;
    const slots = this.slots;
    if (slots !== undefined) {
      // The bits every block shares (0 or 16 here) must match; then one slot for the next 16.
      const skip = this.skip;
      if (skip !== 0 && addr >>> 16 !== this.skipWords[0]! >>> 16) return this.all;
      const at = ((addr >>> (16 - skip)) & 0xffff) << 2;
      const inner = slots[at + 1]!;
      if (inner !== SPILLED) {
        // At most two boundaries inside the slot: no row to read.
        return inlineValue(slots, at, inner, skip === 0 ? addr & 0xffff : 0);
      }
      lo = slots[at + 2]!;
      hi = slots[at + 3]!;
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
    const slots = this.slots;
    if (slots !== undefined) {
      // The bits every block shares (a multiple of 16) must match; then one slot for the next 16.
      const skip = this.skip;
      for (let w = 0; w < skip >>> 5; w++) if (words[w] !== this.skipWords[w]) return this.all;
      if ((skip & 31) !== 0 && words[skip >>> 5]! >>> 16 !== this.skipWords[skip >>> 5]! >>> 16) return this.all;
      const at = ((words[skip >>> 5]! >>> (16 - (skip & 31))) & 0xffff) << 2;
      const inner = slots[at + 1]!;
      if (inner !== SPILLED) {
        // The 16 bits after the slot's (every boundary inside the slot has only zeros after them).
        const p = skip + 16;
        return inlineValue(slots, at, inner, p >= 128 ? 0 : (words[p >>> 5]! >>> (16 - (p & 31))) & 0xffff);
      }
      lo = slots[at + 2]!;
      hi = slots[at + 3]!;
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
    return this.slots === undefined ? undefined : this.skip;
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
    this.slots = undefined;
    if (count >= this.topMinRows) this.buildSlots(list, starts, rows);
    return rows;
  }

  /**
   * The first-level table: after the leading bits all blocks but a /0 share (`skip`, a multiple of
   * 16 that no block is shorter than: 0 for most IPv4 lists, 32 for blocks all under
   * 2001:db8::/32), one slot of four words for each value of the next 16 bits (see `slots`).
   */
  private buildSlots(list: readonly { start: bigint; bits: number }[], starts: readonly bigint[], rows: Uint32Array): void {
    const total = this.bits;
    const W = this.width;
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
    for (let w = 0; w < W; w++) this.skipWords[w] = Number((base >> BigInt(total - 32 * (w + 1))) & 0xffffffffn);
    // Bits of an address inside one slot, and those below the 16-bit step an inline boundary is written in.
    const inside = total - skip - 16;
    const below = Math.max(0, inside - 16);
    const span = 1n << BigInt(inside);
    const belowMask = (1n << BigInt(below)) - 1n;
    const valueOf = (row: number): number => rows[row * (W + 1) + W]!;
    const slots = new Uint32Array(65536 * 4);
    let row = 0;
    for (let x = 0; x < 65536; x++) {
      const start = base | (BigInt(x) * span);
      const end = start + span - 1n;
      while (row + 1 < starts.length && starts[row + 1]! <= start) row++;
      let last = row;
      while (last + 1 < starts.length && starts[last + 1]! <= end) last++;
      const at = x * 4;
      slots[at] = valueOf(row);
      const inner = last - row;
      let inline = inner <= 2;
      for (let r = row + 1; inline && r <= last; r++) inline = ((starts[r]! - start) & belowMask) === 0n;
      if (inline) {
        let offsets = 0;
        for (let k = 0; k < inner; k++) {
          offsets += Number((starts[row + 1 + k]! - start) >> BigInt(below)) * (k === 0 ? 1 : 0x10000);
          slots[at + 2 + k] = valueOf(row + 1 + k);
        }
        slots[at + 1] = offsets;
      } else {
        slots[at + 1] = SPILLED;
        slots[at + 2] = row;
        slots[at + 3] = last;
      }
    }
    this.slots = slots;
  }

  /** Slots of the first-level table that need no row read (for tests and diagnostics); undefined without a table. */
  get inlineSlots(): number | undefined {
    const slots = this.slots;
    if (slots === undefined) return undefined;
    let n = 0;
    for (let at = 1; at < slots.length; at += 4) if (slots[at]! !== SPILLED) n++;
    return n;
  }
}

/**
 * Word 1 of a slot whose ranges are searched in the rows. An inline slot's word 1 is never this:
 * its second offset is above its first, so both halves are 0xffff only in this marker.
 */
const SPILLED = 0xffffffff;

/**
 * The value an inline slot (at `at`, word 1 `inner`: the 16-bit offsets of up to two boundaries,
 * 0 for none) gives the address whose 16 bits after the slot's are `off`.
 */
function inlineValue(slots: Uint32Array, at: number, inner: number, off: number): number {
  const first = inner & 0xffff;
  if (first === 0 || off < first) return slots[at]! | 0;
  const second = inner >>> 16;
  return (second === 0 || off < second ? slots[at + 2]! : slots[at + 3]!) | 0;
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
 * A table of this many ranges or more gets the first-level table (1 MB); a smaller one is
 * searched whole (at most 13 steps in 64 KB for IPv4). The bound keeps the table at most 16 times
 * the memory of the rows it indexes (IPv4 rows are 8 bytes, IPv6 rows 20), so rule text cannot
 * buy a megabyte per 2,048 ranges: about 4,096 blocks (one list, or rules of one key at one level)
 * before a table is built.
 */
const TOP_TABLE_MIN_ROWS = 8192;

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

  /**
   * Per IP version, how many of the first-level table's 65,536 slots answer without a row read
   * (undefined: no table); for tests and diagnostics.
   */
  inlineSlots(): { readonly v4: number | undefined; readonly v6: number | undefined } {
    return { v4: this.v4?.inlineSlots, v6: this.v6?.inlineSlots };
  }

  /** Adds a prefix; false when it is already present. */
  addPrefix(prefix: string, target: T): boolean {
    return (this.prefixes ??= new PrefixTree()).insert(prefix, this.idOf(target));
  }

  /** The target of the longest CIDR block containing `value`, else of its longest prefix; undefined when none. */
  lookup(value: string): T | undefined {
    const found = this.lookupAddress(value);
    return found === NOT_AN_ADDRESS ? this.lookupPrefix(value) : found;
  }

  /**
   * For a value that is an IP address: the target of the longest block containing it, else of its
   * longest prefix, else undefined. NOT_AN_ADDRESS for any other text (and when there are no
   * blocks, so nothing is parsed): the caller then looks for an exact composite before
   * `lookupPrefix`, which an address never is (it has no `/` and does not end in `*`).
   */
  lookupAddress(value: string): T | undefined | typeof NOT_AN_ADDRESS {
    if (this.v4 === undefined && this.v6 === undefined) return NOT_AN_ADDRESS;
    const found = this.blockOf(value);
    if (found >= 0) return this.targets[found];
    return found === -1 ? this.lookupPrefix(value) : NOT_AN_ADDRESS;
  }

  /** The target of the longest prefix of `value`, or undefined. */
  lookupPrefix(value: string): T | undefined {
    if (this.prefixes === undefined) return undefined;
    const p = this.prefixes.lookup(value);
    return p >= 0 ? this.targets[p] : undefined;
  }

  /** The value of the longest block containing the address `value`; -1 when none does, -2 when `value` is no address. */
  private blockOf(value: string): number {
    // 45 characters is the longest IPv6 text (with an embedded IPv4 address). IPv4 is tried first:
    // it gives up at an IPv6 address's first ':' (within five characters), so no scan decides.
    if (value.length < 2 || value.length > 45) return -2;
    const v4 = parseIpv4(value);
    if (v4 >= 0) return this.v4 !== undefined ? this.v4.lookup32(v4) : -1;
    const words = SCRATCH_V6;
    if (!parseIpv6(value, words)) return -2;
    if (isIpv4Mapped(words)) return this.v4 !== undefined ? this.v4.lookup32(words[3]!) : -1;
    return this.v6 !== undefined ? this.v6.lookup128(words) : -1;
  }
}

/** What `ValueIndex.lookupAddress` answers for a value that is not an IP address. */
export const NOT_AN_ADDRESS: unique symbol = Symbol('not an address');
