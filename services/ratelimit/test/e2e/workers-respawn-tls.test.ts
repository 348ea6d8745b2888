// Worker mode (WORKERS=2, gRPC over TLS, Redis) when a replacement worker cannot start (issue 23,
// finding 6): the certificate file is broken on disk — cert-manager halfway through a rotation —
// when a worker dies. The replacement fails to load it; the primary used to log "worker failed to
// start; stopping the service" and take the healthy worker down with it. Now the other worker
// keeps serving new TLS connections with the last good certificate, the primary logs and counts
// each failure and retries with backoff, the operator page says so, and once the file is good
// again the replacement starts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRateLimitClient, RlsCode } from '@rls/rls-proto';
import { makeTestPki, startRedis, tempDir, waitFor, type RedisServer, type TestPki } from '@rls/testkit';
import { startService, writeRules, type ServiceProcess } from '../support/service-process.js';

const RULES = `
domain: respawn
descriptors:
  - key: k
    rate_limit: { unit: hour, requests_per_unit: 1000000 }
`;

interface LogLine {
  '@message'?: string;
  msg?: string;
  pids?: number[];
  retryInMs?: number;
  reason?: string;
  failuresInRow?: number;
  failedStarts?: number;
  worker?: number;
}

const logLines = (out: string): LogLine[] =>
  out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
const logged = (out: string, message: string): LogLine[] => logLines(out).filter((l) => (l['@message'] ?? l.msg) === message);

const FAILED = 'replacement worker failed to start; the other workers keep serving; retrying';

/** One ShouldRateLimit on a new TLS connection (a new handshake each time): the code, or the error. */
async function callOnNewConnection(port: number, ca: Buffer): Promise<string> {
  const client = createRateLimitClient({ address: `127.0.0.1:${port}`, tls: { ca }, timeoutMs: 5000 });
  try {
    const res = await client.shouldRateLimit({ domain: 'respawn', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }], hitsAddend: 1 });
    return res.overallCode === RlsCode.OK ? 'OK' : `code ${res.overallCode}`;
  } catch (err) {
    return `error: ${err instanceof Error ? err.message : String(err)}`;
  } finally {
    client.close();
  }
}

