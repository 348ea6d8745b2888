// Pull metrics: scrape /metrics over HTTP from a real listener, parse the exposition strictly, and
// check the built-in mapping (docs/ratelimit.md, "Prometheus rules"), a user
// mapping file with glob and regex rules, broken files, and push + pull running together.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rls/testkit';
import { silentLogger } from '../../src/logger.js';
import { RateLimitError, StatsStore, type StatTags } from '@rls/engine';
import { defaultStatsMapping } from '../../src/stats/default-prom-mapping.js';
import { parseListenAddress, startMetricsServer, type MetricsServer } from '../../src/stats/metrics-server.js';
import { escapeMetricName, loadMappingFile, parseMappingYaml, type StatsMapping } from '../../src/stats/prom-mapping.js';
import { PrometheusSink } from '../../src/stats/prometheus-sink.js';
import { startStatsSinks } from '../../src/stats/stats-sinks.js';
import { parsePromText, sampleValue, type PromFamily } from '../support/stats-prom-text.js';
import { startUdpStatsd } from '../support/stats-listeners.js';

const logger = silentLogger();

interface Served {
  store: StatsStore;
  server: MetricsServer;
  sink: PrometheusSink;
  scrape(): Promise<Map<string, PromFamily>>;
  close(): Promise<void>;
}

