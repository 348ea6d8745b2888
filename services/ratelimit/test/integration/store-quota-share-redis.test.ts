// The QuotaShareStore contract on a real Redis (testkit), with two replicas each on its own
// connection pool, and what only Redis can do wrong: a flushed script cache, a damaged record,
// the record's key lifetime, and two replicas racing for one bucket.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedis, type RedisServer } from '@rls/testkit';
import { RedisStore } from '../../src/backends/redis-store.js';
import { RedisQuotaShareStore } from '../../src/backends/redis-quota-share.js';
import { runQuotaShareContract } from '../support/quota-share-contract.js';

let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

async function replica(): Promise<{ share: RedisQuotaShareStore; counters: RedisStore }> {
  const counters = new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 2, timeoutMs: 2_000 });
  await counters.waitUntilConnected(5_000);
  return { share: new RedisQuotaShareStore({ sender: counters }), counters };
}

runQuotaShareContract(
  'redis single',
  async () => {
    await redis.call('FLUSHALL');
    const a = await replica();
    const b = await replica();
    return {
      replicas: [a.share, b.share] as const,
      cleanup: async () => {
        await Promise.all([a.counters.close(), b.counters.close()]);
      },
    };
  },
  { propertyRuns: 120 },
);

describe('RedisQuotaShareStore specifics', () => {
  const t = (nowMs: number) => ({ nowMs, entryTtlMs: 10_000, holdMs: 0 });
  const now = Date.now();

  test('after SCRIPT FLUSH the scripts are sent again with their body (NOSCRIPT), once', async () => {
    const { share, counters } = await replica();
    try {
      await share.exchange([{ bucket: 'nsk', updates: [{ instance: 'i', demand: 4 }] }], t(now));
      await redis.call('SCRIPT', 'FLUSH');
      assert.deepEqual(await share.reserve([{ bucket: 'nsk', capacity: 9, requests: [{ instance: 'i', want: 9 }] }], t(now + 1)), [[9]]);
      await redis.call('SCRIPT', 'FLUSH');
      assert.deepEqual(await share.exchange([{ bucket: 'nsk', updates: [] }], t(now + 2)), [[{ instance: 'i', demand: 4, grant: 9 }]]);
    } finally {
      await counters.close();
    }
  });

  test('the record is a hash with integer fields, its key expires with its last entry, a damaged field is dropped', async () => {
    const { share, counters } = await replica();
    try {
      await share.exchange([{ bucket: 'rec', updates: [{ instance: 'i', demand: 1234567890123 }] }], t(now));
      assert.equal(await redis.call('HGET', 'rec', 'i'), `1234567890123 0 0 0 ${now + 10_000}`);
      const pttl = (await redis.call('PTTL', 'rec')) as number;
      assert.ok(pttl > 9_000 && pttl <= 10_000, `pttl ${pttl}`);
      await redis.call('HSET', 'rec', 'junk', 'not numbers');
      assert.deepEqual(await share.exchange([{ bucket: 'rec', updates: [] }], t(now + 1)), [[{ instance: 'i', demand: 1234567890123, grant: 0 }]]);
      assert.equal(await redis.call('HEXISTS', 'rec', 'junk'), 0);
    } finally {
      await counters.close();
    }
  });

  test('a key of another type is a StoreError naming Redis’s complaint, not a crash', async () => {
    const { share, counters } = await replica();
    try {
      await redis.call('SET', 'wrongtype', 'x');
      await assert.rejects(share.exchange([{ bucket: 'wrongtype', updates: [] }], t(now)), (e: Error) => e.name === 'StoreError' && /WRONGTYPE/.test(e.message));
    } finally {
      await counters.close();
    }
  });

  test('two replicas racing 200 reservations each on one bucket never reserve more than its capacity', async () => {
    const a = await replica();
    const b = await replica();
    try {
      const cap = 1000;
      const go = (s: RedisQuotaShareStore, prefix: string) =>
        Promise.all(Array.from({ length: 200 }, (_, i) => s.reserve([{ bucket: 'race', capacity: cap, requests: [{ instance: `${prefix}${i % 7}`, want: 50 + (i % 13) * 20 }] }], t(now))));
      await Promise.all([go(a.share, 'a'), go(b.share, 'b')]);
      const [live] = await a.share.exchange([{ bucket: 'race', updates: [] }], t(now));
      const total = live!.reduce((n, e) => n + e.grant, 0);
      assert.ok(total <= cap, `granted ${total}`);
      assert.ok(total >= cap - 50, `capacity left unused: ${total}`);
    } finally {
      await Promise.all([a.counters.close(), b.counters.close()]);
    }
  });
});
