// Worker mode end to end: WORKERS=2 against a real Redis. Requests over several connections are
// served by both workers, counters are global (Redis), the statistics of both workers arrive in
// one statsd stream and one /metrics scrape, and SIGTERM stops everything with exit code 0.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRateLimitClient, RlsCode, type RateLimitClient } from '@rls/rls-proto';
import { clearOfWindowEdge, freePort, startRedis, waitFor, type RedisServer } from '@rls/testkit';
import { startService, writeRules, type ServiceProcess } from '../support/service-process.js';
import { startUdpStatsd, type StatsdListener } from '../support/stats-listeners.js';
import { parsePromText, sampleValue } from '../support/stats-prom-text.js';

const RULES = `
domain: workers
descriptors:
  - key: k
    rate_limit: { unit: minute, requests_per_unit: 30 }
`;

interface LogLine {
  msg?: string;
  '@message'?: string;
  worker?: number;
  pid?: number;
  requests?: number;
}

const logLines = (out: string): LogLine[] =>
  out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
const message = (l: LogLine): string => l['@message'] ?? l.msg ?? '';

/** Sum of the values of statsd counter lines named `name`. */
const statsdSum = (lines: readonly string[], name: string): number =>
  lines.filter((l) => l.startsWith(`${name}:`) && l.endsWith('|c')).reduce((s, l) => s + Number(l.slice(name.length + 1, -2)), 0);

describe('worker mode (WORKERS=2) with Redis', () => {
  let redis: RedisServer;
  let statsd: StatsdListener;
  let svc: ServiceProcess;
  let rules: ReturnType<typeof writeRules>;
  let metricsPort: number;
  const clients: RateLimitClient[] = [];

  before(async () => {
    [redis, statsd, metricsPort] = await Promise.all([startRedis(), startUdpStatsd(), freePort()]);
    rules = writeRules({ 'workers.yaml': RULES });
    svc = await startService({
      ...rules.env,
      WORKERS: '2',
      LOG_FORMAT: 'json',
      BACKEND_TYPE: 'redis',
      KVSTORE_SOCKET_TYPE: 'tcp',
      KVSTORE_URL: redis.url,
      USE_STATS_PUSH: 'true',
      STATSD_HOST: '127.0.0.1',
      STATSD_PORT: String(statsd.port),
      STATSD_PROTOCOL: 'udp',
      STATS_FLUSH_INTERVAL: '200ms',
      USE_PULL_METRICS: 'true',
      PULL_METRICS_ADDR: `127.0.0.1:${metricsPort}`,
      SHUTDOWN_DRAIN_DELAY: '0s',
    });
    await waitFor(() => logLines(svc.output()).some((l) => message(l) === 'all workers listening'), { what: 'both workers listening', timeoutMs: 20_000 });
  });

  after(async () => {
    for (const c of clients) c.close();
    await svc.stop();
    await Promise.all([redis.stop(), statsd.close()]);
    rules.cleanup();
  });

  test('served by both workers, counters global, stats aggregated, SIGTERM stops all with exit 0', async () => {
    const workerIds = [...new Set(logLines(svc.output()).flatMap((l) => (l.worker !== undefined ? [l.worker] : [])))];
    assert.equal(workerIds.length, 2, `two workers logged: ${JSON.stringify(workerIds)}`);

    // Separate connections (no shared subchannel), handed to the workers round robin.
    for (let i = 0; i < 6; i++) {
      const c = createRateLimitClient({ address: svc.grpcAddress, timeoutMs: 5000, channelOptions: { 'grpc.use_local_subchannel_pool': 1 } });
      await c.waitForReady(5000);
      clients.push(c);
    }
    const req = { domain: 'workers', descriptors: [{ entries: [{ key: 'k', value: 'global' }] }], hitsAddend: 0 };
    const codes: number[] = [];
    await clearOfWindowEdge(60, 10_000); // the 36 requests count in one minute window
    for (let round = 0; round < 6; round++) {
      for (const c of clients) codes.push((await c.shouldRateLimit(req)).overallCode);
    }
    assert.deepEqual(codes.slice(0, 30), Array.from({ length: 30 }, () => RlsCode.OK), 'one limit of 30 shared by both workers');
    assert.deepEqual(codes.slice(30), Array.from({ length: 6 }, () => RlsCode.OVER_LIMIT));

    for (let i = 0; i < 4; i++) assert.equal((await fetch(`${svc.httpUrl}/healthcheck`)).status, 200);

    // One /metrics scrape holds the whole service: both workers' requests.
    const scrape = async () => {
      // Only the service's families: prom-client prints an idle event loop's lag as "Nan", which strict parsers refuse.
      const text = (await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text())
        .split('\n')
        .filter((l) => /^(# (HELP|TYPE) )?ratelimit/.test(l))
        .join('\n')
        .concat('\n');
      try {
        return parsePromText(text);
      } catch (err) {
        throw new Error(`${String(err)}\n${text}`);
      }
    };
    // A worker's relay may run between a call's total_hits (counted before the store is asked)
    // and its over_limit (after the answer), so both are awaited in the same scrape.
    await waitFor(
      async () => {
        const m = await scrape();
        const total = sampleValue(m, 'ratelimit_service_rate_limit_total_hits', 'ratelimit_service_rate_limit_total_hits', { domain: 'workers', key1: 'k' });
        const over = sampleValue(m, 'ratelimit_service_rate_limit_over_limit', 'ratelimit_service_rate_limit_over_limit', { domain: 'workers', key1: 'k' });
        if (total === 36 && over === 6) return true;
        throw new Error(`scraped total_hits ${total}, over_limit ${over}`);
      },
      { what: '36 total hits and 6 over limit in one scrape', timeoutMs: 5_000 },
    );

    // One statsd stream with every counter delta and timer observation of both workers.
    await waitFor(() => statsdSum(statsd.lines, 'ratelimit.service.rate_limit.workers.k.total_hits') === 36, { what: '36 total_hits in statsd', timeoutMs: 5_000 });
    await waitFor(() => statsd.lines.filter((l) => l.startsWith('ratelimit_server.ShouldRateLimit.response_time:')).length === 36, { what: '36 response_time observations', timeoutMs: 5_000 });
    await waitFor(() => statsdSum(statsd.lines, 'ratelimit.service.rate_limit.workers.k.over_limit') === 6, { what: '6 over_limit in statsd', timeoutMs: 5_000 });

    await svc.stop();
    assert.equal(svc.proc.proc.exitCode, 0, svc.output());
    const stopped = logLines(svc.output()).filter((l) => message(l) === 'worker stopped');
    assert.equal(stopped.length, 2, 'both workers drained and reported');
    for (const s of stopped) assert.ok((s.requests ?? 0) > 0, `worker ${s.worker} served requests (${s.requests})`);
    assert.equal(stopped.reduce((n, s) => n + (s.requests ?? 0), 0), 36);
    assert.notEqual(stopped[0]?.pid, stopped[1]?.pid);
    // The final flush after the workers stopped left nothing behind.
    assert.equal(statsdSum(statsd.lines, 'ratelimit_server.ShouldRateLimit.total_requests'), 36);
  });
});
