// The real service process with CONFIG_TYPE=GRPC_XDS_SOTW: FORCE_START_WITHOUT_INITIAL_CONFIG both
// ways, and rules pushed later becoming visible over HTTP /json and gRPC ShouldRateLimit. Run as
// one process and in worker mode (WORKERS=2), where the primary holds the one ADS stream: the
// management server sees one client either way, and every worker serves the pushed version.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRateLimitClient } from '@rls/rls-proto';
import { connect } from 'node:net';
import { clearOfWindowEdge, freePort, spawnManaged, startRedis, startXdsServer, waitFor, type RedisServer, type XdsManagementServer } from '@rls/testkit';
import { limitFresh, requestFresh, statFresh } from '../support/fresh-connection.js';
import { postJson, startService } from '../support/service-process.js';
import { limitResource, PROTO_DIR } from '../support/xds-support.js';

function tcpConnect(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve();
    });
    s.on('error', reject);
  });
}

const mainTs = new URL('../../src/main.ts', import.meta.url).pathname;

const body = { domain: 'rl', descriptors: [{ entries: [{ key: 'user', value: 'alice' }] }] };

/** ADS streams `nodeId` opened on `server`. */
const streamsOf = (server: XdsManagementServer, nodeId: string): number => new Set(server.requests.filter((r) => r.nodeId === nodeId).map((r) => r.stream)).size;

let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

const MODES: { name: string; workers: boolean; env: () => Record<string, string> }[] = [
  { name: 'single process', workers: false, env: () => ({ BACKEND_TYPE: 'memory' }) },
  // The memory store always runs one process: worker mode needs a shared store.
  { name: 'WORKERS=2', workers: true, env: () => ({ WORKERS: '2', BACKEND_TYPE: 'redis', KVSTORE_SOCKET_TYPE: 'tcp', KVSTORE_URL: redis.url, LOG_FORMAT: 'json' }) },
];

for (const mode of MODES) describe(`service process with rules over xDS (${mode.name})`, () => {
  let server: XdsManagementServer;
  before(async () => {
    server = await startXdsServer({ protoDir: PROTO_DIR });
  });
  after(async () => {
    await server.stop();
  });

  const env = (nodeId: string, force: boolean): Record<string, string> => ({
    CONFIG_TYPE: 'GRPC_XDS_SOTW',
    CONFIG_GRPC_XDS_SERVER_URL: server.address,
    CONFIG_GRPC_XDS_NODE_ID: nodeId,
    FORCE_START_WITHOUT_INITIAL_CONFIG: String(force),
    USE_STATS_PUSH: 'false',
    // Redis outlives a test in worker mode: each test counts under its own keys.
    CACHE_KEY_PREFIX: `${nodeId}:`,
    ...mode.env(),
  });

  test('force start: listeners open at once and answer "no rate limit configuration loaded" until rules arrive', async () => {
    const svc = await startService(env('force-node', true));
    try {
      if (mode.workers) await waitFor(() => svc.output().includes('all workers listening'), { what: 'both workers listening', timeoutMs: 30_000 });
      const before = await postJson(svc.httpUrl, body);
      assert.equal(before.status, 503);
      assert.equal(before.json.error, 'no rate limit configuration loaded');
      const client = createRateLimitClient({ address: svc.grpcAddress, timeoutMs: 5000 });
      try {
        await assert.rejects(client.shouldRateLimit({ ...body, hitsAddend: 1 }), /no rate limit configuration loaded/);
        await server.waitForRequest((r) => r.nodeId === 'force-node');
        await clearOfWindowEdge(60, 10_000); // the next 3 requests count in one minute window
        server.push('p1', [limitResource('rl-config', 'rl', 'user', 'alice', 2)]);
        await server.waitForRequest((r) => r.nodeId === 'force-node' && r.versionInfo === 'p1');
        const res = await client.shouldRateLimit({ ...body, hitsAddend: 1 });
        assert.equal(res.overallCode, 1);
        assert.equal(res.statuses[0]?.currentLimit?.requestsPerUnit, 2);
        assert.equal(res.statuses[0]?.limitRemaining, 1);
        await client.shouldRateLimit({ ...body, hitsAddend: 1 });
        const over = await postJson(svc.httpUrl, body);
        assert.equal(over.status, 429);

        // A new version reaches every worker (one request per connection: round robin over both).
        server.push('p2', [limitResource('rl-config', 'rl', 'user', 'alice', 50)]);
        await server.waitForRequest((r) => r.nodeId === 'force-node' && r.versionInfo === 'p2');
        for (let i = 0; i < 6; i++) assert.equal(await limitFresh(svc.httpUrl, body), 50, `request ${i} on its own connection`);
        const dump = 'rl.user_alice: unit=MINUTE requests_per_unit=50, shadow_mode: false, quota_mode: false\n';
        for (let i = 0; i < 4; i++) assert.equal((await requestFresh(`${svc.debugUrl}/rlconfig`)).body, dump);
        assert.equal(streamsOf(server, 'force-node'), 1, 'the management server saw one client');
        // Two good loads, counted once each, whichever worker answers /stats.
        for (let i = 0; i < 4; i++) assert.equal(await statFresh(svc.debugUrl, 'ratelimit.service.config_load_success'), '2');
      } finally {
        client.close();
      }
    } finally {
      await svc.stop();
    }
  });

  test('without force start nothing listens until the first configuration arrives', async () => {
    // A management server with no snapshot: it records the request and holds the answer back.
    const quiet = await startXdsServer({ protoDir: PROTO_DIR });
    const httpPort = await freePort();
    const grpcPort = await freePort();
    const proc = spawnManaged(process.execPath, ['--conditions=source', '--import', 'tsx', '-e', `import(${JSON.stringify(mainTs)}).then((m) => m.run())`], {
      env: { ...process.env, WORKERS: '1', ...env('wait-node', false), CONFIG_GRPC_XDS_SERVER_URL: quiet.address, HOST: '127.0.0.1', PORT: String(httpPort), GRPC_HOST: '127.0.0.1', GRPC_PORT: String(grpcPort), DEBUG_PORT: '0', LOG_LEVEL: 'info' },
    });
    try {
      await quiet.waitForRequest((r) => r.nodeId === 'wait-node', { timeoutMs: 20_000 });
      // The process is up and waiting for its first configuration: neither listener is open.
      await assert.rejects(fetch(`http://127.0.0.1:${httpPort}/healthcheck`));
      await assert.rejects(tcpConnect(grpcPort), /ECONNREFUSED/);
      assert.match(proc.output(), /waiting for the first configuration from the xDS management server/);
      quiet.push('w1', [limitResource('rl-config', 'rl', 'user', 'alice', 5)]);
      const res = await waitFor(() => postJson(`http://127.0.0.1:${httpPort}`, body), { what: 'the HTTP listener after the first configuration' });
      assert.equal(res.status, 200);
      assert.deepEqual((res.json.statuses as Record<string, unknown>[])[0]?.currentLimit, { requestsPerUnit: 5, unit: 'MINUTE' });
      await tcpConnect(grpcPort);
      if (mode.workers) {
        await waitFor(() => proc.output().includes('all workers listening'), { what: 'both workers listening', timeoutMs: 30_000 });
        for (let i = 0; i < 4; i++) assert.equal(await limitFresh(`http://127.0.0.1:${httpPort}`, body), 5);
      }
      assert.equal(streamsOf(quiet, 'wait-node'), 1, 'the management server saw one client');
    } finally {
      await proc.stop();
      await quiet.stop();
    }
  });
});
