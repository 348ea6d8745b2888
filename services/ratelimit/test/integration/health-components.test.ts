// Health components of the whole app (docs/ratelimit.md, "Health"): the counter
// store (`redis`, with and without KVSTORE_HEALTH_CHECK_ACTIVE_CONNECTION, against a real
// redis-server that is stopped and started), the configuration component through real reloads to
// zero domains and back, and the termination component. `/healthcheck`, gRPC Check and gRPC Watch
// are read over the network for every transition.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { startRedis, tempDir, waitFor } from '@rls/testkit';
import { buildRateLimitApp, type RateLimitApp } from '../../src/app.js';
import { silentLogger } from '../../src/logger.js';
import { loadSettings } from '../../src/settings.js';
import { grpcJsStubs, unaryCall, type GrpcJsStubs } from '../support/server-test-support.js';

const RULES = 'domain: h\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 5 }\n';

interface Running {
  app: RateLimitApp;
  httpUrl: string;
  stubs: GrpcJsStubs;
  /** Every status the gRPC Watch stream on "ratelimit" delivered, in order. */
  watched: string[];
  healthcheck(): Promise<number>;
  check(): Promise<string>;
  close(): Promise<void>;
}

const cleanups: (() => void)[] = [];
after(() => {
  for (const c of cleanups) c();
});

function rulesDir(files: Record<string, string>): { root: string; dir: string } {
  const t = tempDir('rls-health-');
  cleanups.push(t.cleanup);
  const dir = join(t.path, 'rl', 'config');
  mkdirSync(dir, { recursive: true });
  for (const [f, c] of Object.entries(files)) writeFileSync(join(dir, f), c);
  return { root: t.path, dir };
}

async function run(env: Record<string, string>): Promise<Running> {
  const { settings } = loadSettings({
    HOST: '127.0.0.1',
    PORT: '0',
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: '0',
    DEBUG_HOST: '127.0.0.1',
    DEBUG_PORT: '0',
    RUNTIME_SUBDIRECTORY: 'rl',
    RUNTIME_WATCH_DEBOUNCE: '50ms',
    ...env,
  });
  const app = buildRateLimitApp(settings, { logger: silentLogger() });
  app.loadRules();
  const addr = await app.start();
  const httpUrl = `http://127.0.0.1:${addr.http.port}`;
  const stubs = grpcJsStubs(`127.0.0.1:${addr.grpc.port}`);
  const watched: string[] = [];
  const stream = (stubs.health.Watch as (...a: unknown[]) => grpc.ClientReadableStream<{ status?: string }>).call(stubs.health, { service: 'ratelimit' });
  stream.on('data', (m: { status?: string }) => watched.push(m.status ?? 'UNKNOWN'));
  stream.on('error', () => undefined);
  await waitFor(() => watched.length === 1, { what: 'first Watch message' });
  return {
    app,
    httpUrl,
    stubs,
    watched,
    healthcheck: async () => (await fetch(`${httpUrl}/healthcheck`)).status,
    check: async () => (await unaryCall<{ status: string }>(stubs.health, 'Check', { service: 'ratelimit' })).status,
    close: async () => {
      stream.cancel();
      stubs.close();
      await app.stop();
    },
  };
}

async function expectHealth(r: Running, healthy: boolean): Promise<void> {
  const want = healthy ? 'SERVING' : 'NOT_SERVING';
  await waitFor(async () => (await r.healthcheck()) === (healthy ? 200 : 500), { what: `/healthcheck ${healthy ? 200 : 500}` });
  assert.equal(await r.check(), want);
  await waitFor(() => r.watched.at(-1) === want, { what: `Watch ${want}` });
}

