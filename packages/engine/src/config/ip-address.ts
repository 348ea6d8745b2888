// IP address and CIDR text for descriptor values matched by `cidr:` (docs/ratelimit.md, "Matching by
// CIDR and prefix"). Request values are attacker-chosen strings, so the parser is a single
// left-to-right pass over the characters (no regular expression, no backtracking) that gives up at
// the first character that cannot belong to an address. It accepts what Envoy's `remote_address`
// action sends: dotted IPv4 (`10.1.2.3`) and IPv6 in any RFC 4291 text form (`2001:db8::1`,
// `::ffff:10.1.2.3`); an IPv4-mapped IPv6 address is matched as the IPv4 address it carries.
// Leading zeros in an IPv4 part (`010`) and zone ids (`fe80::1%eth0`) are not addresses here.

/** A parsed address: IPv4 as one 32-bit word, IPv6 as four (most significant first). */
export type IpVersion = 4 | 6;

/**
 * Parses `text` as an IPv4 address; the address as an unsigned 32-bit number, or -1. `from`/`to`
 * bound the part of the string to read (defaults: all of it). One pass, one comparison chain per
 * character: it runs for every request value of a key with `cidr:` rules.
 */
export function parseIpv4(text: string, from = 0, to = text.length): number {
  let addr = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = from; i < to; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d >= 0 && d <= 9) {
      // A second digit after a leading 0 (`01`) is not an address; nor are four digits.
      if (digits !== 0 && part === 0) return -1;
      if (++digits > 3) return -1;
      part = part * 10 + d;
    } else if (d === -2) {
      // '.' (46 - 48)
      if (digits === 0 || part > 255 || dots === 3) return -1;
      addr = addr * 256 + part;
      part = 0;
      digits = 0;
      dots++;
    } else {
      return -1;
    }
  }
  if (dots !== 3 || digits === 0 || part > 255) return -1;
  return addr * 256 + part;
}

/**
 * Parses `text` as an IPv6 address into `out` (four 32-bit words); false when it is not one.
 * `out` is scratch the caller owns, so a lookup allocates nothing.
 */
export function parseIpv6(text: string, out: Uint32Array, from = 0, to = text.length): boolean {
  // Up to eight 16-bit groups; `gap` is where `::` stands (-1: none).
  const groups = SCRATCH_GROUPS;
  let n = 0;
  let gap = -1;
  let i = from;
  if (to - from < 2) return false;
  if (text.charCodeAt(i) === 58) {
    if (text.charCodeAt(i + 1) !== 58) return false;
    gap = 0;
    i += 2;
    if (i === to) return assemble(groups, n, gap, out);
  }
  for (;;) {
    if (n === 8) return false;
    const start = i;
    let v = 0;
    let c = 0;
    for (; i < to; i++) {
      c = text.charCodeAt(i);
      let h = c - 48;
      if (h < 0 || h > 9) {
        // a-f and A-F alike (| 32 lower-cases a letter).
        h = (c | 32) - 87;
        if (h < 10 || h > 15) break;
      }
      if (i - start === 4) return false;
      v = (v << 4) | h;
    }
    if (i === start) return false;
    if (i < to && c === 46) {
      // An embedded IPv4 address ends the text and takes two groups.
      if (n > 6) return false;
      const v4 = parseIpv4(text, start, to);
      if (v4 < 0) return false;
      groups[n++] = v4 >>> 16;
      groups[n++] = v4 & 0xffff;
      return assemble(groups, n, gap, out);
    }
    groups[n++] = v;
    if (i === to) return assemble(groups, n, gap, out);
    if (c !== 58) return false;
    i++;
    if (i < to && text.charCodeAt(i) === 58) {
      if (gap >= 0) return false;
      gap = n;
      i++;
      if (i === to) return assemble(groups, n, gap, out);
    } else if (i === to) {
      return false;
    }
  }
}

const SCRATCH_GROUPS = new Int32Array(8);

/** The words of `n` groups with the `::` at `gap` (-1: none): groups after the gap move to the end, zeros between. */
function assemble(groups: Int32Array, n: number, gap: number, out: Uint32Array): boolean {
  if (gap < 0 ? n !== 8 : n > 7) return false;
  const shift = gap < 0 ? 0 : 8 - n;
  for (let w = 0; w < 4; w++) {
    const a = 2 * w;
    const b = a + 1;
    const ga = gap < 0 || a < gap ? groups[a]! : a < gap + shift ? 0 : groups[a - shift]!;
    const gb = gap < 0 || b < gap ? groups[b]! : b < gap + shift ? 0 : groups[b - shift]!;
    out[w] = ((ga << 16) | gb) >>> 0;
  }
  return true;
}

