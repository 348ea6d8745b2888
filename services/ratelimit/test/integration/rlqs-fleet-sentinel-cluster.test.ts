// RLQS quota shares on Redis Cluster, Sentinel and beside the per-second split, through the store the
// app composes from its settings (composeCounterStore): two replicas (QuotaBalancer + grpc-js host) with
// four simulated Envoys of skewed demand keep the granted total within the quota every second, admit
// within the documented bound, reach the max-min shares, and keep the bucket's record where it belongs
// (the slot owner, the master, the main store); on a cluster, the records follow a slot move (ASK while
// it migrates, MOVED after) without a failed tick.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_BALANCER_TUNING, QuotaBalancer, StatsStore, mathRandom, quotaShareKey, type QuotaShareStore } from '@rls/engine';
import { bucketKey } from '@rls/rls-proto';
import { FakeClock, startRedis, startRedisCluster, startSentinelSet, type RedisCluster, type RedisServer, type SentinelSet } from '@rls/testkit';
import { composeCounterStore, type ComposedStore } from '../../src/compose-counter-store.js';
import { silentLogger } from '../../src/logger.js';
import { loadSettings } from '../../src/settings.js';
import { hostRlqs } from '../support/rlqs-grpc-js-host.js';
import { API, BURST, QUOTA, RULES, RlqsFleet, rateOf, type FleetReplica } from '../support/rlqs-fleet.js';

const PREFIX = 't:';


/** The store and share store of one replica, as the app composes them from `env`. */
async function composed(env: Record<string, string>): Promise<ComposedStore & { share: QuotaShareStore }> {
  const { settings } = loadSettings({
    BACKEND_TYPE: 'redis',
    RLQS_ENABLED: 'true',
    USE_STATS_PUSH: 'false',
    KVSTORE_POOL_SIZE: '2',
    KVSTORE_SOCKET_TYPE: 'tcp',
    // A store that never answers fails the test instead of waiting forever.
    KVSTORE_STARTUP_MAX_ELAPSED_TIME: '20s',
    ...env,
  });
  const c = composeCounterStore(settings, { clock: new FakeClock(), random: mathRandom, stats: new StatsStore(), logger: silentLogger() });
  await c.ready();
  assert.ok(c.quotaShare !== undefined, 'the store sends the quota scripts');
  return { ...c, share: c.quotaShare };
}

/** Two replicas on their own stores from `env`; skewed demand; grants and admissions within the quota. */
async function twoReplicasWithinQuota(env: Record<string, string>): Promise<void> {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const stores = [await composed(env), await composed(env)];
  const replicas: FleetReplica[] = [];
  for (const [i, c] of stores.entries()) {
    const balancer = new QuotaBalancer({
      ...DEFAULT_BALANCER_TUNING,
      replicaId: `r${i}`,
      clock,
      store: c.share,
      rules: () => RULES,
      stats: new StatsStore(),
      keyPrefix: PREFIX,
      holdMs: 500,
      abandonAfterMs: 5_000,
      idleAbandonMs: 0,
    });
    replicas.push({ balancer, host: await hostRlqs(balancer, 0), tickOffsetMs: i * 500 });
  }
  const fleet = new RlqsFleet(clock, replicas, API);
  const grantsTotal = async (): Promise<number> => {
    const [live] = await stores[1]!.share.exchange([{ bucket: quotaShareKey(PREFIX, 'edge', bucketKey(API)), updates: [] }], { nowMs: clock.now(), entryTtlMs: 60_000 });
    return live!.reduce((n, e) => n + e.grant, 0) / 1_000_000;
  };
  try {
    fleet.add(0, 10);
    fleet.add(0, 40);
    fleet.add(1, 150);
    fleet.add(1, 300);
    await fleet.run(6_000);
    for (const e of fleet.envoys) assert.equal(e.sim.stateOf(API), 'active');
    const start = Math.floor(clock.now() / 1000);
    const changesBefore = fleet.envoys.reduce((n, e) => n + e.sim.counters.replaced, 0);
    for (let sec = 0; sec < 8; sec++) {
      await fleet.run(1_000);
      const total = await grantsTotal();
      assert.ok(total <= QUOTA, `second ${sec}: grants ${total} pass the quota ${QUOTA}`);
      assert.ok(total > 0, `second ${sec}: the replicas share grants through the store`);
    }
    const admitted = fleet.admittedBetween(start, start + 8);
    const bound = QUOTA * 8 + (fleet.envoys.reduce((n, e) => n + e.sim.counters.replaced, 0) - changesBefore) * BURST;
    assert.ok(admitted <= bound, `admitted ${admitted} in 8 s, bound ${bound}`);
    assert.ok(admitted >= QUOTA * 8 * 0.9, `only ${admitted} admitted in 8 s of a ${QUOTA}/s quota under excess demand`);
    // Max-min of (10, 40, 150, 300) under 100 is (10, 30, 30, 30): only reachable when both replicas see all four.
    const shares = fleet.envoys.map((e) => rateOf(e.sim.strategyOf(API)));
    [10, 30, 30, 30].forEach((want, i) => assert.ok(Math.abs(shares[i]! - want) <= want * 0.05, `instance ${i}: ${shares[i]}/s, max-min ${want}/s`));
    assert.deepEqual(fleet.envoys.flatMap((e) => e.sim.violations), []);
  } finally {
    fleet.close();
    await Promise.all(fleet.replicas.map((r) => r.host.stop()));
    await Promise.all(stores.map((c) => c.store.close()));
  }
}

