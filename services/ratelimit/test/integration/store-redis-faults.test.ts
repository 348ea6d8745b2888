import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { freePort, startRedis, waitFor } from '@rls/testkit';
import { RedisStore } from '../../src/backends/redis-store.js';
import { StatsStore, StoreError, type CounterOp } from '@rls/engine';
import { Secret } from '@rls/settings';

const unhandled: unknown[] = [];
process.on('unhandledRejection', (r) => unhandled.push(r));
after(() => assert.deepEqual(unhandled, [], 'no unhandled rejections'));

const op = (key: string): CounterOp => ({ key, addend: 1, expireSeconds: 60, windowSeconds: 60 });

/** Runs `fn`, expecting a StoreError; returns it with the elapsed milliseconds. */
async function failure(fn: () => Promise<unknown>): Promise<{ err: StoreError; ms: number }> {
  const t0 = performance.now();
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof StoreError, `expected StoreError, got ${String(err)}`);
    return { err, ms: performance.now() - t0 };
  }
  assert.fail('expected the call to reject');
}

describe('RedisStore when Redis fails', () => {
  test('Redis stopped: calls reject within the timeout; restarted on the same port: the same store recovers', async () => {
    const redis = await startRedis();
    const stats = new StatsStore();
    const events: boolean[] = [];
    const store = new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 3, timeoutMs: 500, stats });
    store.onConnectionChange((up) => events.push(up));
    try {
      await store.waitUntilConnected(5_000);
      assert.deepEqual(await store.increment([op('k')]), [1]);
      await waitFor(() => stats.gauge('ratelimit.redis_pool.cx_active').value() === 3, { what: 'all pool connections' });
      assert.equal(stats.counterValue('ratelimit.redis_pool.cx_total'), 3);

      await redis.stop();
      const down = await failure(() => store.increment([op('k')]));
      assert.ok(down.ms < 500 + 250, `rejected after ${down.ms} ms`);
      const downGet = await failure(() => store.get(['k']));
      assert.ok(downGet.ms < 500 + 250, `get rejected after ${downGet.ms} ms`);
      await waitFor(() => !store.isConnected(), { what: 'isConnected() false' });
      assert.equal(stats.gauge('ratelimit.redis_pool.cx_active').value(), 0);
      // Repeated calls while down keep failing fast instead of piling up.
      for (let i = 0; i < 5; i++) {
        const again = await failure(() => store.increment([op('k')]));
        assert.ok(again.ms < 500 + 250);
      }

      await redis.start();
      await waitFor(async () => (await store.increment([op('after')]))[0] === 1, { what: 'store to recover', timeoutMs: 10_000 });
      await waitFor(() => stats.gauge('ratelimit.redis_pool.cx_active').value() === 3, { what: 'pool to refill' });
      assert.equal(store.isConnected(), true);
      assert.deepEqual(events, [true, false, true]);
      assert.ok(stats.counterValue('ratelimit.redis_pool.cx_total') >= 6);
    } finally {
      await store.close();
      await redis.stop();
    }
    assert.equal(stats.gauge('ratelimit.redis_pool.cx_active').value(), 0);
    assert.ok(stats.counterValue('ratelimit.redis_pool.cx_local_close') >= 3, 'close() counted as local closes');
  });

  test('Redis never started: calls reject within the timeout and the store reports disconnected', async () => {
    const port = await freePort();
    const store = new RedisStore({ url: `127.0.0.1:${port}`, socketType: 'tcp', poolSize: 2, timeoutMs: 300 });
    try {
      const { err, ms } = await failure(() => store.increment([op('k')]));
      assert.ok(ms < 300 + 250, `rejected after ${ms} ms`);
      assert.match(err.message, /ECONNREFUSED|redis/);
      assert.equal(store.isConnected(), false);
      await assert.rejects(store.waitUntilConnected(100), StoreError);
    } finally {
      await store.close();
    }
  });

  test('a server that accepts connections but never answers: StoreError within the timeout', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((s) => {
      sockets.push(s);
      s.on('data', () => undefined);
      s.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const addr = silent.address();
    assert.ok(addr !== null && typeof addr === 'object');
    const stats = new StatsStore();
    const store = new RedisStore({ url: `127.0.0.1:${addr.port}`, socketType: 'tcp', poolSize: 2, timeoutMs: 300, stats });
    try {
      const { err, ms } = await failure(() => store.increment([op('k')]));
      assert.ok(ms >= 250 && ms < 300 + 250, `rejected after ${ms} ms`);
      assert.match(err.message, /timed out after 300 ms/);
      const second = await failure(() => store.get(['k']));
      assert.ok(second.ms < 300 + 250);
      assert.equal(store.isConnected(), false);
      assert.ok(stats.counterValue('ratelimit.redis_pool.cx_local_close') >= 1, 'timed-out connections are closed locally');
    } finally {
      await store.close();
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  test('Redis busy (DEBUG SLEEP): calls time out, then the store recovers', async () => {
    const redis = await startRedis({ args: ['--enable-debug-command', 'yes'] });
    const store = new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 1, timeoutMs: 300 });
    try {
      await store.waitUntilConnected(5_000);
      const sleeping = redis.call('DEBUG', 'SLEEP', '1.5');
      // Let the DEBUG command reach the server before our increment.
      await waitFor(async () => {
        const r = await store.increment([op('probe')]).then(
          () => 'answered',
          (e: unknown) => e,
        );
        return r instanceof StoreError ? r : undefined;
      }, { what: 'a timed-out call' }).then((err) => assert.match(err.message, /timed out after 300 ms/));
      await sleeping;
      await waitFor(async () => (await store.get(['probe'])).length === 1, { what: 'recovery', timeoutMs: 10_000 });
    } finally {
      await store.close();
      await redis.stop();
    }
  });

  test('authentication: requirepass, ACL user:password, wrong or missing credentials', async () => {
    const redis = await startRedis({ requirepass: 's3cret' });
    await redis.call('ACL', 'SETUSER', 'limiter', 'on', '>lim:pw', '~*', '+@all');
    const stores: RedisStore[] = [];
    const make = (auth?: string): RedisStore => {
      const s = new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 1, timeoutMs: 1_000, auth: auth === undefined ? undefined : Secret.fromText(auth), reconnectMinMs: 200 });
      stores.push(s);
      return s;
    };
    try {
      assert.deepEqual(await make('s3cret').increment([op('a')]), [1]);
      // user:password is split at the first ':' (the password may contain ':').
      assert.deepEqual(await make('limiter:lim:pw').increment([op('a')]), [2]);

      const wrong = await failure(() => make('nope').increment([op('a')]));
      assert.match(wrong.err.message, /WRONGPASS/);
      const wrongUser = await failure(() => make('limiter:bad').increment([op('a')]));
      assert.match(wrongUser.err.message, /WRONGPASS/);
      const missing = make();
      const none = await failure(() => missing.increment([op('a')]));
      assert.match(none.err.message, /NOAUTH/);
      assert.equal(missing.isConnected(), false);
      // Still explained on later calls while the store waits to retry.
      const later = await failure(() => missing.get(['a']));
      assert.match(later.err.message, /NOAUTH/);
      assert.equal(await redis.call('GET', 'a'), '2');
    } finally {
      await Promise.all(stores.map((s) => s.close()));
      await redis.stop();
    }
  });

  test('after close() calls reject at once and nothing reconnects', async () => {
    const redis = await startRedis();
    const stats = new StatsStore();
    const store = new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 2, timeoutMs: 500, stats });
    try {
      await store.waitUntilConnected(5_000);
      const inflight = store.increment([op('z')]);
      await store.close();
      // An in-flight call either completed or failed with StoreError, never hangs.
      await inflight.catch((e: unknown) => assert.ok(e instanceof StoreError));
      await assert.rejects(store.increment([op('z')]), /closed/);
      assert.equal(store.isConnected(), false);
      const total = stats.counterValue('ratelimit.redis_pool.cx_total');
      await redis.call('PING');
      assert.equal(stats.counterValue('ratelimit.redis_pool.cx_total'), total);
      const clients = String(await redis.call('CLIENT', 'LIST')).split('\n').filter((l) => l.length > 0);
      assert.equal(clients.length, 1, 'only the test connection remains');
    } finally {
      await redis.stop();
    }
  });
});
