import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSettings } from '../../src/settings.js';

const tcp = { KVSTORE_SOCKET_TYPE: 'tcp' };

test('KVSTORE_* defaults follow the seed', () => {
  const { settings: s, warnings } = loadSettings({});
  assert.equal(s.kvstoreType, 'single');
  assert.equal(s.kvstorePoolOnEmptyBehavior, 'CREATE');
  assert.equal(s.kvstorePoolOnEmptyWaitMs, 1000);
  assert.equal(s.kvstorePipelineWindowMs, 0);
  assert.equal(s.kvstoreTls, false);
  assert.equal(s.kvstorePersecond, false);
  assert.equal(s.kvstorePersecondUrl, '/var/run/nutcracker/ratelimitpersecond.sock');
  assert.equal(s.kvstoreStartupInitialIntervalMs, 1000);
  assert.equal(s.kvstoreStartupMaxIntervalMs, 30_000);
  assert.equal(s.kvstoreStartupMaxElapsedMs, 0);
  assert.deepEqual(warnings, []);
});

test('sentinel and cluster are accepted; types are case-insensitive; REDIS_* aliases work', () => {
  const a = loadSettings({ ...tcp, KVSTORE_TYPE: 'SENTINEL', KVSTORE_URL: 'mymaster,10.0.0.1:26379,10.0.0.2:26379', KVSTORE_SENTINEL_AUTH: 'u:p' }).settings;
  assert.equal(a.kvstoreType, 'sentinel');
  // Credentials are kept as Secrets (bytes, never a string a heap snapshot could show) and print redacted.
  assert.equal(a.kvstoreSentinelAuth.copyBytes().toString(), 'u:p');
  assert.equal(String(a.kvstoreSentinelAuth), '[redacted]');
  assert.equal(JSON.stringify({ auth: a.kvstoreSentinelAuth }), '{"auth":"[redacted]"}');
  const b = loadSettings({ ...tcp, REDIS_TYPE: 'cluster', REDIS_URL: 'n1:7000,n2:7001', REDIS_PIPELINE_WINDOW: '150us', REDIS_POOL_ON_EMPTY_BEHAVIOR: 'error', REDIS_POOL_ON_EMPTY_WAIT_DURATION: '50ms' }).settings;
  assert.equal(b.kvstoreType, 'cluster');
  assert.equal(b.kvstorePipelineWindowMs, 0.15);
  assert.equal(b.kvstorePoolOnEmptyBehavior, 'ERROR');
  assert.equal(b.kvstorePoolOnEmptyWaitMs, 50);
});

test('start-up errors: sentinel URL too short, unknown type, bad cluster list, lone client cert', () => {
  assert.throws(
    () => loadSettings({ ...tcp, KVSTORE_TYPE: 'sentinel', KVSTORE_URL: 'mymaster' }),
    /Expected master name and a list of urls for the sentinels, in the format: <redis master name>,<sentinel1>,...,<sentineln>/,
  );
  assert.throws(() => loadSettings({ KVSTORE_TYPE: 'ring' }), /Unrecognized redis type ring/);
  assert.throws(() => loadSettings({ ...tcp, KVSTORE_TYPE: 'cluster', KVSTORE_URL: 'n1:7000,n2' }), /host:port list of cluster nodes/);
  assert.throws(() => loadSettings({ ...tcp, KVSTORE_URL: 'h:1', KVSTORE_TLS: 'true', KVSTORE_TLS_CLIENT_CERT: '/x.pem' }), /must be set together/);
  assert.throws(() => loadSettings({ ...tcp, KVSTORE_URL: 'h:1', KVSTORE_TLS: 'true', KVSTORE_TLS_CACERT: '/nonexistent/ca.pem' }), /KVSTORE_TLS_CACERT.*file not found/);
  assert.throws(() => loadSettings({ ...tcp, KVSTORE_URL: 'h:1', KVSTORE_PERSECOND: 'true', KVSTORE_PERSECOND_SOCKET_TYPE: 'tcp', KVSTORE_PERSECOND_URL: 'x' }), /KVSTORE_PERSECOND_URL/);
  // Upstream warns about an unknown behaviour and waits; so do we (issue 12, finding 9).
  const spin = loadSettings({ KVSTORE_POOL_ON_EMPTY_BEHAVIOR: 'SPIN' });
  assert.equal(spin.settings.kvstorePoolOnEmptyBehavior, 'WAIT');
  assert.ok(spin.warnings.includes('KVSTORE_POOL_ON_EMPTY_BEHAVIOR="SPIN": not CREATE, ERROR or WAIT; using WAIT'), JSON.stringify(spin.warnings));
  assert.throws(() => loadSettings({ KVSTORE_CLUSTER_PIPELINE_PARALLELISM: '-1' }), /KVSTORE_CLUSTER_PIPELINE_PARALLELISM/);
});

test('deprecated and no-effect variables are accepted with a warning', () => {
  const { warnings } = loadSettings({ ...tcp, KVSTORE_URL: 'h:1', KVSTORE_PIPELINE_LIMIT: '8', REDIS_CLUSTER_PIPELINE_PARALLELISM: '4' });
  assert.ok(warnings.includes('KVSTORE_PIPELINE_LIMIT is deprecated and has no effect'));
  assert.ok(warnings.some((w) => /KVSTORE_CLUSTER_PIPELINE_PARALLELISM has no effect/.test(w)));
});
