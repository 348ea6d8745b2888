// Worker-mode pieces without processes: the stats relay and aggregator (counter deltas, gauges
// summed over live workers, timer observations, the rule-load stats the primary owns), the totals
// a worker's /stats shows, rule snapshots (JSON round trip, same rules as the direct load), the
// worker-count rule, the worker's node flags.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workerExecArgv } from '../../src/cluster/primary.js';
import { CONFIG_LOAD_SUCCESS, PRIMARY_OWNED_STATS } from '../../src/cluster/primary-rules.js';
import { StatsAggregator, statsTotalsOf, storeOfTotals, WorkerStatsRelay, type StatsBatch, type StatsTotals } from '../../src/cluster/stats-relay.js';
import { StatsStore, loadRuleSet } from '@rls/engine';
import { isRuleSnapshot, ruleSetFromSnapshot, type RuleSnapshot } from '../../src/provider/rule-snapshot.js';
import { statsText } from '../../src/server/debug-server.js';
import { resolveWorkerCount, WORKER_SETTING_DEFS } from '../../src/cluster/worker-settings.js';
import { IGNORE_CLAMPS } from '@rls/settings';

test('relay batches reach one aggregate registry: counters summed, gauges summed per live worker, timers replayed', async () => {
  const primary = new StatsStore();
  const agg = new StatsAggregator(primary);
  const observed: number[] = [];
  primary.onTimer((_n, ms) => observed.push(ms));
  const workers = [1, 2].map((id) => {
    const store = new StatsStore();
    const batches: StatsBatch[] = [];
    const relay = new WorkerStatsRelay(store, (b, done) => {
      batches.push(b);
      agg.apply(id, JSON.parse(JSON.stringify(b)) as StatsBatch);
      done();
    }, 60_000);
    relay.start();
    return { store, relay, batches };
  });
  const [w1, w2] = workers as [(typeof workers)[0], (typeof workers)[0]];
  w1.store.counter('ratelimit.service.rate_limit.d.k.total_hits').add(3);
  w2.store.counter('ratelimit.service.rate_limit.d.k.total_hits').add(4);
  w1.store.counter('ratelimit.memcache.add', { code: 'success' }).inc();
  w1.store.gauge('ratelimit.redis_pool.cx_active').set(10);
  w2.store.gauge('ratelimit.redis_pool.cx_active').set(7);
  w1.store.timer('ratelimit_server.ShouldRateLimit.response_time').record(2);
  w2.store.timer('ratelimit_server.ShouldRateLimit.response_time').record(5);
  await Promise.all(workers.map((w) => w.relay.flush()));
  assert.equal(primary.counterValue('ratelimit.service.rate_limit.d.k.total_hits'), 7);
  assert.equal(primary.counterValue('ratelimit.memcache.add', { code: 'success' }), 1);
  assert.equal(primary.gauge('ratelimit.redis_pool.cx_active').value(), 17);
  assert.deepEqual(observed.sort(), [2, 5]);

  // Only changes travel: a flush with nothing new sends nothing; the next delta is a delta.
  const sent = w1.batches.length;
  await w1.relay.flush();
  assert.equal(w1.batches.length, sent);
  w1.store.counter('ratelimit.service.rate_limit.d.k.total_hits').add(2);
  await w1.relay.stop();
  assert.deepEqual(w1.batches.at(-1)?.c, [['ratelimit.service.rate_limit.d.k.total_hits', 0, 2]]);
  assert.equal(primary.counterValue('ratelimit.service.rate_limit.d.k.total_hits'), 9);

  // A worker that is gone no longer holds connections open; its counts stay counted.
  agg.forget(2);
  assert.equal(primary.gauge('ratelimit.redis_pool.cx_active').value(), 10);
  assert.equal(primary.counterValue('ratelimit.service.rate_limit.d.k.total_hits'), 9);
  await w2.relay.stop();
});

