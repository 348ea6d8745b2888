// Matching descriptor values by CIDR block and prefix (docs/ratelimit.md, "Matching by CIDR and
// prefix"): the address parser, the precedence against exact values and `*` wildcards, the
// refusals, and property tests — for random rule lists and random addresses written in every text
// form, the rule that matches is exactly the one a reference matcher (a linear scan on numbers)
// picks: the longest block containing the address, else the longest prefix of the value.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fcOptions } from '@rls/testkit';
import { ConfigError, loadRuleSet, loadXdsRuleSet, parseCidr, parseIpv4, parseIpv6, ValueIndex } from '@rls/engine';
import { decodeRateLimitConfig, encodeRateLimitConfig } from '@rls/rls-proto';

const load = (yaml: string) => loadRuleSet([{ name: 'cidr.yaml', content: yaml }], { mergeDomainConfig: false });
const nameOf = (rs: ReturnType<typeof load>, value: string, key = 'remote_address'): string | undefined => rs.getLimit('d', { entries: [{ key, value }] })?.limit.name;

/** The refusal of a rule file whose one descriptor (key k, line 3) has `body`, followed by `more`. */
function refusal(body: string, more = ''): string {
  try {
    load(`domain: d\ndescriptors:\n  - key: k\n    ${body}\n    rate_limit: {unit: second, requests_per_unit: 1}\n${more}`);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.message;
  }
  return assert.fail('expected a refusal');
}

describe('address text', () => {
  test('IPv4: four decimal parts of 0-255, no leading zeros, nothing else', () => {
    assert.equal(parseIpv4('10.1.2.3'), 0x0a010203);
    assert.equal(parseIpv4('255.255.255.255'), 0xffffffff);
    assert.equal(parseIpv4('0.0.0.0'), 0);
    for (const bad of ['10.1.2', '10.1.2.3.4', '256.1.1.1', '01.1.1.1', '1.1.1.1 ', ' 1.1.1.1', '1..1.1', '', '1.1.1.1x', '1111.1.1.1', 'a.b.c.d', '1.1.1.']) assert.equal(parseIpv4(bad), -1, JSON.stringify(bad));
  });

  test('IPv6: every RFC 4291 text form; zone ids and brackets are not addresses', () => {
    const w = new Uint32Array(4);
    const words = (text: string): number[] | undefined => (parseIpv6(text, w) ? [...w] : undefined);
    assert.deepEqual(words('2001:db8::1'), [0x20010db8, 0, 0, 1]);
    assert.deepEqual(words('2001:DB8:0:0:0:0:0:1'), [0x20010db8, 0, 0, 1]);
    assert.deepEqual(words('::'), [0, 0, 0, 0]);
    assert.deepEqual(words('::1'), [0, 0, 0, 1]);
    assert.deepEqual(words('fe80::'), [0xfe800000, 0, 0, 0]);
    assert.deepEqual(words('::ffff:10.1.2.3'), [0, 0, 0xffff, 0x0a010203]);
    assert.deepEqual(words('1:2:3:4:5:6:1.2.3.4'), [0x00010002, 0x00030004, 0x00050006, 0x01020304]);
    for (const bad of ['1::2::3', ':1', '1:', '1:2:3:4:5:6:7:8:9', '12345::', 'fe80::1%eth0', '[::1]', '::1.2.3', '1:2:3:4:5:6:7:1.2.3.4', 'g::', '1:2:3:4:5:6:7', ':::']) assert.equal(words(bad), undefined, bad);
  });

  test('CIDR blocks: canonical text, host bits refused with the block named, IPv4-mapped blocks taken as IPv4', () => {
    assert.deepEqual(parseCidr('10.0.0.0/8'), { version: 4, words: [0x0a000000], bits: 8, text: '10.0.0.0/8' });
    assert.deepEqual(parseCidr('2001:0DB8:0000::/32'), { version: 6, words: [0x20010db8, 0, 0, 0], bits: 32, text: '2001:db8::/32' });
    assert.deepEqual(parseCidr('::ffff:10.0.0.0/104'), { version: 4, words: [0x0a000000], bits: 8, text: '10.0.0.0/8' });
    assert.equal((parseCidr('0.0.0.0/0') as { text: string }).text, '0.0.0.0/0');
    assert.equal(parseCidr('10.0.0.1/8'), "cidr '10.0.0.1/8' has host bits set; the block is 10.0.0.0/8");
    assert.equal(parseCidr('2001:db8::1/32'), "cidr '2001:db8::1/32' has host bits set; the block is 2001:db8::/32");
    assert.equal(parseCidr('10.0.0.0'), "cidr '10.0.0.0' needs a prefix length (e.g. 10.0.0.0/8, 2001:db8::/32)");
    assert.equal(parseCidr('10.0.0.0/33'), "cidr '10.0.0.0/33': an IPv4 prefix length is at most 32");
    assert.equal(parseCidr('::/129'), "cidr '::/129': an IPv6 prefix length is at most 128");
    assert.equal(parseCidr('10.0.0.0/x'), "cidr '10.0.0.0/x' has an invalid prefix length 'x'");
    assert.equal(parseCidr('10.0.0.0/'), "cidr '10.0.0.0/' has an invalid prefix length ''");
    assert.equal(parseCidr('host/8'), "cidr 'host/8' is not an IPv4 or IPv6 block");
  });
});

