// Every error the quotes server gives, through a real listening server (raw sockets where node's
// HTTP parser answers before fastify), in brapi's error shape: exactly {"error": true, "message"}
// as JSON, with the right status and a message naming the problem.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { waitFor } from '@rls/testkit';
import type { Account } from '../../src/accounts/account-service.js';
import type { RequestLimiter } from '../../src/accounts/request-limiter.js';
import { clientErrorResponse } from '../../src/api/error-handler.js';
import { QuotesError } from '../../src/errors.js';
import type { MarketSource } from '../../src/domain/market.js';
import type { Store } from '../../src/domain/repositories.js';
import { makeTestApp, plansWith, type TestApp } from '../support/helpers.js';

interface Res {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

async function call(port: number, path: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Res> {
  return await new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: opts.method ?? 'GET', headers: opts.headers ?? {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Sends raw bytes and reads until the server closes the connection. */
async function raw(port: number, text: string): Promise<{ head: string; body: string }> {
  return await new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', reject);
    s.on('close', () => {
      const all = Buffer.concat(chunks).toString('latin1');
      const i = all.indexOf('\r\n\r\n');
      resolve({ head: all.slice(0, i), body: Buffer.from(all.slice(i + 4), 'latin1').toString('utf8') });
    });
    s.setTimeout(5000, () => s.destroy(new Error('server did not close the connection')));
    s.write(text);
  });
}

/** The brapi error shape: the two keys and nothing else, served as JSON. */
function brapiError(r: { status?: number; headers?: Res['headers']; body: string }, status: number, message: RegExp): void {
  if (r.status !== undefined) assert.equal(r.status, status, r.body);
  if (r.headers !== undefined) assert.match(String(r.headers['content-type']), /^application\/json; charset=utf-8$/);
  const body = JSON.parse(r.body) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message']);
  assert.equal(body.error, true);
  assert.match(String(body.message), message);
}

async function listen(t: TestApp): Promise<number> {
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = t.app.server.address();
  assert.ok(addr !== null && typeof addr === 'object');
  return addr.port;
}

/** A pre-session CSRF token and its cookie, as the dashboard gets them. */
async function csrf(port: number): Promise<Record<string, string>> {
  const s = await call(port, '/dashboard/api/session', { headers: { host: 'localhost' } });
  const cookie = String(s.headers['set-cookie']).split(';')[0]!;
  return { host: 'localhost', cookie, 'x-csrf-token': (JSON.parse(s.body) as { csrfToken: string }).csrfToken };
}

describe('errors in the brapi shape over HTTP', () => {
  test('503 while closing: a request sent on a busy connection after close() started', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    let holding = true;
    let entered = false;
    const slow: RequestLimiter = {
      name: 'slow',
      admit: async () => {
        entered = true;
        if (holding) await held;
        return {};
      },
    };
    const t = await makeTestApp({ logLevel: 'warn', extraLimiters: [slow] });
    const port = await listen(t);
    let received = 0;
    t.app.server.on('request', () => void received++);
    const s = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    const closed = new Promise<void>((r) => s.on('close', () => r()));
    const get = `GET /api/v2/crypto?coin=BTC HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.tokens.pro!}\r\n\r\n`;
    s.write(get);
    await waitFor(() => entered, { what: 'the first request in the slow limiter', timeoutMs: 5000 });
    const closing = t.app.close();
    // The connection is busy, so closing keeps it; the next request on it arrives while closing.
    s.write(get);
    await waitFor(() => received === 2, { what: 'the second request received', timeoutMs: 5000 });
    holding = false;
    release();
    await closing;
    await closed;
    const all = Buffer.concat(chunks).toString('utf8');
    const second = all.indexOf('HTTP/1.1 ', 1);
    assert.match(all, /^HTTP\/1\.1 200 /);
    assert.ok(second > 0, all);
    const head = all.slice(second, all.indexOf('\r\n\r\n', second));
    assert.match(head, /^HTTP\/1\.1 503 /);
    assert.match(head, /\r\nconnection: close/i);
    brapiError({ body: all.slice(all.indexOf('\r\n\r\n', second) + 4) }, 503, /^The server is shutting down/);
    await t.store.close();
  });

  test('431: request line and headers over QUOTES_MAX_HEADER_BYTES, answered by the parser hook, then closed', async () => {
    const t = await makeTestApp({ logLevel: 'warn', settings: { QUOTES_MAX_HEADER_BYTES: '4096' } });
    try {
      const port = await listen(t);
      const big = await raw(port, `GET /api/v2/crypto?coin=BTC HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(8000)}\r\n\r\n`);
      assert.match(big.head, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
      assert.match(big.head, /\r\nConnection: close/i);
      assert.match(big.head, /\r\nContent-Type: application\/json; charset=utf-8/i);
      brapiError(big, 431, /^Request header fields too large: .* at most 4096 bytes$/);
      // A long URL counts against the same bound.
      const longUrl = await raw(port, `GET /api/v2/crypto?coin=${'B'.repeat(6000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
      assert.match(longUrl.head, /^HTTP\/1\.1 431 /);
      brapiError(longUrl, 431, /4096 bytes/);
      const garbage = await raw(port, 'NOT HTTP AT ALL\r\n\r\n');
      assert.match(garbage.head, /^HTTP\/1\.1 400 Bad Request\r\n/);
      brapiError(garbage, 400, /^Bad request: malformed HTTP request$/);
      // The server still serves.
      assert.equal((await call(port, '/health')).status, 200);
    } finally {
      await t.close();
    }
  });

  test('408 in the same shape (a request that does not arrive in time)', () => {
    const r = clientErrorResponse({ code: 'ERR_HTTP_REQUEST_TIMEOUT' }, { maxBodyBytes: 1, maxHeaderBytes: 1 });
    const [head = '', body = ''] = r.split('\r\n\r\n');
    assert.match(head, /^HTTP\/1\.1 408 Request Timeout\r\n/);
    assert.match(head, new RegExp(`Content-Length: ${Buffer.byteLength(body)}\\r\\n`));
    brapiError({ body }, 408, /not received in time/);
  });

  test('400, 401, 402, 403, 404, 405, 417, 429 from the API, in English and Portuguese', async () => {
    let refuse = false;
    const burst: RequestLimiter = {
      name: 'test-burst',
      admit: (_a: Account) => (refuse ? Promise.reject(new QuotesError('RATE_LIMITED', { retryAfterSeconds: 2 })) : Promise.resolve({})),
    };
    const t = await makeTestApp({ logLevel: 'warn', plans: plansWith({ startup: { monthlyRequests: 1 } }), extraLimiters: [burst] });
    try {
      const port = await listen(t);
      const auth = (plan: string) => ({ authorization: `Bearer ${t.tokens[plan]!}` });
      brapiError(await call(port, '/api/v2/crypto?coin=BTC,NOPE', { headers: auth('pro') }), 400, /^Coin not found: NOPE$/);
      brapiError(await call(port, '/api/v2/crypto?coin=BTC&range=7y', { headers: auth('pro') }), 400, /^Invalid field 'range'/);
      brapiError(await call(port, '/api/v2/crypto?coin=BTC'), 401, /token is invalid/);
      brapiError(await call(port, '/api/v2/crypto?coin=BTC', { headers: { authorization: 'Bearer qt_nope', 'accept-language': 'pt-BR' } }), 401, /^O seu token é inválido/);
      assert.equal((await call(port, '/api/v2/crypto?coin=BTC', { headers: auth('startup') })).status, 200);
      brapiError(await call(port, '/api/v2/crypto?coin=BTC', { headers: auth('startup') }), 402, /request limit of your plan/);
      brapiError(await call(port, '/api/v2/crypto?coin=BTC', { headers: auth('free') }), 403, /does not allow access to cryptocurrency/);
      brapiError(await call(port, '/api/v9/nothing'), 404, /^Route not found$/);
      const post = await call(port, '/api/v2/crypto?coin=BTC', { method: 'POST', headers: { ...auth('pro'), 'content-type': 'text/plain' }, body: 'x' });
      brapiError(post, 405, /^Method not allowed$/);
      assert.equal(post.headers.allow, 'GET, HEAD, OPTIONS');
      brapiError(await call(port, '/api/v2/crypto', { headers: auth('pro') }), 417, /Missing required parameter: `coin`/);
      refuse = true;
      const limited = await call(port, '/api/v2/crypto?coin=BTC', { headers: auth('pro') });
      brapiError(limited, 429, /rate limit/);
      assert.equal(limited.headers['retry-after'], '2');
      // A URL fastify cannot decode is refused before routing, in the same shape.
      brapiError(await call(port, '/%E0%A4%A'), 400, /^Bad request: malformed URL$/);
    } finally {
      await t.close();
    }
  });

  test('413 (body over QUOTES_MAX_BODY_BYTES), 415 (content type without a parser), malformed and empty JSON', async () => {
    const t = await makeTestApp({ logLevel: 'warn', settings: { QUOTES_MAX_BODY_BYTES: '2048' } });
    try {
      const port = await listen(t);
      const h = await csrf(port);
      const post = (body: string, contentType = 'application/json') => call(port, '/dashboard/api/signin', { method: 'POST', headers: { ...h, 'content-type': contentType }, body });
      brapiError(await post(JSON.stringify({ email: 'a@b.co', password: 'x'.repeat(5000) })), 413, /^Request body too large: the limit is 2048 bytes$/);
      brapiError(await post('{}', 'application/json-seq'), 415, /^Unsupported Content-Type 'application\/json-seq': send application\/json$/);
      brapiError(await post('{"email": "a@b.co", "password": '), 400, /^Bad request: the body is not valid JSON$/);
      brapiError(await post(''), 400, /^Bad request: the JSON body is empty$/);
      const pt = await call(port, '/dashboard/api/signin', { method: 'POST', headers: { ...h, 'content-type': 'application/json', 'accept-language': 'pt-BR' }, body: '{' });
      brapiError(pt, 400, /^Requisição inválida: /);
      // A cross-site form post is refused (403) before its body is read.
      brapiError(await call(port, '/dashboard/api/signin', { method: 'POST', headers: { host: 'localhost', 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=b' }), 403, /CSRF/);
    } finally {
      await t.close();
    }
  });

  test('500 for an unexpected failure (logged, not shown) and 503 for unavailable data', async () => {
    let storeDown = false;
    let marketDown = false;
    const t = await makeTestApp({
      logLevel: 'warn',
      settings: { QUOTES_STALE_SECONDS: '60', QUOTES_REFRESH_SECONDS: '15' },
      wrapMarket: (m): MarketSource => ({
        kind: m.kind,
        listSymbols: () => m.listSymbols(),
        candles: (r) => m.candles(r),
        tickers: async (symbols) => {
          if (marketDown) throw new Error('exchange unreachable');
          return await m.tickers(symbols);
        },
      }),
    });
    const tokens = t.store.tokens;
    const findByHash = tokens.findByHash.bind(tokens);
    (tokens as { findByHash: Store['tokens']['findByHash'] }).findByHash = async (hash) => {
      if (storeDown) throw new Error('disk I/O error at /secret/path');
      return await findByHash(hash);
    };
    try {
      const port = await listen(t);
      storeDown = true;
      const failed = await call(port, '/api/v2/crypto?coin=BTC', { headers: { authorization: 'Bearer qt_unknown_token' } });
      brapiError(failed, 500, /^Something went wrong/);
      assert.ok(!failed.body.includes('secret'), 'internals are not shown');
      assert.ok(t.logs.some((l) => l.includes('disk I/O error')), 'and are logged');
      storeDown = false;
      const auth = { authorization: `Bearer ${t.tokens.pro!}` };
      assert.equal((await call(port, '/api/v2/crypto?coin=BTC', { headers: auth })).status, 200);
      marketDown = true;
      t.clock.advance(5 * 60_000);
      brapiError(await call(port, '/api/v2/crypto?coin=BTC', { headers: auth }), 503, /^Quote temporarily unavailable: BTC/);
    } finally {
      await t.close();
    }
  });
});