test('WORKERS: auto = one per core, an explicit count, memory forced to one process with a note', () => {
  const parse = (raw: string): number | 'auto' => WORKER_SETTING_DEFS.workers.parse(raw, IGNORE_CLAMPS);
  assert.equal(parse('auto'), 'auto');
  assert.equal(parse(''), 'auto');
  assert.equal(parse('3'), 3);
  assert.throws(() => parse('0'));
  assert.throws(() => parse('many'));
  assert.deepEqual(resolveWorkerCount({ workers: 'auto', backendType: 'redis' }, 2), { count: 2 });
  assert.deepEqual(resolveWorkerCount({ workers: 'auto', backendType: 'mcstore' }, 4), { count: 4 });
  assert.deepEqual(resolveWorkerCount({ workers: 1, backendType: 'redis' }, 8), { count: 1 });
  const mem = resolveWorkerCount({ workers: 'auto', backendType: 'memory' }, 2);
  assert.equal(mem.count, 1);
  assert.match(mem.note ?? '', /single process/);
  assert.deepEqual(resolveWorkerCount({ workers: 1, backendType: 'memory' }, 2), { count: 1 });
});

test('a worker runs with the parent\'s loaders but without its inline script', () => {
  assert.deepEqual(workerExecArgv(['--conditions=source', '--import', 'tsx', '-e', 'import("x")']), ['--conditions=source', '--import', 'tsx']);
  assert.deepEqual(workerExecArgv(['--eval=1', '--max-old-space-size=512', '-p', '2']), ['--max-old-space-size=512']);
});

test('the primary counts rule loads itself: the workers\' copies of those stats are not added', () => {
  const primary = new StatsStore();
  const agg = new StatsAggregator(primary, PRIMARY_OWNED_STATS);
  primary.counter(CONFIG_LOAD_SUCCESS).inc();
  primary.gauge('runtime.num_values').set(3);
  for (const id of [1, 2]) {
    agg.apply(id, { t: 'rls-stats', c: [[CONFIG_LOAD_SUCCESS, 0, 1], ['ratelimit.service.rate_limit.d.k.total_hits', 0, 2]], g: [['runtime.num_values', 0, 0]], h: [] });
  }
  assert.equal(primary.counterValue(CONFIG_LOAD_SUCCESS), 1, 'one load, counted once');
  assert.equal(primary.gauge('runtime.num_values').value(), 3);
  assert.equal(primary.counterValue('ratelimit.service.rate_limit.d.k.total_hits'), 4);
});

test('/stats totals cross the channel as values and render as the primary\'s registry does', () => {
  const primary = new StatsStore();
  primary.counter('ratelimit.service.rate_limit.d.k.total_hits').add(9);
  primary.counter('ratelimit.memcache.add', { code: 'success' }).add(2);
  primary.gauge('ratelimit.redis_pool.cx_active').set(17);
  const t = primary.timer('ratelimit_server.ShouldRateLimit.response_time');
  t.record(2);
  t.record(5.5);
  const wire = JSON.parse(JSON.stringify(statsTotalsOf(primary, 7))) as StatsTotals;
  assert.equal(wire.id, 7);
  const mirror = storeOfTotals(wire, new StatsStore());
  assert.equal(statsText(mirror), statsText(primary));
  assert.match(statsText(mirror), /ratelimit_server\.ShouldRateLimit\.response_time: count=2 sum_ms=7\.5/);
});

test('a rule snapshot survives the JSON channel and compiles to the rules the primary loaded', () => {
  const sources = [
    { name: 'a.yaml', content: 'domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 3 }\n' },
    { name: 'b.yaml', content: 'domain: b\ndescriptors:\n  - key: k\n    value: v\n    rate_limit: { unit: hour, requests_per_unit: 8 }\n' },
  ];
  const snap: RuleSnapshot = { kind: 'file', version: '4', sources };
  const wire: unknown = JSON.parse(JSON.stringify(snap));
  assert.ok(isRuleSnapshot(wire));
  const stats = new StatsStore();
  assert.equal(ruleSetFromSnapshot(wire, { mergeDomainConfig: false, stats }).dump(), loadRuleSet(sources, { mergeDomainConfig: false }).dump());
  assert.equal(isRuleSnapshot({ kind: 'file', version: '1', sources: [{ name: 'x' }] }), false);
  assert.equal(isRuleSnapshot({ kind: 'xds', version: '1', resources: [1] }), false);
  assert.equal(isRuleSnapshot({ kind: 'other', version: '1' }), false);
});