describe('counter store component', () => {
  test('memory store: always healthy', async () => {
    const { root } = rulesDir({ 'a.yaml': RULES });
    const r = await run({ BACKEND_TYPE: 'memory', RUNTIME_ROOT: root });
    try {
      assert.equal(r.app.health.component('redis'), true);
      await expectHealth(r, true);
    } finally {
      await r.close();
    }
  });

  test('KVSTORE_HEALTH_CHECK_ACTIVE_CONNECTION=true: fails without a Redis connection and recovers with one', async () => {
    const redis = await startRedis();
    const { root } = rulesDir({ 'a.yaml': RULES });
    const r = await run({
      BACKEND_TYPE: 'redis',
      KVSTORE_SOCKET_TYPE: 'tcp',
      KVSTORE_URL: redis.url,
      KVSTORE_POOL_SIZE: '2',
      KVSTORE_TIMEOUT: '500ms',
      REDIS_HEALTH_CHECK_ACTIVE_CONNECTION: 'true', // the upstream alias
      RUNTIME_ROOT: root,
    });
    try {
      assert.equal(r.app.settings.kvstoreHealthCheckActiveConnection, true);
      await expectHealth(r, true);
      await redis.stop();
      await expectHealth(r, false);
      assert.equal(r.app.health.component('redis'), false);
      await redis.start();
      await expectHealth(r, true);
      assert.deepEqual(r.watched, ['SERVING', 'NOT_SERVING', 'SERVING']);
    } finally {
      await r.close();
      await redis.stop();
    }
  });

  test('without the setting, losing Redis does not change health (requests fail instead)', async () => {
    const redis = await startRedis();
    const { root } = rulesDir({ 'a.yaml': RULES });
    const r = await run({ BACKEND_TYPE: 'redis', KVSTORE_SOCKET_TYPE: 'tcp', KVSTORE_URL: redis.url, KVSTORE_POOL_SIZE: '1', KVSTORE_TIMEOUT: '300ms', RUNTIME_ROOT: root });
    try {
      await expectHealth(r, true);
      await redis.stop();
      await waitFor(() => !r.app.store.isConnected(), { what: 'the store to notice Redis is gone' });
      const res = await fetch(`${r.httpUrl}/json`, { method: 'POST', body: JSON.stringify({ domain: 'h', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] }) });
      assert.equal(res.status, 503);
      assert.equal(await r.healthcheck(), 200);
      assert.equal(await r.check(), 'SERVING');
      assert.deepEqual(r.watched, ['SERVING']);
    } finally {
      await r.close();
      await redis.stop();
    }
  });
});

test('HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: follows reloads to zero domains and back; a bad load changes nothing', async () => {
  const { root, dir } = rulesDir({});
  const r = await run({ BACKEND_TYPE: 'memory', RUNTIME_ROOT: root, RUNTIME_WATCH_ROOT: 'false', HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: 'true' });
  try {
    assert.equal(r.app.service.currentRuleSet()?.domainCount, 0, 'an empty directory is a valid zero-domain rule set');
    await expectHealth(r, false);
    writeFileSync(join(dir, 'a.yaml'), RULES);
    await expectHealth(r, true);
    rmSync(join(dir, 'a.yaml'));
    await expectHealth(r, false);
    writeFileSync(join(dir, 'a.yaml'), RULES);
    await expectHealth(r, true);
    const errors = r.app.stats.counterValue('ratelimit.service.config_load_error');
    writeFileSync(join(dir, 'a.yaml'), 'domain: [');
    await waitFor(() => r.app.stats.counterValue('ratelimit.service.config_load_error') === errors + 1, { what: 'the bad reload' });
    assert.equal(await r.healthcheck(), 200, 'a failed load keeps the previous rules and health');
    assert.deepEqual(r.watched, ['NOT_SERVING', 'SERVING', 'NOT_SERVING', 'SERVING']);
  } finally {
    await r.close();
  }
});

test('termination: stop() turns health unhealthy at once, while the listeners still serve through the drain delay', async () => {
  const { root } = rulesDir({ 'a.yaml': RULES });
  const r = await run({ BACKEND_TYPE: 'memory', RUNTIME_ROOT: root, SHUTDOWN_DRAIN_DELAY: '400ms' });
  const stopped = r.app.stop();
  assert.equal(r.app.health.component('sigterm'), false);
  assert.equal(await r.healthcheck(), 500, 'unhealthy while the listener still accepts');
  assert.equal(await r.check(), 'NOT_SERVING');
  const res = await fetch(`${r.httpUrl}/json`, { method: 'POST', body: JSON.stringify({ domain: 'h', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] }) });
  assert.equal(res.status, 200, 'requests are still answered during the drain delay');
  await stopped;
  await assert.rejects(fetch(`${r.httpUrl}/healthcheck`), 'the listener is closed after the drain');
  r.stubs.close();
});
