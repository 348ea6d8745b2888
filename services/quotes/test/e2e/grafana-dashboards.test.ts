// The Grafana dashboards of examples/grafana/ against real data: a real Prometheus scrapes a real
// ratelimit process (Redis, pull metrics) and a real quotes replica (PostgreSQL, a fake exchange,
// the remote rate limit decider, QUOTES_METRICS_PORT) while the test sends traffic, with the shipped
// rule files of both services loaded. Every panel query of both dashboards must then return data
// (at least one finite sample), so a dashboard cannot name a metric or a label the services do not
// export. The quotes rules' recorded series are checked the same way.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, GiveUp, spawnManaged, startFakeBinance, startPostgres, startRedis, tempDir, waitFor, type FakeBinance, type Managed, type PostgresServer, type RedisServer } from '@rls/testkit';
import { AccountService } from '../../src/accounts/account-service.js';
import { defaultPlansFile, loadPlans } from '../../src/accounts/plans.js';
import { packageRoot } from '../../src/package-root.js';
import { shippedRulesDir } from '../../src/ratelimit/create-gate.js';
import { openPostgresStore } from '../../src/store/postgres-store.js';
import { concrete, DASHBOARDS, panelQueries } from '../support/grafana-panels.js';
import { rulesTree, startRateLimit, type RateLimitProcess, type RulesTree } from './ratelimit-process.js';
import { startReplicaProcess, ticker, waitHealthy, type ReplicaProcess } from './replica-process.js';

const EXAMPLES = fileURLToPath(new URL('../../../../examples/prometheus/', import.meta.url));

interface VectorSample {
  metric: Record<string, string>;
  value: [number, string];
}

async function query(base: string, promql: string): Promise<VectorSample[]> {
  const r = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await r.json()) as { status: string; error?: string; data?: { resultType: string; result: VectorSample[] } };
  if (body.status !== 'success' || body.data?.resultType !== 'vector') throw new GiveUp(`query ${promql}: ${body.error ?? JSON.stringify(body)}`);
  return body.data.result;
}

const hasData = (samples: VectorSample[]): boolean => samples.some((s) => Number.isFinite(Number(s.value[1])));

