// The algorithm extension of rule files and xDS resources (docs/ratelimit.md, "Algorithms (extension)"):
// parsing, defaults, every refusal by its text, /rlconfig, and the store-support check.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadRuleSet, loadXdsRuleSet, MemoryStore, unsupportedAlgorithmError } from '@rls/engine';
import { decodeRateLimitConfig, encodeRateLimitConfig, type RateLimitConfigMsg } from '@rls/rls-proto';

const load = (yaml: string) => loadRuleSet([{ name: 'alg.yaml', content: yaml }], { mergeDomainConfig: false });
const rule = (rl: string, extra = '') => `domain: d\ndescriptors:\n  - key: k\n${extra}    rate_limit: {${rl}}\n`;

function loadError(yaml: string): string {
  try {
    load(yaml);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.message;
  }
  assert.fail('expected the load to fail');
}

describe('algorithm and burst in rule files', () => {
  test('default is fixed_window; sliding_window and token_bucket with and without burst', () => {
    const rs = load(`domain: d
descriptors:
  - {key: f, rate_limit: {unit: second, requests_per_unit: 5}}
  - {key: f2, rate_limit: {unit: second, requests_per_unit: 5, algorithm: fixed_window}}
  - {key: s, rate_limit: {unit: minute, requests_per_unit: 5, algorithm: sliding_window}}
  - {key: t, rate_limit: {unit: minute, requests_per_unit: 6, algorithm: token_bucket}}
  - {key: b, rate_limit: {unit: hour, requests_per_unit: 3600, algorithm: token_bucket, burst: 100}}
`);
    const limit = (key: string) => rs.getLimit('d', { entries: [{ key, value: 'x' }] })!.limit;
    assert.deepEqual(['f', 'f2', 's', 't', 'b'].map((k) => [limit(k).algorithm, limit(k).burst, limit(k).emissionUs, limit(k).toleranceUs]), [
      ['fixed_window', 0, 0, 0],
      ['fixed_window', 0, 0, 0],
      ['sliding_window', 0, 0, 0],
      ['token_bucket', 6, 10_000_000, 60_000_000],
      ['token_bucket', 100, 1_000_000, 100_000_000],
    ]);
    assert.deepEqual([...rs.algorithms], [
      ['sliding_window', "alg.yaml: descriptor 'd.s'"],
      ['token_bucket', "alg.yaml: descriptor 'd.t'"],
    ]);
  });

  test('/rlconfig shows the algorithm and burst; fixed-window lines stay as upstream prints them', () => {
    const rs = load(`domain: d
descriptors:
  - {key: f, rate_limit: {unit: second, requests_per_unit: 5}}
  - {key: s, rate_limit: {unit: minute, requests_per_unit: 5, algorithm: sliding_window}}
  - {key: t, shadow_mode: true, rate_limit: {unit: minute, requests_per_unit: 6, algorithm: token_bucket, burst: 2}}
`);
    assert.equal(
      rs.dump(),
      'd.f: unit=SECOND requests_per_unit=5, shadow_mode: false, quota_mode: false\n' +
        'd.s: unit=MINUTE requests_per_unit=5, shadow_mode: false, quota_mode: false, algorithm: sliding_window\n' +
        'd.t: unit=MINUTE requests_per_unit=6, shadow_mode: true, quota_mode: false, algorithm: token_bucket, burst: 2\n',
    );
    assert.deepEqual(rs.summary()[0]!.descriptors.map((r) => [r.key, r.algorithm, r.burst]), [
      ['d.f', 'fixed_window', 0],
      ['d.s', 'sliding_window', 0],
      ['d.t', 'token_bucket', 2],
    ]);
  });

  test('refusals name the file, the descriptor and the problem', () => {
    const cases: [string, string][] = [
      [rule('unit: second, requests_per_unit: 5, algorithm: leaky_bucket'), "alg.yaml: unknown rate limit algorithm 'leaky_bucket' (expected one of fixed_window, sliding_window, token_bucket) (descriptor 'd.k', line 3)"],
      [rule('unit: second, requests_per_unit: 5, algorithm: Sliding_Window'), "alg.yaml: unknown rate limit algorithm 'Sliding_Window' (expected one of fixed_window, sliding_window, token_bucket) (descriptor 'd.k', line 3)"],
      [rule('unit: second, requests_per_unit: 5, burst: 3'), "alg.yaml: burst is only valid with algorithm token_bucket, not fixed_window (descriptor 'd.k', line 3)"],
      [rule('unit: second, requests_per_unit: 5, algorithm: sliding_window, burst: 3'), "alg.yaml: burst is only valid with algorithm token_bucket, not sliding_window (descriptor 'd.k', line 3)"],
      [rule('unit: second, requests_per_unit: 5, algorithm: token_bucket, burst: 0'), "alg.yaml: burst must be an integer from 1 to 4294967295, got 0 (descriptor 'd.k', line 3)"],
      [rule('unit: second, requests_per_unit: 5, algorithm: token_bucket, burst: -2'), "alg.yaml: burst must be an integer from 1 to 4294967295, got -2 (descriptor 'd.k', line 3)"],
      [rule('unit: second, requests_per_unit: 5, algorithm: token_bucket, burst: 4294967296'), "alg.yaml: burst must be an integer from 1 to 4294967295, got 4294967296 (descriptor 'd.k', line 3)"],
      [rule('unit: second, requests_per_unit: 5, algorithm: token_bucket, burst: 2.5'), "alg.yaml: burst must be an integer from 1 to 4294967295, got '2.5' (descriptor 'd.k', line 3)"],
      [rule('unit: second, requests_per_unit: 5, algorithm: token_bucket, burst: lots'), "alg.yaml: burst must be an integer from 1 to 4294967295, got 'lots' (descriptor 'd.k', line 3)"],
      [rule('unit: second, requests_per_unit: 0, algorithm: token_bucket'), "alg.yaml: token_bucket needs requests_per_unit of at least 1 (it is the refill rate) (descriptor 'd.k', line 3)"],
      [rule('unit: year, requests_per_unit: 1, algorithm: token_bucket, burst: 11'), "alg.yaml: burst 11 at 1 per unit takes more than 10 years to refill; lower burst or raise requests_per_unit (descriptor 'd.k', line 3)"],
      [rule('unlimited: true, algorithm: sliding_window'), "alg.yaml: should not specify algorithm when unlimited (descriptor 'd.k', line 3)"],
      [rule('unit: second, requests_per_unit: 5, algorithm: [token_bucket]'), 'alg.yaml: config error, yaml file contains list of type other than map: token_bucket (line 4)'],
      [rule('unit: second, requests_per_unit: 5, algorithm: token_bucket, burst: {a: 1}'), 'alg.yaml: config error, unknown key \'a\' (line 4)'],
      [rule('unit: second, requests_per_unit: 5', '    algorithm: sliding_window\n'), "alg.yaml: config error, 'algorithm' belongs inside rate_limit (line 4)"],
      [rule('unit: second, requests_per_unit: 5', '    burst: 4\n'), "alg.yaml: config error, 'burst' belongs inside rate_limit (line 4)"],
    ];
    for (const [yaml, message] of cases) assert.equal(loadError(yaml), message, yaml);
  });

  test('a store without an algorithm refuses the rule set, naming the rule, the store and what it runs', () => {
    const rs = load(rule('unit: second, requests_per_unit: 5, algorithm: token_bucket'));
    const err = unsupportedAlgorithmError(rs, { kind: 'memcached', algorithms: new Set(['sliding_window']) });
    assert.ok(err instanceof ConfigError);
    assert.equal(
      err.message,
      "alg.yaml: descriptor 'd.k': algorithm token_bucket is not supported by the memcached store: it cannot run a token bucket's read-compare-write of its timestamp atomically (it runs: fixed_window, sliding_window); choose another algorithm or another store",
    );
    assert.equal(unsupportedAlgorithmError(rs, new MemoryStore({ clock: { now: () => 0 } })), undefined);
    assert.equal(unsupportedAlgorithmError(load(rule('unit: second, requests_per_unit: 5')), { kind: 'x' }), undefined);
  });
});