function statValue(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name.replace(/\./g, '\\.')}: (\\d+)$`, 'm').exec(text);
  return m === null ? undefined : Number(m[1]);
}

describe('worker mode: a replacement that cannot start (TLS certificate broken on disk)', () => {
  let redis: RedisServer;
  let svc: ServiceProcess;
  let rules: ReturnType<typeof writeRules>;
  let dir: ReturnType<typeof tempDir>;
  let pki: TestPki;
  let port: number;

  before(async () => {
    redis = await startRedis();
    dir = tempDir('rls-respawn-tls-');
    pki = makeTestPki(dir.path);
    rules = writeRules({ 'respawn.yaml': RULES });
    svc = await startService({
      ...rules.env,
      WORKERS: '2',
      LOG_FORMAT: 'json',
      BACKEND_TYPE: 'redis',
      KVSTORE_SOCKET_TYPE: 'tcp',
      KVSTORE_URL: redis.url,
      GRPC_SERVER_USE_TLS: 'true',
      GRPC_SERVER_TLS_CERT: pki.server.certPath,
      GRPC_SERVER_TLS_KEY: pki.server.keyPath,
      SHUTDOWN_DRAIN_DELAY: '0s',
    });
    port = Number(svc.grpcAddress.split(':')[1]);
    await waitFor(() => logged(svc.output(), 'all workers listening').length === 1, { what: 'both workers listening', timeoutMs: 30_000 });
  });

  after(async () => {
    await svc.stop();
    await redis.stop();
    rules.cleanup();
    dir.cleanup();
  });

  test('the other worker keeps serving with the last good certificate; the primary retries with backoff, reports, and recovers', async (t) => {
    const good = readFileSync(pki.server.certPath);
    assert.equal(await callOnNewConnection(port, pki.ca.cert), 'OK');
    const pids = logged(svc.output(), 'all workers listening')[0]?.pids ?? [];
    assert.equal(pids.length, 2, `worker pids: ${JSON.stringify(pids)}`);

    // cert-manager halfway through writing a new certificate, and a worker crashes meanwhile.
    writeFileSync(pki.server.certPath, '-----BEGIN CERTIFICATE-----\ntruncated\n');
    process.kill(pids[1]!, 'SIGKILL');

    // Replacements fail, one after another, further apart each time; the service stays up.
    await waitFor(() => logged(svc.output(), FAILED).length >= 3 || svc.proc.proc.exitCode !== null, { what: 'three failed replacement starts', timeoutMs: 60_000 });
    assert.equal(svc.proc.proc.exitCode, null, `the service must keep running:\n${svc.output().slice(-3000)}`);
    assert.ok(!svc.output().includes('stopping the service'), 'the primary does not give up');
    const failures = logged(svc.output(), FAILED);
    t.diagnostic(`retry delays: ${failures.map((l) => l.retryInMs).join(', ')} ms; reason: ${failures[0]?.reason ?? ''}`);
    assert.deepEqual(
      failures.slice(0, 3).map((l) => l.retryInMs),
      [1000, 2000, 4000],
    );
    assert.match(failures[0]?.reason ?? '', /GRPC_SERVER_TLS_CERT\/GRPC_SERVER_TLS_KEY: cannot load the key pair/);

    // New TLS connections (a handshake each) all reach the surviving worker, with the old certificate.
    const results: string[] = [];
    for (let i = 0; i < 6; i++) results.push(await callOnNewConnection(port, pki.ca.cert));
    assert.deepEqual(results, Array(6).fill('OK'));

    // Counted (service-wide statistics from the primary) and shown on the operator page; health stays OK.
    const stats = await (await fetch(`${svc.debugUrl}/stats`)).text();
    assert.equal(statValue(stats, 'ratelimit.workers.serving'), 1);
    assert.equal(statValue(stats, 'ratelimit.workers.unexpected_exits'), 1);
    assert.ok((statValue(stats, 'ratelimit.workers.start_failures') ?? 0) >= 3, stats.split('\n').filter((l) => l.includes('workers')).join('\n'));
    const state = (await (await fetch(`${svc.debugUrl}/operator/api/state`)).json()) as {
      process: { workers: { mode: string; count: number; serving?: number; startFailures?: number; lastFailure?: { reason: string }; nextStartAt?: number } };
    };
    const w = state.process.workers;
    assert.equal(w.mode, 'worker');
    assert.equal(w.count, 2);
    assert.equal(w.serving, 1);
    assert.ok((w.startFailures ?? 0) >= 3, JSON.stringify(w));
    assert.match(w.lastFailure?.reason ?? '', /cannot load the key pair/);
    const health = await fetch(`${svc.httpUrl}/healthcheck`);
    assert.equal(health.status, 200);
    assert.equal(await health.text(), 'OK');

    // The certificate is whole again: the next retry starts the replacement.
    writeFileSync(pki.server.certPath, good);
    await waitFor(() => logged(svc.output(), 'replacement worker listening').length >= 1, { what: 'the replacement listening', timeoutMs: 30_000 });
    const back = logged(svc.output(), 'replacement worker listening')[0];
    assert.ok((back?.failedStarts ?? 0) >= 3, JSON.stringify(back));
    await waitFor(async () => statValue(await (await fetch(`${svc.debugUrl}/stats`)).text(), 'ratelimit.workers.serving') === 2, { what: 'two workers serving', timeoutMs: 10_000 });
    const after = [];
    for (let i = 0; i < 4; i++) after.push(await callOnNewConnection(port, pki.ca.cert));
    assert.deepEqual(after, Array(4).fill('OK'));
    assert.equal(svc.proc.proc.exitCode, null);
  });
});