describe('the Grafana dashboards on a real Prometheus scraping both services under load', () => {
  let redis: RedisServer;
  let pgs: PostgresServer;
  let binance: FakeBinance;
  let rules: RulesTree;
  let rls: RateLimitProcess;
  let quotes: ReplicaProcess;
  let prometheus: Managed;
  let prom: string;
  let rlsMetricsUrl: string;
  let quotesMetricsUrl: string;
  const dir = tempDir('grafana-e2e-');
  let token: string;
  let loading = true;
  let load: Promise<void> = Promise.resolve();
  const stream = new AbortController();

  before(async () => {
    [redis, pgs] = await Promise.all([startRedis(), startPostgres()]);
    binance = await startFakeBinance({
      markets: [
        { symbol: 'BTCUSDT', base: 'BTC', quote: 'USDT' },
        { symbol: 'ETHUSDT', base: 'ETH', quote: 'USDT' },
      ],
      tickers: [ticker('BTCUSDT', 90_000), ticker('ETHUSDT', 3000)],
    });
    rules = rulesTree({ 'quotes.yaml': { copyFrom: join(shippedRulesDir(), 'quotes.yaml') } });
    const [rlsMetrics, quotesMetrics, promPort] = [await freePort(), await freePort(), await freePort()];
    rlsMetricsUrl = `http://127.0.0.1:${rlsMetrics}/metrics`;
    quotesMetricsUrl = `http://127.0.0.1:${quotesMetrics}/metrics`;
    rls = await startRateLimit(redis.port, rules, { USE_PULL_METRICS: 'true', PULL_METRICS_ADDR: `127.0.0.1:${rlsMetrics}` });

    await pgs.createDatabase('quotes');
    const store = openPostgresStore(pgs.urlFor('quotes'));
    try {
      await store.migrate();
      const accounts = new AccountService({ tokens: store.tokens, usage: store.usage, plans: loadPlans(defaultPlansFile(packageRoot())), clock: { now: () => Date.now() }, random: randomBytes });
      token = (await accounts.createToken('dashboards', 'pro')).token;
    } finally {
      await store.close();
    }
    quotes = await startReplicaProcess('q1', 'all', {
      databaseUrl: pgs.urlFor('quotes'),
      plansFile: defaultPlansFile(packageRoot()),
      exchangeUrl: binance.url,
      leaseMs: 5000,
      pollMs: 500,
      env: { RATELIMIT_GRPC_ADDR: rls.grpcAddress, RATELIMIT_TIMEOUT: '2s', MARKET_REFRESH_INTERVAL: '1', HISTORY_BACKFILL: 'false', QUOTES_METRICS_PORT: String(quotesMetrics) },
    });
    await waitHealthy(quotes);
    // One failed ticker call, so the upstream failure series exists (a healthy fake never fails).
    binance.addFault({ path: '/ticker/24hr', kind: 'status', status: 503, times: 1, body: 'down' });

    writeFileSync(
      join(dir.path, 'prometheus.yml'),
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        `rule_files: [${JSON.stringify(join(EXAMPLES, 'ratelimit.rules.yaml'))}, ${JSON.stringify(join(EXAMPLES, 'quotes.rules.yaml'))}]`,
        'scrape_configs:',
        '  - job_name: ratelimit',
        `    static_configs: [{ targets: ["127.0.0.1:${rlsMetrics}"] }]`,
        '  - job_name: quotes',
        `    static_configs: [{ targets: ["127.0.0.1:${quotesMetrics}"] }]`,
        '',
      ].join('\n'),
    );
    prometheus = spawnManaged('prometheus', [`--config.file=${join(dir.path, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir.path, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`]);
    prom = `http://127.0.0.1:${promPort}`;
    await waitFor(
      async () => {
        if (prometheus.proc.exitCode !== null || prometheus.proc.signalCode !== null) throw new GiveUp(`prometheus exited:\n${prometheus.output()}`);
        return (await fetch(`${prom}/-/ready`).catch(() => undefined))?.ok === true;
      },
      { what: 'prometheus ready', timeoutMs: 20_000, intervalMs: 100 },
    );

    // Load until the test ends: quotes (the fast path and fastify's routes), unmatched paths, a
    // live-price stream; every quote request asks the ratelimit service over gRPC.
    const auth = { authorization: `Bearer ${token}` };
    void fetch(`${quotes.url}/api/v2/crypto/stream?coin=BTC,ETH`, { headers: auth, signal: stream.signal })
      .then(async (res) => {
        for await (const chunk of res.body ?? []) void chunk;
      })
      .catch(() => undefined);
    load = (async () => {
      let i = 0;
      while (loading) {
        const paths = ['/api/v2/crypto?coin=BTC', '/api/v2/crypto?coin=ETH', '/api/v3/simple/price?ids=bitcoin&vs_currencies=usd', `/no-such-page-${i++}`, '/health'];
        await Promise.all(paths.map((p) => fetch(`${quotes.url}${p}`, { headers: auth }).then((r) => r.arrayBuffer()).catch(() => undefined)));
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
  });

  after(async () => {
    loading = false;
    stream.abort();
    await load;
    await prometheus?.stop();
    await quotes?.proc.stop();
    await rls?.stop();
    await binance?.close();
    await Promise.allSettled([pgs?.stop(), redis?.stop()]);
    rules?.cleanup();
    dir.cleanup();
  });

  for (const name of DASHBOARDS) {
    test(`every panel query of ${name}.json returns data`, async () => {
      const queries = panelQueries(name);
      let empty: string[] = [];
      try {
        await waitFor(
          async () => {
            empty = [];
            for (const q of queries) {
              // A query with a zero fallback (`or on() vector(0)`) must have data without it too,
              // or a misspelled metric would pass unnoticed.
              for (const expr of new Set([q.expr, q.expr.split(' or on() vector(0)')[0]!])) {
                if (!hasData(await query(prom, concrete(expr, name, '10s')))) empty.push(`${q.panel} [${q.refId}]: ${expr}`);
              }
            }
            return empty.length === 0;
          },
          { what: `data for every panel of ${name}.json`, timeoutMs: 90_000, intervalMs: 1000 },
        );
      } catch (err) {
        assert.fail(`panels without data:\n${empty.join('\n')}\n(${(err as Error).message})`);
      }
    });
  }

  test('promtool check metrics on both /metrics outputs under load: only the known naming findings', async () => {
    // Findings that are naming conventions, not errors: ratelimit's counters keep upstream's statsd
    // names without `_total` (the shipped rules and dashboards use them), and prom-client's default
    // collectors name three gauges `nodejs_active_*_total`.
    const known = [/^\S+ counter metrics should have "_total" suffix$/, /^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/];
    for (const [service, url] of [['ratelimit', rlsMetricsUrl], ['quotes', quotesMetricsUrl]] as const) {
      const text = await (await fetch(url)).text();
      const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
      if (r.error) assert.fail(`promtool could not run (${r.error.message})`);
      const findings = `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.trim() !== '');
      const unknown = findings.filter((l) => !known.some((k) => k.test(l)));
      assert.deepEqual(unknown, [], `${service}: promtool check metrics`);
      if (service === 'quotes') assert.ok(findings.every((l) => l.startsWith('nodejs_active_')), `quotes' own metrics have no findings: ${findings.join('; ')}`);
    }
  });

  test('the quotes rules record from the real series, and no alert fires on a healthy stack', async () => {
    await waitFor(async () => hasData(await query(prom, 'job:quotes_http_requests_5xx:ratio_rate5m{job="quotes"}')), { what: 'the recorded 5xx ratio', timeoutMs: 30_000, intervalMs: 500 });
    const ratio = await query(prom, 'job:quotes_http_requests_5xx:ratio_rate5m{job="quotes"}');
    assert.equal(Number(ratio[0]!.value[1]), 0);
    const burst = await query(prom, 'job_decision:quotes_limiter_decisions:rate5m{job="quotes",limiter="burst",decision="admitted"}');
    assert.ok(Number(burst[0]?.value[1]) > 0, 'admitted burst decisions recorded');
    const alerts = await query(prom, 'ALERTS{alertname=~"Quotes.*"}');
    assert.deepEqual(alerts.map((a) => a.metric.alertname), []);
  });
});
