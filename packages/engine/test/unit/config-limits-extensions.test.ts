// The rule-file extensions of issue 25 (docs/ratelimit.md): `rate_limits` (several limits on one
// descriptor) and `unit_multiplier` (windows of several units) — parsing, keys, statistics names,
// /rlconfig, the xDS fields, and every refusal by its text.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadRuleSet, loadXdsRuleSet, MAX_LIMITS_PER_DESCRIPTOR, Unit } from '@rls/engine';
import { decodeRateLimitConfig, encodeRateLimitConfig, type RateLimitConfigMsg } from '@rls/rls-proto';

const load = (yaml: string) => loadRuleSet([{ name: 'ext.yaml', content: yaml }], { mergeDomainConfig: false });

function loadError(yaml: string): string {
  try {
    load(yaml);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.message;
  }
  assert.fail('expected the load to fail');
}

describe('rate_limits: several limits on one descriptor', () => {
  const yaml = `domain: api
descriptors:
  - key: api_key
    rate_limits:
      - unit: second
        requests_per_unit: 10
        name: burst
      - unit: day
        requests_per_unit: 1000
`;

  test('each entry is a limit of its own: stats under <path>.<name or index>, tagged key tails, one group', () => {
    const rs = load(yaml);
    const m = rs.getLimit('api', { entries: [{ key: 'api_key', value: 'alice' }] })!;
    assert.ok(m.group !== undefined);
    assert.deepEqual(
      m.group.map((g) => [g.limit.requestsPerUnit, g.limit.unit, g.limit.windowSeconds, g.limit.name, g.limit.fullKey, g.limit.keyTail, g.stats.key]),
      [
        [10, Unit.SECOND, 1, 'burst', 'api.api_key.burst', '_w1', 'api.api_key.burst'],
        [1000, Unit.DAY, 86400, '', 'api.api_key.1', '_w86400', 'api.api_key.1'],
      ],
    );
    assert.equal(m.limit, m.group[0]!.limit);
    assert.equal(rs.getLimit('api', { entries: [{ key: 'api_key', value: 'bob' }] }), m, 'static matches are built once');
  });

  test('/rlconfig prints one line per limit; the config check summary lists each', () => {
    const rs = load(yaml);
    assert.equal(
      rs.dump(),
      'api.api_key.burst: unit=SECOND requests_per_unit=10, shadow_mode: false, quota_mode: false\n' +
        'api.api_key.1: unit=DAY requests_per_unit=1000, shadow_mode: false, quota_mode: false\n',
    );
    assert.deepEqual(rs.summary()[0]!.descriptors.map((d) => [d.key, d.limit, d.name]), [
      ['api.api_key.burst', '10/SECOND', 'burst'],
      ['api.api_key.1', '1000/DAY', ''],
    ]);
  });

  test('per-value statistics (detailed_metric) get one set per limit, capped per limit', () => {
    const rs = load(`domain: api
descriptors:
  - key: api_key
    detailed_metric: true
    rate_limits: [{unit: second, requests_per_unit: 10}, {unit: day, requests_per_unit: 1000, name: daily}]
`);
    const m = rs.getLimit('api', { entries: [{ key: 'api_key', value: 'alice' }] })!;
    assert.deepEqual(m.group!.map((g) => g.stats.key), ['api.api_key_alice.0', 'api.api_key_alice.daily']);
  });

  test('refusals name the file, the descriptor, the entry and its line', () => {
    const cases: [string, RegExp][] = [
      ['rate_limits: []', /^ext\.yaml: rate_limits must list at least one limit \(descriptor 'd\.k', line 3\)$/],
      ['rate_limits: [{unit: second, requests_per_unit: 1}, {unlimited: true}]', /^ext\.yaml: a rate_limits entry cannot be unlimited .* \(descriptor 'd\.k', rate_limits entry 2, line 4\)$/],
      ['rate_limits: [{unit: fortnight, requests_per_unit: 1}]', /^ext\.yaml: invalid rate limit unit 'fortnight' \(descriptor 'd\.k', rate_limits entry 1, line 4\)$/],
      ['rate_limits: [{unit: second, requests_per_unit: 1}, {unit: second, requests_per_unit: 5}]', /^ext\.yaml: rate_limits entries 1 and 2 count the same fixed_window window of 1 seconds, so they would share one counter; keep one of them \(descriptor 'd\.k', line 3\)$/],
      ['rate_limits: [{unit: second, requests_per_unit: 1, name: a}, {unit: minute, requests_per_unit: 5, name: a}]', /^ext\.yaml: rate_limits entries 1 and 2 have the same name 'a'/],
      ['rate_limits: [{unit: minute, requests_per_unit: 1, unit_multiplier: 60}, {unit: hour, requests_per_unit: 5}]', /rate_limits entries 1 and 2 count the same fixed_window window of 3600 seconds/],
      ['rate_limits: [{unit: second, requests_per_unit: 1, name: x, replaces: [{name: x}]}]', /replaces should not contain name of same descriptor \(descriptor 'd\.k', rate_limits entry 1/],
      ['rate_limit: {unit: second, requests_per_unit: 1}\n    rate_limits: [{unit: minute, requests_per_unit: 5}]', /^ext\.yaml: config error, a descriptor has either rate_limit or rate_limits, not both \(line 5\)$/],
      ['rate_limits: {unit: second}', /cannot unmarshal !!map into \[\]config\.YamlRateLimit/],
      ['rate_limits: [5]', /yaml file contains list of type other than map: 5/],
      ['rate_limits: [{unit: second, requests_per_unit: 1, colour: red}]', /unknown key 'colour'/],
    ];
    for (const [body, want] of cases) assert.match(loadError(`domain: d\ndescriptors:\n  - key: k\n    ${body}\n`), want, body);
    const many = Array.from({ length: MAX_LIMITS_PER_DESCRIPTOR + 1 }, (_v, i) => `{unit: second, requests_per_unit: 1, unit_multiplier: ${i + 1}}`).join(', ');
    assert.match(loadError(`domain: d\ndescriptors:\n  - key: k\n    rate_limits: [${many}]\n`), /rate_limits lists 17 limits; at most 16/);
  });

  test('a token bucket and a window of the same length may share a list (different keys); two buckets of the same rate may not', () => {
    const rs = load(`domain: d
descriptors:
  - key: k
    rate_limits:
      - {unit: second, requests_per_unit: 10}
      - {unit: second, requests_per_unit: 10, algorithm: token_bucket, burst: 50}
      - {unit: second, requests_per_unit: 5, algorithm: token_bucket, burst: 5}
      - {unit: second, requests_per_unit: 10, algorithm: sliding_window}
`);
    const g = rs.getLimit('d', { entries: [{ key: 'k', value: 'x' }] })!.group!;
    assert.deepEqual(g.map((x) => x.limit.keyTail), ['_w1', 'tb1r10', 'tb1r5', '_sw1']);
    assert.deepEqual([...rs.algorithms.keys()].sort(), ['sliding_window', 'token_bucket']);
    assert.match(
      loadError(`domain: d\ndescriptors:\n  - key: k\n    rate_limits: [{unit: second, requests_per_unit: 10, algorithm: token_bucket}, {unit: second, requests_per_unit: 10, algorithm: token_bucket, burst: 3}]\n`),
      /count the same token_bucket window of 1 seconds at 10 per window/,
    );
  });
});

describe('unit_multiplier: windows of several units', () => {
  test('window = unit × multiplier; keys tagged with the window; /rlconfig and summary show it', () => {
    const rs = load(`domain: d
descriptors:
  - {key: five, rate_limit: {unit: minute, requests_per_unit: 100, unit_multiplier: 5}}
  - {key: one, rate_limit: {unit: minute, requests_per_unit: 100, unit_multiplier: 1}}
  - {key: week, rate_limit: {unit: day, requests_per_unit: 7, unit_multiplier: 7, algorithm: sliding_window}}
  - {key: tb, rate_limit: {unit: second, requests_per_unit: 3, unit_multiplier: 30, algorithm: token_bucket}}
`);
    const limit = (key: string) => rs.getLimit('d', { entries: [{ key, value: 'x' }] })!.limit;
    assert.deepEqual(['five', 'one', 'week', 'tb'].map((k) => [limit(k).windowSeconds, limit(k).unitMultiplier, limit(k).keyTail, limit(k).emissionUs]), [
      [300, 5, '_w300', 0],
      [60, 1, '', 0],
      [604800, 7, '_sw604800', 0],
      [30, 30, 'tb30r3', 10_000_000],
    ]);
    assert.deepEqual(limit('five').currentLimit, { requestsPerUnit: 100, unit: Unit.MINUTE, name: '' });
    assert.equal(
      rs.dump(),
      'd.five: unit=MINUTE requests_per_unit=100, shadow_mode: false, quota_mode: false, unit_multiplier: 5\n' +
        'd.one: unit=MINUTE requests_per_unit=100, shadow_mode: false, quota_mode: false\n' +
        'd.tb: unit=SECOND requests_per_unit=3, shadow_mode: false, quota_mode: false, unit_multiplier: 30, algorithm: token_bucket, burst: 3\n' +
        'd.week: unit=DAY requests_per_unit=7, shadow_mode: false, quota_mode: false, unit_multiplier: 7, algorithm: sliding_window\n',
    );
    assert.equal(rs.summary()[0]!.descriptors.find((d) => d.key === 'd.five')!.limit, '100/5 × MINUTE');
  });

  test('refusals', () => {
    const cases: [string, RegExp][] = [
      ['{unit: minute, requests_per_unit: 1, unit_multiplier: 0}', /^ext\.yaml: unit_multiplier must be an integer from 1 to 5256000, got 0 \(descriptor 'd\.k', line 3\)$/],
      ['{unit: minute, requests_per_unit: 1, unit_multiplier: -2}', /unit_multiplier must be an integer from 1 to 5256000, got -2/],
      ['{unit: minute, requests_per_unit: 1, unit_multiplier: 2.5}', /unit_multiplier must be an integer from 1 to 5256000, got '2\.5'/],
      ['{unit: minute, requests_per_unit: 1, unit_multiplier: five}', /unit_multiplier must be an integer from 1 to 5256000, got 'five'/],
      ['{unit: year, requests_per_unit: 1, unit_multiplier: 11}', /unit_multiplier 11 × YEAR is a window longer than 10 years; at most 10/],
      ['{unlimited: true, unit_multiplier: 2}', /should not specify unit_multiplier when unlimited/],
      ['{unit: second, requests_per_unit: 1, unit_multiplier: [2]}', /yaml file contains list of type other than map: 2/],
    ];
    for (const [rl, want] of cases) assert.match(loadError(`domain: d\ndescriptors:\n  - key: k\n    rate_limit: ${rl}\n`), want, rl);
    assert.match(loadError('domain: d\ndescriptors:\n  - key: k\n    unit_multiplier: 5\n'), /'unit_multiplier' belongs inside rate_limit \(line 4\)/);
    // A bucket whose multiplied window makes the refill longer than 10 years is refused as before.
    assert.match(loadError('domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: year, requests_per_unit: 1, unit_multiplier: 10, algorithm: token_bucket, burst: 2}\n'), /takes more than 10 years to refill/);
  });
});

describe('xDS: RateLimitPolicy.unit_multiplier (1002) and RateLimitDescriptor.rate_limits (1003)', () => {
  test('the fields survive the wire and load as the YAML does', () => {
    const msg: RateLimitConfigMsg = {
      name: 'res',
      domain: 'api',
      descriptors: [
        { key: 'five', value: '', descriptors: [], shadowMode: false, detailedMetric: false, quotaMode: false, rateLimit: { unit: 'MINUTE', requestsPerUnit: 100, unlimited: false, name: '', replaces: [], unitMultiplier: 5 } },
        {
          key: 'api_key',
          value: '',
          descriptors: [],
          shadowMode: false,
          detailedMetric: false,
          quotaMode: false,
          rateLimits: [
            { unit: 'SECOND', requestsPerUnit: 10, unlimited: false, name: 'burst', replaces: [] },
            { unit: 'DAY', requestsPerUnit: 1000, unlimited: false, name: '', replaces: [], algorithm: 'sliding_window' },
          ],
        },
      ],
    };
    const decoded = decodeRateLimitConfig(encodeRateLimitConfig(msg));
    assert.deepEqual(decoded, msg);
    const rs = loadXdsRuleSet([decoded], { mergeDomainConfig: false });
    assert.equal(rs.getLimit('api', { entries: [{ key: 'five', value: 'x' }] })!.limit.windowSeconds, 300);
    assert.deepEqual(rs.getLimit('api', { entries: [{ key: 'api_key', value: 'x' }] })!.group!.map((g) => g.limit.fullKey), ['api.api_key.burst', 'api.api_key.1']);
    const bad = { ...msg, descriptors: [{ ...msg.descriptors[1]!, rateLimits: [{ unit: 'SECOND', requestsPerUnit: 10, unlimited: true, name: '', replaces: [] }] }] };
    assert.throws(() => loadXdsRuleSet([decodeRateLimitConfig(encodeRateLimitConfig(bad))], { mergeDomainConfig: false }), /^ConfigError: res: a rate_limits entry cannot be unlimited .*\(descriptor 'api\.api_key', rate_limits entry 1\)$/);
  });
});
