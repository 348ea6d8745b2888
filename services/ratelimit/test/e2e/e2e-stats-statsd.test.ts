// Statistics of the real process reaching a real statsd listener started by the test (docs/ratelimit.md, "Statistics"):
// exact lines after a known request sequence that includes a hits_addend straddling the limit, over
// UDP (final flush on SIGTERM) and TCP (periodic flushes: counters as non-zero deltas).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createRateLimitClient, RlsCode, type RateLimitClient } from '@rls/rls-proto';
import { waitFor } from '@rls/testkit';
import { startService, writeRules } from '../support/service-process.js';
import { startTcpStatsd, startUdpStatsd } from '../support/stats-listeners.js';

// L=10 ⇒ near threshold N = floor(10 × 0.8) = 8.
const RULES = 'domain: e2e\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 10 }\n';

/**
 * 7 hits (OK: within 7), then 5 (after 12, before 7: straddle ⇒ over 12−10 = 2, near 10−max(8,7) = 2,
 * within 0), then 1 (over 1), then one request for an unknown domain.
 */
async function knownSequence(client: RateLimitClient, value: string): Promise<void> {
  const req = (hitsAddend: number) => ({ domain: 'e2e', descriptors: [{ entries: [{ key: 'k', value }] }], hitsAddend });
  assert.equal((await client.shouldRateLimit(req(7))).overallCode, RlsCode.OK);
  assert.equal((await client.shouldRateLimit(req(5))).overallCode, RlsCode.OVER_LIMIT);
  assert.equal((await client.shouldRateLimit(req(1))).overallCode, RlsCode.OVER_LIMIT);
  assert.equal((await client.shouldRateLimit({ domain: 'nope', descriptors: [{ entries: [{ key: 'k', value }] }], hitsAddend: 1 })).overallCode, RlsCode.OK);
}

const counters = (lines: string[]): string[] => lines.filter((l) => l.endsWith('|c')).sort();

test('UDP statsd: exact counter lines after the known sequence, flushed on SIGTERM', async () => {
  const statsd = await startUdpStatsd();
  const rules = writeRules({ 'e2e.yaml': RULES });
  const svc = await startService({
    ...rules.env,
    BACKEND_TYPE: 'memory',
    USE_STATS_PUSH: 'true',
    STATSD_HOST: '127.0.0.1',
    STATSD_PORT: String(statsd.port),
    STATSD_PROTOCOL: 'udp',
    // No periodic flush during the test: the counters arrive in the final flush at shutdown.
    STATS_FLUSH_INTERVAL: '1h',
  });
  const client = createRateLimitClient({ address: svc.grpcAddress, timeoutMs: 5000 });
  try {
    await knownSequence(client, 'u');
    // Timers are sent on every observation.
    const timers = await statsd.next(4, 0);
    for (const l of timers) assert.match(l, /^ratelimit_server\.ShouldRateLimit\.response_time:\d+\|ms$/);
    assert.deepEqual(counters(statsd.lines), [], 'no counter is pushed before a flush');

    const exited = once(svc.proc.proc, 'exit');
    svc.proc.proc.kill('SIGTERM');
    assert.deepEqual(await exited, [0, null]);
    await waitFor(() => counters(statsd.lines).length >= 8, { what: `the final flush; have ${JSON.stringify(statsd.lines)}` });
    assert.deepEqual(counters(statsd.lines), [
      'ratelimit.service.config_load_success:1|c',
      'ratelimit.service.rate_limit.e2e.k.near_limit:2|c',
      'ratelimit.service.rate_limit.e2e.k.over_limit:3|c',
      'ratelimit.service.rate_limit.e2e.k.total_hits:13|c',
      'ratelimit.service.rate_limit.e2e.k.within_limit:7|c',
      'ratelimit.service.rate_limit.nope.domain_not_found:1|c',
      'ratelimit_server.ShouldRateLimit.total_requests:4|c',
      'runtime.load_attempts:1|c',
    ]);
    assert.ok(statsd.lines.includes('runtime.num_values:1|g'), 'gauges carry their current value');
  } finally {
    client.close();
    await svc.stop();
    await statsd.close();
    rules.cleanup();
  }
});

test('TCP statsd with EXTRA_TAGS: periodic flushes send counters as non-zero deltas', async () => {
  const statsd = await startTcpStatsd();
  const rules = writeRules({ 'e2e.yaml': RULES });
  const svc = await startService({
    ...rules.env,
    BACKEND_TYPE: 'memory',
    USE_STATS_PUSH: 'true',
    STATSD_HOST: '127.0.0.1',
    STATSD_PORT: String(statsd.port),
    STATSD_PROTOCOL: 'tcp',
    STATS_FLUSH_INTERVAL: '150ms',
    EXTRA_TAGS: 'env:e2e',
  });
  const client = createRateLimitClient({ address: svc.grpcAddress, timeoutMs: 5000 });
  const sum = (name: string): number =>
    statsd.lines.filter((l) => l.startsWith(`${name}:`) && l.endsWith('|c')).reduce((acc, l) => acc + Number(l.slice(name.length + 1, -2)), 0);
  const hits = 'ratelimit.service.rate_limit.e2e.k.total_hits.__env=e2e';
  try {
    await knownSequence(client, 't1');
    await waitFor(() => sum(hits) === 13 && sum('ratelimit_server.ShouldRateLimit.total_requests.__env=e2e') === 4, { what: 'the first sequence flushed' });
    // Every counter line is a non-zero delta (nothing is sent for counters that did not move).
    for (const l of statsd.lines.filter((x) => x.endsWith('|c'))) assert.doesNotMatch(l, /:0\|c$/, l);
    assert.equal(sum('ratelimit.service.rate_limit.e2e.k.over_limit.__env=e2e'), 3);
    assert.equal(sum('ratelimit.service.rate_limit.e2e.k.near_limit.__env=e2e'), 2);
    assert.equal(sum('ratelimit.service.rate_limit.e2e.k.within_limit.__env=e2e'), 7);

    // The same sequence on a new counter key adds the same deltas again.
    const before = statsd.lines.length;
    await knownSequence(client, 't2');
    await waitFor(() => sum(hits) === 26, { what: 'the second sequence flushed' });
    const later = statsd.lines.slice(before).filter((l) => l.endsWith('|c'));
    assert.ok(!later.some((l) => l.startsWith('ratelimit.service.config_load_success')), 'an unchanged counter is not sent again');
    assert.equal(sum('ratelimit.service.rate_limit.e2e.k.over_limit.__env=e2e'), 6);
    assert.equal(sum('ratelimit.service.rate_limit.nope.domain_not_found.__env=e2e'), 2);
    for (const l of statsd.lines.filter((x) => x.endsWith('|ms'))) assert.match(l, /^ratelimit_server\.ShouldRateLimit\.response_time\.__env=e2e:\d+\|ms$/);
  } finally {
    client.close();
    await svc.stop();
    await statsd.close();
    rules.cleanup();
  }
});
