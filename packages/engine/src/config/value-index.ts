// The `cidr:` and `prefix:` rules of one descriptor key at one level of the rule tree, indexed so
// that a lookup costs the same with 10 rules or 100,000 (docs/ratelimit.md, "Matching by CIDR and
// prefix"): CIDR blocks in a trie per IP version that reads four bits per step (at most 8 or 32
// steps, each within one 128-byte node; a big trie starts with one read of a 16-bit table),
// prefixes in a radix tree (at most one step per character of the request value, one string
// comparison per edge). The longest matching block or prefix wins. Built once when the rules load;
// a lookup allocates nothing.
import { isIpv4Mapped, parseIpv4, parseIpv6, type Cidr } from './ip-address.js';

/**
 * A trie over address bits, four bits (a nibble) per level: at most 8 steps for IPv4 and 32 for
 * IPv6, each reading one node of 16 slots laid out contiguously (128 bytes), so a lookup in a trie
 * of 100,000 blocks touches a few cache lines instead of one per bit. Slot s of node n is
 * `cells[32n + 2s]` (the child node, 0: none; node 0 is the root) and `cells[32n + 2s + 1]` (the
 * value of the longest block covering that slot at this level, -1: none), with `lens` keeping that
 * block's length. A block of b bits is stored in the node at depth ceil(b/4) − 1 in every slot its
 * last, partial nibble covers (prefix expansion), so deeper values are always longer blocks.
 */
class NibbleTrie {
  private cells: Int32Array = NibbleTrie.fresh(64);
  private lens: Uint8Array = new Uint8Array(64 * 16);
  private size = 1;
  /** A /0 block's value (-1: none). */
  private all = -1;
  /**
   * Built by trim() for a trie of TOP_TABLE_MIN_NODES nodes or more: slot x is the node reached
   * after the `skip` shared bits and the 16 bits x (`top[2x]`, 0: none) and the longest block on
   * that way (`top[2x + 1]`, -1: none). 512 KB, so small tries go without.
   */
  private top: Int32Array | undefined;
  /** Leading bits (a multiple of 16) every block shares, skipped by `top`, and their value. */
  private skip = 0;
  private skipWords: Uint32Array = new Uint32Array(4);

  private static fresh(nodes: number): Int32Array {
    const a = new Int32Array(nodes * 32);
    for (let i = 1; i < a.length; i += 2) a[i] = -1;
    return a;
  }

  /** Adds the block of the first `bits` bits of `words`; false (nothing changed) when that block is already present. */
  insert(words: readonly number[], bits: number, index: number): boolean {
    this.top = undefined;
    if (bits === 0) {
      if (this.all >= 0) return false;
      this.all = index;
      return true;
    }
    const depth = Math.ceil(bits / 4) - 1;
    let node = 0;
    for (let d = 0; d < depth; d++) {
      const at = node * 32 + nibbleOf(words, d) * 2;
      let next = this.cells[at]!;
      if (next === 0) {
        next = this.newNode();
        this.cells[at] = next;
      }
      node = next;
    }
    // The last nibble's fixed top bits, the rest expanded over the slots it covers.
    const fixed = bits - 4 * depth;
    const first = nibbleOf(words, depth) & (0xf << (4 - fixed)) & 0xf;
    // A block of the same length covering the same first slot is the same block (same path, same fixed bits).
    if (this.lens[node * 16 + first] === bits && this.cells[(node * 16 + first) * 2 + 1]! >= 0) return false;
    for (let s = first; s < first + (1 << (4 - fixed)); s++) {
      const slot = node * 16 + s;
      if (this.lens[slot]! <= bits) {
        this.cells[slot * 2 + 1] = index;
        this.lens[slot] = bits;
      }
    }
    return true;
  }

  /** The value of the longest block containing the IPv4 address `addr`, or -1. */
  lookup32(addr: number): number {
    const cells = this.cells;
    const top = this.top;
    let best: number;
    let node: number;
    let shift: number;
    if (top === undefined) {
      best = this.all;
      node = 0;
      shift = 28;
    } else {
      // The bits every block shares (0 or 16 here) must match; then one read for the next 16.
      const skip = this.skip;
      if (skip !== 0 && addr >>> 16 !== this.skipWords[0]! >>> 16) return this.all;
      const at = ((addr >>> (16 - skip)) & 0xffff) * 2;
      best = top[at + 1]!;
      node = top[at]!;
      if (node === 0) return best;
      shift = 12 - skip;
    }
    for (; shift >= 0; shift -= 4) {
      const at = node * 32 + ((addr >>> shift) & 0xf) * 2;
      const v = cells[at + 1]!;
      if (v >= 0) best = v;
      node = cells[at]!;
      if (node === 0) return best;
    }
    return best;
  }

  /** The value of the longest block containing the IPv6 address `words`, or -1. */
  lookup128(words: Uint32Array): number {
    const cells = this.cells;
    const top = this.top;
    let best: number;
    let node: number;
    let d: number;
    if (top === undefined) {
      best = this.all;
      node = 0;
      d = 0;
    } else {
      // The bits every block shares (a multiple of 16) must match; then one read for the next 16.
      const skip = this.skip;
      for (let w = 0; w < skip >>> 5; w++) if (words[w] !== this.skipWords[w]) return this.all;
      if ((skip & 31) !== 0 && words[skip >>> 5]! >>> 16 !== this.skipWords[skip >>> 5]! >>> 16) return this.all;
      const at = ((words[skip >>> 5]! >>> (16 - (skip & 31))) & 0xffff) * 2;
      best = top[at + 1]!;
      node = top[at]!;
      if (node === 0) return best;
      d = (skip >>> 2) + 4;
    }
    for (; d < 32; d++) {
      const at = node * 32 + ((words[d >>> 3]! >>> (28 - 4 * (d & 7))) & 0xf) * 2;
      const v = cells[at + 1]!;
      if (v >= 0) best = v;
      node = cells[at]!;
      if (node === 0) return best;
    }
    return best;
  }