describe('algorithm and burst in xDS resources (RateLimitPolicy fields 1000 and 1001)', () => {
  const resource = (algorithm: string | undefined, burst: number | undefined): RateLimitConfigMsg => ({
    name: 'res-1',
    domain: 'd',
    descriptors: [
      {
        key: 'k',
        value: '',
        descriptors: [],
        shadowMode: false,
        detailedMetric: false,
        quotaMode: false,
        rateLimit: { unit: 'MINUTE', requestsPerUnit: 60, unlimited: false, name: '', replaces: [], ...(algorithm !== undefined ? { algorithm } : {}), ...(burst !== undefined ? { burst } : {}) },
      },
    ],
  });

  test('the fields survive the wire and reach the rule', () => {
    const wire = encodeRateLimitConfig(resource('token_bucket', 7));
    const back = decodeRateLimitConfig(wire);
    assert.equal(back.descriptors[0]!.rateLimit!.algorithm, 'token_bucket');
    assert.equal(back.descriptors[0]!.rateLimit!.burst, 7);
    const limit = loadXdsRuleSet([back], { mergeDomainConfig: false }).getLimit('d', { entries: [{ key: 'k', value: 'x' }] })!.limit;
    assert.deepEqual([limit.algorithm, limit.burst, limit.emissionUs], ['token_bucket', 7, 1_000_000]);
    // field 1000 (string, wire type 2) = tag bytes 0xc2 0x3e; field 1001 (varint) = 0xc8 0x3e
    assert.ok(wire.includes(Buffer.from([0xc2, 0x3e, 12, ...Buffer.from('token_bucket')])));
    assert.ok(wire.includes(Buffer.from([0xc8, 0x3e, 7])));
  });

  test('unset fields are fixed_window, and a fixed-window resource encodes as upstream (no extension bytes)', () => {
    const wire = encodeRateLimitConfig(resource(undefined, undefined));
    assert.ok(!wire.includes(Buffer.from([0xc2, 0x3e])));
    const limit = loadXdsRuleSet([decodeRateLimitConfig(wire)], { mergeDomainConfig: false }).getLimit('d', { entries: [{ key: 'k', value: 'x' }] })!.limit;
    assert.equal(limit.algorithm, 'fixed_window');
  });

  test('bad values are refused with the resource name', () => {
    assert.throws(() => loadXdsRuleSet([decodeRateLimitConfig(encodeRateLimitConfig(resource('gcra', undefined)))], { mergeDomainConfig: false }), {
      message: "res-1: unknown rate limit algorithm 'gcra' (expected one of fixed_window, sliding_window, token_bucket) (descriptor 'd.k')",
    });
    assert.throws(() => loadXdsRuleSet([resource('sliding_window', 5)], { mergeDomainConfig: false }), {
      message: "res-1: burst is only valid with algorithm token_bucket, not sliding_window (descriptor 'd.k')",
    });
  });
});
