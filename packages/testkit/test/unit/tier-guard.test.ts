// The unit tier's guard (src/tier-guard.ts): inside a test file under test/unit, the kit's server
// starters and node's process-starting functions throw with a message that says what to do, while
// one-shot tools (openssl for test certificates) keep working.
// test-tier: unit (it calls the starters on purpose, to see them refused)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import cluster from 'node:cluster';
import type * as ChildProcessModule from 'node:child_process';
import { createRequire } from 'node:module';
import { spawnManaged, startMemcached, startPostgres, startRedis, startRedisCluster, startSentinelSet, tierOfTestFile, UnitTierViolation } from '@rls/testkit';

const refused = /unit tests may not start servers: move this file to test\/integration/;

test('a file is in the tier its directory names; tests beside the code are unit', () => {
  assert.equal(tierOfTestFile('/r/services/ratelimit/test/unit/a.test.ts'), 'unit');
  assert.equal(tierOfTestFile('/r/services/ratelimit/test/integration/a.test.ts'), 'integration');
  assert.equal(tierOfTestFile('/r/services/ratelimit/test/e2e/a.test.ts'), 'e2e');
  assert.equal(tierOfTestFile('/r/services/ratelimit/src/server/h2/hpack.test.ts'), 'unit');
  assert.equal(tierOfTestFile('/r/services/ratelimit/test/a.test.ts'), undefined);
});

test('the server starters refuse to run in a unit test', async () => {
  await assert.rejects(startRedis(), refused);
  await assert.rejects(startSentinelSet(), refused);
  await assert.rejects(startRedisCluster(), refused);
  await assert.rejects(startMemcached(), refused);
  await assert.rejects(startPostgres(), refused);
  assert.throws(() => spawnManaged('sleep', ['1']), UnitTierViolation);
});

test('child_process and cluster refuse to start processes, whether imported or required', () => {
  assert.throws(() => spawn('sleep', ['1']), refused);
  assert.throws(() => (createRequire(import.meta.url)('node:child_process') as typeof ChildProcessModule).fork('x.js'), refused);
  assert.throws(() => spawnSync(process.execPath, ['-e', '0']), refused);
  assert.throws(() => execFileSync('python3', ['-c', '0']), refused);
  assert.throws(() => cluster.fork(), refused);
});

test('one-shot tools still run', () => {
  assert.equal(execFileSync('true').length, 0);
});
