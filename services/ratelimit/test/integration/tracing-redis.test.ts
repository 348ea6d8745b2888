// Tracing with the Redis store, in process: the store span carries upstream's name
// (`Redis Pipeline Execution`) and is a child of `ShouldRateLimit Execution`; a failing store call
// marks both spans as errors. Spans are collected by an exporter that keeps them (the SDK's
// InMemorySpanExporter forgets its spans on shutdown, which is when the batch is flushed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SpanStatusCode } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { startRedis, tempDir } from '@rls/testkit';
import { buildRateLimitApp } from '../../src/app.js';
import { silentLogger } from '../../src/logger.js';
import { loadSettings } from '../../src/settings.js';
import { createTracing } from '../../src/tracing/tracing.js';

test('Redis store calls are child spans named as upstream; store errors mark the spans', async () => {
  const redis = await startRedis();
  const dir = tempDir('rls-trace-');
  mkdirSync(join(dir.path, 'rl', 'config'), { recursive: true });
  writeFileSync(join(dir.path, 'rl', 'config', 'a.yaml'), 'domain: tr\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 5 }\n');
  const { settings } = loadSettings({
    BACKEND_TYPE: 'redis',
    KVSTORE_SOCKET_TYPE: 'tcp',
    KVSTORE_URL: redis.url,
    KVSTORE_TIMEOUT: '300ms',
    RUNTIME_ROOT: dir.path,
    RUNTIME_SUBDIRECTORY: 'rl',
    HOST: '127.0.0.1',
    PORT: '0',
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: '0',
    DEBUG_HOST: '127.0.0.1',
    DEBUG_PORT: '0',
  });
  const spans: ReadableSpan[] = [];
  const exporter: SpanExporter = {
    export: (batch, done) => {
      spans.push(...batch);
      done({ code: ExportResultCode.SUCCESS });
    },
    shutdown: () => Promise.resolve(),
  };
  const tracing = await createTracing(
    { protocol: 'http', serviceName: 'RateLimit', serviceNamespace: '', serviceInstanceId: '', samplingRate: 1 },
    { logger: silentLogger(), exporter, uuid: () => '00000000-0000-4000-8000-000000000001' },
  );
  assert.equal(tracing.resourceAttributes['service.instance.id'], '00000000-0000-4000-8000-000000000001');
  const app = buildRateLimitApp(settings, { logger: silentLogger(), tracing });
  app.loadRules();
  const addr = await app.start();
  const url = `http://127.0.0.1:${addr.http.port}/json`;
  const body = JSON.stringify({ domain: 'tr', descriptors: [{ entries: [{ key: 'k', value: 'a' }] }, { entries: [{ key: 'k', value: 'b' }] }] });
  try {
    assert.equal((await fetch(url, { method: 'POST', body })).status, 200);
    await redis.stop();
    assert.equal((await fetch(url, { method: 'POST', body })).status, 503);
  } finally {
    await app.stop(); // flushes the spans into the exporter
    dir.cleanup();
  }
  const roots = spans.filter((s) => s.name === 'ShouldRateLimit Execution');
  const stores = spans.filter((s) => s.name === 'Redis Pipeline Execution');
  assert.equal(roots.length, 2);
  assert.equal(stores.length, 2);
  for (let i = 0; i < 2; i++) {
    const root = roots[i]!;
    const store = stores.find((s) => s.spanContext().traceId === root.spanContext().traceId);
    assert.ok(store !== undefined);
    assert.equal(store.parentSpanContext?.spanId, root.spanContext().spanId);
    assert.equal(store.attributes['pipeline length'], 2);
    assert.equal(root.attributes.domain, 'tr');
  }
  assert.deepEqual(
    roots.map((s) => s.status.code),
    [SpanStatusCode.UNSET, SpanStatusCode.ERROR],
  );
  assert.equal(stores.filter((s) => s.status.code === SpanStatusCode.ERROR).length, 1);
});