describe('cidr and prefix rules', () => {
  const rules = load(`domain: d
descriptors:
  - {key: remote_address, value: 10.1.2.3, rate_limit: {unit: second, requests_per_unit: 1, name: exact}}
  - {key: remote_address, cidr: 10.0.0.0/8, rate_limit: {unit: second, requests_per_unit: 1, name: ten}}
  - {key: remote_address, cidr: 10.1.0.0/16, rate_limit: {unit: second, requests_per_unit: 1, name: ten-one}}
  - {key: remote_address, cidr: "2001:db8::/32", rate_limit: {unit: second, requests_per_unit: 1, name: doc6}}
  - {key: remote_address, cidr: 0.0.0.0/0, rate_limit: {unit: second, requests_per_unit: 1, name: any4}}
  - {key: remote_address, value: "192.*", rate_limit: {unit: second, requests_per_unit: 1, name: wild}}
  - {key: remote_address, rate_limit: {unit: second, requests_per_unit: 1, name: valueless}}
  - {key: team, prefix: "team-", rate_limit: {unit: second, requests_per_unit: 1, name: team}}
  - {key: team, prefix: "team-red-", rate_limit: {unit: second, requests_per_unit: 1, name: red}}
  - {key: team, value: "team-red-1", rate_limit: {unit: second, requests_per_unit: 1, name: red1}}
  - {key: team, value: "te*", rate_limit: {unit: second, requests_per_unit: 1, name: te-wild}}
`);

  test('precedence: exact value, then the longest block or prefix, then wildcards, then the key without value', () => {
    assert.equal(nameOf(rules, '10.1.2.3'), 'exact');
    assert.equal(nameOf(rules, '10.1.2.4'), 'ten-one');
    assert.equal(nameOf(rules, '10.9.9.9'), 'ten');
    assert.equal(nameOf(rules, '::ffff:10.9.9.9'), 'ten', 'an IPv4-mapped address matches as IPv4');
    assert.equal(nameOf(rules, '192.0.2.1'), 'any4', 'a /0 block is more specific than a wildcard');
    assert.equal(nameOf(rules, '2001:db8:1::7'), 'doc6');
    assert.equal(nameOf(rules, '2001:db9::1'), 'valueless', 'no IPv6 block contains it');
    assert.equal(nameOf(rules, 'not-an-address'), 'valueless');
    assert.equal(nameOf(rules, '192.x'), 'wild', 'not an address: the wildcard');
    assert.equal(nameOf(rules, 'team-red-1', 'team'), 'red1');
    assert.equal(nameOf(rules, 'team-red-2', 'team'), 'red');
    assert.equal(nameOf(rules, 'team-blue', 'team'), 'team');
    assert.equal(nameOf(rules, 'teal', 'team'), 'te-wild');
    assert.equal(nameOf(rules, 'x', 'team'), undefined);
  });

  test('one key with blocks and prefixes: an address takes its longest block, else its longest prefix; other text its prefix', () => {
    const mixed = load(`domain: d
descriptors:
  - {key: remote_address, cidr: 10.0.0.0/8, rate_limit: {unit: second, requests_per_unit: 1, name: ten}}
  - {key: remote_address, cidr: "2001:db8::/32", rate_limit: {unit: second, requests_per_unit: 1, name: doc6}}
  - {key: remote_address, prefix: "10.", rate_limit: {unit: second, requests_per_unit: 1, name: p10}}
  - {key: remote_address, prefix: "192.", rate_limit: {unit: second, requests_per_unit: 1, name: p192}}
  - {key: remote_address, prefix: "2001:", rate_limit: {unit: second, requests_per_unit: 1, name: p2001}}
`);
    assert.equal(nameOf(mixed, '10.1.1.1'), 'ten', 'a block before a prefix');
    assert.equal(nameOf(mixed, '192.0.2.1'), 'p192', 'an address in no block: its prefix');
    assert.equal(nameOf(mixed, '2001:db8::1'), 'doc6');
    assert.equal(nameOf(mixed, '2001:db9::1'), 'p2001');
    assert.equal(nameOf(mixed, '10.x'), 'p10', 'not an address: its prefix');
    assert.equal(nameOf(mixed, '10.0.0.0/8'), 'ten', 'the block written exactly');
    assert.equal(nameOf(mixed, '10.*'), 'p10', 'the prefix written exactly');
    assert.equal(nameOf(mixed, '11.0.0.1'), undefined);
  });

  test('a value written exactly as the block or `<prefix>*` of a rule matches that rule (as an exact value would); a block or prefix is listed once', () => {
    assert.equal(nameOf(rules, '10.0.0.0/8'), 'ten');
    assert.equal(nameOf(rules, '2001:db8::/32'), 'doc6');
    assert.equal(nameOf(rules, '10.1.0.0/16'), 'ten-one');
    assert.equal(nameOf(rules, '10.0.0.0/9'), 'valueless', 'no such block: not an address either');
    assert.equal(nameOf(rules, 'team-red-*', 'team'), 'red');
    assert.equal(nameOf(rules, 'team-*', 'team'), 'team');
    assert.equal(rules.dump().split('\n').filter((l) => l.startsWith('d.remote_address_10.0.0.0/8:')).length, 1);
    const index = new ValueIndex<number>();
    for (const [text, fresh] of [['10.0.0.0/8', true], ['10.0.0.0/8', false], ['10.0.0.0/9', true], ['10.0.0.0/26', true], ['10.0.0.0/26', false], ['0.0.0.0/0', true], ['0.0.0.0/0', false], ['::/0', true], ['2001:db8::/33', true], ['2001:db8::/33', false]] as const) {
      assert.equal(index.addCidr(parseCidr(text) as never, 0), fresh, text);
    }
    assert.equal(index.addPrefix('team-', 1), true);
    assert.equal(index.addPrefix('team-', 1), false);
    // Trimmed to size after a load; still correct, and still growing if added to.
    const grown = new ValueIndex<string>();
    for (let i = 0; i < 300; i++) grown.addCidr(parseCidr(`10.${i >> 8}.${i & 255}.0/24`) as never, `a${i}`);
    grown.trim();
    assert.equal(grown.lookup('10.0.7.9'), 'a7');
    for (let i = 300; i < 600; i++) grown.addCidr(parseCidr(`10.${i >> 8}.${i & 255}.0/24`) as never, `a${i}`);
    grown.trim();
    assert.equal(grown.lookup('10.2.1.1'), 'a513');
    assert.equal(grown.lookup('10.0.7.9'), 'a7');
    assert.equal(grown.lookup('10.3.0.1'), undefined);
  });

  test('paths, /rlconfig and statistics use the canonical block and `<prefix>*`; counters are per value unless share_threshold', () => {
    assert.match(rules.dump(), /^d\.remote_address_10\.0\.0\.0\/8: unit=SECOND/m);
    assert.match(rules.dump(), /^d\.remote_address_2001:db8::\/32: unit=SECOND/m);
    assert.match(rules.dump(), /^d\.team_team-red-\*: unit=SECOND/m);
    const m = rules.getLimit('d', { entries: [{ key: 'remote_address', value: '10.7.7.7' }] })!;
    assert.equal(m.stats.key, 'd.remote_address_10.0.0.0/8');
    assert.equal(m.sharePatterns, undefined, 'each address counts on its own');
    const shared = load(`domain: d
descriptors:
  - {key: ip, cidr: 192.0.2.0/24, share_threshold: true, value_to_metric: true, rate_limit: {unit: second, requests_per_unit: 0}}
  - {key: ip, cidr: 198.51.100.0/24, value_to_metric: true, rate_limit: {unit: second, requests_per_unit: 5}}
`);
    const s = shared.getLimit('d', { entries: [{ key: 'ip', value: '192.0.2.77' }] })!;
    assert.deepEqual(s.sharePatterns, ['192.0.2.0/24'], 'the whole block shares one counter');
    assert.equal(shared.getLimit('d', { entries: [{ key: 'ip', value: '198.51.100.9' }] })!.stats.key, 'd.ip_198.51.100.9', 'value_to_metric puts the address in the statistics');
  });

  test('refusals', () => {
    const fail = refusal;
    assert.equal(fail('cidr: 10.0.0.1/8'), "cidr.yaml: cidr '10.0.0.1/8' has host bits set; the block is 10.0.0.0/8 (descriptor 'd.k', line 3)");
    assert.equal(fail('cidr: nonsense'), "cidr.yaml: cidr 'nonsense' needs a prefix length (e.g. 10.0.0.0/8, 2001:db8::/32) (descriptor 'd.k', line 3)");
    assert.equal(fail('prefix: ""'), "cidr.yaml: prefix must not be empty (a descriptor without value matches every value) (descriptor 'd.k', line 3)");
    assert.match(fail('cidr: 10.0.0.0/8\n    value: x'), /a descriptor matches by one of value, cidr or prefix, not value and cidr \(line 3\)/);
    assert.match(fail('cidr: 10.0.0.0/8\n    prefix: x'), /not cidr and prefix \(line 3\)/);
    assert.match(
      (() => {
        try {
          load('domain: d\ndescriptors:\n  - {key: k, cidr: 10.0.0.0/8}\n  - {key: k, cidr: "::ffff:10.0.0.0/104"}\n');
        } catch (err) {
          return (err as Error).message;
        }
        return '';
      })(),
      /duplicate descriptor composite key 'd\.k_10\.0\.0\.0\/8'/,
      'the same block written twice is a duplicate',
    );
    for (const [a, b] of [['value: "10.0.0.0/8"', 'cidr: 10.0.0.0/8'], ['cidr: 10.0.0.0/8', 'value: "10.0.0.0/8"'], ['value: "team-*"', 'prefix: "team-"'], ['prefix: "team-"', 'value: "team-*"']]) {
      assert.throws(() => load(`domain: d\ndescriptors:\n  - {key: k, ${a}}\n  - {key: k, ${b}}\n`), /duplicate descriptor composite key 'd\.k_(10\.0\.0\.0\/8|team-\*)'/, `${a} beside ${b}`);
    }
  });

  test('lists: `cidr: [..]` and `prefix: [..]` are one rule, named by the first entry and how many follow', () => {
    const rs = load(`domain: d
descriptors:
  - key: ip
    cidr: [192.0.2.0/24, "2001:db8::/32", 198.51.100.0/24, 10.0.0.0/8]
    rate_limit: {unit: second, requests_per_unit: 0, name: deny}
  - {key: ip, cidr: 10.1.0.0/16, rate_limit: {unit: second, requests_per_unit: 5, name: inner}}
  - {key: ip, cidr: [203.0.113.0/24], rate_limit: {unit: second, requests_per_unit: 7, name: one}}
  - {key: team, prefix: [team-, crew-], share_threshold: true, rate_limit: {unit: minute, requests_per_unit: 60, name: teams}}
  - {key: ip, rate_limit: {unit: second, requests_per_unit: 100, name: others}}
`);
    for (const [value, want] of [['192.0.2.9', 'deny'], ['2001:db8::7', 'deny'], ['198.51.100.1', 'deny'], ['10.200.0.1', 'deny'], ['10.1.2.3', 'inner'], ['203.0.113.4', 'one'], ['8.8.8.8', 'others']] as const) {
      assert.equal(nameOf(rs, value, 'ip'), want, value);
    }
    assert.equal(nameOf(rs, 'crew-x', 'team'), 'teams');
    assert.equal(nameOf(rs, 'team-y', 'team'), 'teams');
    const m = rs.getLimit('d', { entries: [{ key: 'ip', value: '2001:db8::7' }] })!;
    assert.equal(m.stats.key, 'd.ip_192.0.2.0/24+3', 'every block of the list counts in one set of statistics');
    assert.equal(m.sharePatterns, undefined, 'each address counts on its own');
    const one = rs.getLimit('d', { entries: [{ key: 'ip', value: '203.0.113.4' }] })!;
    assert.equal(one.stats.key, 'd.ip_203.0.113.0/24', 'a list of one is the block itself');
    const team = rs.getLimit('d', { entries: [{ key: 'team', value: 'crew-x' }] })!;
    assert.deepEqual(team.sharePatterns, ['team-*+1'], 'share_threshold: the whole list shares one counter');
    assert.equal(rs.dump().split('\n').filter((l) => l.startsWith('d.ip_192.0.2.0/24+3: unit=SECOND requests_per_unit=0')).length, 1);
  });

  test('lists: refusals name the entry and the descriptor', () => {
    const fail = refusal;
    assert.equal(fail('cidr: []'), "cidr.yaml: config error, 'cidr' is an empty list (line 4)");
    assert.equal(fail('prefix: [a, {b: c}]'), "cidr.yaml: config error, every entry of a 'prefix' list is a prefix (line 4)");
    assert.equal(fail('cidr: [10.0.0.0/8, 10.0.0.1/16]'), "cidr.yaml: cidr list entry #2: cidr '10.0.0.1/16' has host bits set; the block is 10.0.0.0/16 (descriptor 'd.k', line 3)");
    assert.equal(fail('prefix: [a, ""]'), "cidr.yaml: prefix list entry #2: prefix must not be empty (a descriptor without value matches every value) (descriptor 'd.k', line 3)");
    assert.equal(fail('cidr: [10.0.0.0/8, 192.0.2.0/24, "::ffff:10.0.0.0/104"]'), "cidr.yaml: cidr 10.0.0.0/8 is written twice under key 'k' (in this list) (descriptor 'd.k_10.0.0.0/8+2', line 3)");
    assert.equal(
      fail('cidr: [10.0.0.0/8, 192.0.2.0/24]', '  - {key: k, cidr: 192.0.2.0/24}\n'),
      "cidr.yaml: cidr 192.0.2.0/24 is written twice under key 'k' (by another rule of this level) (descriptor 'd.k_192.0.2.0/24', line 6)",
    );
    assert.equal(fail('prefix: [a, b]', '  - {key: k, prefix: [c, b]}\n'), `cidr.yaml: prefix "b" is written twice under key 'k' (by another rule of this level) (descriptor 'd.k_c*+1', line 6)`);
  });

  test('xDS: RateLimitDescriptor.cidr (1004), .prefix (1005), .cidrs (1008), .prefixes (1009)', () => {
    const d = (extra: object) => ({ key: 'k', value: '', descriptors: [], shadowMode: false, detailedMetric: false, quotaMode: false, rateLimit: { unit: 'SECOND', requestsPerUnit: 1, unlimited: false, name: JSON.stringify(extra), replaces: [] }, ...extra });
    const msg = { name: 'res', domain: 'd', descriptors: [d({ cidr: '10.0.0.0/8' }), d({ prefix: 'team-' })] };
    const decoded = decodeRateLimitConfig(encodeRateLimitConfig(msg));
    assert.deepEqual(decoded, msg);
    const rs = loadXdsRuleSet([decoded], { mergeDomainConfig: false });
    assert.equal(nameOf(rs, '10.2.3.4', 'k'), '{"cidr":"10.0.0.0/8"}');
    assert.equal(nameOf(rs, 'team-x', 'k'), '{"prefix":"team-"}');
    assert.throws(() => loadXdsRuleSet([{ ...msg, descriptors: [d({ cidr: '10.0.0.0/8', value: 'v' })] }], { mergeDomainConfig: false }), /res: a descriptor matches by one of value, cidr or prefix, not value and cidr \(descriptor 'd\.k'\)/);
    // Lists: RateLimitDescriptor.cidrs (1008) and .prefixes (1009), one rule each.
    const lists = { name: 'res', domain: 'd', descriptors: [d({ cidrs: ['10.0.0.0/8', '192.0.2.0/24'] }), d({ prefixes: ['team-', 'crew-'] })] };
    const decodedLists = decodeRateLimitConfig(encodeRateLimitConfig(lists));
    assert.deepEqual(decodedLists, lists);
    const ls = loadXdsRuleSet([decodedLists], { mergeDomainConfig: false });
    assert.equal(nameOf(ls, '192.0.2.1', 'k'), '{"cidrs":["10.0.0.0/8","192.0.2.0/24"]}');
    assert.equal(nameOf(ls, 'crew-1', 'k'), '{"prefixes":["team-","crew-"]}');
    assert.equal(ls.getLimit('d', { entries: [{ key: 'k', value: '10.9.9.9' }] })!.stats.key, 'd.k_10.0.0.0/8+1');
    assert.throws(() => loadXdsRuleSet([{ ...msg, descriptors: [d({ cidr: '10.0.0.0/8', cidrs: ['192.0.2.0/24'] })] }], { mergeDomainConfig: false }), /res: descriptor 'k' sets both cidr and cidrs: one text or one list/);
  });
});

