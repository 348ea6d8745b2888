// examples/prometheus/ against real Prometheus tools (Debian's `prometheus` package, which
// .ci/run installs): promtool checks the rule file and the scrape configuration and runs the
// rule unit tests, and a private Prometheus server scrapes the real service with the shipped
// rules loaded, so a recorded series is only right if the rules use the names the service
// really exposes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clearOfWindowEdge, freePort, GiveUp, spawnManaged, tempDir, waitFor } from '@rls/testkit';
import { postJson, startService, writeRules, type ServiceProcess } from '../support/service-process.js';

const examples = new URL('../../../../examples/prometheus/', import.meta.url).pathname;
const rulesFile = join(examples, 'ratelimit.rules.yaml');

/** Runs promtool to completion; a missing binary fails the test (never skips it). */
function promtool(args: string[]): string {
  const r = spawnSync('promtool', args, { cwd: examples, encoding: 'utf8', timeout: 30_000 });
  if (r.error) assert.fail(`promtool ${args.join(' ')} could not run (${r.error.message}); install Debian's prometheus package (.ci/run does)`);
  const out = r.stdout + r.stderr;
  assert.equal(r.status, 0, `promtool ${args.join(' ')} failed:\n${out}`);
  return out;
}

test('promtool accepts the rule file and the example scrape configuration', () => {
  assert.match(promtool(['check', 'rules', rulesFile]), /SUCCESS: 13 rules found/);
  // check config also loads the rule files the example names (ratelimit and quotes), relative to itself.
  assert.match(promtool(['check', 'config', join(examples, 'prometheus.yml')]), /SUCCESS: 2 rule files found/);
});

test('promtool unit tests of the rules pass', () => {
  assert.match(promtool(['test', 'rules', join(examples, 'ratelimit.rules.test.yaml')]), /SUCCESS/);
});

/** One sample of an instant-query vector from Prometheus' HTTP API. */
interface VectorSample {
  metric: Record<string, string>;
  value: [number, string];
}

async function query(base: string, promql: string): Promise<VectorSample[]> {
  const r = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await r.json()) as { status: string; error?: string; data?: { resultType: string; result: VectorSample[] } };
  if (body.status !== 'success' || body.data?.resultType !== 'vector') throw new Error(`query ${promql}: ${body.error ?? JSON.stringify(body)}`);
  return body.data.result;
}

/** The code of each descriptor status in a /json answer. */
function codes(json: Record<string, unknown>): string[] {
  return (json.statuses as Array<{ code: string }>).map((s) => s.code);
}

test('a real Prometheus scrapes the service and records the over-limit ratio of a rule', async () => {
  // Two hits per second, so each one-request burst below decides within one window.
  const rules = writeRules({ 'e2e.yaml': 'domain: e2e\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 2 }\n' });
  const metricsPort = await freePort();
  const promDir = tempDir('rls-prometheus-');
  const promPort = await freePort();
  const prom = `http://127.0.0.1:${promPort}`;
  writeFileSync(
    join(promDir.path, 'prometheus.yml'),
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      `rule_files: [${JSON.stringify(rulesFile)}]`,
      'scrape_configs:',
      '  - job_name: ratelimit',
      `    static_configs: [{ targets: ["127.0.0.1:${metricsPort}"] }]`,
      '',
    ].join('\n'),
  );
  // Prometheus first: its discovery hands the target to the scraper only after about 5 s,
  // which then overlaps the service's start-up.
  const server = spawnManaged('prometheus', [
    `--config.file=${join(promDir.path, 'prometheus.yml')}`,
    `--storage.tsdb.path=${join(promDir.path, 'data')}`,
    `--web.listen-address=127.0.0.1:${promPort}`,
  ]);
  let svc: ServiceProcess | undefined;
  try {
    svc = await startService({ ...rules.env, BACKEND_TYPE: 'memory', USE_STATS_PUSH: 'false', USE_PULL_METRICS: 'true', PULL_METRICS_ADDR: `127.0.0.1:${metricsPort}` });
    await waitFor(
      async () => {
        if (server.proc.exitCode !== null || server.proc.signalCode !== null) throw new GiveUp(`prometheus exited:\n${server.output()}`);
        return (await fetch(`${prom}/-/ready`)).ok;
      },
      { what: 'prometheus ready', timeoutMs: 10_000, intervalMs: 50 },
    );

    // The rule's series appear with its first hit. Both bursts are single requests (the same
    // descriptor repeated), so no scrape sees half of one: Prometheus' first sample is
    // total_hits 3 / over_limit 1, and the second burst adds 4 hits of which 2 are over.
    const entry = { entries: [{ key: 'k', value: 'v' }] };
    await clearOfWindowEdge(1, 300);
    const first = await postJson(svc.httpUrl, { domain: 'e2e', descriptors: [entry, entry, entry] });
    assert.deepEqual(codes(first.json), ['OK', 'OK', 'OVER_LIMIT']);
    const firstSecond = Math.floor(Date.now() / 1000);
    const rule = '{job="ratelimit",domain="e2e",key1="k"}';
    await waitFor(async () => (await query(prom, `ratelimit_service_rate_limit_total_hits${rule}`))[0]?.value[1] === '3', {
      what: 'the first burst scraped',
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    await waitFor(() => Math.floor(Date.now() / 1000) > firstSecond, { what: 'the next one-second window', timeoutMs: 2000, intervalMs: 10 });
    await clearOfWindowEdge(1, 300);
    const second = await postJson(svc.httpUrl, { domain: 'e2e', descriptors: [entry, entry, entry, entry] });
    assert.deepEqual(codes(second.json), ['OK', 'OK', 'OVER_LIMIT', 'OVER_LIMIT']);

    // Both counters are sampled by the same scrapes, so once the series have a few samples
    // rate() extrapolates them alike and the ratio is exactly 2/4 (with fewer samples the
    // extrapolation towards each counter's zero point still differs between them).
    const ratio = await waitFor(
      async () => {
        const r = await query(prom, 'job_domain_key:ratelimit_service_rate_limit_over_limit:ratio_rate5m{domain="e2e"}');
        return r.length === 1 && r[0]!.value[1] === '0.5' ? r : undefined;
      },
      { what: 'the recorded over-limit ratio 0.5', timeoutMs: 15_000, intervalMs: 200 },
    );
    assert.deepEqual(ratio[0]!.metric, { __name__: 'job_domain_key:ratelimit_service_rate_limit_over_limit:ratio_rate5m', job: 'ratelimit', domain: 'e2e', key1: 'k' });

    // The per-rule dashboard rates are recorded from the same series.
    for (const stat of ['total_hits', 'over_limit', 'within_limit', 'near_limit']) {
      const r = await query(prom, `job_domain_key:ratelimit_service_rate_limit_${stat}:rate1m{domain="e2e"}`);
      assert.equal(r.length, 1, stat);
      assert.deepEqual(r[0]!.metric, { __name__: `job_domain_key:ratelimit_service_rate_limit_${stat}:rate1m`, job: 'ratelimit', domain: 'e2e', key1: 'k' });
      assert.ok(Number(r[0]!.value[1]) > 0, `${stat} rate ${r[0]!.value[1]}`);
    }
    // No store errors: the error rate is recorded, and zero.
    const errors = await query(prom, 'job_instance_err_type:ratelimit_service_should_rate_limit_error:rate5m{err_type="redis_error"}');
    assert.equal(errors.length, 1);
    assert.equal(errors[0]!.value[1], '0');
  } finally {
    await server.stop();
    await svc?.stop();
    promDir.cleanup();
    rules.cleanup();
  }
});