  /** The leading bits the first-level table skips, or undefined when there is no table (a small trie, or not trimmed). */
  get topSkip(): number | undefined {
    return this.top === undefined ? undefined : this.skip;
  }

  /**
   * Drops the room kept for more nodes (capacity doubles as blocks are added) and, for a big trie,
   * builds the first-level table (see `top`).
   */
  trim(bits: number, topTableMinNodes: number): void {
    if (this.size * 32 !== this.cells.length) {
      this.cells = this.cells.slice(0, this.size * 32);
      this.lens = this.lens.slice(0, this.size * 16);
    }
    this.top = undefined;
    if (this.size >= topTableMinNodes) this.buildTop(bits);
  }

  /**
   * The first-level table: the trie walked once for every value of 16 bits, after the leading bits
   * all blocks share (`skip`, a multiple of 16: 0 for IPv4 lists, 32 for blocks all under
   * 2001:db8::/32), so a lookup reads one slot for those bits instead of up to four nodes from
   * the root, the ones that miss the cache in a big trie. Derived from the nodes: an insert drops
   * it and the next trim builds it again.
   */
  private buildTop(bits: number): void {
    const cells = this.cells;
    // The shared leading nibbles: a chain of nodes with one child and no block ending in them.
    let node = 0;
    let nibbles = 0;
    const path: number[] = [];
    for (;;) {
      let child = -1;
      let only = true;
      for (let s = 0; s < 16; s++) {
        const at = node * 32 + s * 2;
        if (cells[at + 1]! >= 0) only = false;
        if (cells[at] !== 0) {
          if (child >= 0) only = false;
          child = s;
        }
      }
      if (!only || child < 0 || (nibbles + 1) * 4 + 16 > bits) break;
      path.push(child);
      node = cells[node * 32 + child * 2]!;
      nibbles++;
    }
    const skipNibbles = nibbles - (nibbles % 4);
    this.skip = skipNibbles * 4;
    this.skipWords = new Uint32Array(4);
    for (let d = 0; d < skipNibbles; d++) this.skipWords[d >>> 3]! |= path[d]! << (28 - 4 * (d & 7));
    let start = 0;
    for (let d = 0; d < skipNibbles; d++) start = cells[start * 32 + path[d]! * 2]!;
    const top = new Int32Array(65536 * 2);
    for (let x = 0; x < 65536; x++) {
      let best = this.all;
      let n = start;
      for (let shift = 12; shift >= 0; shift -= 4) {
        const at = n * 32 + ((x >>> shift) & 0xf) * 2;
        const v = cells[at + 1]!;
        if (v >= 0) best = v;
        n = cells[at]!;
        if (n === 0) break;
      }
      top[x * 2] = n;
      top[x * 2 + 1] = best;
    }
    this.top = top;
  }

  private newNode(): number {
    if (this.size * 32 === this.cells.length) {
      const cells = NibbleTrie.fresh(this.size * 2);
      cells.set(this.cells);
      this.cells = cells;
      const lens = new Uint8Array(this.size * 2 * 16);
      lens.set(this.lens);
      this.lens = lens;
    }
    return this.size++;
  }
}

/**
 * A trie of this many nodes (128 bytes each: 512 KB) or more gets the 16-bit first-level table; a
 * smaller one stays cached as it is, and would spend more memory on the table than on its nodes.
 */
const TOP_TABLE_MIN_NODES = 4096;

/** The d-th nibble (0 = most significant) of an address given as 32-bit words. */
function nibbleOf(words: readonly number[], d: number): number {
  return (words[d >>> 3]! >>> (28 - 4 * (d & 7))) & 0xf;
}

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
  private readonly targets: T[] = [];
  private v4: NibbleTrie | undefined;
  private v6: NibbleTrie | undefined;
  private prefixes: PrefixTree | undefined;

  /** Adds a CIDR block; false when the same block is already present. */
  addCidr(cidr: Cidr, target: T): boolean {
    const trie = cidr.version === 4 ? (this.v4 ??= new NibbleTrie()) : (this.v6 ??= new NibbleTrie());
    if (!trie.insert(cidr.words, cidr.bits, this.targets.length)) return false;
    this.targets.push(target);
    return true;
  }

  /**
   * Gives back the memory kept for growth and gives a trie of `topTableMinNodes` nodes or more its
   * first-level table (tests pass a smaller bound); adding after this still works (the tries grow again).
   */
  trim(topTableMinNodes = TOP_TABLE_MIN_NODES): void {
    this.v4?.trim(32, topTableMinNodes);
    this.v6?.trim(128, topTableMinNodes);
  }

  /**
   * Per IP version, the leading bits the first-level table of a big trie skips (undefined: no
   * table); for tests and diagnostics.
   */
  firstLevel(): { readonly v4: number | undefined; readonly v6: number | undefined } {
    return { v4: this.v4?.topSkip, v6: this.v6?.topSkip };
  }

  /** Adds a prefix; false when it is already present. */
  addPrefix(prefix: string, target: T): boolean {
    if (!(this.prefixes ??= new PrefixTree()).insert(prefix, this.targets.length)) return false;
    this.targets.push(target);
    return true;
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
