// The HTTP/1.1 server (/json, /healthcheck) with real requests on loopback.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { waitFor } from '@rls/testkit';
import { createHttpServer, type HttpServer } from '../../src/server/http-server.js';
import { LATER, scriptedService, TestHealth } from '../support/server-test-support.js';

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function request(port: number, method: string, path: string, body?: string | Buffer, agent?: http.Agent): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, agent: agent ?? false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    if (body !== undefined) req.end(body);
    else req.end();
  });
}

const one = (domain: string): string => JSON.stringify({ domain, descriptors: [{ entries: [{ key: 'a', value: 'b' }] }] });

describe('HTTP server', () => {
  const svc = scriptedService();
  const health = new TestHealth(true);
  let server: HttpServer;
  let port: number;

  before(async () => {
    server = createHttpServer({ shouldRateLimit: svc.fn, health });
    await server.listen('127.0.0.1', 0);
    port = (server.address() as { port: number }).port;
  });
  after(async () => {
    await server.close(1000);
  });

  test('POST /json OK ⇒ 200 with the proto3 JSON response', async () => {
    const r = await request(port, 'POST', '/json', JSON.stringify({ domain: 'edge', descriptors: [{ entries: [{ key: 'a', value: 'b' }] }, { entries: [{ key: 'c', value: 'd' }], hits_addend: '0' }] }));
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.equal(
      r.body,
      '{"overallCode":"OK","statuses":[' +
        '{"code":"OK","currentLimit":{"requestsPerUnit":20,"unit":"MINUTE"},"limitRemaining":19,"durationUntilReset":"37s"},' +
        '{"code":"OK","currentLimit":{"requestsPerUnit":20,"unit":"WEEK","name":"weekly"},"limitRemaining":19,"durationUntilReset":"37s"}],' +
        '"responseHeadersToAdd":[{"key":"RateLimit-Limit","value":"20"}]}',
    );
    assert.deepEqual(svc.seen.at(-1)?.descriptors[1], { entries: [{ key: 'c', value: 'd' }], limit: undefined, hitsAddend: 0 });
  });

  test('OVER_LIMIT ⇒ 429, empty response (overallCode UNKNOWN) ⇒ 500 {}', async () => {
    const over = await request(port, 'POST', '/json', one('over'));
    assert.equal(over.status, 429);
    assert.equal(JSON.parse(over.body).overallCode, 'OVER_LIMIT');
    const empty = await request(port, 'POST', '/json', one('empty'));
    assert.equal(empty.status, 500);
    assert.equal(empty.headers['content-type'], 'application/json');
    assert.equal(empty.body, '{}');
  });

  const badRequests: Array<[string, string, string]> = [
    ['malformed JSON', '}', 'invalid JSON: '],
    ['an empty body', '', 'empty request body'],
    ['a missing domain', JSON.stringify({ descriptors: [{ entries: [{ key: 'a', value: 'b' }] }] }), 'rate limit domain must not be empty'],
    ['empty descriptors', JSON.stringify({ domain: 'd', descriptors: [] }), 'rate limit descriptor list must not be empty'],
    ['a wrong type', JSON.stringify({ domain: 'd', descriptors: [{ entries: [{ key: 'a', value: 'b' }, { key: 'k', value: 5 }] }] }), 'descriptors[0].entries[1].value: expected string, got number'],
    ['an unknown field', JSON.stringify({ domain: 'd', descriptor: [] }), 'unknown field "descriptor"'],
    ['an invalid override', JSON.stringify({ domain: 'd', descriptors: [{ entries: [], limit: { unit: 'FORTNIGHT' } }] }), 'descriptors[0].limit.unit: invalid enum value "FORTNIGHT"'],
  ];
  for (const [name, body, message] of badRequests) {
    test(`400 with a JSON error for ${name}`, async () => {
      const r = await request(port, 'POST', '/json', body);
      assert.equal(r.status, 400);
      assert.equal(r.headers['content-type'], 'application/json');
      const err = (JSON.parse(r.body) as { error: string }).error;
      if (message.endsWith(': ')) assert.ok(err.startsWith(message), err);
      else assert.equal(err, message);
    });
  }

  // The decision fails at once (thrown) or later (rejected); /json answers the same for both.
  for (const prefix of ['', LATER]) {
    test(`no_config and store_unavailable ⇒ 503 with the message; other failures ⇒ 500 without internals (${prefix === '' ? 'thrown' : 'rejected'})`, async () => {
      const noConfig = await request(port, 'POST', '/json', one(`${prefix}noconfig`));
      assert.equal(noConfig.status, 503);
      assert.deepEqual(JSON.parse(noConfig.body), { error: 'no rate limit configuration loaded' });
      const store = await request(port, 'POST', '/json', one(`${prefix}store`));
      assert.equal(store.status, 503);
      assert.deepEqual(JSON.parse(store.body), { error: 'connect ECONNREFUSED 127.0.0.1:6379 – 100% down' });
      const bug = await request(port, 'POST', '/json', one(`${prefix}bug`));
      assert.equal(bug.status, 500);
      assert.deepEqual(JSON.parse(bug.body), { error: 'internal error' });
      const ok = await request(port, 'POST', '/json', one(`${prefix}fine`));
      assert.equal(ok.status, 200);
    });
  }

  test('other methods on /json ⇒ 405 with Allow: POST', async () => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const r = await request(port, method, '/json', method === 'PUT' ? one('x') : undefined);
      assert.equal(r.status, 405);
      assert.equal(r.headers.allow, 'POST');
      assert.deepEqual(JSON.parse(r.body), { error: `method ${method} not allowed on /json; use POST` });
    }
  });

  test('a body over HTTP_MAX_BODY_BYTES (default 256 KiB) ⇒ 413 (declared or streamed)', async () => {
    const big = Buffer.alloc(256 * 1024 + 10, 0x20);
    const declared = await request(port, 'POST', '/json', big);
    assert.equal(declared.status, 413);
    assert.deepEqual(JSON.parse(declared.body), { error: 'request body larger than 262144 bytes (limit set by HTTP_MAX_BODY_BYTES)' });
    // Chunked upload without content-length.
    const streamed = await new Promise<number>((resolve) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/json', agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      // The server may close the connection while the rest of the upload is still being written.
      req.on('error', () => undefined);
      req.write(Buffer.alloc(600 * 1024, 0x20));
      req.write(Buffer.alloc(600 * 1024, 0x20), () => req.end());
    });
    assert.equal(streamed, 413);
  });

  test('a compressed /json body (Content-Encoding other than identity) ⇒ 415 naming it, never inflated', async () => {
    const body = gzipSync(one('zipped'));
    for (const encoding of ['gzip', 'deflate', 'br, gzip']) {
      const r = await new Promise<Reply>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/json', agent: false, headers: { 'content-encoding': encoding } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        });
        req.on('error', reject);
        req.end(body);
      });
      assert.equal(r.status, 415, encoding);
      assert.deepEqual(JSON.parse(r.body), { error: `Content-Encoding "${encoding}" is not supported on /json; send the body uncompressed` });
    }
    assert.ok(!svc.seen.some((req) => req.domain === 'zipped'), 'never decided');
    // identity is no encoding at all.
    const plain = await new Promise<number>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/json', agent: false, headers: { 'content-encoding': 'identity' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(one('identity'));
    });
    assert.equal(plain, 200);
  });

  test('/healthcheck: 200 OK when healthy, 500 empty when not', async () => {
    const ok = await request(port, 'GET', '/healthcheck');
    assert.equal(ok.status, 200);
    assert.equal(ok.body, 'OK');
    health.set(false);
    try {
      const bad = await request(port, 'GET', '/healthcheck');
      assert.equal(bad.status, 500);
      assert.equal(bad.body, '');
    } finally {
      health.set(true);
    }
  });

  test('everything else ⇒ 404', async () => {
    for (const path of ['/', '/json/x', '/stats', '/healthcheckz']) {
      const r = await request(port, 'GET', path);
      assert.equal(r.status, 404, path);
      assert.equal(r.body, '404 page not found\n');
    }
  });

  test('a query string does not change the route', async () => {
    assert.equal((await request(port, 'POST', '/json?trace=1', one('q'))).status, 200);
  });
});

