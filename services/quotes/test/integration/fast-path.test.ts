// The pre-router (api/fast-quote.ts) against fastify's route, over real HTTP: two apps with the
// same clock, market and plans, one with QUOTES_FAST_PATH=false, must answer every request with
// the same status, the same header lines in the same order and the same body (both hand it to the
// one CryptoPipeline and its writer); quotas must count each request exactly once whichever
// server object received it.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { tempDir, waitFor } from '@rls/testkit';
import type { Account } from '../../src/accounts/account-service.js';
import type { RequestLimiter } from '../../src/accounts/request-limiter.js';
import { monthKey } from '../../src/accounts/usage-month.js';
import { QuotesError } from '../../src/errors.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import { makeTestApp, plansWith, T0, type TestApp, type TestAppOptions } from '../support/helpers.js';

interface Answer {
  status: number;
  /** Raw header lines in order, Date removed (it is the wall clock). */
  headers: string[];
  body: string;
}

async function get(port: number, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
  return await new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = res.rawHeaders;
        const lines: string[] = [];
        for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() !== 'date') lines.push(`${raw[i]!.toLowerCase()}: ${raw[i + 1]!}`);
        resolve({ status: res.statusCode ?? 0, headers: lines, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * `took` is a measured duration, the one field allowed to differ (and with it the digits of
 * Content-Length, checked here against the body instead).
 */
function sameShape(a: Answer): Answer {
  const length = a.headers.find((h) => h.startsWith('content-length: '));
  if (length !== undefined && a.body !== '') assert.equal(length, `content-length: ${Buffer.byteLength(a.body)}`);
  return { ...a, headers: a.headers.map((h) => (h === length ? 'content-length: (body)' : h)), body: a.body.replace(/"took":\d+/, '"took":0') };
}

interface Pair {
  fast: TestApp;
  full: TestApp;
  fastPort: number;
  fullPort: number;
  close: () => Promise<void>;
}

async function listen(t: TestApp): Promise<number> {
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = t.app.server.address();
  assert.ok(addr !== null && typeof addr === 'object');
  return addr.port;
}

async function pair(opts: TestAppOptions = {}): Promise<Pair> {
  const settings = { PUBLIC_BASE_URL: 'http://quotes.test', ...opts.settings };
  const fast = await makeTestApp({ logLevel: 'warn', ...opts, settings });
  const full = await makeTestApp({ logLevel: 'warn', ...opts, settings: { ...settings, QUOTES_FAST_PATH: 'false' } });
  // Each app was built with its own id counter; both start at req-1.
  const [fastPort, fullPort] = [await listen(fast), await listen(full)];
  return { fast, full, fastPort, fullPort, close: async () => void (await Promise.all([fast.close(), full.close()])) };
}

/** The same request to both apps (each with its own token of `plan`); asserts identical answers. */
async function both(p: Pair, plan: string, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
  const auth = (t: TestApp) => ({ authorization: `Bearer ${t.tokens[plan]!}`, ...headers });
  const [a, b] = [await get(p.fastPort, path, auth(p.fast), method), await get(p.fullPort, path, auth(p.full), method)];
  assert.deepEqual(sameShape(a), sameShape(b), `${method} ${path}: the fast path answered differently`);
  return a;
}

/** What the pre-router answered: below 400, and 400 and above. */
const counts = (t: TestApp) => {
  const c = t.fastPath?.counts;
  return c === undefined ? { served: -1, refused: -1 } : { served: c[1]! + c[2]! + c[3]!, refused: c[4]! + c[5]! };
};

describe('cached-quote fast path', () => {
  test('answers cached quotes with the same status, header lines and body as the full pipeline', async () => {
    const p = await pair();
    try {
      assert.equal(p.full.fastPath, undefined, 'QUOTES_FAST_PATH=false installs nothing');
      const path = '/api/v2/crypto?coin=BTC,ETH,SOL';
      const first = await both(p, 'pro', path);
      assert.equal(first.status, 200);
      assert.deepEqual(counts(p.fast), { served: 1, refused: 0 }, 'the first request (filling the quote cache) taken too');
      for (let i = 0; i < 3; i++) await both(p, 'pro', path);
      // Another currency, a history range (cached after its first request), the token as a query parameter.
      await both(p, 'pro', '/api/v2/crypto?coin=ETH&currency=USD');
      await both(p, 'pro', '/api/v2/crypto?coin=ETH&currency=USD');
      await both(p, 'pro', '/api/v2/crypto?coin=BTC&range=5d&interval=1d');
      const last = await both(p, 'pro', '/api/v2/crypto?coin=BTC&range=5d&interval=1d');
      assert.match(last.body, /"historicalDataPrice":\[/);
      const viaQuery = (t: TestApp, port: number) => get(port, `${path}&token=${t.tokens.pro!}`);
      assert.deepEqual(sameShape(await viaQuery(p.fast, p.fastPort)), sameShape(await viaQuery(p.full, p.fullPort)));
      assert.deepEqual(counts(p.fast), { served: 9, refused: 0 });
      // Quota headers moved by one per request on both paths: this is the 10th request.
      const q = (await both(p, 'pro', path)).headers.find((h) => h.startsWith('x-quota-remaining: '));
      assert.equal(q, `x-quota-remaining: ${500_000 - 10}`);
    } finally {
      await p.close();
    }
  });

  test('every GET is taken, errors, 304s and refreshes included; HEAD and bodies reach the route', async () => {
    const p = await pair();
    try {
      const path = '/api/v2/crypto?coin=BTC';
      const ok = await both(p, 'pro', path);
      const etag = ok.headers.find((h) => h.startsWith('etag: '))!.slice(6);
      assert.equal((await both(p, 'pro', path, { 'if-none-match': etag })).status, 304);
      assert.deepEqual(counts(p.fast), { served: 2, refused: 0 });
      const head = await both(p, 'pro', path, {}, 'HEAD');
      assert.equal(head.status, 200);
      assert.equal(head.body, '');
      const length = Number(head.headers.find((h) => h.startsWith('content-length: '))?.slice(16));
      assert.ok(Math.abs(length - Buffer.byteLength(ok.body)) <= 2, `the length of the GET body (${length}; took's digits may differ)`);
      assert.deepEqual(counts(p.fast), { served: 2, refused: 0 }, 'HEAD went to the route');
      assert.equal((await both(p, 'pro', '/api/v2/crypto?coin=BTC,NOPE')).status, 400);
      assert.equal((await both(p, 'pro', '/api/v2/crypto?coin=BTC&currency=XYZ')).status, 400);
      assert.equal((await both(p, 'free', path)).status, 403);
      assert.equal((await both(p, 'pro', path, { authorization: 'Bearer qt_unknown' })).status, 401);
      assert.equal((await both(p, 'pro', path, { 'accept-language': 'pt-BR', authorization: '' })).status, 401);
      assert.equal((await both(p, 'pro', '/api/v2/crypto', {})).status, 417);
      assert.deepEqual(counts(p.fast), { served: 2, refused: 6 });
      // Past the refresh interval the snapshot is refreshed first (the step waits, then answers).
      p.fast.clock.advance(60_000);
      p.full.clock.advance(60_000);
      assert.equal((await both(p, 'pro', path)).status, 200);
      assert.equal((await both(p, 'pro', path)).status, 200);
      assert.deepEqual(counts(p.fast), { served: 4, refused: 6 });
    } finally {
      await p.close();
    }
  });

  test('a quota refusal taken by the fast path gets the same error answer as through the route, counted once, in either language', async () => {
    const plans = plansWith({ pro: { monthlyRequests: 2 } });
    const p = await pair({ plans });
    try {
      const path = '/api/v2/crypto?coin=BTC';
      assert.equal((await both(p, 'pro', path)).status, 200);
      assert.equal((await both(p, 'pro', path)).status, 200);
      const refused = await both(p, 'pro', path);
      assert.equal(refused.status, 402);
      assert.ok(refused.headers.includes('x-quota-remaining: 0'), refused.headers.join('\n'));
      const pt = await both(p, 'pro', path, { 'accept-language': 'pt-BR' });
      assert.equal(pt.status, 402);
      assert.notEqual(JSON.parse(pt.body).message, JSON.parse(refused.body).message, 'Portuguese text with pt-BR');
      assert.deepEqual(counts(p.fast), { served: 2, refused: 2 });
      for (const t of [p.fast, p.full]) {
        await t.services.flushUsage();
        assert.equal(await t.store.usage.get(t.tokenIds.pro!, monthKey(T0)), 2, 'refusals are not counted');
      }
    } finally {
      await p.close();
    }
  });

  test('a limiter refusal (429) keeps the headers of the limiters already passed and peeked', async () => {
    let allow = true;
    const burst: RequestLimiter = {
      name: 'test-burst',
      admit: (account: Account) => {
        if (!allow) return Promise.reject(new QuotesError('RATE_LIMITED', { retryAfterSeconds: 3, headers: { 'x-burst-plan': account.plan.id } }));
        return Promise.resolve({ 'x-burst-plan': account.plan.id });
      },
    };
    const p = await pair({ extraLimiters: [burst] });
    try {
      const path = '/api/v2/crypto?coin=SOL';
      await both(p, 'startup', path);
      assert.ok((await both(p, 'startup', path)).headers.includes('x-burst-plan: startup'));
      allow = false;
      const limited = await both(p, 'startup', path);
      assert.equal(limited.status, 429);
      assert.ok(limited.headers.includes('retry-after: 3'), limited.headers.join('\n'));
      assert.deepEqual(counts(p.fast), { served: 2, refused: 1 });
    } finally {
      await p.close();
    }
  });

  test('a token revoked by another process (the CLI) is refused within the cache check bound', async () => {
    const dir = tempDir('quotes-fast-revoke-');
    const file = join(dir.path, 'quotes.sqlite');
    const t = await makeTestApp({ logLevel: 'warn', store: openSqliteStore(file), settings: { PUBLIC_BASE_URL: 'http://quotes.test' } });
    const other = openSqliteStore(file);
    try {
      const port = await listen(t);
      const auth = { authorization: `Bearer ${t.tokens.startup!}` };
      assert.equal((await get(port, '/api/v2/crypto?coin=BTC', auth)).status, 200);
      assert.equal((await get(port, '/api/v2/crypto?coin=BTC', auth)).status, 200);
      assert.equal(counts(t).served, 2);
      assert.ok(await other.tokens.revoke(t.tokenIds.startup!, T0));
      const revokedAt = performance.now();
      await waitFor(async () => (await get(port, '/api/v2/crypto?coin=BTC', auth)).status === 401, { what: 'revocation seen', timeoutMs: 1000, intervalMs: 1 });
      assert.ok(performance.now() - revokedAt < 500, 'seen within the check bound plus a request');
    } finally {
      await other.close();
      await t.close();
      dir.cleanup();
    }
  });

  test('with access logging on (info), the fast path serves and writes the same access lines as fastify', async () => {
    const p = await pair({ logLevel: 'info' });
    try {
      assert.ok(p.fast.fastPath !== undefined, 'installed at the default log level');
      const path = '/api/v2/crypto?coin=BTC,ETH,SOL';
      await both(p, 'pro', path); // fills the cache: req-1
      await both(p, 'pro', path, { 'x-request-id': 'client-chosen' }); // the header is not an id, as in fastify 5
      await both(p, 'pro', `${path}&currency=USD`); // cache fill
      await both(p, 'pro', `${path}&currency=USD`);
      // A token in the URL is masked in both paths' lines.
      const viaQuery = (t: TestApp, port: number) => get(port, `${path}&token=${t.tokens.pro!}`);
      assert.deepEqual(sameShape(await viaQuery(p.fast, p.fastPort)), sameShape(await viaQuery(p.full, p.fullPort)));
      assert.equal((await both(p, 'pro', '/api/v2/crypto?coin=NOPE')).status, 400);
      await both(p, 'pro', path);
      assert.deepEqual(counts(p.fast), { served: 6, refused: 1 });
      const access = (t: TestApp): Array<Record<string, unknown>> =>
        t.logs
          .join('')
          .split('\n')
          .filter((l) => l.includes('"incoming request"') || l.includes('"request completed"'))
          .map((l) => {
            const o = JSON.parse(l) as Record<string, unknown>;
            assert.equal(typeof o.time, 'number');
            if ('responseTime' in o) assert.ok(typeof o.responseTime === 'number' && o.responseTime >= 0, l);
            return { ...o, time: 0, ...('responseTime' in o ? { responseTime: 0 } : {}) };
          });
      await waitFor(() => access(p.fast).length === 14 && access(p.full).length === 14, { what: 'access lines written', timeoutMs: 2000 });
      const fast = access(p.fast);
      const full = access(p.full);
      // Field for field and in the same key order: the fast path's lines are fastify's lines.
      assert.deepEqual(fast.map((o) => JSON.stringify(o)), full.map((o) => JSON.stringify(o)));
      assert.deepEqual(fast.map((o) => o.reqId), ['req-1', 'req-1', 'req-2', 'req-2', 'req-3', 'req-3', 'req-4', 'req-4', 'req-5', 'req-5', 'req-6', 'req-6', 'req-7', 'req-7']);
      assert.deepEqual(fast[0], { level: 30, time: 0, pid: process.pid, hostname: fast[0]!.hostname, reqId: 'req-1', req: { method: 'GET', url: path, remoteAddress: '127.0.0.1' }, msg: 'incoming request' });
      assert.deepEqual(fast[3], { level: 30, time: 0, pid: process.pid, hostname: fast[0].hostname, reqId: 'req-2', res: { statusCode: 200 }, responseTime: 0, msg: 'request completed' });
      assert.match(String((fast[8]!.req as { url: string }).url), /token=\[REDACTED\]$/);
      assert.ok(!p.fast.logs.join('').includes(p.fast.tokens.pro!), 'no token in the log');
    } finally {
      await p.close();
    }
  });

  test('a refusal taken by the fast path is logged as fastify logs it', async () => {
    const plans = plansWith({ pro: { monthlyRequests: 2 } });
    const p = await pair({ plans, logLevel: 'info' });
    try {
      const path = '/api/v2/crypto?coin=BTC';
      for (let i = 0; i < 3; i++) await both(p, 'pro', path);
      assert.deepEqual(counts(p.fast), { served: 2, refused: 1 });
      const completed = (t: TestApp) =>
        t.logs
          .join('')
          .split('\n')
          .filter((l) => l.includes('"request completed"'))
          .map((l) => JSON.parse(l) as { res: unknown; reqId: string });
      await waitFor(() => completed(p.fast).length === 3 && completed(p.full).length === 3, { what: 'access lines written', timeoutMs: 2000 });
      assert.deepEqual(completed(p.fast).map((o) => [o.reqId, o.res]), completed(p.full).map((o) => [o.reqId, o.res]));
      assert.deepEqual(completed(p.fast)[2]!.res, { statusCode: 402 });
    } finally {
      await p.close();
    }
  });
});
