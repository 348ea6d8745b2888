// Per-value statistics are bounded (issue 12, finding 6): 100,000 distinct values of a
// detailed_metric rule through the real process (real Redis) give at most
// STATS_MAX_SERIES_PER_RULE value series plus the rule's overflow series, a counter of what was
// folded, bounded memory growth, and /stats and /metrics that answer without stalling a
// concurrent health check (the unbounded registry made /stats freeze the process for 3 s).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort, startRedis, type RedisServer } from '@rls/testkit';
import { createRateLimitClient, type RateLimitClient } from '@rls/rls-proto';
import { startService, writeRules, type ServiceProcess } from '../support/service-process.js';
import { measureStall, rssBytes } from '../support/health-probe.js';

const RULES = `domain: card
descriptors:
  - key: user
    detailed_metric: true
    rate_limit: { unit: hour, requests_per_unit: 1000000 }
`;
const VALUES = 100_000;
const CAP = 1000;
const BATCH = 256;
const STALL_BOUND_MS = 250;

describe('per-value statistics cardinality (real process, real Redis)', () => {
  let redis: RedisServer;
  let svc: ServiceProcess;
  let client: RateLimitClient;
  let metricsUrl: string;
  let cleanup: () => void;

  before(async () => {
    redis = await startRedis();
    const rules = writeRules({ 'card.yaml': RULES });
    cleanup = rules.cleanup;
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    svc = await startService({
      ...rules.env,
      BACKEND_TYPE: 'redis',
      KVSTORE_SOCKET_TYPE: 'tcp',
      KVSTORE_URL: redis.url,
      USE_STATS_PUSH: 'false',
      USE_PULL_METRICS: 'true',
      PULL_METRICS_ADDR: `127.0.0.1:${metricsPort}`,
    });
    client = createRateLimitClient({ address: svc.grpcAddress, timeoutMs: 20_000 });
    await client.waitForReady(10_000);
  });
  after(async () => {
    client?.close();
    await svc?.stop();
    await redis?.stop();
    cleanup?.();
  });

  const send = async (from: number, to: number): Promise<void> => {
    const inFlight: Promise<unknown>[] = [];
    for (let start = from; start < to; start += BATCH) {
      const descriptors = [];
      for (let i = start; i < Math.min(to, start + BATCH); i++) descriptors.push({ entries: [{ key: 'user', value: `u${i}` }], limit: undefined, hitsAddend: undefined });
      inFlight.push(client.shouldRateLimit({ domain: 'card', descriptors, hitsAddend: 0 }));
      if (inFlight.length >= 4) await inFlight.shift();
    }
    await Promise.all(inFlight);
  };

  test(`${VALUES} distinct values: at most ${CAP} value series, the rest in the overflow series; memory and /stats stay small`, async (t) => {
    const pid = svc.proc.proc.pid;
    assert.ok(pid !== undefined);
    // Fill the cap first, then measure what the remaining values cost.
    await send(0, CAP);
    await fetch(metricsUrl).then((r) => r.text());
    const rssBefore = await rssBytes(pid);
    const started = performance.now();
    await send(CAP, VALUES);
    const sendMs = performance.now() - started;
    const rssAfter = await rssBytes(pid);

    // /stats and /metrics, each with a concurrent health check measuring the stall.
    let stats = '';
    let statsMs = 0;
    const statsStall = await measureStall(svc.httpUrl, async () => {
      const t0 = performance.now();
      stats = await fetch(`${svc.debugUrl}/stats`).then((r) => r.text());
      statsMs = performance.now() - t0;
    }, STALL_BOUND_MS);
    let metrics = '';
    let metricsMs = 0;
    const metricsStall = await measureStall(svc.httpUrl, async () => {
      const t0 = performance.now();
      metrics = await fetch(metricsUrl).then((r) => r.text());
      metricsMs = performance.now() - t0;
    }, STALL_BOUND_MS);

    const lines = stats.split('\n');
    const valueSeries = lines.filter((l) => /^ratelimit\.service\.rate_limit\.card\.user_u\d+\.total_hits: /.test(l));
    const totalOf = (re: RegExp): number => lines.filter((l) => re.test(l)).reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    const overflowHits = totalOf(/^ratelimit\.service\.rate_limit\.card\.user\.overflow\.total_hits: /);
    const folded = totalOf(/^ratelimit\.service\.stats_series_overflow: /);
    const allHits = totalOf(/^ratelimit\.service\.rate_limit\.card\.user(_u\d+|\.overflow)\.total_hits: /);
    const growthMb = (rssAfter - rssBefore) / 1024 / 1024;
    t.diagnostic(
      `${VALUES - CAP} values past the cap in ${sendMs.toFixed(0)} ms; RSS ${((rssBefore / 1024 / 1024) | 0)} → ${((rssAfter / 1024 / 1024) | 0)} MB (+${growthMb.toFixed(1)} MB); ` +
        `/stats ${stats.length} B in ${statsMs.toFixed(0)} ms (slowest concurrent /healthcheck ${statsStall.maxMs.toFixed(1)} ms, attempt ${statsStall.attempts}); ` +
        `/metrics ${metrics.length} B in ${metricsMs.toFixed(0)} ms (slowest concurrent /healthcheck ${metricsStall.maxMs.toFixed(1)} ms, attempt ${metricsStall.attempts})`,
    );

    assert.equal(valueSeries.length, CAP, 'one series per admitted value, no more');
    assert.equal(overflowHits, VALUES - CAP);
    assert.equal(folded, VALUES - CAP);
    assert.equal(allHits, VALUES, 'no hit is lost by folding');
    assert.match(svc.output(), /rule card\.user reached STATS_MAX_SERIES_PER_RULE \(1000\) per-value statistics; further values count into card\.user\.overflow/);
    // Unbounded, 99,000 more value sets cost about 1.3 KB each in the registry plus about 3.4 KB
    // in the Prometheus sink (≈ 460 MB); bounded, only transient garbage remains.
    assert.ok(growthMb < 80, `RSS grew ${growthMb.toFixed(1)} MB`);
    assert.match(metrics, /ratelimit_service_rate_limit_total_hits\{domain="card",key1="user",key2="overflow"\} 99000/);
    assert.ok(statsStall.maxMs < STALL_BOUND_MS, `/stats stalled a health check ${statsStall.maxMs} ms`);
    assert.ok(metricsStall.maxMs < STALL_BOUND_MS, `/metrics stalled a health check ${metricsStall.maxMs} ms`);
  });
});
