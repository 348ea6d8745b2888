// RateLimit-Policy and RateLimit headers (LIMIT_RESPONSE_POLICY_HEADERS_ENABLED, draft-ietf-httpapi-ratelimit-headers-11):
// every limit that applied, the one that decides, names and escaping, and the upstream headers unchanged beside them.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '@rls/testkit';
import { DEFAULT_LIMITER_OPTIONS, loadRuleSet, MemoryStore, RateLimitService, sfString, StatsStore, Unit, type LimiterOptions, type RequestDescriptor } from '@rls/engine';

const T0 = 1_800_000_000;
const RULES = `domain: d
descriptors:
  - key: api_key
    rate_limits:
      - {unit: second, requests_per_unit: 2, name: burst}
      - {unit: day, requests_per_unit: 1000, name: daily}
  - {key: five, rate_limit: {unit: minute, requests_per_unit: 100, unit_multiplier: 5}}
  - {key: anon, rate_limits: [{unit: second, requests_per_unit: 10}, {unit: hour, requests_per_unit: 360, algorithm: token_bucket, burst: 5}]}
  - {key: quoted, rate_limit: {unit: second, requests_per_unit: 1, name: 'a "b" \\ é'}}
  - {key: free, rate_limit: {unlimited: true}}
`;

function service(headers: Partial<LimiterOptions['responseHeaders']>): { ask: (d: RequestDescriptor[]) => Promise<[string, string][]>; clock: FakeClock } {
  const clock = new FakeClock();
  clock.setSeconds(T0);
  const stats = new StatsStore();
  const svc = new RateLimitService({
    store: new MemoryStore({ clock }),
    stats,
    clock,
    random: { int: () => 0 },
    options: { ...DEFAULT_LIMITER_OPTIONS, expirationJitterMaxSeconds: 0, responseHeaders: { ...DEFAULT_LIMITER_OPTIONS.responseHeaders, ...headers } },
  });
  svc.setRuleSet(loadRuleSet([{ name: 'r.yaml', content: RULES }], { mergeDomainConfig: false, stats }));
  return {
    clock,
    ask: async (descriptors) => (await svc.shouldRateLimit({ domain: 'd', descriptors, hitsAddend: 0 })).responseHeadersToAdd.map((h) => [h.key, h.value]),
  };
}
const one = (key: string, value = 'v'): RequestDescriptor => ({ entries: [{ key, value }] });

describe('RateLimit-Policy and RateLimit headers', () => {
  test('off by default: no headers at all', async () => {
    assert.deepEqual(await service({}).ask([one('api_key')]), []);
  });

  test('every limit of a rate_limits descriptor in RateLimit-Policy; RateLimit describes the one that decides', async () => {
    const s = service({ policyHeaders: true });
    assert.deepEqual(await s.ask([one('api_key')]), [
      ['RateLimit-Policy', '"burst";q=2;w=1, "daily";q=1000;w=86400'],
      ['RateLimit', '"burst";r=1;t=1'],
    ]);
    await s.ask([one('api_key')]);
    assert.deepEqual((await s.ask([one('api_key')]))[1], ['RateLimit', '"burst";r=0;t=1'], 'over the per-second limit');
    s.clock.setSeconds(T0 + 1);
    assert.deepEqual((await s.ask([one('api_key')]))[1], ['RateLimit', '"burst";r=1;t=1']);
  });

  test('beside the upstream headers, which are unchanged; a multiplied window reports its whole length', async () => {
    const s = service({ enabled: true, policyHeaders: true });
    assert.deepEqual(await s.ask([one('five')]), [
      ['RateLimit-Limit', '100'],
      ['RateLimit-Remaining', '99'],
      ['RateLimit-Reset', '300'],
      ['RateLimit-Policy', '"0";q=100;w=300'],
      ['RateLimit', '"0";r=99;t=300'],
    ]);
  });

  test('several descriptors: unnamed limits are named by descriptor index and position; a bucket reports burst and refill time', async () => {
    const s = service({ policyHeaders: true });
    assert.deepEqual(await s.ask([one('five'), one('anon'), one('none'), one('free')]), [
      ['RateLimit-Policy', '"0";q=100;w=300, "1.0";q=10;w=1, "1.1";q=5;w=50'],
      ['RateLimit', '"1.1";r=4;t=10'],
    ]);
  });

  test('names are structured-field strings: quotes and backslashes escaped, other characters replaced', async () => {
    assert.equal(sfString('a "b" \\ é'), '"a \\"b\\" \\\\ ?"');
    const s = service({ policyHeaders: true });
    assert.deepEqual(await s.ask([one('quoted')]), [
      ['RateLimit-Policy', '"a \\"b\\" \\\\ ?";q=1;w=1'],
      ['RateLimit', '"a \\"b\\" \\\\ ?";r=0;t=1'],
    ]);
  });

  test('a request override is named by its descriptor; unlimited and unmatched descriptors add nothing', async () => {
    const s = service({ policyHeaders: true });
    assert.deepEqual(await s.ask([{ entries: [{ key: 'x', value: 'y' }], limit: { requestsPerUnit: 7, unit: Unit.MINUTE } }]), [
      ['RateLimit-Policy', '"0";q=7;w=60'],
      ['RateLimit', '"0";r=6;t=60'],
    ]);
    assert.deepEqual(await s.ask([one('free'), one('none')]), []);
  });
});
