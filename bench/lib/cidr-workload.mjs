// The CIDR workload shared by bench/cidr-match.mjs (in process) and bench/cidr-service.mjs (through the
// service): a fixed-seed set of random cidr: blocks (IPv4 /16 to /32, a quarter IPv6 /48 to /64),
// the rule file with one rule per block (or one rule listing them all) beside a value-less
// remote_address rule, and a fixed pool of
// addresses (half inside some block when there are blocks, half random; a quarter IPv6).
export const POOL = 4096;

// A fixed-seed generator: every run draws the same rules and addresses.
let seed = 0x2501;
const rnd = () => {
  // xorshift32: every bit is usable (an LCG's low bits cycle quickly)
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed;
};
const v4 = (n) => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
const v6 = (hi, lo) => `2001:db8:${(hi & 0xffff).toString(16)}:${(lo >>> 16).toString(16)}::${(lo & 0xffff).toString(16)}`;

export function blocks(count) {
  const out = [];
  const seen = new Set();
  while (out.length < count) {
    if (out.length % 4 === 3) {
      // IPv6 /48 .. /64 under 2001:db8::/32
      const hi = rnd() & 0xffff;
      const lo = rnd();
      const bits = 48 + (rnd() % 17);
      const text = `2001:db8:${hi.toString(16)}::/48`;
      const key = bits === 48 ? text : `2001:db8:${hi.toString(16)}:${((lo >>> 16) & (0xffff << (64 - bits))).toString(16)}::/${bits}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(key);
      continue;
    }
    const bits = 16 + (rnd() % 17);
    const mask = bits === 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0;
    const addr = (rnd() & mask) >>> 0;
    const text = `${v4(addr)}/${bits}`;
    if (seen.has(text)) continue;
    seen.add(text);
    out.push(text);
  }
  return out;
}

/** The rule file: one rule per block, or (`list`) one rule whose `cidr:` lists every block. */
export function rulesYaml(cidrs, { list = false } = {}) {
  const lines = ['domain: bench', 'descriptors:', '  - {key: remote_address, rate_limit: {unit: hour, requests_per_unit: 4000000000}}'];
  if (list && cidrs.length > 0) {
    lines.push('  - key: remote_address', '    rate_limit: {unit: hour, requests_per_unit: 4000000000}', '    cidr:');
    for (const c of cidrs) lines.push(`      - "${c}"`);
  } else {
    for (const c of cidrs) lines.push(`  - {key: remote_address, cidr: "${c}", rate_limit: {unit: hour, requests_per_unit: 4000000000}}`);
  }
  return lines.join('\n') + '\n';
}

/** Addresses: half taken inside the 100k blocks (when there are any), half random; a quarter IPv6. */
export function addresses(cidrs) {
  const out = [];
  for (let i = 0; i < POOL; i++) {
    if (i % 4 === 3) {
      out.push(v6(rnd(), rnd()));
      continue;
    }
    if (i % 2 === 0 && cidrs.length > 0) {
      const c = cidrs[rnd() % cidrs.length];
      if (!c.includes(':')) {
        const [ip, bits] = c.split('/');
        const base = ip.split('.').reduce((a, p) => a * 256 + Number(p), 0);
        const host = Number(bits) === 32 ? 0 : rnd() & ((1 << (32 - Number(bits))) - 1);
        out.push(v4((base + host) >>> 0));
        continue;
      }
    }
    out.push(v4(rnd()));
  }
  return out;
}