/** True for ::ffff:a.b.c.d (the IPv4-mapped block ::ffff:0:0/96). */
export function isIpv4Mapped(words: Uint32Array): boolean {
  return words[0] === 0 && words[1] === 0 && words[2] === 0xffff;
}

/** A CIDR block from a rule: its version, the address words and the prefix length in bits. */
export interface Cidr {
  readonly version: IpVersion;
  /** IPv4: one word; IPv6: four. */
  readonly words: readonly number[];
  readonly bits: number;
  /** Canonical text: dotted IPv4 or RFC 5952 IPv6, then `/bits`. */
  readonly text: string;
}

/**
 * Parses a rule's `cidr:`. Returns the block, or a problem text for the rule builder. Host bits
 * must be zero (`10.0.0.1/8` is refused: it reads like a mistake); an IPv4-mapped IPv6 block of
 * /96 or longer is taken as the IPv4 block it maps.
 */
export function parseCidr(text: string): Cidr | string {
  const slash = text.indexOf('/');
  if (slash < 0) return `cidr '${text}' needs a prefix length (e.g. 10.0.0.0/8, 2001:db8::/32)`;
  const lenText = text.slice(slash + 1);
  let bits = 0;
  for (let i = 0; i < lenText.length; i++) {
    const c = lenText.charCodeAt(i);
    if (c < 48 || c > 57 || i > 2) return `cidr '${text}' has an invalid prefix length '${lenText}'`;
    bits = bits * 10 + (c - 48);
  }
  if (lenText === '') return `cidr '${text}' has an invalid prefix length ''`;
  const v4 = parseIpv4(text, 0, slash);
  if (v4 >= 0) {
    if (bits > 32) return `cidr '${text}': an IPv4 prefix length is at most 32`;
    return v4Block(text, v4, bits);
  }
  const words = new Uint32Array(4);
  if (!parseIpv6(text, words, 0, slash)) return `cidr '${text}' is not an IPv4 or IPv6 block`;
  if (bits > 128) return `cidr '${text}': an IPv6 prefix length is at most 128`;
  if (bits >= 96 && isIpv4Mapped(words)) return v4Block(text, words[3]!, bits - 96);
  const mask = [0, 1, 2, 3].map((w) => maskWord(bits - 32 * w));
  if (words.some((word, w) => (word & ~mask[w]!) >>> 0 !== 0)) {
    const base = [...words].map((word, w) => (word & mask[w]!) >>> 0);
    return `cidr '${text}' has host bits set; the block is ${formatIpv6(base)}/${bits}`;
  }
  // Joined (not concatenated): rules keep this text, and a join is one flat string, not a chain.
  return { version: 6, words: [...words], bits, text: [formatIpv6([...words]), bits].join('/') };
}

function v4Block(text: string, addr: number, bits: number): Cidr | string {
  const mask = maskWord(bits);
  if ((addr & ~mask) >>> 0 !== 0) return `cidr '${text}' has host bits set; the block is ${formatIpv4((addr & mask) >>> 0)}/${bits}`;
  return { version: 4, words: [addr], bits, text: [formatIpv4(addr), bits].join('/') };
}

/** The mask of the first `bits` bits of a 32-bit word (`bits` may be ≤ 0 or ≥ 32). */
function maskWord(bits: number): number {
  if (bits <= 0) return 0;
  if (bits >= 32) return 0xffffffff;
  return (0xffffffff << (32 - bits)) >>> 0;
}

export function formatIpv4(addr: number): string {
  return `${addr >>> 24}.${(addr >>> 16) & 255}.${(addr >>> 8) & 255}.${addr & 255}`;
}

/** RFC 5952 text: lower case, no leading zeros, the longest run of two or more zero groups as `::` (the first of equal runs). */
export function formatIpv6(words: readonly number[]): string {
  const g: number[] = [];
  for (const w of words) g.push(w >>> 16, w & 0xffff);
  let bestAt = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      bestAt = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number): string => g.slice(from, to).map((x) => x.toString(16)).join(':');
  if (bestAt < 0) return hex(0, 8);
  return `${hex(0, bestAt)}::${hex(bestAt + bestLen, 8)}`;
}
