// The `cidr:` and `prefix:` rules of one descriptor key at one level of the rule tree, indexed so
// that a lookup costs the same with 10 rules or 100,000 (docs/ratelimit.md, "Matching by CIDR and
// prefix"): CIDR blocks in a binary trie per IP version (at most 32 or 128 steps, one bit each),
// prefixes in a radix tree (at most one step per character of the request value, one string
// comparison per edge). The longest matching block or prefix wins. Built once when the rules load;
// a lookup allocates nothing.
import { isIpv4Mapped, parseIpv4, parseIpv6, type Cidr } from './ip-address.js';

/**
 * A binary trie over address bits. Node i has children zero[i] / one[i] (0: none; node 0 is the
 * root) and value[i] (-1: no block ends here). Typed arrays keep 100,000 blocks to a few MB.
 */
class BitTrie {
  private zero: Int32Array = new Int32Array(64);
  private one: Int32Array = new Int32Array(64);
  private value: Int32Array = new Int32Array(64).fill(-1);
  private size = 1;

  /** Adds the block of the first `bits` bits of `words`; false when the same block is already present. */
  insert(words: readonly number[], bits: number, index: number): boolean {
    let node = 0;
    for (let b = 0; b < bits; b++) {
      const bit = ((words[b >>> 5]! >>> (31 - (b & 31))) & 1) === 1;
      const next = bit ? this.one[node]! : this.zero[node]!;
      if (next !== 0) {
        node = next;
        continue;
      }
      const created = this.newNode();
      if (bit) this.one[node] = created;
      else this.zero[node] = created;
      node = created;
    }
    if (this.value[node] !== -1) return false;
    this.value[node] = index;
    return true;
  }

  /** The value of the longest block containing the IPv4 address `addr`, or -1. */
  lookup32(addr: number): number {
    let node = 0;
    let best = this.value[0]!;
    for (let b = 31; b >= 0; b--) {
      node = ((addr >>> b) & 1) === 1 ? this.one[node]! : this.zero[node]!;
      if (node === 0) return best;
      const v = this.value[node]!;
      if (v >= 0) best = v;
    }
    return best;
  }

  /** The value of the longest block containing the IPv6 address `words`, or -1. */
  lookup128(words: Uint32Array): number {
    let node = 0;
    let best = this.value[0]!;
    for (let w = 0; w < 4; w++) {
      const word = words[w]!;
      for (let b = 31; b >= 0; b--) {
        node = ((word >>> b) & 1) === 1 ? this.one[node]! : this.zero[node]!;
        if (node === 0) return best;
        const v = this.value[node]!;
        if (v >= 0) best = v;
      }
    }
    return best;
  }

  private newNode(): number {
    if (this.size === this.zero.length) {
      const grow = (a: Int32Array, fillWith: number): Int32Array => {
        const b = new Int32Array(a.length * 2).fill(fillWith);
        b.set(a);
        return b;
      };
      this.zero = grow(this.zero, 0);
      this.one = grow(this.one, 0);
      this.value = grow(this.value, -1);
    }
    return this.size++;
  }
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
  private v4: BitTrie | undefined;
  private v6: BitTrie | undefined;
  private prefixes: PrefixTree | undefined;

  /** Adds a CIDR block; false when the same block is already present. */
  addCidr(cidr: Cidr, target: T): boolean {
    const trie = cidr.version === 4 ? (this.v4 ??= new BitTrie()) : (this.v6 ??= new BitTrie());
    if (!trie.insert(cidr.words, cidr.bits, this.targets.length)) return false;
    this.targets.push(target);
    return true;
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