// ---- property tests against a reference matcher -------------------------------------------------

/** An address as the test generates it: its number (BigInt, 32 or 128 bits) and a text form. */
interface Addr {
  v6: boolean;
  n: bigint;
}

const maskOf = (bits: number, width: number): bigint => (bits === 0 ? 0n : ((1n << BigInt(bits)) - 1n) << BigInt(width - bits));

function v4Text(n: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join('.');
}

/** IPv6 text in one of several forms the parser must accept: full, compressed, upper case, with an IPv4 tail. */
function v6Text(n: bigint, form: number): string {
  const g = Array.from({ length: 8 }, (_v, i) => Number((n >> BigInt(112 - 16 * i)) & 0xffffn));
  const hex = g.map((x) => x.toString(16));
  switch (form % 4) {
    case 0:
      return hex.join(':');
    case 1: {
      // compress the first run of zero groups (any length ≥ 1)
      const i = g.indexOf(0);
      if (i < 0) return hex.join(':');
      let j = i;
      while (j < 8 && g[j] === 0) j++;
      return `${hex.slice(0, i).join(':')}::${hex.slice(j).join(':')}`;
    }
    case 2:
      return hex.map((h) => h.toUpperCase().padStart(4, '0')).join(':');
    default:
      return `${hex.slice(0, 6).join(':')}:${v4Text(n & 0xffffffffn)}`;
  }
}

