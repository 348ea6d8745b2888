// Counters saturate (issue 12, finding 5): the backend-specific edges the contract suite cannot
// reach through increments alone (a stored value planted right at Redis's 2^63-1 or memcached's
// 2^64-1), the limiter's reading of a saturated count, and the original attack replayed against
// the real process on memcached.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { clearOfWindowEdge, startMemcached, startRedis, waitFor, type MemcachedServer, type RedisServer } from '@rls/testkit';
import { Code, MAX_HITS_ADDEND, RateLimitRule, SATURATED_COUNT, StatsStore, Unit, counterStatus, createRuleStats, hitsAddendFor, type CounterOp } from '@rls/engine';
import { MemcachedStore } from '../../src/backends/memcached-store.js';
import { RedisStore } from '../../src/backends/redis-store.js';
import { postJson, startService, writeRules } from '../support/service-process.js';

const op = (key: string, addend: number): CounterOp => ({ key, addend, expireSeconds: 600, windowSeconds: 3600 });
const INT64_MAX = '9223372036854775807';
const UINT64_MAX = '18446744073709551615';

describe('Redis at INCRBY overflow', () => {
  let redis: RedisServer;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis.stop();
  });

  test('a counter at 2^63-1 answers saturated instead of failing the call; its TTL is still applied', async () => {
    const store = new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 1, timeoutMs: 2_000 });
    try {
      await redis.call('SET', 'top', INT64_MAX);
      await redis.call('SET', 'past53', '9007199254740993');
      assert.deepEqual(await store.increment([op('top', 1), op('fresh', 2), op('past53', 1)]), [SATURATED_COUNT, 2, SATURATED_COUNT]);
      assert.equal(await redis.call('GET', 'top'), INT64_MAX, 'Redis refused the increment; nothing wrapped');
      const ttl = (await redis.call('TTL', 'top')) as number;
      assert.ok(ttl > 590 && ttl <= 600, `ttl ${ttl}`);
      assert.deepEqual(await store.get(['top', 'past53', 'fresh']), [SATURATED_COUNT, SATURATED_COUNT, 2]);
      assert.deepEqual(await store.increment([op('fresh', 1)]), [3], 'replies stay aligned');
    } finally {
      await store.close();
    }
  });
});

describe('memcached at the incr wrap', () => {
  let mc: MemcachedServer;
  before(async () => {
    mc = await startMemcached();
  });
  after(async () => {
    await mc.stop();
  });

  test('a counter at 2^64-1 reads saturated and is never incremented, so it cannot wrap to 0', async () => {
    // What the store avoids: memcached's own incr wraps silently.
    await mc.command(`set probe 0 600 ${UINT64_MAX.length}\r\n${UINT64_MAX}\r\n`, /STORED\r\n$/);
    assert.match(await mc.command('incr probe 5\r\n', /\r\n$/), /^4\r\n$/);

    const store = new MemcachedStore({ servers: [mc.url], connectionsPerNode: 1, timeoutMs: 2_000, clock: { now: () => Date.now() } });
    try {
      await mc.command(`set top 0 600 ${UINT64_MAX.length}\r\n${UINT64_MAX}\r\n`, /STORED\r\n$/);
      for (let i = 0; i < 3; i++) {
        assert.deepEqual(await store.increment([op('top', MAX_HITS_ADDEND), op('fresh', 1)]), [SATURATED_COUNT, i + 1]);
        await store.settled();
      }
      // Increment first: the incr wrapped, the store saw it and pinned the counter at 2^63 (saturated).
      assert.ok(BigInt((await mc.get('top'))?.trim() ?? '0') >= 2n ** 63n, 'pinned, not wrapped');
      assert.deepEqual(await store.get(['top', 'fresh']), [SATURATED_COUNT, 3]);
    } finally {
      await store.close();
    }
  });
});

