// SIGTERM under load, on the real process with a real Redis (docs/ratelimit.md "Health",
// docs/ratelimit.md "Shutdown", and the drain upstream lacks): health turns unhealthy at once; requests keep being
// answered through SHUTDOWN_DRAIN_DELAY; then the listeners stop accepting while requests that are
// in flight (held in Redis by CLIENT PAUSE) still complete; the process exits 0 within the bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { createRateLimitClient, RlsCode } from '@rls/rls-proto';
import { startRedis, waitFor } from '@rls/testkit';
import { startService, writeRules } from '../support/service-process.js';

const RULES = 'domain: drain\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 1000000 }\n';
const DRAIN_MS = 3000;
const TIMEOUT_MS = 10_000;

function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });
}

test('SIGTERM under load: unhealthy first, drain, in-flight requests finish, exit 0 in time', async () => {
  const redis = await startRedis();
  const rules = writeRules({ 'drain.yaml': RULES });
  const svc = await startService({
    ...rules.env,
    BACKEND_TYPE: 'redis',
    KVSTORE_SOCKET_TYPE: 'tcp',
    KVSTORE_URL: redis.url,
    KVSTORE_TIMEOUT: '8s',
    USE_STATS_PUSH: 'false',
    SHUTDOWN_DRAIN_DELAY: `${DRAIN_MS}ms`,
    SHUTDOWN_TIMEOUT: `${TIMEOUT_MS}ms`,
  });
  const client = createRateLimitClient({ address: svc.grpcAddress, timeoutMs: 8000 });
  const httpPort = Number(new URL(svc.httpUrl).port);
  const body = (v: string): string => JSON.stringify({ domain: 'drain', descriptors: [{ entries: [{ key: 'k', value: v }] }] });
  const failures: string[] = [];
  let completed = 0;
  let stopLoad = false;

  const grpcOnce = async (v: string): Promise<number> => {
    try {
      const r = await client.shouldRateLimit({ domain: 'drain', descriptors: [{ entries: [{ key: 'k', value: v }] }], hitsAddend: 1 });
      if (r.overallCode !== RlsCode.OK) failures.push(`gRPC overall ${r.overallCode}`);
    } catch (err) {
      failures.push(`gRPC ${err instanceof Error ? err.message : String(err)}`);
    }
    completed += 1;
    return performance.now();
  };
  const httpOnce = async (v: string): Promise<number> => {
    try {
      const r = await fetch(`${svc.httpUrl}/json`, { method: 'POST', body: body(v) });
      if (r.status !== 200) failures.push(`HTTP ${r.status}`);
      await r.arrayBuffer();
    } catch (err) {
      failures.push(`HTTP ${err instanceof Error ? err.message : String(err)}`);
    }
    completed += 1;
    return performance.now();
  };
  const worker = async (kind: 'grpc' | 'http', id: number): Promise<void> => {
    for (let i = 0; !stopLoad; i++) await (kind === 'grpc' ? grpcOnce(`g${id}-${i}`) : httpOnce(`h${id}-${i}`));
  };

  try {
    await client.waitForReady(5000);
    const load = [...[0, 1, 2, 3].map((i) => worker('grpc', i)), ...[0, 1].map((i) => worker('http', i))];
    await waitFor(() => completed >= 100, { what: 'load to be flowing' });

    const exited = once(svc.proc.proc, 'exit');
    const t0 = performance.now();
    svc.proc.proc.kill('SIGTERM');
    await waitFor(async () => (await fetch(`${svc.httpUrl}/healthcheck`)).status === 500, { what: 'health to turn unhealthy', intervalMs: 5 });
    const tUnhealthy = performance.now();
    assert.ok(tUnhealthy - t0 < DRAIN_MS, 'health flipped within the drain delay');
    assert.equal(await refusesConnections(httpPort), false, 'still accepting while unhealthy');

    // Requests keep being served during the drain delay.
    const atFlip = completed;
    await waitFor(() => completed >= atFlip + 30, { what: 'requests served during the drain delay' });
    stopLoad = true;
    await Promise.all(load);
    assert.ok(performance.now() - t0 < DRAIN_MS - 500, 'the load phase ended well inside the drain delay');

    // Hold the next requests inside Redis past the moment the listeners close.
    assert.equal(await redis.call('CLIENT', 'PAUSE', String(DRAIN_MS + 1000)), 'OK');
    const held = [...Array.from({ length: 8 }, (_, i) => grpcOnce(`held-g${i}`)), ...Array.from({ length: 4 }, (_, i) => httpOnce(`held-h${i}`))];
    await waitFor(() => refusesConnections(httpPort), { what: 'the HTTP listener to stop accepting', intervalMs: 10 });
    const tClosed = performance.now();
    assert.equal(await refusesConnections(Number(svc.grpcAddress.split(':')[1])), true, 'the gRPC listener is closed too');
    const doneAt = await Promise.all(held);
    const [code] = (await exited) as [number | null];
    const tExit = performance.now();

    assert.deepEqual(failures, [], 'no request failed');
    assert.ok(tUnhealthy < tClosed, 'health flipped before the listeners closed');
    assert.ok(tClosed - t0 >= DRAIN_MS - 50, `listeners closed after the drain delay (${Math.round(tClosed - t0)} ms)`);
    assert.ok(Math.min(...doneAt) > tClosed, 'the held requests were in flight when the listeners closed, and finished');
    assert.equal(code, 0);
    assert.ok(tExit - t0 < DRAIN_MS + TIMEOUT_MS, `exit within the bound (${Math.round(tExit - t0)} ms)`);
    assert.match(svc.output(), /listeners stop accepting/);
  } finally {
    stopLoad = true;
    client.close();
    await svc.stop();
    await redis.stop();
    rules.cleanup();
  }
});