async function serve(mapping: StatsMapping, extraTags: StatTags = {}): Promise<Served> {
  const store = new StatsStore();
  const sink = new PrometheusSink(store, { mapping, extraTags, processMetrics: false }, logger);
  sink.start();
  const server = await startMetricsServer({ address: { host: '127.0.0.1', port: 0 }, path: '/metrics' }, sink, logger);
  return {
    store,
    server,
    sink,
    scrape: async () => {
      const res = await fetch(`http://127.0.0.1:${server.address.port}/metrics`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
      return parsePromText(await res.text());
    },
    close: async () => {
      sink.stop();
      await server.close();
    },
  };
}

const RL = 'ratelimit.service.rate_limit';

describe('built-in mapping', () => {
  let s: Served;
  before(async () => {
    s = await serve(defaultStatsMapping(false));
  });
  after(() => s.close());

  test('per-rule stats of 2-level keys: counters named ratelimit_service_rate_limit_<stat> with domain and key1', async () => {
    s.store.counter(`${RL}.d.k.over_limit`).add(2);
    s.store.counter(`${RL}.d.k.total_hits`).add(5);
    s.store.counter(`${RL}.d.k.within_limit`).add(3);
    s.store.counter(`${RL}.d.k.shadow_mode`).add(1);
    s.store.counter(`${RL}.d.k.near_limit`); // exists with 0
    const m = await s.scrape();
    for (const [stat, v] of [['over_limit', 2], ['total_hits', 5], ['within_limit', 3], ['shadow_mode', 1], ['near_limit', 0]] as const) {
      const name = `ratelimit_service_rate_limit_${stat}`;
      assert.equal(m.get(name)?.type, 'counter', name);
      assert.equal(sampleValue(m, name, name, { domain: 'd', key1: 'k' }), v, name);
    }
    // Counters keep their running total across scrapes.
    s.store.counter(`${RL}.d.k.over_limit`).add(1);
    assert.equal(sampleValue(await s.scrape(), 'ratelimit_service_rate_limit_over_limit', 'ratelimit_service_rate_limit_over_limit', { domain: 'd', key1: 'k' }), 3);
  });

  test('3-level and deeper keys fold into {domain, key1, key2}; over_limit_with_local_cache is not folded into over_limit', async () => {
    s.store.counter(`${RL}.domain1.key3_val3.key4_val4.total_hits`).add(1);
    s.store.counter(`${RL}.domain1.key3_val3.key4_val4.key5_val5.total_hits`).add(2);
    s.store.counter(`${RL}.domain1.key3_val3.key4_val4.key5_val5.key6.total_hits`).add(4);
    s.store.counter(`${RL}.domain1.key3_val3.key4_val4.shadow_mode`).add(6);
    s.store.counter(`${RL}.domain1.key3_val3.key4_val4.over_limit`).add(1);
    s.store.counter(`${RL}.domain1.key3_val3.key4_val4.over_limit_with_local_cache`).add(1);
    const m = await s.scrape();
    const labels = { domain: 'domain1', key1: 'key3_val3', key2: 'key4_val4' };
    assert.equal(sampleValue(m, 'ratelimit_service_rate_limit_total_hits', 'ratelimit_service_rate_limit_total_hits', labels), 7);
    assert.equal(sampleValue(m, 'ratelimit_service_rate_limit_shadow_mode', 'ratelimit_service_rate_limit_shadow_mode', labels), 6);
    assert.equal(sampleValue(m, 'ratelimit_service_rate_limit_over_limit', 'ratelimit_service_rate_limit_over_limit', labels), 1);
    const escaped = 'ratelimit_service_rate_limit_domain1_key3_val3_key4_val4_over_limit_with_local_cache';
    assert.equal(sampleValue(m, escaped, escaped, {}), 1);
  });

  test('service counters: should_rate_limit error, total_requests, config loads', async () => {
    s.store.counter('ratelimit.service.call.should_rate_limit.redis_error').add(1);
    s.store.counter('ratelimit.service.call.should_rate_limit.service_error').add(2);
    s.store.counter('ratelimit_server.ShouldRateLimit.total_requests').add(1);
    s.store.counter('ratelimit.service.config_load_success').add(3);
    s.store.counter('ratelimit.service.config_load_error').add(1);
    const m = await s.scrape();
    const e = 'ratelimit_service_should_rate_limit_error';
    assert.equal(m.get(e)?.type, 'counter');
    assert.equal(sampleValue(m, e, e, { err_type: 'redis_error' }), 1);
    assert.equal(sampleValue(m, e, e, { err_type: 'service_error' }), 2);
    const t = 'ratelimit_service_total_requests';
    assert.equal(sampleValue(m, t, t, { grpc_method: 'ShouldRateLimit' }), 1, 'no _total suffix is added');
    assert.equal(m.has('ratelimit_service_total_requests_total'), false);
    assert.equal(sampleValue(m, 'ratelimit_service_config_load_success', 'ratelimit_service_config_load_success', {}), 3);
    assert.equal(sampleValue(m, 'ratelimit_service_config_load_error', 'ratelimit_service_config_load_error', {}), 1);
  });

  test('response_time is a histogram in seconds with the default buckets', async () => {
    s.store.timer('ratelimit_server.ShouldRateLimit.response_time').record(1000);
    const m = await s.scrape();
    const h = 'ratelimit_service_response_time_seconds';
    assert.equal(m.get(h)?.type, 'histogram');
    const l = { grpc_method: 'ShouldRateLimit' };
    assert.equal(sampleValue(m, h, `${h}_sum`, l), 1);
    assert.equal(sampleValue(m, h, `${h}_count`, l), 1);
    assert.equal(sampleValue(m, h, `${h}_bucket`, { ...l, le: '0.5' }), 0);
    assert.equal(sampleValue(m, h, `${h}_bucket`, { ...l, le: '1' }), 1);
    const les = m.get(h)?.samples.filter((x) => x.name === `${h}_bucket`).map((x) => x.labels.le);
    assert.deepEqual(les, ['0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '+Inf']);
  });

  test('unmapped stats keep their escaped name; gauges are gauges; stats that do not exist have no series', async () => {
    s.store.counter('ratelimit.service.global_shadow_mode').add(2);
    s.store.counter(`${RL}.test-domain.domain_not_found`).add(1);
    s.store.gauge('ratelimit.redis_pool.cx_active').set(3);
    s.store.gauge(`${RL}.domain1.key1.test_gauge`).set(9);
    const m = await s.scrape();
    assert.equal(sampleValue(m, 'ratelimit_service_global_shadow_mode', 'ratelimit_service_global_shadow_mode', {}), 2);
    assert.equal(sampleValue(m, 'ratelimit_service_rate_limit_test_domain_domain_not_found', 'ratelimit_service_rate_limit_test_domain_domain_not_found', {}), 1);
    assert.equal(m.get('ratelimit_redis_pool_cx_active')?.type, 'gauge');
    assert.equal(sampleValue(m, 'ratelimit_redis_pool_cx_active', 'ratelimit_redis_pool_cx_active', {}), 3);
    assert.equal(sampleValue(m, 'ratelimit_service_rate_limit_domain1_key1_test_gauge', 'ratelimit_service_rate_limit_domain1_key1_test_gauge', {}), 9);
    assert.equal(m.get('ratelimit_service_rate_limit_near_limit')?.samples.some((x) => x.labels.domain === 'domain1'), false);
  });

  test('other paths answer 404', async () => {
    const res = await fetch(`http://127.0.0.1:${s.server.address.port}/other`);
    assert.equal(res.status, 404);
    await res.text();
  });
});

describe('built-in mapping options', () => {
  test('PULL_METRICS_RESPONSE_TIME_AS_MILLISECONDS keeps milliseconds', async (t) => {
    const s = await serve(defaultStatsMapping(true));
    t.after(() => s.close());
    s.store.timer('ratelimit_server.ShouldRateLimit.response_time').record(1000);
    const m = await s.scrape();
    assert.equal(sampleValue(m, 'ratelimit_service_response_time_seconds', 'ratelimit_service_response_time_seconds_sum', { grpc_method: 'ShouldRateLimit' }), 1000);
  });

  test('EXTRA_TAGS and stat tags become labels', async (t) => {
    const s = await serve(defaultStatsMapping(false), { env: 'prod' });
    t.after(() => s.close());
    s.store.counter(`${RL}.d.k.total_hits`).add(1);
    s.store.counter('ratelimit.memcache.multiget', { code: 'success' }).add(2);
    const m = await s.scrape();
    assert.equal(sampleValue(m, 'ratelimit_service_rate_limit_total_hits', 'ratelimit_service_rate_limit_total_hits', { domain: 'd', key1: 'k', env: 'prod' }), 1);
    assert.equal(sampleValue(m, 'ratelimit_memcache_multiget', 'ratelimit_memcache_multiget', { code: 'success', env: 'prod' }), 2);
    // A later stat of the same name with another tag key widens the metric without losing values.
    s.store.counter('ratelimit.memcache.multiget', { node: 'a' }).add(5);
    const m2 = await s.scrape();
    assert.equal(sampleValue(m2, 'ratelimit_memcache_multiget', 'ratelimit_memcache_multiget', { code: 'success', env: 'prod' }), 2);
    assert.equal(sampleValue(m2, 'ratelimit_memcache_multiget', 'ratelimit_memcache_multiget', { node: 'a', env: 'prod' }), 5);
  });
});

describe('mapping files', () => {
  const dir = tempDir('rls-stats-');
  after(() => dir.cleanup());

  test('a statsd_exporter file with glob and regex rules, defaults, drop, summary and scale', async (t) => {
    const file = join(dir.path, 'mapping.yaml');
    writeFileSync(
      file,
      [
        'defaults:',
        '  observer_type: histogram',
        '  buckets: [1, 10, 100]',
        'mappings:',
        '  - match: "ratelimit.service.rate_limit.*.*.over_limit"',
        '    name: "rl_over_limit"',
        '    labels: { domain: "$1", descriptor: "$2" }',
        '  - match: "ratelimit\\\\.service\\\\.rate_limit\\\\.(?P<dom>[^.]+)\\\\.(.+)\\\\.total_hits"',
        '    match_type: regex',
        '    name: "rl_hits"',
        '    help: "Hits per descriptor path."',
        '    labels: { domain: "${dom}", path: "$2" }',
        '  - match: "ratelimit.redis_pool.*"',
        '    action: drop',
        '  - match: "ratelimit_server.*.response_time"',
        '    name: "rpc_ms"',
        '    labels: { method: "$1" }',
        '  - match: "ratelimit_server.*.other_time"',
        '    name: "rpc_seconds_summary"',
        '    observer_type: summary',
        '    labels: { method: "$1" }',
        '    scale: 0.001',
        '    summary_options: { quantiles: [{ quantile: 0.5, error: 0.05 }], max_age: 1m }',
      ].join('\n'),
    );
    const mapping = loadMappingFile(file);
    const s = await serve(mapping);
    t.after(() => s.close());
    s.store.counter(`${RL}.d.k.over_limit`).add(2);
    // The glob rule comes first but does not match 3 levels; the regex takes the rest.
    s.store.counter(`${RL}.d.a.b.total_hits`).add(3);
    s.store.counter(`${RL}.d.k.total_hits`).add(1);
    s.store.counter('ratelimit.redis_pool.cx_total').add(1);
    s.store.gauge('ratelimit.redis_pool.cx_active').set(1);
    s.store.timer('ratelimit_server.ShouldRateLimit.response_time').record(50);
    s.store.timer('ratelimit_server.ShouldRateLimit.other_time').record(2000);
    const m = await s.scrape();
    assert.equal(sampleValue(m, 'rl_over_limit', 'rl_over_limit', { domain: 'd', descriptor: 'k' }), 2);
    assert.equal(sampleValue(m, 'rl_hits', 'rl_hits', { domain: 'd', path: 'a.b' }), 3);
    assert.equal(sampleValue(m, 'rl_hits', 'rl_hits', { domain: 'd', path: 'k' }), 1);
    assert.equal(m.get('rl_hits')?.help, 'Hits per descriptor path.');
    assert.equal([...m.keys()].some((k) => k.startsWith('ratelimit_redis_pool')), false, 'dropped');
    assert.equal(m.get('rpc_ms')?.type, 'histogram');
    assert.deepEqual(
      m.get('rpc_ms')?.samples.filter((x) => x.name === 'rpc_ms_bucket').map((x) => [x.labels.le, x.value]),
      [['1', 0], ['10', 0], ['100', 1], ['+Inf', 1]],
    );
    assert.equal(m.get('rpc_seconds_summary')?.type, 'summary');
    assert.equal(sampleValue(m, 'rpc_seconds_summary', 'rpc_seconds_summary_sum', { method: 'ShouldRateLimit' }), 2);
    assert.equal(sampleValue(m, 'rpc_seconds_summary', 'rpc_seconds_summary', { method: 'ShouldRateLimit', quantile: '0.5' }), 2);
  });

  test('a broken file is rejected at start-up with every problem listed', () => {
    const text = [
      'defaults:',
      '  observer_type: histgram',
      'mappings:',
      '  - match: "a.*.b"',
      '    labels: { x: "$1" }',
      '  - match: "(unclosed"',
      '    match_type: regex',
      '    name: "n"',
      '  - match: "c.*"',
      '    name: "n2"',
      '    labels: { "bad-label": "$1", y: "$2" }',
      '  - match: "d..e"',
      '    name: "n3"',
      '  - match: "e.*"',
      '    name: "n4"',
      '    tiemr_type: histogram',
    ].join('\n');
    assert.throws(
      () => parseMappingYaml(text, 'mapping.yaml'),
      (err: unknown) => {
        assert.ok(err instanceof RateLimitError);
        assert.equal(err.code, 'settings_invalid');
        const msg = err.message;
        assert.match(msg, /^mapping\.yaml: invalid metrics mapping \(7 problems\)/);
        assert.match(msg, /defaults\.observer_type: expected one of histogram, summary, got "histgram"/);
        assert.match(msg, /mappings\[0\]\.name: required unless action is drop/);
        assert.match(msg, /mappings\[1\]\.match: invalid regular expression/);
        assert.match(msg, /mappings\[2\]\.labels\.bad-label: invalid label name/);
        assert.match(msg, /mappings\[2\]\.labels\.y: \$2 does not refer to a group of the match \(it has 1\)/);
        assert.match(msg, /mappings\[3\]\.match: invalid glob "d\.\.e"/);
        assert.match(msg, /mappings\[4\]\.tiemr_type: unknown field/);
        return true;
      },
    );
  });

  test('invalid YAML and a missing file are start-up errors naming the file', () => {
    assert.throws(() => parseMappingYaml('mappings: [\n', 'm.yaml'), /^RateLimitError: m\.yaml: invalid YAML/);
    assert.throws(() => loadMappingFile(join(dir.path, 'nope.yaml')), /nope\.yaml: cannot read metrics mapping file/);
    assert.throws(() => parseMappingYaml('mappings:\n  - match: "a.*"\n    name: "1abc"\n', 'm.yaml'), /mappings\[0\]\.name: "1abc" is not a valid metric name/);
  });
});

describe('helpers', () => {
  test('escapeMetricName follows statsd_exporter', () => {
    assert.equal(escapeMetricName('ratelimit.service.rate_limit.test-domain.files_files/*.total_hits'), 'ratelimit_service_rate_limit_test_domain_files_files___total_hits');
    assert.equal(escapeMetricName('a--b'), 'a_b');
    assert.equal(escapeMetricName('1abc'), '_1abc');
  });

  test('parseListenAddress accepts Go listen syntax', () => {
    assert.deepEqual(parseListenAddress(':9090'), { host: undefined, port: 9090 });
    assert.deepEqual(parseListenAddress('127.0.0.1:9091'), { host: '127.0.0.1', port: 9091 });
    assert.deepEqual(parseListenAddress('[::1]:9092'), { host: '::1', port: 9092 });
    assert.throws(() => parseListenAddress('9090'), /expected \[host\]:port/);
    assert.throws(() => parseListenAddress(':70000'), /port between/);
  });
});

describe('push and pull together', () => {
  test('one store feeds the statsd listener and the metrics endpoint', async (t) => {
    const listener = await startUdpStatsd();
    t.after(() => listener.close());
    const store = new StatsStore();
    const sinks = await startStatsSinks(
      {
        disabled: false,
        extraTags: {},
        flushIntervalMs: 10_000,
        push: { mode: 'statsd', host: '127.0.0.1', port: listener.port, protocol: 'udp', mogrifiers: [] },
        pull: { enabled: true, address: { host: '127.0.0.1', port: 0 }, path: '/prom', mapping: defaultStatsMapping(false) },
      },
      { store, logger, scheduler: { every: () => ({ cancel: () => {} }) } },
    );
    t.after(() => sinks.stop());
    store.counter('ratelimit_server.ShouldRateLimit.total_requests').add(2);
    store.timer('ratelimit_server.ShouldRateLimit.response_time').record(250);
    sinks.flush();
    assert.deepEqual(await listener.next(2, 0), ['ratelimit_server.ShouldRateLimit.response_time:250|ms', 'ratelimit_server.ShouldRateLimit.total_requests:2|c']);
    const port = sinks.metricsAddress?.port;
    assert.ok(port !== undefined);
    const res = await fetch(`http://127.0.0.1:${port}/prom`);
    const m = parsePromText(await res.text());
    assert.equal(sampleValue(m, 'ratelimit_service_total_requests', 'ratelimit_service_total_requests', { grpc_method: 'ShouldRateLimit' }), 2);
    assert.equal(sampleValue(m, 'ratelimit_service_response_time_seconds', 'ratelimit_service_response_time_seconds_sum', { grpc_method: 'ShouldRateLimit' }), 0.25);
    assert.ok(m.has('process_cpu_user_seconds_total'), 'process metrics are exported as upstream exports Go runtime metrics');
  });
});
