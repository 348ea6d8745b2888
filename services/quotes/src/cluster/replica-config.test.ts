import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadSettings } from '../settings.js';
import { replicaConfigProblems } from './replica-config.js';

const PG = 'postgres://quotes@db:5432/quotes';

test('roles other than all need PostgreSQL; PostgreSQL needs shared burst limits', () => {
  assert.deepEqual(replicaConfigProblems(loadSettings({})), [], 'the SQLite quick start');
  assert.match(replicaConfigProblems(loadSettings({ QUOTES_ROLE: 'api' })).join('\n'), /QUOTES_ROLE=api needs PostgreSQL .*with SQLite the service is one process: use QUOTES_ROLE=all/);
  assert.match(replicaConfigProblems(loadSettings({ QUOTES_ROLE: 'ingest', DATABASE_URL: 'memory:' })).join('\n'), /QUOTES_ROLE=ingest needs PostgreSQL .*with `memory:`/);

  const embedded = replicaConfigProblems(loadSettings({ DATABASE_URL: PG }));
  assert.equal(embedded.length, 1);
  assert.match(embedded[0]!, /RATELIMIT_GRPC_ADDR is unset/);
  assert.match(embedded[0]!, /N replicas would admit N times each limit/);
  assert.match(embedded[0]!, /services\/quotes\/ratelimit\/quotes\.yaml/);
  assert.match(embedded[0]!, /QUOTES_SINGLE_REPLICA=true/);

  assert.deepEqual(replicaConfigProblems(loadSettings({ DATABASE_URL: PG, RATELIMIT_GRPC_ADDR: 'ratelimit:8081', QUOTES_ROLE: 'api' })), []);
  assert.deepEqual(replicaConfigProblems(loadSettings({ DATABASE_URL: PG, QUOTES_SINGLE_REPLICA: 'true' })), []);
  assert.deepEqual(replicaConfigProblems(loadSettings({ DATABASE_URL: PG, RATELIMIT_ENABLED: 'false' })), []);
  assert.match(replicaConfigProblems(loadSettings({ DATABASE_URL: PG, QUOTES_SINGLE_REPLICA: 'true', QUOTES_ROLE: 'api' })).join('\n'), /QUOTES_SINGLE_REPLICA=true declares one replica/);
});

test('usage counting: write-through by default on PostgreSQL, write-behind otherwise; an explicit value wins', () => {
  assert.equal(loadSettings({}).usageFlushMs, 1000);
  assert.equal(loadSettings({ DATABASE_URL: PG }).usageFlushMs, 0);
  assert.equal(loadSettings({ DATABASE_URL: PG, QUOTES_SINGLE_REPLICA: 'true' }).usageFlushMs, 1000);
  assert.equal(loadSettings({ DATABASE_URL: PG, QUOTES_USAGE_FLUSH_MS: '250' }).usageFlushMs, 250);
  assert.throws(() => loadSettings({ QUOTES_ROLE: 'leader' }), /QUOTES_ROLE/);
  assert.throws(() => loadSettings({ QUOTES_LEADER_LEASE: '0.5' }), /QUOTES_LEADER_LEASE/);
  assert.equal(loadSettings({ QUOTES_LEADER_LEASE: '2', QUOTES_STATE_POLL_INTERVAL: '0.2' }).leaderLeaseMs, 2000);
  assert.equal(loadSettings({ QUOTES_STATE_POLL_INTERVAL: '0.2' }).statePollMs, 200);
});
