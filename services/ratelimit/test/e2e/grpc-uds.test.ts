// GRPC_UDS: the app serves gRPC on a unix socket; a socket file left by a killed process is
// removed and reused, a socket something still listens on is refused (and keeps working), and a
// path that is not a socket is refused. In worker mode (WORKERS=2) the process serves on the
// socket from both workers, and removes the socket file when it stops.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { createRateLimitClient } from '@rls/rls-proto';
import { startRedis, spawnManaged, tempDir, waitFor } from '@rls/testkit';
import { buildRateLimitApp } from '../../src/app.js';
import { silentLogger } from '../../src/logger.js';
import { createGrpcServer } from '../../src/server/grpc-server.js';
import { loadSettings } from '../../src/settings.js';
import { scriptedService, TestHealth } from '../support/server-test-support.js';
import { startService, writeRules } from '../support/service-process.js';

const dir = tempDir('rls-uds-');
after(() => dir.cleanup());

const req = { domain: 'uds', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }], hitsAddend: 1 };

/** Leaves a socket file behind: a process listens on it and is killed with SIGKILL. */
async function staleSocket(path: string): Promise<void> {
  const proc = spawnManaged(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(path)}, () => console.log('listening'))`]);
  await waitFor(() => proc.output().includes('listening'), { what: 'the socket holder' });
  const exited = once(proc.proc, 'exit');
  proc.proc.kill('SIGKILL');
  await exited;
  assert.ok(existsSync(path), 'the killed process left its socket file');
}

describe(`gRPC on a unix socket`, () => {
  test('GRPC_UDS: the app listens on the socket (replacing a stale file) and answers there', async () => {
    const root = join(dir.path, 'rules');
    mkdirSync(join(root, 'config'), { recursive: true });
    writeFileSync(join(root, 'config', 'uds.yaml'), 'domain: uds\ndescriptors:\n  - key: k\n    value: v\n    rate_limit:\n      unit: second\n      requests_per_unit: 5\n');
    const path = join(dir.path, 'app.sock');
    await staleSocket(path);
    const { settings } = loadSettings({ BACKEND_TYPE: 'memory', USE_STATS_PUSH: 'false', RUNTIME_ROOT: root, RUNTIME_WATCH_ROOT: 'false', GRPC_UDS: path, HOST: '127.0.0.1', PORT: '0', DEBUG_HOST: '127.0.0.1', DEBUG_PORT: '0' });
    const app = buildRateLimitApp(settings, { logger: silentLogger() });
    app.loadRules();
    const { grpc } = await app.start();
    assert.deepEqual(grpc, { address: path, family: 'unix', port: 0 });
    const client = createRateLimitClient({ address: `unix:${path}`, timeoutMs: 3000 });
    try {
      const res = await client.shouldRateLimit(req);
      assert.equal(res.overallCode, 1);
      assert.equal(res.statuses[0]?.limitRemaining, 4);
    } finally {
      client.close();
      await app.stop();
    }
  });

  test('a socket another server listens on is refused, and that server keeps serving', async () => {
    const path = join(dir.path, 'busy.sock');
    const first = createGrpcServer({ shouldRateLimit: scriptedService().fn, health: new TestHealth() });
    await first.listenUnix(path);
    const second = createGrpcServer({ shouldRateLimit: scriptedService().fn, health: new TestHealth() });
    try {
      await assert.rejects(second.listenUnix(path), (err: NodeJS.ErrnoException) => err.code === 'EADDRINUSE' && /another process is listening/.test(err.message));
      const client = createRateLimitClient({ address: `unix:${path}`, timeoutMs: 3000 });
      try {
        assert.equal(await client.healthCheck(''), 'SERVING');
      } finally {
        client.close();
      }
    } finally {
      await second.close(100);
      await first.close(100);
    }
  });

  test('a path that is not a socket is refused and left alone', async () => {
    const path = join(dir.path, 'regular-file');
    writeFileSync(path, 'keep me');
    const server = createGrpcServer({ shouldRateLimit: scriptedService().fn, health: new TestHealth() });
    try {
      await assert.rejects(server.listenUnix(path), /is not a unix socket/);
      assert.ok(existsSync(path));
    } finally {
      await server.close(100);
    }
  });
});

describe('gRPC on a unix socket in worker mode (WORKERS=2)', () => {
  test('both workers serve on the socket (a stale file replaced once); stopping removes the file', async () => {
    const redis = await startRedis();
    const rules = writeRules({ 'uds.yaml': 'domain: uds\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 1000 }\n' });
    const path = join(dir.path, 'workers.sock');
    await staleSocket(path);
    const svc = await startService({
      ...rules.env,
      WORKERS: '2',
      LOG_FORMAT: 'json',
      BACKEND_TYPE: 'redis',
      KVSTORE_SOCKET_TYPE: 'tcp',
      KVSTORE_URL: redis.url,
      USE_STATS_PUSH: 'false',
      GRPC_UDS: path,
      SHUTDOWN_DRAIN_DELAY: '0s',
    });
    const clients: ReturnType<typeof createRateLimitClient>[] = [];
    try {
      await waitFor(() => svc.output().includes('all workers listening') || svc.proc.proc.exitCode !== null, { what: 'both workers listening', timeoutMs: 30_000 });
      assert.equal(svc.proc.proc.exitCode, null, `the service stopped:\n${svc.output()}`);
      assert.ok(existsSync(path), 'the socket file is there while the workers serve');
      // One connection per client (no shared subchannel): node:cluster hands them out round robin.
      for (let i = 0; i < 6; i++) {
        const c = createRateLimitClient({ address: `unix:${path}`, timeoutMs: 5000, channelOptions: { 'grpc.use_local_subchannel_pool': 1 } });
        clients.push(c);
        const res = await c.shouldRateLimit({ domain: 'uds', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }], hitsAddend: 1 });
        assert.equal(res.overallCode, 1);
      }
    } finally {
      for (const c of clients) c.close();
      await svc.stop();
      await redis.stop();
      rules.cleanup();
    }
    assert.equal(svc.proc.proc.exitCode, 0, svc.output());
    const served = svc
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{') && l.includes('"worker stopped"'))
      .map((l) => (JSON.parse(l) as { requests?: number }).requests ?? 0);
    assert.equal(served.length, 2, svc.output());
    assert.ok(served.every((n) => n > 0), `each worker answered on the socket: ${JSON.stringify(served)}`);
    assert.equal(existsSync(path), false, 'the socket file is removed once the last worker stopped');
  });

  test('a GRPC_UDS path that is not a socket stops the primary before any worker starts, and is left alone', async () => {
    const path = join(dir.path, 'not-a-socket');
    writeFileSync(path, 'keep me');
    const mainTs = new URL('../../src/main.ts', import.meta.url).pathname;
    const proc = spawnManaged(process.execPath, ['--conditions=source', '--import', 'tsx', '-e', `import(${JSON.stringify(mainTs)}).then((m) => m.run())`], {
      // No store is contacted: the primary checks the path before it forks.
      env: { ...process.env, WORKERS: '2', BACKEND_TYPE: 'redis', KVSTORE_URL: '127.0.0.1:1', USE_STATS_PUSH: 'false', GRPC_UDS: path, RUNTIME_ROOT: dir.path, DEBUG_HOST: '127.0.0.1', DEBUG_PORT: '0', HOST: '127.0.0.1', PORT: '0' },
    });
    const [code] = (await once(proc.proc, 'exit')) as [number | null];
    assert.equal(code, 1, proc.output());
    assert.match(proc.output(), /cannot start listeners.*is not a unix socket/);
    assert.doesNotMatch(proc.output(), /starting worker processes/);
    assert.ok(existsSync(path));
  });
});
