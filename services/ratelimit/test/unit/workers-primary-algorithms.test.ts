// Worker mode: the primary validates every load for the workers, so it must refuse rules whose
// algorithm the configured store cannot run (each worker's service would refuse them, and the
// primary must not count config_load_success or publish a snapshot for them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StatsStore } from '@rls/engine';
import { CONFIG_LOAD_ERROR, CONFIG_LOAD_SUCCESS, startPrimaryRuleSource, type LoadFailure } from '../../src/cluster/primary-rules.js';
import { silentLogger } from '../../src/logger.js';
import { loadSettings } from '../../src/settings.js';

const BUCKET_RULES = `domain: d
descriptors:
  - key: upload
    rate_limit: { unit: second, requests_per_unit: 10, algorithm: token_bucket, burst: 20 }
`;

function primaryFor(backend: Record<string, string>): { loaded: boolean; success: number; error: number; failures: LoadFailure[] } {
  const root = mkdtempSync(join(tmpdir(), 'primary-alg-'));
  try {
    mkdirSync(join(root, 'config'));
    writeFileSync(join(root, 'config', 'rules.yaml'), BUCKET_RULES);
    const { settings } = loadSettings({ RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: '', ...backend });
    const stats = new StatsStore();
    const failures: LoadFailure[] = [];
    const source = startPrimaryRuleSource(settings, { stats, logger: silentLogger() });
    source.onFailure((f) => failures.push(f));
    try {
      return {
        loaded: source.current().snapshot !== undefined,
        success: stats.counter(CONFIG_LOAD_SUCCESS).value(),
        error: stats.counter(CONFIG_LOAD_ERROR).value(),
        failures,
      };
    } finally {
      source.stop();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

test('primary refuses a token bucket rule for memcached workers, counting a load error', () => {
  const r = primaryFor({ BACKEND_TYPE: 'memcache', MEMCACHE_HOST_PORT: '127.0.0.1:1' });
  assert.equal(r.loaded, false);
  assert.equal(r.success, 0);
  assert.equal(r.error, 1);
});

test('primary accepts the same rule for Redis and memory workers', () => {
  for (const backend of [{ BACKEND_TYPE: 'redis', REDIS_URL: '127.0.0.1:1' }, { BACKEND_TYPE: 'memory' }]) {
    const r = primaryFor(backend);
    assert.equal(r.loaded, true, JSON.stringify(backend));
    assert.equal(r.success, 1);
    assert.equal(r.error, 0);
  }
});
