// The `{ cidr: <block> }` value matcher of quota_buckets (issue 28): a bucket id value matches when
// it is an IPv4 or IPv6 address inside the block. The block is parsed once at load with the same
// rules as descriptor `cidr:` (host bits must be zero; an IPv4-mapped IPv6 block is its IPv4 block),
// and an IPv4-mapped IPv6 value matches IPv4 blocks, as for descriptors.
import { isIpv4Mapped, parseCidr, parseIpv4, parseIpv6 } from './ip-address.js';
import type { YNode } from './yaml-document.js';
import type { ValueMatcher, ValueMatcherExtension } from './quota-matcher.js';

/** Compiles `cidr: 10.0.0.0/8`; throws an Error naming the problem for anything else. */
export const cidrValueMatcher: ValueMatcherExtension = (argument: YNode): ValueMatcher => {
  if (argument.kind !== 'scalar' || argument.type === 'null') throw new Error('the argument must be a CIDR block such as 10.0.0.0/8');
  const block = parseCidr(argument.text);
  if (typeof block === 'string') throw new Error(block);
  const masks = [0, 1, 2, 3].map((w) => maskWord(block.bits - 32 * w));
  const want = block.words.map((word, w) => (word & masks[w]!) >>> 0);
  const scratch = new Uint32Array(4);
  if (block.version === 4) {
    const mask = masks[0]!;
    const net = want[0]!;
    return (value) => {
      let addr = parseIpv4(value);
      if (addr < 0) {
        if (!parseIpv6(value, scratch) || !isIpv4Mapped(scratch)) return false;
        addr = scratch[3]!;
      }
      return ((addr & mask) >>> 0) === net;
    };
  }
  return (value) => {
    if (!parseIpv6(value, scratch)) return false;
    for (let w = 0; w < 4; w++) if (((scratch[w]! & masks[w]!) >>> 0) !== want[w]) return false;
    return true;
  };
};

function maskWord(bits: number): number {
  if (bits <= 0) return 0;
  if (bits >= 32) return 0xffffffff;
  return (0xffffffff << (32 - bits)) >>> 0;
}

/** The value matchers the rule loader installs for quota_buckets. */
export const DEFAULT_QUOTA_EXTENSIONS: ReadonlyMap<string, ValueMatcherExtension> = new Map([['cidr', cidrValueMatcher]]);
