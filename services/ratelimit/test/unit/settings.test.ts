import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadSettings, SETTING_DEFS } from '../../src/settings.js';
import { parseDurationMs, parseBool, parseMap, renderDoc } from '@rls/settings';
import { isRateLimitError } from '@rls/engine';

test('defaults match upstream where the seed is silent', () => {
  const { settings, warnings } = loadSettings({});
  assert.equal(settings.port, 8080);
  assert.equal(settings.grpcPort, 8081);
  assert.equal(settings.grpcHost, '0.0.0.0');
  assert.equal(settings.runtimeRoot, '/srv/runtime_data/current');
  assert.equal(settings.runtimeAppDirectory, 'config');
  assert.equal(settings.kvstorePoolSize, 10);
  assert.equal(settings.kvstoreTimeoutMs, 10_000);
  assert.equal(settings.nearLimitRatio, 0.8);
  assert.equal(settings.expirationJitterMaxSeconds, 300);
  assert.equal(settings.limitLimitHeader, 'RateLimit-Limit');
  assert.equal(settings.logFormat, 'text');
  assert.equal(settings.backendType, 'redis');
  assert.deepEqual(warnings, []);
  assert.ok(Object.isFrozen(settings));
});

test('upstream names are aliases; the seed name wins with a warning', () => {
  const a = loadSettings({ REDIS_URL: 'r:1', REDIS_SOCKET_TYPE: 'tcp', LOCAL_CACHE_SIZE_IN_BYTES: '1000' });
  assert.equal(a.settings.kvstoreUrl, 'r:1');
  assert.equal(a.settings.localCacheSizeInBytes, 1000);
  const b = loadSettings({ KVSTORE_URL: 'a:1', REDIS_URL: 'b:2', KVSTORE_SOCKET_TYPE: 'tcp' });
  assert.equal(b.settings.kvstoreUrl, 'a:1');
  assert.deepEqual(b.warnings, ['both KVSTORE_URL and REDIS_URL are set; using KVSTORE_URL']);
});

test('every bad variable is listed in one error', () => {
  try {
    // Values upstream rejects too (out-of-range values upstream accepts are clamped: settings-upstream-values.test.ts).
    loadSettings({ PORT: 'eighty', NEAR_LIMIT_RATIO: 'high', KVSTORE_TIMEOUT: '10', SHADOW_MODE: 'yes', LOG_LEVEL: 'loud' });
    assert.fail('expected an error');
  } catch (err) {
    assert.ok(isRateLimitError(err));
    assert.equal(err.code, 'settings_invalid');
    for (const name of ['PORT=', 'NEAR_LIMIT_RATIO=', 'KVSTORE_TIMEOUT=', 'SHADOW_MODE=', 'LOG_LEVEL=']) {
      assert.match(err.message, new RegExp(name));
    }
    assert.match(err.message, /invalid settings \(5\)/);
  }
});

test('tcp socket type needs host:port', () => {
  assert.throws(() => loadSettings({ KVSTORE_SOCKET_TYPE: 'tcp', KVSTORE_URL: 'nohost' }), /expected host:port/);
  assert.doesNotThrow(() => loadSettings({ KVSTORE_SOCKET_TYPE: 'tcp', KVSTORE_URL: 'localhost:6379' }));
});

test('value syntaxes follow Go', () => {
  assert.equal(parseDurationMs('10s'), 10_000);
  assert.equal(parseDurationMs('150us'), 0.15);
  assert.equal(parseDurationMs('1h30m'), 5_400_000);
  assert.equal(parseDurationMs('0'), 0);
  assert.throws(() => parseDurationMs('10'));
  assert.throws(() => parseDurationMs('-1s'));
  assert.equal(parseBool('T'), true);
  assert.equal(parseBool('0'), false);
  assert.throws(() => parseBool('yes'));
  assert.deepEqual(parseMap('a:b,c:d:e'), { a: 'b', c: 'd:e' });
});

test('docs/ratelimit.md lists exactly the declared settings', () => {
  const doc = readFileSync(new URL('../../../../docs/ratelimit.md', import.meta.url), 'utf8');
  assert.equal(doc, renderDoc(doc, SETTING_DEFS), 'run: npx tsx --conditions=source services/ratelimit/src/settings-doc.ts');
});