interface RuleDef {
  v6: boolean;
  n: bigint;
  bits: number;
}

function referenceBest(rules: readonly RuleDef[], a: Addr): number {
  let best = -1;
  let bestBits = -1;
  const width = a.v6 ? 128 : 32;
  rules.forEach((r, i) => {
    if (r.v6 !== a.v6) return;
    const m = maskOf(r.bits, width);
    if ((a.n & m) === r.n && r.bits > bestBits) {
      best = i;
      bestBits = r.bits;
    }
  });
  return best;
}

describe('property: the index picks what a linear scan picks', () => {
  const v4 = fc.bigInt({ min: 0n, max: 2n ** 32n - 1n });
  // IPv6 around a few fixed /16s, so blocks and addresses overlap often.
  const v6 = fc.tuple(fc.constantFrom(0x2001n, 0xfe80n, 0x0n), fc.bigInt({ min: 0n, max: 2n ** 112n - 1n })).map(([hi, lo]) => (hi << 112n) | lo);
  const ruleArb = fc.oneof(
    fc.tuple(v4, fc.integer({ min: 0, max: 32 })).map(([n, bits]): RuleDef => ({ v6: false, n: n & maskOf(bits, 32), bits })),
    fc.tuple(v6, fc.integer({ min: 0, max: 128 })).map(([n, bits]): RuleDef => ({ v6: true, n: n & maskOf(bits, 128), bits })),
  );

  test('CIDR: random blocks, random addresses near them, every text form (ValueIndex and the rule set)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(ruleArb, { minLength: 1, maxLength: 40, selector: (r) => `${r.v6}/${r.n}/${r.bits}` }),
        fc.array(fc.tuple(fc.nat(), fc.bigInt({ min: 0n, max: 2n ** 128n - 1n }), fc.nat(), fc.boolean()), { minLength: 1, maxLength: 30 }),
        (rules, probes) => {
          const index = new ValueIndex<number>();
          const yaml: string[] = ['domain: d', 'descriptors:'];
          rules.forEach((r, i) => {
            const text = `${r.v6 ? v6Text(r.n, 1) : v4Text(r.n)}/${r.bits}`;
            const cidr = parseCidr(text);
            assert.ok(typeof cidr !== 'string', `${text}: ${typeof cidr === 'string' ? cidr : ''}`);
            assert.ok(index.addCidr(cidr, i));
            yaml.push(`  - {key: ip, cidr: "${text}", rate_limit: {unit: second, requests_per_unit: 1, name: r${i}}}`);
          });
          const rs = load(yaml.join('\n') + '\n');
          for (const [pick, noise, form, mapped] of probes) {
            // An address inside a random rule's block (noise in its host bits), or anywhere.
            const base = rules[pick % rules.length]!;
            const width = base.v6 ? 128 : 32;
            const n = (base.n | (noise & ~maskOf(base.bits, width))) & (width === 32 ? 0xffffffffn : 2n ** 128n - 1n);
            const a: Addr = { v6: base.v6, n };
            const text = a.v6 ? v6Text(n, form) : mapped ? `::ffff:${v4Text(n)}` : v4Text(n);
            const want = referenceBest(rules, a);
            assert.equal(index.lookup(text) ?? -1, want, text);
            assert.equal(nameOf(rs, text, 'ip') ?? '', want < 0 ? '' : `r${want}`, text);
          }
        },
      ),
      fcOptions(300),
    );
  });

  test('CIDR lists: random blocks dealt into `cidr: [..]` lists pick the list of the block a linear scan picks', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(ruleArb, fc.integer({ min: 0, max: 4 })), { minLength: 1, maxLength: 40, selector: ([r]) => `${r.v6}/${r.n}/${r.bits}` }),
        fc.array(fc.tuple(fc.nat(), fc.bigInt({ min: 0n, max: 2n ** 128n - 1n }), fc.nat()), { minLength: 1, maxLength: 30 }),
        (dealt, probes) => {
          const rules = dealt.map(([r]) => r);
          const lists = new Map<number, string[]>();
          for (const [r, group] of dealt) {
            const text = `${r.v6 ? v6Text(r.n, 0) : v4Text(r.n)}/${r.bits}`;
            lists.set(group, [...(lists.get(group) ?? []), JSON.stringify(text)]);
          }
          const yaml = ['domain: d', 'descriptors:'];
          for (const [group, texts] of lists) yaml.push(`  - {key: ip, cidr: [${texts.join(', ')}], rate_limit: {unit: second, requests_per_unit: 1, name: g${group}}}`);
          const rs = load(yaml.join('\n') + '\n');
          for (const [pick, noise, form] of probes) {
            const base = rules[pick % rules.length]!;
            const width = base.v6 ? 128 : 32;
            const n = (base.n | (noise & ~maskOf(base.bits, width))) & (width === 32 ? 0xffffffffn : 2n ** 128n - 1n);
            const text = base.v6 ? v6Text(n, form) : v4Text(n);
            const want = referenceBest(rules, { v6: base.v6, n });
            assert.equal(nameOf(rs, text, 'ip') ?? '', want < 0 ? '' : `g${dealt[want]![1]}`, text);
          }
        },
      ),
      fcOptions(200),
    );
  });

  test('CIDR in a big list: the first-level table (after the bits all blocks share) picks what a linear scan picks', () => {
    // 300 long blocks under a random common prefix (0 to 48 bits), the table built whatever the
    // list's size; a few random blocks beside them may break the common prefix (then nothing is skipped).
    const width = fc.boolean();
    fc.assert(
      fc.property(
        width,
        fc.constantFrom(0, 8, 16, 20, 32, 40, 48),
        fc.bigInt({ min: 0n, max: 2n ** 128n - 1n }),
        fc.uniqueArray(ruleArb, { maxLength: 4, selector: (r) => `${r.v6}/${r.n}/${r.bits}` }),
        fc.array(fc.tuple(fc.nat(), fc.bigInt({ min: 0n, max: 2n ** 128n - 1n }), fc.nat(), fc.boolean()), { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 2 ** 30 }),
        (v6, common, prefixBits, extra, probes, seed) => {
          const w = v6 ? 128 : 32;
          const c = Math.min(common, w - 16);
          const all = (1n << BigInt(w)) - 1n;
          const prefix = (prefixBits & all) & maskOf(c, w);
          let x = seed;
          const rnd = (): bigint => {
            x ^= x << 13;
            x ^= x >>> 17;
            x ^= x << 5;
            return BigInt(x >>> 0);
          };
          const rules: RuleDef[] = [];
          const seen = new Set<string>();
          while (rules.length < 300) {
            const bits = w - Number(rnd() % 9n);
            let n = 0n;
            for (let k = 0; k < w / 32; k++) n = (n << 32n) | rnd();
            n = (prefix | (n & ~maskOf(c, w) & all)) & maskOf(bits, w);
            const id = `${n}/${bits}`;
            if (seen.has(id)) continue;
            seen.add(id);
            rules.push({ v6, n, bits });
          }
          for (const r of extra) if (!(r.v6 === v6 && seen.has(`${r.n}/${r.bits}`))) rules.push(r);
          const index = new ValueIndex<number>();
          rules.forEach((r, i) => {
            const cidr = parseCidr(`${r.v6 ? v6Text(r.n, 0) : v4Text(r.n)}/${r.bits}`);
            assert.ok(typeof cidr !== 'string' && index.addCidr(cidr, i));
          });
          index.trim(1);
          const built = index.firstLevel()[v6 ? 'v6' : 'v4'];
          // Without the extra blocks every block shares the common prefix: the table skips it (whole 16-bit steps).
          if (extra.length === 0) assert.equal(built, c - (c % 16), 'the shared leading bits are skipped');
          else assert.notEqual(built, undefined, 'the table has its first-level table');
          const check = (): void => {
            for (const [pick, noise, form, mapped] of probes) {
              const base = rules[pick % rules.length]!;
              const bw = base.v6 ? 128 : 32;
              const n = (base.n | (noise & ~maskOf(base.bits, bw))) & (bw === 32 ? 0xffffffffn : 2n ** 128n - 1n);
              const text = base.v6 ? v6Text(n, form) : mapped ? `::ffff:${v4Text(n)}` : v4Text(n);
              assert.equal(index.lookup(text) ?? -1, referenceBest(rules, { v6: base.v6, n }), text);
            }
          };
          check();
          // A block added after the trim drops the table (the lookups stay right); the next trim builds it again.
          const late: RuleDef = { v6, n: prefix, bits: c };
          const cidr = parseCidr(`${v6 ? v6Text(late.n, 0) : v4Text(late.n)}/${late.bits}`);
          if (typeof cidr !== 'string' && index.addCidr(cidr, rules.length)) {
            rules.push(late);
            assert.equal(index.firstLevel()[v6 ? 'v6' : 'v4'], undefined);
            check();
            index.trim(1);
            check();
          }
        },
      ),
      fcOptions(100),
    );
    // By default only a big list gets the table (1 MB); a small one is searched whole.
    const small = new ValueIndex<number>();
    small.addCidr(parseCidr('10.0.0.0/8') as never, 0);
    small.addCidr(parseCidr('2001:db8::/32') as never, 1);
    small.trim();
    assert.deepEqual(small.firstLevel(), { v4: undefined, v6: undefined });
    assert.equal(small.lookup('10.1.2.3'), 0);
    // The table (1 MB) comes at 8,192 ranges (4,096 disjoint /32 blocks: 8,193 ranges), at most 16 times the rows' memory.
    const byCount = (blocks: number): ValueIndex<number> => {
      const index = new ValueIndex<number>();
      for (let i = 0; i < blocks; i++) index.addCidr(parseCidr(`10.${(i >> 7) & 255}.${(i & 127) * 2}.1/32`) as never, i);
      index.trim();
      return index;
    };
    assert.equal(byCount(4000).firstLevel().v4, undefined, '8,001 ranges: searched whole');
    const big = byCount(4096);
    assert.equal(big.firstLevel().v4, 0, '8,193 ranges: the first-level table');
    assert.equal(big.lookup('10.31.254.1'), 4095);
    assert.equal(big.lookup('10.31.254.2'), undefined);
  });

  test('first-level slots: up to two boundaries on a 16-bit step answer from the slot, more (or finer) from the rows', () => {
    const index = new ValueIndex<string>();
    const add = (cidr: string): void => assert.ok(index.addCidr(parseCidr(cidr) as never, cidr));
    // IPv4 (the slot is the first 16 bits): 10.0/16 holds none inside; 10.1/16 one block (two boundaries);
    // 10.2/16 two blocks (four: spilled); 10.3.0.0/16 itself plus a block ending at the slot's end (one).
    add('10.1.4.0/24');
    add('10.2.4.0/24');
    add('10.2.9.128/25');
    add('10.3.0.0/16');
    add('10.3.255.0/24');
    // IPv6 under 2001:db8::/32 (the slot is the next 16 bits): a /64 sits on the 16-bit step after the slot's
    // (inline); a /80 does not (its end lies below that step: the slot is spilled).
    add('2001:db8:1:5::/64');
    add('2001:db8:2:5:1::/80');
    index.trim(1);
    assert.deepEqual(index.firstLevel(), { v4: 0, v6: 32 });
    assert.deepEqual(index.inlineSlots(), { v4: 65535, v6: 65535 }, 'one slot of each version is spilled');
    const cases: [string, string | undefined][] = [
      ['10.0.200.1', undefined],
      ['10.1.3.255', undefined],
      ['10.1.4.0', '10.1.4.0/24'],
      ['10.1.4.255', '10.1.4.0/24'],
      ['10.1.5.0', undefined],
      ['10.2.4.7', '10.2.4.0/24'],
      ['10.2.5.0', undefined],
      ['10.2.9.127', undefined],
      ['10.2.9.128', '10.2.9.128/25'],
      ['10.2.10.0', undefined],
      ['10.3.0.0', '10.3.0.0/16'],
      ['10.3.254.255', '10.3.0.0/16'],
      ['10.3.255.0', '10.3.255.0/24'],
      ['10.3.255.255', '10.3.255.0/24'],
      ['10.4.0.0', undefined],
      ['::ffff:10.1.4.9', '10.1.4.0/24'],
      ['2001:db8:1:4:ffff:ffff:ffff:ffff', undefined],
      ['2001:db8:1:5::', '2001:db8:1:5::/64'],
      ['2001:db8:1:5:ffff:ffff:ffff:ffff', '2001:db8:1:5::/64'],
      ['2001:db8:1:6::', undefined],
      ['2001:db8:2:5::ffff', undefined],
      ['2001:db8:2:5:1::', '2001:db8:2:5:1::/80'],
      ['2001:db8:2:5:1:ffff:ffff:ffff', '2001:db8:2:5:1::/80'],
      ['2001:db8:2:5:2::', undefined],
      ['2001:db9::1', undefined],
    ];
    for (const [value, want] of cases) assert.equal(index.lookup(value), want, value);
  });

  test('prefix: random prefixes and values, the longest prefix wins (ValueIndex against a scan)', () => {
    const alpha = fc.string({ unit: fc.constantFrom('a', 'b', 'c', '-', 'é'), minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(fc.uniqueArray(alpha, { minLength: 1, maxLength: 50 }), fc.array(fc.string({ unit: fc.constantFrom('a', 'b', 'c', '-', 'é'), maxLength: 9 }), { maxLength: 40 }), (prefixes, values) => {
        const index = new ValueIndex<number>();
        prefixes.forEach((p, i) => assert.ok(index.addPrefix(p, i)));
        assert.equal(index.addPrefix(prefixes[0]!, -1), false, 'a duplicate is refused');
        for (const v of [...values, ...prefixes]) {
          let want = -1;
          prefixes.forEach((p, i) => {
            if (v.startsWith(p) && (want < 0 || p.length > prefixes[want]!.length)) want = i;
          });
          assert.equal(index.lookup(v) ?? -1, want, v);
        }
      }),
      fcOptions(300),
    );
  });

  test('request values that are not addresses never match a block', () => {
    const index = new ValueIndex<number>();
    index.addCidr(parseCidr('0.0.0.0/0') as never, 4);
    index.addCidr(parseCidr('::/0') as never, 6);
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (s) => {
        const ip4 = parseIpv4(s) >= 0;
        const ip6 = parseIpv6(s, new Uint32Array(4));
        const got = index.lookup(s);
        if (!ip4 && !ip6) assert.equal(got, undefined, s);
        else assert.ok(got === 4 || got === 6, s);
      }),
      fcOptions(2000),
    );
  });
});
