// Fault test "memcached node down": the keys of a stopped node fail open (count from 0, at once,
// no hang), the other node keeps counting, health stays up while one node answers, and the node
// is used again once it is back. With every node down the store reports itself disconnected.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startMemcached, waitFor, type MemcachedServer } from '@rls/testkit';
import { StatsStore, type CounterOp } from '@rls/engine';
import { MemcachedStore } from '../../src/backends/memcached-store.js';

let a: MemcachedServer;
let b: MemcachedServer;
before(async () => {
  [a, b] = await Promise.all([startMemcached(), startMemcached()]);
});
after(async () => {
  await Promise.all([a.stop(), b.stop()]);
});

const op = (key: string, addend: number): CounterOp => ({ key, addend, expireSeconds: 60, windowSeconds: 60 });

test('memcached node down: fail-open for its keys, the other node keeps counting, recovery after restart', async () => {
  const stats = new StatsStore();
  const changes: boolean[] = [];
  const store = new MemcachedStore({ servers: [a.url, b.url], connectionsPerNode: 2, timeoutMs: 1_000, clock: { now: () => Date.now() }, stats, reconnectMaxMs: 200 });
  store.onConnectionChange((up) => changes.push(up));
  try {
    await store.waitUntilConnected(5_000);
    const keys = Array.from({ length: 40 }, (_v, i) => `fault_${i}`);
    const onA = keys.filter((k) => store.nodeFor(k) === a.url).slice(0, 3);
    const onB = keys.filter((k) => store.nodeFor(k) === b.url).slice(0, 3);
    assert.equal(onA.length, 3);
    assert.equal(onB.length, 3);
    const both = [...onA, ...onB];
    assert.deepEqual(await store.increment(both.map((k) => op(k, 1))), [1, 1, 1, 1, 1, 1]);

    await b.stop();
    // Requests keep being answered, fast: A's keys count on, B's count from 0.
    for (let round = 2; round <= 4; round++) {
      const started = Date.now();
      const got = await store.increment(both.map((k) => op(k, 1)));
      assert.ok(Date.now() - started < 900, `answered within the timeout (${Date.now() - started} ms)`);
      assert.deepEqual(got.slice(0, 3), [round, round, round]);
      assert.deepEqual(got.slice(3), [1, 1, 1]);
    }
    assert.equal(store.isConnected(), true, 'one node still answers');
    // Increment first: a down node fails the incr (the multi-get only carries addend-0 reads).
    assert.ok(stats.counterValue('ratelimit.memcache.increment', { code: 'error' }) >= 3);

    await b.start();
    // Count B's key through the store until the count shows up on B: the connection that key
    // uses (each node has two, reconnecting on their own schedules) is back. While it is not,
    // the increments fail open and store nothing.
    const kb = onB[0] as string;
    const ka = onA[0] as string;
    await waitFor(
      async () => {
        await store.increment([op(kb, 1)]);
        await store.settled();
        return (await b.get(kb)) !== undefined;
      },
      { what: 'node B used again', timeoutMs: 5_000, intervalMs: 20 },
    );
    // B restarted empty: its key counted from 1 again; A kept its counts.
    assert.equal(await b.get(kb), '1');
    assert.deepEqual(await store.increment([op(kb, 1), op(ka, 1)]), [2, 5]);
    await store.settled();
    assert.deepEqual(await store.increment([op(kb, 1), op(ka, 1)]), [3, 6]);

    await Promise.all([a.stop(), b.stop()]);
    await waitFor(() => !store.isConnected(), { what: 'store to report disconnected', timeoutMs: 5_000 });
    assert.deepEqual(await store.increment(both.map((k) => op(k, 2))), [2, 2, 2, 2, 2, 2], 'every key fails open');
    assert.equal(changes.at(-1), false);
    await Promise.all([a.start(), b.start()]);
    await store.waitUntilConnected(5_000);
    assert.equal(changes.at(-1), true);
  } finally {
    await store.close();
  }
});
