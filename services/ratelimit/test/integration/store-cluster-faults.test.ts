import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedisCluster, waitFor, type ClusterNode } from '@rls/testkit';
import { ClusterStore } from '../../src/backends/cluster-store.js';
import { keySlot } from '../../src/backends/cluster-slots.js';
import { BUCKET_SCRIPT_SHA } from '../../src/backends/redis-commands.js';
import { StoreError, type CounterOp } from '@rls/engine';

const unhandled: unknown[] = [];
process.on('unhandledRejection', (r) => unhandled.push(r));
after(() => assert.deepEqual(unhandled, [], 'no unhandled rejections'));

const op = (key: string, addend = 1): CounterOp => ({ key, addend, expireSeconds: 60, windowSeconds: 60 });

describe('ClusterStore when the topology changes', () => {
  test('a slot migrated mid-traffic: ASK during the move, MOVED after it, counts stay exact', async () => {
    const cluster = await startRedisCluster({ masters: 3 });
    const store = new ClusterStore({ nodes: [cluster.nodes[0]!.url], poolSize: 2, timeoutMs: 2_000 });
    try {
      await store.waitUntilConnected(5_000);
      const k = '{mig}counter';
      const k2 = '{mig}fresh';
      const slot = keySlot(k);
      const from = await cluster.ownerOf(slot);
      const to = cluster.nodes.find((n) => n !== from) as ClusterNode;
      assert.deepEqual(await store.increment([op(k, 3)]), [3]);

      await cluster.beginMigration(slot, from, to);
      // k still lives on the source; k2 is missing there, so the source answers ASK and the
      // store retries it on the target behind ASKING.
      assert.deepEqual(await store.increment([op(k), op(k2)]), [4, 1]);
      assert.equal(await cluster.moveKeys(slot, from, to), 1);
      // Both keys are on the target now; the source answers ASK for both.
      assert.deepEqual(await store.increment([op(k), op(k2)]), [5, 2]);

      await cluster.finishMigration(slot, to);
      // The store's slot map still names the source: it answers MOVED, the store follows.
      assert.deepEqual(await store.increment([op(k), op(k2), op('elsewhere')]), [6, 3, 1]);
      assert.deepEqual(await store.get([k, k2]), [6, 3]);
      assert.equal(await to.call('GET', k), '6');
      assert.ok(((await to.call('TTL', k)) as number) > 0, 'EXPIRE followed the key');
      // Parallel traffic through the move sees every value once.
      const results = await Promise.all(Array.from({ length: 50 }, () => store.increment([op(k2)])));
      assert.deepEqual(results.map((r) => r[0]).sort((a, b) => (a ?? 0) - (b ?? 0)), Array.from({ length: 50 }, (_v, i) => i + 4));
    } finally {
      await store.close();
      await cluster.stop();
    }
  });

  test('a bucket key migrated: ASK and MOVED lead the script to the target, which gets it by EVAL (NOSCRIPT)', async () => {
    const cluster = await startRedisCluster({ masters: 3 });
    const store = new ClusterStore({ nodes: [cluster.nodes[0]!.url], poolSize: 2, timeoutMs: 2_000 });
    const E = 10_000_000;
    const t = 1_700_000_000_000_000;
    const tb = (key: string, addend = 1): CounterOp => ({ key, addend, expireSeconds: 0, windowSeconds: 1, bucket: { nowUs: t, emissionUs: E, toleranceUs: 100 * E } });
    const sw = (key: string, previousKey: string): CounterOp => ({ key, previousKey, addend: 1, expireSeconds: 120, windowSeconds: 60 });
    try {
      await store.waitUntilConnected(5_000);
      const k = '{migb}tb';
      const slot = keySlot(k);
      const from = await cluster.ownerOf(slot);
      const to = cluster.nodes.find((n) => n !== from) as ClusterNode;
      assert.deepEqual(await store.execute([tb(k)]), [{ value: t + E, admitted: true }]);
      await cluster.beginMigration(slot, from, to);
      assert.equal(await cluster.moveKeys(slot, from, to), 1);
      assert.deepEqual(await to.call('SCRIPT', 'EXISTS', BUCKET_SCRIPT_SHA), [0], 'the target never saw the script');
      // The source answers ASK; the target answers NOSCRIPT behind ASKING; EVAL goes the same way.
      assert.deepEqual(await store.execute([tb(k), sw('{migb}cur', '{migb}prev'), tb('{migb}new', 2)]), [
        { value: t + 2 * E, admitted: true },
        { value: 1, previous: 0 },
        { value: t + 2 * E, admitted: true },
      ]);
      assert.deepEqual(await to.call('SCRIPT', 'EXISTS', BUCKET_SCRIPT_SHA), [1], 'EVAL loaded it on the target');
      await cluster.finishMigration(slot, to);
      // The store's slot map still names the source: MOVED, then EVALSHA on the target (cached now).
      assert.deepEqual(await store.execute([tb(k, 3)]), [{ value: t + 5 * E, admitted: true }]);
      assert.equal(await to.call('GET', k), String(t + 5 * E));
    } finally {
      await store.close();
      await cluster.stop();
    }
  });

  test('a node killed: its keys fail within the timeout, the other nodes keep serving; restarted: it serves again', async () => {
    const cluster = await startRedisCluster({ masters: 3, args: ['--cluster-require-full-coverage', 'no'] });
    const store = new ClusterStore({ nodes: cluster.url.split(','), poolSize: 2, timeoutMs: 500 });
    try {
      await store.waitUntilConnected(5_000);
      const victim = cluster.nodes[2]!;
      const keyOn = async (node: ClusterNode): Promise<string> => {
        for (let i = 0; ; i++) if ((await cluster.ownerOf(keySlot(`kill_${i}`))) === node) return `kill_${i}`;
      };
      const dead = await keyOn(victim);
      const alive = await keyOn(cluster.nodes[0]!);
      assert.deepEqual(await store.increment([op(dead), op(alive)]), [1, 1]);

      await victim.stop();
      const t0 = performance.now();
      await assert.rejects(store.increment([op(dead), op(alive)]), (e: unknown) => e instanceof StoreError);
      assert.ok(performance.now() - t0 < 500 + 300, 'failed within the timeout');
      // The group for the surviving node was sent in parallel and counted (as upstream, a failed
      // request may have incremented some of its counters).
      for (let i = 0; i < 5; i++) {
        const t = performance.now();
        assert.deepEqual(await store.increment([op(alive)]), [3 + i], 'the surviving nodes serve their keys');
        assert.ok(performance.now() - t < 500);
        await assert.rejects(store.increment([op(dead)]), StoreError);
      }
      assert.equal(store.isConnected(), true, 'connected while at least one node is up');

      await victim.start();
      await cluster.waitHealthy();
      // The restarted node kept its cluster config but not its data.
      await waitFor(async () => (await store.increment([op(dead)]))[0] === 1, { what: 'the restarted node to serve again', timeoutMs: 10_000 });
      assert.deepEqual(await store.increment([op(dead), op(alive)]), [2, 8]);
    } finally {
      await store.close();
      await cluster.stop();
    }
  });
});
