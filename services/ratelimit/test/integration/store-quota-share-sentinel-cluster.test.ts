// RLQS quota shares on Redis Sentinel and Redis Cluster (docs/ratelimit.md, "Several replicas"): the
// QuotaShareStore contract with two replicas, each on its own counter store, through the store's
// KeyedCommandSender (Sentinel: the current master; Cluster: each bucket's record on its slot owner,
// MOVED/ASK followed), plus what only a cluster can do: records spread over the masters, and a flushed
// script cache on every node answered by sending the scripts again.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedisCluster, startSentinelSet, type RedisCluster, type SentinelSet } from '@rls/testkit';
import { Secret } from '@rls/settings';
import { ClusterStore } from '../../src/backends/cluster-store.js';
import { keySlot } from '../../src/backends/cluster-slots.js';
import { RedisQuotaShareStore } from '../../src/backends/redis-quota-share.js';
import { SentinelStore } from '../../src/backends/sentinel-store.js';
import { runQuotaShareContract } from '../support/quota-share-contract.js';

let set: SentinelSet;
let cluster: RedisCluster;
before(async () => {
  [set, cluster] = await Promise.all([startSentinelSet({ replicas: 1, sentinels: 3, dataPassword: 'data-pw' }), startRedisCluster({ masters: 3 })]);
});
after(async () => {
  await Promise.all([set.stop(), cluster.stop()]);
});

const sentinelStore = async (): Promise<SentinelStore> => {
  const s = new SentinelStore({ url: set.url, auth: Secret.fromText('data-pw'), poolSize: 2, timeoutMs: 2_000 });
  await s.waitUntilConnected(10_000);
  return s;
};
const clusterStore = async (seed: number): Promise<ClusterStore> => {
  const s = new ClusterStore({ nodes: [cluster.nodes[seed % cluster.nodes.length]!.url], poolSize: 2, timeoutMs: 2_000 });
  await s.waitUntilConnected(10_000);
  return s;
};

runQuotaShareContract(
  'redis sentinel (1 master, 1 replica, 3 sentinels)',
  async () => {
    await set.master.call('FLUSHALL');
    const [a, b] = await Promise.all([sentinelStore(), sentinelStore()]);
    return {
      replicas: [new RedisQuotaShareStore({ sender: a }), new RedisQuotaShareStore({ sender: b })] as const,
      cleanup: async () => {
        await Promise.all([a.close(), b.close()]);
      },
    };
  },
  { propertyRuns: 40 },
);

runQuotaShareContract(
  'redis cluster (3 masters), each replica seeded from another node',
  async () => {
    await Promise.all(cluster.nodes.map((n) => n.call('FLUSHALL')));
    const [a, b] = await Promise.all([clusterStore(0), clusterStore(1)]);
    return {
      replicas: [new RedisQuotaShareStore({ sender: a }), new RedisQuotaShareStore({ sender: b })] as const,
      cleanup: async () => {
        await Promise.all([a.close(), b.close()]);
      },
    };
  },
  { propertyRuns: 40 },
);

describe('quota shares on a cluster', () => {
  test('one batch spreads its records over every master, each on its slot owner; a flushed script cache is refilled', async () => {
    await Promise.all(cluster.nodes.map((n) => n.call('FLUSHALL')));
    const store = await clusterStore(2);
    try {
      const share = new RedisQuotaShareStore({ sender: store });
      const buckets = Array.from({ length: 30 }, (_, i) => `rlqs:"edge":{"name":"b${i}"}`);
      const now = Date.now();
      const timing = { nowMs: now, entryTtlMs: 60_000, holdMs: 0 };
      await share.exchange(buckets.map((bucket, i) => ({ bucket, updates: [{ instance: 'i1', demand: i + 1 }] })), timing);
      const owners = new Set<string>();
      for (const bucket of buckets) {
        const owner = await cluster.ownerOf(keySlot(bucket));
        owners.add(owner.url);
        assert.equal(await owner.call('HLEN', bucket), 1, `${bucket} on its slot owner`);
        assert.equal(keySlot(bucket), await cluster.keySlot(bucket));
      }
      assert.equal(owners.size, 3, 'the records of one batch live on all three masters');

      await Promise.all(cluster.nodes.map((n) => n.call('SCRIPT', 'FLUSH')));
      const granted = await share.reserve(
        buckets.map((bucket) => ({ bucket, capacity: 10, requests: [{ instance: 'i1', want: 10 }] })),
        { ...timing, nowMs: now + 1 },
      );
      assert.deepEqual(granted, buckets.map(() => [10]));
      const seen = await share.exchange(buckets.map((bucket) => ({ bucket, updates: [] })), { ...timing, nowMs: now + 2 });
      assert.deepEqual(seen.map((s) => s.map((e) => e.grant)), buckets.map(() => [10]));
      await share.release(buckets[0]!, ['i1']);
      assert.equal(await (await cluster.ownerOf(keySlot(buckets[0]!))).call('EXISTS', buckets[0]!), 0);
    } finally {
      await store.close();
    }
  });
});