describe('the limiter and a saturated count', () => {
  const UINT32_MAX = 4_294_967_295;
  test('a saturated count is over any limit, the largest included, and counts its addend as over', () => {
    for (const rpu of [1, 10, UINT32_MAX]) {
      const stats = new StatsStore();
      const ruleStats = createRuleStats(stats, 'sat_k');
      const l = new RateLimitRule(rpu, Unit.HOUR, '', false, false, false, [], undefined, 'sat_k', () => ruleStats);
      let over = 0;
      for (const addend of [0, 1, MAX_HITS_ADDEND]) {
        const st = counterStatus(l, ruleStats, addend, SATURATED_COUNT, 0.8, 10);
        assert.equal(st.code, Code.OVER_LIMIT, `limit ${rpu} addend ${addend}`);
        assert.equal(st.limitRemaining, 0);
        over += addend;
      }
      assert.equal(stats.counterValue('ratelimit.service.rate_limit.sat_k.over_limit'), over);
      assert.equal(stats.counterValue('ratelimit.service.rate_limit.sat_k.near_limit'), 0);
    }
  });

  test('hits_addend is clamped to 2^32: beyond it, over every limit exactly as before', () => {
    assert.equal(hitsAddendFor({ entries: [], hitsAddend: Number.MAX_SAFE_INTEGER }, 0), MAX_HITS_ADDEND);
    assert.equal(hitsAddendFor({ entries: [], hitsAddend: MAX_HITS_ADDEND }, 0), MAX_HITS_ADDEND);
    assert.equal(hitsAddendFor({ entries: [], hitsAddend: 0 }, 7), 0, 'descriptor-level 0 still checks without consuming');
    assert.equal(hitsAddendFor({ entries: [] }, UINT32_MAX), UINT32_MAX);
    assert.equal(hitsAddendFor({ entries: [] }, 0), 1);
    assert.ok(MAX_HITS_ADDEND > UINT32_MAX, 'one more than the largest limit');
  });
});

describe('the original attack on the real process (memcached, upstream settings)', () => {
  let mc: MemcachedServer;
  const rules = writeRules({ 'mcsat.yaml': 'domain: mcsat\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n' });
  before(async () => {
    mc = await startMemcached();
  });
  after(async () => {
    await mc.stop();
    rules.cleanup();
  });

  test('huge descriptor hits_addend twice, then normal requests: OVER_LIMIT for the rest of the window', async () => {
    // MEMCACHE_MAX_IDLE_CONNS=100 as in upstream's integration tests: starts, clamped with a warning.
    const svc = await startService({ ...rules.env, BACKEND_TYPE: 'memcache', MEMCACHE_HOST_PORT: mc.url, MEMCACHE_MAX_IDLE_CONNS: '100', EXPIRATION_JITTER_MAX_SECONDS: '0', USE_STATSD: 'false' });
    try {
      assert.match(svc.output(), /level=warn msg="MEMCACHE_MAX_IDLE_CONNS=\\"100\\": .*; using 64"/);
      const v = `attack_${Date.now()}`;
      const windowStart = await clearOfWindowEdge(3600, 20_000);
      const key = `mcsat_k_${v}_${windowStart}`;
      const send = async (hitsAddend?: string): Promise<{ status: number; code: unknown }> => {
        const d: Record<string, unknown> = { entries: [{ key: 'k', value: v }] };
        if (hitsAddend !== undefined) d.hits_addend = hitsAddend;
        const r = await postJson(svc.httpUrl, { domain: 'mcsat', descriptors: [d] });
        return { status: r.status, code: r.json.overallCode };
      };
      const over = { status: 429, code: 'OVER_LIMIT' };
      assert.deepEqual(await send(UINT64_MAX), over);
      assert.deepEqual(await send(String(Number.MAX_SAFE_INTEGER)), over);
      // Each request added 2^32 (the clamp), far from 2^53 where the counter used to read 0.
      await waitForValue(mc, key, String(2 * MAX_HITS_ADDEND));
      for (let i = 0; i < 5; i++) assert.deepEqual(await send(), over, `normal request ${i}`);
      // Increment first: the value is written before the answer; the wait is a bounded check.
      await waitForValue(mc, key, String(2 * MAX_HITS_ADDEND + 5));
      // A counter at 2^64-1 (planted): still over; the wrapped incr is pinned back to 2^63.
      await mc.command(`set ${key} 0 600 ${UINT64_MAX.length}\r\n${UINT64_MAX}\r\n`, /STORED\r\n$/);
      for (let i = 0; i < 3; i++) assert.deepEqual(await send(), over);
      await waitFor(async () => BigInt((await mc.get(key))?.trim() ?? '0') >= 2n ** 63n, { what: 'pinned counter', timeoutMs: 5_000, intervalMs: 20 });
    } finally {
      await svc.stop();
    }
  });
});

/** The asynchronous memcached writes land shortly after the answer; wait (bounded) for the value. */
async function waitForValue(mc: MemcachedServer, key: string, want: string): Promise<void> {
  await waitFor(async () => (await mc.get(key))?.trim() === want, { what: `memcached value ${want} of ${key}`, timeoutMs: 5_000, intervalMs: 20 });
}
