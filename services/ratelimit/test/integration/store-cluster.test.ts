import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedisCluster, type RedisCluster } from '@rls/testkit';
import { ClusterStore } from '../../src/backends/cluster-store.js';
import { crc16, keySlot } from '../../src/backends/cluster-slots.js';
import { StatsStore, type CounterOp } from '@rls/engine';
import { runCounterStoreContract } from '../support/store-contract.js';
import { runAlgorithmStoreCases } from './algorithm-store-cases.js';
import { runAlgorithmContract } from '../support/algorithm-contract.js';

let cluster: RedisCluster;
before(async () => {
  cluster = await startRedisCluster({ masters: 3 });
});
after(async () => {
  await cluster.stop();
});

const flushAll = async (): Promise<void> => {
  await Promise.all(cluster.nodes.map((n) => n.call('FLUSHALL')));
};

runCounterStoreContract('redis cluster (3 masters)', async () => {
  await flushAll();
  const store = new ClusterStore({ nodes: [cluster.nodes[0]!.url], poolSize: 2, timeoutMs: 2_000 });
  await store.waitUntilConnected(5_000);
  return {
    store,
    cleanup: () => store.close(),
    ttlSeconds: async (key: string) => (await (await cluster.ownerOf(await cluster.keySlot(key))).call('TTL', key)) as number,
  };
});

const ownerCall = async (key: string, ...args: string[]) => (await cluster.ownerOf(keySlot(key))).call(...args);

runAlgorithmStoreCases(
  'redis cluster (3 masters)',
  async () => {
    await flushAll();
    const store = new ClusterStore({ nodes: [cluster.nodes[0]!.url], poolSize: 2, timeoutMs: 2_000 });
    await store.waitUntilConnected(5_000);
    return {
      store,
      raw: async (key) => ((await ownerCall(key, 'GET', key)) as string | null) ?? undefined,
      plant: async (key, value) => void (await ownerCall(key, 'SET', key, value)),
      pttl: async (key) => (await ownerCall(key, 'PTTL', key)) as number,
      cleanup: () => store.close(),
    };
  },
  {
    bucket: true,
    plantWrongType: async (_h, key) => void (await ownerCall(key, 'LPUSH', key, 'x')),
    flushScripts: async () => void (await Promise.all(cluster.nodes.map((n) => n.call('SCRIPT', 'FLUSH')))),
  },
);

runAlgorithmContract('redis cluster (3 masters)', async () => {
  const store = new ClusterStore({ nodes: [cluster.nodes[0]!.url], poolSize: 2, timeoutMs: 2_000 });
  await store.waitUntilConnected(5_000);
  return { store, cleanup: () => store.close() };
});

const op = (key: string, addend = 1): CounterOp => ({ key, addend, expireSeconds: 60, windowSeconds: 60 });