describe('HTTP server graceful close', () => {
  test('in-flight requests finish, idle keep-alive connections close, new connections are refused', async () => {
    const svc = scriptedService();
    const server = createHttpServer({ shouldRateLimit: svc.fn, health: new TestHealth() });
    await server.listen('127.0.0.1', 0);
    const port = (server.address() as { port: number }).port;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    // One idle keep-alive connection…
    assert.equal((await request(port, 'POST', '/json', one('warm'), agent)).status, 200);
    // …and one slow request in flight.
    const slow = request(port, 'POST', '/json', one('slow'), agent);
    await waitFor(() => svc.seen.some((r) => r.domain === 'slow'), { what: 'slow request' });
    const t0 = Date.now();
    await server.close(10_000);
    const elapsed = Date.now() - t0;
    const reply = await slow;
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.connection, 'close');
    assert.ok(elapsed < 5000, `close took ${elapsed} ms`);
    await assert.rejects(request(port, 'GET', '/healthcheck'), /ECONNREFUSED/);
    agent.destroy();
  });
});

test('/json: a client that goes away aborts the signal of a handler that reads it', async () => {
  let seen: AbortSignal | undefined;
  const server = createHttpServer({
    shouldRateLimit: (_req, ctx) => {
      seen = ctx.signal;
      return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted'))));
    },
    health: new TestHealth(true),
  });
  await server.listen('127.0.0.1', 0);
  const port = (server.address() as { port: number }).port;
  try {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/json', agent: false });
    req.on('error', () => undefined);
    req.end(one('d'));
    await waitFor(() => seen !== undefined, { what: 'handler called' });
    assert.equal(seen!.aborted, false);
    req.destroy();
    await waitFor(() => seen!.aborted, { what: 'signal aborted after the client left' });
  } finally {
    await server.close(1000);
  }
});
