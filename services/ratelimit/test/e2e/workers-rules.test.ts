// Worker mode (WORKERS=2) owns the rule source once: with rules over xDS the management server
// sees one ADS stream for the whole service, a pushed version reaches both workers, a worker that
// replaces a killed one starts with the current version (not the first, not none), and the debug
// /stats shows the service totals whichever worker answers it. Quick start: every listener on loopback.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { startRedis, startXdsServer, waitFor, type RedisServer, type XdsManagementServer } from '@rls/testkit';
import { limitFresh, requestFresh, statFresh } from '../support/fresh-connection.js';
import { startService, type ServiceProcess } from '../support/service-process.js';
import { limitResource, PROTO_DIR } from '../support/xds-support.js';

interface LogLine {
  msg?: string;
  '@message'?: string;
  pids?: number[];
}
const logLines = (out: string): LogLine[] =>
  out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
const logged = (out: string, message: string): LogLine[] => logLines(out).filter((l) => (l['@message'] ?? l.msg) === message);

const body = { domain: 'rl', descriptors: [{ entries: [{ key: 'user', value: 'alice' }] }] };
const HITS = 'ratelimit.service.rate_limit.rl.user_alice.total_hits';

describe('worker mode (WORKERS=2) with rules over xDS', () => {
  let redis: RedisServer;
  let server: XdsManagementServer;
  let svc: ServiceProcess;

  before(async () => {
    [redis, server] = await Promise.all([startRedis(), startXdsServer({ protoDir: PROTO_DIR })]);
    server.push('v1', [limitResource('rl-config', 'rl', 'user', 'alice', 1000)]);
    svc = await startService({
      WORKERS: '2',
      LOG_FORMAT: 'json',
      BACKEND_TYPE: 'redis',
      KVSTORE_SOCKET_TYPE: 'tcp',
      KVSTORE_URL: redis.url,
      USE_STATS_PUSH: 'false',
      CONFIG_TYPE: 'GRPC_XDS_SOTW',
      CONFIG_GRPC_XDS_SERVER_URL: server.address,
      CONFIG_GRPC_XDS_NODE_ID: 'workers-node',
      SHUTDOWN_DRAIN_DELAY: '0s',
    });
    await waitFor(() => logged(svc.output(), 'all workers listening').length === 1, { what: 'both workers listening', timeoutMs: 30_000 });
  });

  after(async () => {
    await svc.stop();
    await Promise.all([server.stop(), redis.stop()]);
  });

  test('one ADS stream; a new version on both workers; a replacement worker starts with it; /stats shows totals', async () => {
    for (let i = 0; i < 4; i++) assert.equal(await limitFresh(svc.httpUrl, body), 1000);

    server.push('v2', [limitResource('rl-config', 'rl', 'user', 'alice', 2000)]);
    await server.waitForRequest((r) => r.versionInfo === 'v2' && r.errorDetail === undefined);
    for (let i = 0; i < 4; i++) assert.equal(await limitFresh(svc.httpUrl, body), 2000, `request ${i} on its own connection`);

    // The totals hold every decision so far (a SIGKILL-ed worker's unsent batch would be lost).
    await waitFor(async () => (await statFresh(svc.debugUrl, HITS)) === '8', { what: `${HITS} = 8 on /stats`, timeoutMs: 10_000 });

    // A worker dies; its replacement must serve v2 from its first request.
    const pids = logged(svc.output(), 'all workers listening')[0]?.pids ?? [];
    assert.equal(pids.length, 2, svc.output());
    process.kill(pids[0] as number, 'SIGKILL');
    await waitFor(() => logged(svc.output(), 'replacement worker listening').length === 1, { what: 'the replacement worker', timeoutMs: 30_000 });
    for (let i = 0; i < 6; i++) assert.equal(await limitFresh(svc.httpUrl, body), 2000, `after the respawn, request ${i}`);
    const dump = 'rl.user_alice: unit=MINUTE requests_per_unit=2000, shadow_mode: false, quota_mode: false\n';
    for (let i = 0; i < 4; i++) assert.equal((await requestFresh(`${svc.debugUrl}/rlconfig`)).body, dump);

    assert.equal(server.streamsOpened(), 1, 'the management server saw exactly one client');
    assert.equal(new Set(server.requests.map((r) => r.stream)).size, 1);

    // 14 decisions over both workers (and the killed one, whose batches had reached the primary).
    await waitFor(async () => (await statFresh(svc.debugUrl, HITS)) === '14', { what: `${HITS} = 14 on /stats`, timeoutMs: 10_000 });
    for (let i = 0; i < 4; i++) assert.equal(await statFresh(svc.debugUrl, HITS), '14', `/stats read ${i}: the totals, whichever worker answers`);
    for (let i = 0; i < 4; i++) assert.equal(await statFresh(svc.debugUrl, 'ratelimit.service.config_load_success'), '2', 'two loads, counted once each');
  });
});

test('quick start: every listener, the debug server included, binds to loopback', () => {
  const env = parseEnv(readFileSync(new URL('../../../../examples/quickstart.env', import.meta.url), 'utf8')) as Record<string, string>;
  for (const name of ['HOST', 'GRPC_HOST', 'DEBUG_HOST']) assert.equal(env[name], '127.0.0.1', name);
});
