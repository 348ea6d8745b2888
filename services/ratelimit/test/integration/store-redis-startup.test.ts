import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { freePort, startRedis } from '@rls/testkit';
import { RedisStore, maskUrl } from '../../src/backends/redis-store.js';
import { formatDuration, waitForStore } from '../../src/backends/store-startup.js';
import { StoreError } from '@rls/engine';

const noJitter = { int: (n: number) => Math.floor(n / 2) };

describe('start-up wait for Redis (KVSTORE_STARTUP_*)', () => {
  test('gives up after the max elapsed time with upstream\'s message, credentials masked', async () => {
    const port = await freePort();
    const store = new RedisStore({ url: `127.0.0.1:${port}`, socketType: 'tcp', poolSize: 1, timeoutMs: 100 });
    const warnings: string[] = [];
    try {
      const t0 = performance.now();
      const err = await waitForStore(store, {
        initialIntervalMs: 100,
        maxIntervalMs: 200,
        maxElapsedMs: 600,
        url: maskUrl(`redis://user:secret@127.0.0.1:${port}`),
        random: noJitter,
        logger: { info: () => undefined, warn: (_o, msg) => warnings.push(msg) },
      }).then(
        () => assert.fail('should give up'),
        (e: unknown) => e,
      );
      const ms = performance.now() - t0;
      assert.ok(err instanceof StoreError);
      assert.match(err.message, new RegExp(`^timed out waiting for Redis connection to redis://\\*\\*\\*@127\\.0\\.0\\.1:${port} after 6\\d\\dms: .*ECONNREFUSED`));
      assert.doesNotMatch(err.message, /secret/);
      assert.ok(ms >= 580 && ms < 900, `gave up after ${Math.round(ms)} ms`);
      assert.ok(warnings.length >= 2, 'each miss is logged');
    } finally {
      await store.close();
    }
  });

  test('waits (0 = forever) until Redis comes up, then returns', async () => {
    const port = await freePort();
    const store = new RedisStore({ url: `127.0.0.1:${port}`, socketType: 'tcp', poolSize: 1, timeoutMs: 200, reconnectMaxMs: 100 });
    let redis: Awaited<ReturnType<typeof startRedis>> | undefined;
    try {
      const waiting = waitForStore(store, { initialIntervalMs: 50, maxIntervalMs: 200, maxElapsedMs: 0, url: `127.0.0.1:${port}`, random: noJitter });
      let done = false;
      void waiting.then(() => (done = true));
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(done, false, 'still waiting while Redis is down');
      redis = await startRedis({ port });
      await waiting;
      assert.equal(store.isConnected(), true);
    } finally {
      await store.close();
      await redis?.stop();
    }
  });

  test('duration text and URL masking', () => {
    assert.equal(formatDuration(250), '250ms');
    assert.equal(formatDuration(1500), '1.5s');
    assert.equal(formatDuration(125_000), '2m5s');
    assert.equal(maskUrl('redis://u:p@h:1'), 'redis://***@h:1');
    assert.equal(maskUrl('pw@h:1,h2:2'), '***@h:1,h2:2');
    assert.equal(maskUrl('h:1'), 'h:1');
  });
});
