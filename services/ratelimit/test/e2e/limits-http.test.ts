// HTTP/1.1 connection bounds (issue 12, finding 2): slow-header (slowloris) and idle clients are
// reaped after HTTP_HEADERS_TIMEOUT, a flood of them at HTTP_MAX_CONNECTIONS does not lock
// /healthcheck out (the longest-waiting connection makes room), and a newcomer is refused with a
// log line only when every connection has a request in progress.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { waitFor } from '@rls/testkit';
import type { RateLimitRequest, RateLimitResponse } from '@rls/engine';
import { createHttpServer } from '../../src/server/http-server.js';
import { startService, writeRules } from '../support/service-process.js';
import { TestHealth } from '../support/server-test-support.js';

function healthcheck(url: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.get(`${url}/healthcheck`, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
    });
    req.setTimeout(5_000, () => req.destroy(new Error('healthcheck timed out')));
    req.on('error', reject);
  });
}

interface SlowClient {
  socket: net.Socket;
  closed: boolean;
}

/** A client that sends the start of a request and then one header byte every `everyMs` (or nothing at all). */
function slowClient(port: number, mode: 'slow-headers' | 'silent', everyMs = 300): SlowClient {
  const socket = net.connect(port, '127.0.0.1');
  const c: SlowClient = { socket, closed: false };
  let timer: NodeJS.Timeout | undefined;
  socket.on('connect', () => {
    if (mode === 'silent') return;
    socket.write('GET /healthcheck HTTP/1.1\r\nHost: x\r\n');
    timer = setInterval(() => socket.write('X'), everyMs);
  });
  socket.on('error', () => undefined);
  // Read (and drop) what arrives: a paused socket would not see the server's close.
  socket.resume();
  socket.on('close', () => {
    c.closed = true;
    clearInterval(timer);
  });
  return c;
}

describe('HTTP connection bounds (real process)', () => {
  test('a slowloris flood at the connection limit: /healthcheck still answers, slow clients are reaped after the headers timeout', async (t) => {
    const rules = writeRules({ 'r.yaml': 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n' });
    const svc = await startService({ ...rules.env, BACKEND_TYPE: 'memory', USE_STATS_PUSH: 'false', HTTP_MAX_CONNECTIONS: '40', HTTP_HEADERS_TIMEOUT: '2s', HTTP_REQUEST_TIMEOUT: '4s' });
    const port = Number(new URL(svc.httpUrl).port);
    const clients: SlowClient[] = [];
    try {
      const floodStart = performance.now();
      for (let i = 0; i < 60; i++) clients.push(slowClient(port, i % 2 === 0 ? 'slow-headers' : 'silent'));
      // Wait until the flood holds the server at its limit (the 20 oldest were closed to make room).
      await waitFor(() => clients.filter((c) => c.closed).length >= 20, { what: 'the oldest flood connections closed', timeoutMs: 10_000, intervalMs: 20 });
      const slowest = { ms: 0 };
      for (let i = 0; i < 5; i++) {
        const r = await healthcheck(svc.httpUrl);
        assert.equal(r.status, 200);
        slowest.ms = Math.max(slowest.ms, r.ms);
      }
      // Every flood connection goes: made room for the health checks, or reaped at the headers timeout.
      await waitFor(() => clients.every((c) => c.closed), { what: 'every slow client closed', timeoutMs: 15_000, intervalMs: 50 });
      const reapedAfter = performance.now() - floodStart;
      t.diagnostic(`60 slow/silent clients at HTTP_MAX_CONNECTIONS=40: slowest /healthcheck ${slowest.ms.toFixed(1)} ms; all reaped after ${reapedAfter.toFixed(0)} ms (headers timeout 2 s)`);
      assert.ok(slowest.ms < 1_000, `healthcheck took ${slowest.ms} ms`);
      // Reaped by the timeout (2 s plus the 0.5 s check interval), not by luck much later.
      assert.ok(reapedAfter < 2_000 + 500 + 3_000, `slow clients lingered ${reapedAfter} ms`);
      assert.match(svc.output(), /HTTP server connection limit reached \(HTTP_MAX_CONNECTIONS=40\); closing the longest idle or slowest incomplete connections to make room/);
    } finally {
      for (const c of clients) c.socket.destroy();
      await svc.stop();
      rules.cleanup();
    }
  });
});

describe('HTTP connection limit when every connection is busy', () => {
  test('a newcomer is refused with a log line; the busy requests complete', async () => {
    const logged: string[] = [];
    const log = (_obj: object, msg: string): void => void logged.push(msg);
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    let handling = 0;
    const server = createHttpServer({
      shouldRateLimit: async (_req: RateLimitRequest): Promise<RateLimitResponse> => {
        handling += 1;
        await gate;
        return { overallCode: 1, statuses: [{ code: 1, limitRemaining: 1 }], responseHeadersToAdd: [] };
      },
      health: new TestHealth(true),
      logger: { debug: log, info: log, warn: log, error: log },
      maxConnections: 3,
    });
    await server.listen('127.0.0.1', 0);
    const port = (server.address() as net.AddressInfo).port;
    const body = JSON.stringify({ domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] });
    const busy = Array.from({ length: 3 }, () =>
      new Promise<number>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/json', agent: false }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end(body);
      }),
    );
    try {
      // All three requests are being handled (the service holds them).
      await waitFor(() => handling === 3, { what: 'three requests being handled', timeoutMs: 10_000 });
      const refused = await new Promise<string>((resolve) => {
        const req = http.get({ host: '127.0.0.1', port, path: '/healthcheck', agent: false }, (res) => {
          res.resume();
          resolve(`answered ${res.statusCode ?? 0}`);
        });
        req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      });
      assert.match(refused, /ECONNRESET|EPIPE|socket hang up/);
      assert.ok(
        logged.some((m) => m.includes('HTTP server connection limit reached (HTTP_MAX_CONNECTIONS=3); refusing new connections while every open connection has a request in progress')),
        logged.join('\n'),
      );
      release();
      assert.deepEqual(await Promise.all(busy), [200, 200, 200]);
      // Room again once they are done.
      const after = await healthcheck(`http://127.0.0.1:${port}`);
      assert.equal(after.status, 200);
    } finally {
      release();
      await server.close(1000);
    }
  });
});