describe('ClusterStore specifics', () => {
  test('key slots match the server (CRC16/XMODEM, hash tags, UTF-8)', async () => {
    assert.equal(crc16(Buffer.from('123456789')), 0x31c3);
    const keys = ['foo', 'bar', '{user1000}.following', '{user1000}.followers', 'foo{}{bar}', 'foo{{bar}}zap', 'foo{bar}{zap}', '', 'ünïcødé_🚀', 'rl_domain_key_value_1700000000', '{', '}{x}'];
    for (const k of keys) assert.equal(keySlot(k), await cluster.keySlot(k), `slot of ${JSON.stringify(k)}`);
  });

  test('learns every master from one seed; keys land on the node serving their slot', async () => {
    await flushAll();
    const stats = new StatsStore();
    const store = new ClusterStore({ nodes: [cluster.nodes[1]!.url], poolSize: 2, timeoutMs: 2_000, stats });
    try {
      await store.waitUntilConnected(5_000);
      assert.deepEqual(store.masters(), cluster.nodes.map((n) => n.url).sort());
      const keys = Array.from({ length: 30 }, (_v, i) => `spread_${i}`);
      assert.deepEqual(await store.increment(keys.map((k) => op(k, 2))), keys.map(() => 2));
      const perNode = new Map<string, number>();
      for (const k of keys) {
        const owner = await cluster.ownerOf(keySlot(k));
        assert.equal(await owner.call('GET', k), '2', `${k} on its slot owner`);
        perNode.set(owner.url, (perNode.get(owner.url) ?? 0) + 1);
      }
      assert.equal(perNode.size, 3, 'the keys of one call spread over all three masters');
      assert.ok(stats.gauge('ratelimit.redis_pool.cx_active').value() >= 3, 'the pools of all nodes count in one gauge');
      assert.deepEqual(await store.get(['spread_0', 'spread_1', 'missing']), [2, 2, 0]);
    } finally {
      await store.close();
    }
    assert.equal(stats.gauge('ratelimit.redis_pool.cx_active').value(), 0);
  });

  test('groups go to their nodes in parallel: three paused nodes cost one pause, not three', async () => {
    await flushAll();
    const store = new ClusterStore({ nodes: cluster.url.split(','), poolSize: 1, timeoutMs: 5_000 });
    try {
      await store.waitUntilConnected(5_000);
      // One key per node.
      const picked = new Map<string, string>();
      for (let i = 0; picked.size < 3; i++) {
        const k = `par_${i}`;
        const owner = (await cluster.ownerOf(keySlot(k))).url;
        if (!picked.has(owner)) picked.set(owner, k);
      }
      const keys = [...picked.values()];
      await store.increment(keys.map((k) => op(k)));
      const pauseMs = 400;
      await Promise.all(cluster.nodes.map((n) => n.call('CLIENT', 'PAUSE', String(pauseMs), 'WRITE')));
      const t0 = performance.now();
      assert.deepEqual(await store.increment(keys.map((k) => op(k))), [2, 2, 2]);
      const ms = performance.now() - t0;
      assert.ok(ms >= pauseMs * 0.7, `the pause was in effect (${ms} ms)`);
      assert.ok(ms < pauseMs * 2, `one pause, not three: ${ms} ms`);
    } finally {
      await store.close();
    }
  });

  test('expireOnCreate keys on every master: EXPIRE with the first INCRBY only; a key deleted on its node gets it again', async () => {
    await flushAll();
    await Promise.all(cluster.nodes.map((n) => n.call('CONFIG', 'RESETSTAT')));
    const expires = async (): Promise<number> => {
      let sum = 0;
      for (const n of cluster.nodes) sum += Number(/cmdstat_expire:calls=(\d+)/.exec(String(await n.call('INFO', 'commandstats')))?.[1] ?? 0);
      return sum;
    };
    const store = new ClusterStore({ nodes: [cluster.nodes[0]!.url], poolSize: 1, timeoutMs: 2_000 });
    try {
      await store.waitUntilConnected(5_000);
      const keys = Array.from({ length: 12 }, (_v, i) => `once_${i}_1800000000_w3600`);
      const tagged = (k: string, addend = 1): CounterOp => ({ key: k, addend, expireSeconds: 3600, windowSeconds: 3600, expireOnCreate: true });
      const owners = new Set<string>();
      for (const k of keys) owners.add((await cluster.ownerOf(keySlot(k))).url);
      assert.equal(owners.size, 3, 'the keys spread over all three masters');
      for (let i = 1; i <= 3; i++) assert.deepEqual(await store.increment(keys.map((k) => tagged(k))), keys.map(() => i));
      assert.equal(await expires(), keys.length, 'one EXPIRE per key');
      const victim = keys[5]!;
      await ownerCall(victim, 'DEL', victim);
      assert.deepEqual(await store.increment(keys.map((k) => tagged(k, 2))), keys.map((k) => (k === victim ? 2 : 5)));
      assert.equal(await expires(), keys.length + 1, 'the recreated key got its EXPIRE in a second round trip');
      const ttl = Number(await ownerCall(victim, 'TTL', victim));
      assert.ok(ttl > 3500 && ttl <= 3600, `ttl ${ttl}`);
    } finally {
      await store.close();
    }
  });

  test('execute: sliding and bucket ops with keys on all three masters in one call; one node without the script', async () => {
    await flushAll();
    const store = new ClusterStore({ nodes: [cluster.nodes[0]!.url], poolSize: 1, timeoutMs: 2_000 });
    try {
      await store.waitUntilConnected(5_000);
      const byNode = new Map<string, string[]>();
      for (let i = 0; [...byNode.values()].filter((ks) => ks.length >= 3).length < 3; i++) {
        const k = `multi_${i}`;
        const owner = (await cluster.ownerOf(keySlot(k))).url;
        byNode.set(owner, [...(byNode.get(owner) ?? []), k]);
      }
      const [a, b, c] = [...byNode.values()].map((ks) => ks.slice(0, 3)) as [string[], string[], string[]];
      const t = 1_700_000_000_000_000;
      const tb = (key: string, addend: number): CounterOp => ({ key, addend, expireSeconds: 0, windowSeconds: 1, bucket: { nowUs: t, emissionUs: 1_000_000, toleranceUs: 10_000_000 } });
      const sw = (key: string, previousKey: string, addend: number): CounterOp => ({ key, previousKey, addend, expireSeconds: 120, windowSeconds: 60 });
      // Previous windows on other nodes than their current keys.
      await store.increment([op(b[0]!, 4), op(c[0]!, 5), op(a[0]!, 6)]);
      // Only the third node forgot the script: its ops alone take the EVAL path.
      await store.execute([tb(a[1]!, 1), tb(b[1]!, 1), tb(c[1]!, 1)]);
      await (await cluster.ownerOf(keySlot(c[1]!))).call('SCRIPT', 'FLUSH');
      const got = await store.execute([sw(a[2]!, b[0]!, 1), tb(a[1]!, 2), sw(b[2]!, c[0]!, 2), tb(b[1]!, 3), sw(c[2]!, a[0]!, 3), tb(c[1]!, 4), tb(c[1]!, 20)]);
      assert.deepEqual(got, [
        { value: 1, previous: 4 },
        { value: t + 3_000_000, admitted: true },
        { value: 2, previous: 5 },
        { value: t + 4_000_000, admitted: true },
        { value: 3, previous: 6 },
        { value: t + 5_000_000, admitted: true },
        { value: t + 5_000_000, admitted: false },
      ]);
      for (const [key, want] of [[a[2]!, '1'], [b[2]!, '2'], [c[2]!, '3'], [a[1]!, String(t + 3_000_000)], [b[1]!, String(t + 4_000_000)], [c[1]!, String(t + 5_000_000)], [b[0]!, '4']] as [string, string][]) {
        assert.equal(await ownerCall(key, 'GET', key), want, `${key} on its slot owner`);
      }
    } finally {
      await store.close();
    }
  });

  test('KVSTORE_PIPELINE_WINDOW: writes of calls made within the window leave together when it ends', async () => {
    const store = new ClusterStore({ nodes: [cluster.nodes[0]!.url], poolSize: 1, timeoutMs: 2_000, pipelineWindowMs: 80 });
    try {
      await store.waitUntilConnected(5_000);
      const key = 'window_key';
      const t0 = performance.now();
      const first = store.increment([op(key)]).then(() => performance.now() - t0);
      await new Promise((r) => setTimeout(r, 30));
      const second = store.increment([op(key)]).then(() => performance.now() - t0);
      const [a, b] = await Promise.all([first, second]);
      assert.ok(a >= 70, `the first call waited for the window (${Math.round(a)} ms)`);
      assert.ok(Math.abs(b - a) < 25, `both calls were flushed together (${Math.round(a)} / ${Math.round(b)} ms)`);
    } finally {
      await store.close();
    }
  });

  test('a seed that is down is skipped; an unreachable cluster fails within the timeout', async () => {
    const store = new ClusterStore({ nodes: ['127.0.0.1:1', cluster.nodes[2]!.url], poolSize: 1, timeoutMs: 2_000 });
    try {
      await store.waitUntilConnected(5_000);
      assert.deepEqual(await store.increment([op('seeded')]), [1]);
    } finally {
      await store.close();
    }
    const dead = new ClusterStore({ nodes: ['127.0.0.1:1'], poolSize: 1, timeoutMs: 300 });
    try {
      const t0 = performance.now();
      await assert.rejects(dead.increment([op('x')]), /topology unknown after 300 ms/);
      assert.ok(performance.now() - t0 < 800);
      assert.equal(dead.isConnected(), false);
    } finally {
      await dead.close();
    }
  });
});