describe('RLQS shared quotas on Redis Cluster', () => {
  let cluster: RedisCluster;
  before(async () => {
    cluster = await startRedisCluster();
    await cluster.waitHealthy();
  });
  after(async () => {
    await cluster.stop();
  });

  test('two replicas on a cluster keep the total within the quota; the bucket lives on its slot owner', async () => {
    await twoReplicasWithinQuota({ KVSTORE_TYPE: 'cluster', KVSTORE_URL: cluster.url });
    const key = quotaShareKey(PREFIX, 'edge', bucketKey(API));
    const owner = await cluster.ownerOf(await cluster.keySlot(key));
    assert.equal(await owner.call('EXISTS', key), 1, 'the bucket record is on the node serving its slot');
  });

  test('the bucket slot moves: the scripts follow ASK during the migration and MOVED after it, no call fails', async () => {
    const c = await composed({ KVSTORE_TYPE: 'cluster', KVSTORE_URL: cluster.url });
    try {
      const key = quotaShareKey('move:', 'edge', bucketKey(API));
      const timing = { nowMs: Date.now(), entryTtlMs: 60_000 };
      await c.share.exchange([{ bucket: key, updates: [{ instance: 'a', demand: 5 }] }], timing);
      const slot = await cluster.keySlot(key);
      const from = await cluster.ownerOf(slot);
      const to = cluster.nodes.find((n) => n !== from)!;
      await cluster.beginMigration(slot, from, to);
      await cluster.moveKeys(slot, from, to);
      // Migrating: the source answers ASK for the moved key.
      const [during] = await c.share.exchange([{ bucket: key, updates: [{ instance: 'b', demand: 7 }] }], timing);
      assert.deepEqual(during!.map((e) => [e.instance, e.demand]), [['a', 5], ['b', 7]]);
      await cluster.finishMigration(slot, to);
      // Moved: the old owner answers MOVED; the store repoints the slot and resends.
      const [moved] = await c.share.exchange([{ bucket: key, updates: [{ instance: 'c', demand: 9 }] }], timing);
      assert.deepEqual(moved!.map((e) => [e.instance, e.demand]), [['a', 5], ['b', 7], ['c', 9]]);
      assert.equal(await to.call('EXISTS', key), 1);
      await assert.rejects(from.call('EXISTS', key), /MOVED/, 'the old owner sends clients to the new one');
    } finally {
      await c.store.close();
    }
  });
});

describe('RLQS shared quotas on Redis Sentinel', () => {
  let set: SentinelSet;
  before(async () => {
    set = await startSentinelSet();
  });
  after(async () => {
    await set.stop();
  });

  test('two replicas on a sentinel set keep the total within the quota; the bucket lives on the master', async () => {
    await twoReplicasWithinQuota({ KVSTORE_TYPE: 'sentinel', KVSTORE_URL: set.url });
    const master = set.node(await set.currentMaster());
    assert.equal(await master.call('EXISTS', quotaShareKey(PREFIX, 'edge', bucketKey(API))), 1);
  });
});

describe('RLQS shared quotas with the per-second split', () => {
  let main: RedisServer;
  let perSecond: RedisServer;
  before(async () => {
    [main, perSecond] = await Promise.all([startRedis(), startRedis()]);
  });
  after(async () => {
    await Promise.all([main.stop(), perSecond.stop()]);
  });

  test('the quota records live on the main store, not the per-second one', async () => {
    await twoReplicasWithinQuota({ KVSTORE_TYPE: 'single', KVSTORE_URL: main.url, KVSTORE_PERSECOND: 'true', KVSTORE_PERSECOND_TYPE: 'single', KVSTORE_PERSECOND_SOCKET_TYPE: 'tcp', KVSTORE_PERSECOND_URL: perSecond.url });
    const key = quotaShareKey(PREFIX, 'edge', bucketKey(API));
    assert.equal(await main.call('EXISTS', key), 1);
    assert.equal(await perSecond.call('EXISTS', key), 0);
  });
});
