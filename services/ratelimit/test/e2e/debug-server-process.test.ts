// The debug server of the real process on a password-protected Redis (docs/ratelimit.md, "Debug
// server"): a request naming a foreign Host (a DNS-rebound web page) is refused on every path and
// method, HEAD included; heap snapshots are taken one at a time and never on HEAD; and the store
// password is in none of what the debug port shows: not in /, /rlconfig, /stats, the operator
// JSON, nor in a heap snapshot of the process.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { startRedis, waitFor, type RedisServer } from '@rls/testkit';
import { startService, writeRules, type ServiceProcess } from '../support/service-process.js';

const RULES = `domain: dbg
descriptors:
  - key: user
    detailed_metric: true
    rate_limit: { unit: minute, requests_per_unit: 2 }
`;

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

function call(url: string, method: string, path: string, host: string): Promise<Answer> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: Number(u.port), method, path, headers: { host, connection: 'close' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

describe('debug server of the real process', () => {
  let redis: RedisServer;
  let svc: ServiceProcess;
  let rules: ReturnType<typeof writeRules>;
  let host: string;
  // Made at run time, so no copy of it sits in any source text the service could have loaded.
  const password = `pw-${randomBytes(12).toString('hex')}`;

  before(async () => {
    redis = await startRedis({ requirepass: password });
    rules = writeRules({ 'dbg.yaml': RULES });
    svc = await startService({
      ...rules.env,
      BACKEND_TYPE: 'redis',
      KVSTORE_SOCKET_TYPE: 'tcp',
      KVSTORE_URL: redis.url,
      KVSTORE_AUTH: password,
      USE_STATS_PUSH: 'false',
    });
    host = new URL(svc.debugUrl).host;
    // Some traffic, so counters, statistics and the operator page hold request data.
    for (let i = 0; i < 5; i++) {
      await fetch(`${svc.httpUrl}/json`, { method: 'POST', body: JSON.stringify({ domain: 'dbg', descriptors: [{ entries: [{ key: 'user', value: `u${i % 2}` }] }] }) });
    }
  });

  after(async () => {
    await svc?.stop();
    await redis?.stop();
    rules?.cleanup();
  });

  test('a foreign Host gets 403 on every path and method, HEAD included, and nothing is done for it', async () => {
    const paths = ['/', '/rlconfig', '/stats', '/debug/pprof', '/debug/pprof/', '/debug/pprof/heap', '/debug/pprof/profile?seconds=1', '/operator', '/operator/', '/operator/app.js', '/operator/api/state', '/operator/api/rules', '/no-such-path'];
    const port = new URL(svc.debugUrl).port;
    for (const path of paths) {
      for (const method of ['GET', 'HEAD', 'POST', 'OPTIONS']) {
        const r = await call(svc.debugUrl, method, path, `evil.example:${port}`);
        assert.equal(r.status, 403, `${method} ${path}`);
        if (method !== 'HEAD') assert.match(r.body, /does not answer Host "evil\.example:\d+".*DEBUG_ALLOWED_HOSTS/, `${method} ${path}`);
      }
    }
    assert.doesNotMatch(svc.output(), /taking a (heap snapshot|CPU profile)/, 'no profile or snapshot was taken for a refused request');
    assert.match(svc.output(), /debug server refused a request/);
    // The same requests naming the loopback address are answered.
    assert.equal((await call(svc.debugUrl, 'GET', '/rlconfig', host)).status, 200);
    assert.equal((await call(svc.debugUrl, 'GET', '/operator/api/state', `localhost:${port}`)).status, 200);
  });

  test('one heap snapshot at a time: a second one gets 503 with the reason; HEAD takes none', async () => {
    const before = (svc.output().match(/taking a heap snapshot/g) ?? []).length;
    // The first snapshot: its client reads nothing for now, so the response stays open.
    const u = new URL(svc.debugUrl);
    let firstBytes = 0;
    let firstRes: IncomingMessage | undefined;
    const firstDone = new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: u.hostname, port: Number(u.port), path: '/debug/pprof/heap', headers: { host } }, (res) => {
        firstRes = res;
        res.pause();
        res.on('data', (c: Buffer) => (firstBytes += c.length));
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
    await waitFor(() => firstRes !== undefined, { what: 'the first snapshot to start', timeoutMs: 30_000, intervalMs: 20 });
    assert.equal(firstRes!.statusCode, 200);

    const second = await call(svc.debugUrl, 'GET', '/debug/pprof/heap', host);
    assert.equal(second.status, 503);
    assert.match(second.body, /a heap snapshot is already being taken; one at a time/);
    assert.equal(second.headers['retry-after'], '10');
    assert.equal((await call(svc.debugUrl, 'HEAD', '/debug/pprof/heap', host)).status, 503);

    firstRes!.resume();
    assert.equal(await firstDone, 200);
    assert.ok(firstBytes > 1_000_000, `a snapshot of ${firstBytes} bytes`);
    // The slot is free again; HEAD answers 200 without taking a snapshot.
    await waitFor(async () => (await call(svc.debugUrl, 'HEAD', '/debug/pprof/heap', host)).status === 200, { what: 'the snapshot slot to be released', timeoutMs: 10_000, intervalMs: 50 });
    for (let i = 0; i < 3; i++) assert.equal((await call(svc.debugUrl, 'HEAD', '/debug/pprof/heap', host)).status, 200);
    const taken = (svc.output().match(/taking a heap snapshot/g) ?? []).length - before;
    assert.equal(taken, 1, 'only the first GET took a snapshot');
  });

  test('the store password is in nothing the debug port shows, heap snapshot included', async () => {
    const port = new URL(svc.debugUrl).port;
    for (const path of ['/', '/rlconfig', '/stats', '/debug/pprof/', '/operator/api/state', '/operator/api/rules']) {
      const r = await call(svc.debugUrl, 'GET', path, `localhost:${port}`);
      assert.equal(r.status, 200, path);
      assert.ok(!r.body.includes(password), `${path} shows the password`);
    }
    const snap = await call(svc.debugUrl, 'GET', '/debug/pprof/heap', host);
    assert.equal(snap.status, 200);
    // A real snapshot of this process: it has the rules and the request values it saw...
    assert.ok(snap.body.includes('"snapshot"') && snap.body.includes('dbg.user_u1'), 'a snapshot with the service state');
    // ...but not the password (it lives in Buffers only, whose contents snapshots leave out).
    assert.ok(!snap.body.includes(password), 'the heap snapshot contains the Redis password');
  });
});
