// The local over-limit cache end to end: the app on a real Redis, decisions over gRPC. Once a key is over, its requests are answered without Redis (the counter stays
// where it went over) and, repeated within a second, from the memo of encoded answers; the
// statistics still count every request exactly once.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRateLimitClient, RlsCode } from '@rls/rls-proto';
import { clearOfWindowEdge, startRedis, tempDir, type RedisServer } from '@rls/testkit';
import { buildRateLimitApp } from '../../src/app.js';
import { silentLogger } from '../../src/logger.js';
import { loadSettings } from '../../src/settings.js';

const dir = tempDir('rls-local-cache-');
let redis: RedisServer;
before(async () => {
  redis = await startRedis();
  mkdirSync(join(dir.path, 'config'), { recursive: true });
  writeFileSync(join(dir.path, 'config', 'lc.yaml'), 'domain: lc\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 2 }\n');
});
after(async () => {
  await redis.stop();
  dir.cleanup();
});

describe(`local over-limit cache over gRPC`, () => {
  test('over-limit repeats skip Redis and are counted once each', async () => {
    const { settings } = loadSettings({
      
      BACKEND_TYPE: 'redis',
      KVSTORE_SOCKET_TYPE: 'tcp',
      KVSTORE_URL: redis.url,
      LOCAL_CACHE_SIZE_IN_BYTES: '100000',
      USE_STATS_PUSH: 'false',
      RUNTIME_ROOT: dir.path,
      RUNTIME_WATCH_ROOT: 'false',
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: '0',
      HOST: '127.0.0.1',
      PORT: '0',
      DEBUG_HOST: '127.0.0.1',
      DEBUG_PORT: '0',
    });
    const app = buildRateLimitApp(settings, { logger: silentLogger() });
    app.loadRules();
    const { grpc } = await app.start();
    const client = createRateLimitClient({ address: `127.0.0.1:${grpc.port}`, timeoutMs: 5000 });
    try {
      const value = `lean-${Date.now()}`;
      const request = { domain: 'lc', descriptors: [{ entries: [{ key: 'k', value }] }], hitsAddend: 0 };
      await clearOfWindowEdge(60, 5000);
      const answers = [];
      for (let i = 0; i < 12; i++) answers.push(await client.shouldRateLimit(request));
      assert.deepEqual(
        answers.map((a) => a.overallCode),
        [RlsCode.OK, RlsCode.OK, ...Array.from({ length: 10 }, () => RlsCode.OVER_LIMIT)],
      );
      for (const a of answers.slice(2)) {
        assert.equal(a.statuses[0]!.limitRemaining, 0);
        assert.ok(a.statuses[0]!.durationUntilReset! >= 1 && a.statuses[0]!.durationUntilReset! <= 60);
      }
      const keys = (await redis.call('KEYS', `lc_k_${value}_*`)) as string[];
      assert.equal(keys.length, 1);
      assert.equal(await redis.call('GET', keys[0]!), '3', 'the 4th request onwards never reached Redis');
      const stat = (s: string): number => app.stats.counterValue(`ratelimit.service.rate_limit.lc.k.${s}`);
      assert.deepEqual(
        { total: stat('total_hits'), within: stat('within_limit'), over: stat('over_limit'), local: stat('over_limit_with_local_cache') },
        { total: 12, within: 2, over: 10, local: 9 },
      );
      assert.equal(app.stats.counterValue('ratelimit_server.ShouldRateLimit.total_requests'), 12);
      app.service.localCache!.refreshGauges();
      assert.equal(app.stats.gauge('ratelimit.localcache.hitCount').value(), 9);
    } finally {
      client.close();
      await app.stop();
    }
  });
});
