import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { FakeClock, tempDir } from '@rls/testkit';
import { AccountService } from '../../src/accounts/account-service.js';
import type { RequestLimiter } from '../../src/accounts/request-limiter.js';
import { QuotesError } from '../../src/errors.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import { makeTestApp, plansWith, shippedPlans, type CryptoJson } from '../support/helpers.js';
import { randomBytes } from 'node:crypto';

describe('monthly usage and quotas', () => {
  test('quota counts per token per UTC month, 402 when used up, resets at the month boundary, durable', async () => {
    const dir = tempDir('quotes-usage-');
    const file = join(dir.path, 'q.sqlite');
    const clock = new FakeClock(Date.parse('2026-03-31T23:58:30Z'));
    const t = await makeTestApp({ clock, store: openSqliteStore(file), plans: plansWith({ startup: { monthlyRequests: 3 } }) });
    try {
      const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ url, headers: { authorization: `Bearer ${t.tokens.startup}`, ...headers } });
      const remaining: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await get(i === 1 ? '/api/v2/crypto/available' : '/api/v2/crypto?coin=BTC');
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers['x-quota-limit'], '3');
        assert.equal(res.headers['x-quota-reset'], '2026-04-01T00:00:00.000Z');
        remaining.push(String(res.headers['x-quota-remaining']));
      }
      assert.deepEqual(remaining, ['2', '1', '0']);
      const refused = await get('/api/v2/crypto?coin=BTC');
      assert.equal(refused.statusCode, 402);
      assert.deepEqual(refused.json(), { error: true, message: 'You have reached the request limit of your plan. Please consider upgrading to a better plan' });
      assert.equal(refused.headers['retry-after'], '90');
      const pt = await get('/api/v2/crypto/available', { 'accept-language': 'pt-BR' });
      assert.equal(pt.statusCode, 402);
      assert.equal(pt.json<{ message: string }>().message, 'Você atingiu o limite de requisições para o seu plano. Por favor, considere fazer um upgrade para um plano melhor em brapi.dev/dashboard');
      // Unauthenticated calls never count against anyone.
      assert.equal((await t.app.inject('/api/v2/crypto?coin=BTC&token=qt_bogus')).statusCode, 401);
      // Other tokens have their own counters.
      assert.equal((await t.app.inject({ url: '/api/v2/crypto?coin=BTC', headers: { authorization: `Bearer ${t.tokens.pro}` } })).statusCode, 200);

      clock.set(Date.parse('2026-04-01T00:00:00Z'));
      const april = await get('/api/v2/crypto?coin=BTC');
      assert.equal(april.statusCode, 200, 'a new UTC month starts a new count');
      assert.equal(april.headers['x-quota-remaining'], '2');
      assert.equal(april.headers['x-quota-reset'], '2026-05-01T00:00:00.000Z');

      // Counts are written behind (QUOTES_USAGE_FLUSH_MS); flush as the timer or shutdown would.
      await t.services.flushUsage();
      const march = await t.services.accounts.usage('2026-03');
      const row = march.find((r) => r.tokenId === t.tokenIds.startup)!;
      assert.equal(row.count, 3, 'refused requests are not counted');
      assert.equal(row.limit, 3);
      assert.equal(march.find((r) => r.tokenId === t.tokenIds.pro)!.count, 1);
      assert.equal((await t.services.accounts.usage()).find((r) => r.tokenId === t.tokenIds.startup)!.count, 1, 'current month by default');

      // Durable: a separate connection (as the CLI would open) reads the same counts.
      const other = openSqliteStore(file);
      try {
        assert.equal(await other.usage.get(t.tokenIds.startup!, '2026-03'), 3);
        assert.equal(await other.usage.get(t.tokenIds.startup!, '2026-04'), 1);
      } finally {
        await other.close();
      }
    } finally {
      await t.close();
      dir.cleanup();
    }
  });

  test('write-through mode (QUOTES_USAGE_FLUSH_MS=0): every request is in the store at once', async () => {
    const dir = tempDir('quotes-wt-');
    const file = join(dir.path, 'q.sqlite');
    const t = await makeTestApp({ store: openSqliteStore(file), settings: { QUOTES_USAGE_FLUSH_MS: '0' }, plans: plansWith({ pro: { monthlyRequests: 2 } }) });
    const other = openSqliteStore(file);
    try {
      const month = new Date(t.clock.now()).toISOString().slice(0, 7);
      const get = () => t.app.inject({ url: '/api/v2/crypto/available', headers: { authorization: `Bearer ${t.tokens.pro}` } });
      assert.equal((await get()).statusCode, 200);
      assert.equal(await other.usage.get(t.tokenIds.pro!, month), 1);
      // Another server on the same database uses up the quota: this one sees it immediately.
      assert.equal(await other.usage.incrementIfBelow(t.tokenIds.pro!, month, 2), 2);
      assert.equal((await get()).statusCode, 402);
    } finally {
      await other.close();
      await t.close();
      dir.cleanup();
    }
  });

  test('revoking a token takes effect on the very next request, also from another process', async () => {
    const dir = tempDir('quotes-revoke-');
    const file = join(dir.path, 'q.sqlite');
    const t = await makeTestApp({ store: openSqliteStore(file) });
    try {
      const get = (token: string) => t.app.inject({ url: '/api/v2/crypto?coin=ETH', headers: { authorization: `Bearer ${token}` } });
      assert.equal((await get(t.tokens.pro!)).statusCode, 200);
      // A second connection, as `quotes token revoke` would use.
      const cliStore = openSqliteStore(file);
      const cli = new AccountService({ tokens: cliStore.tokens, usage: cliStore.usage, plans: shippedPlans(), clock: t.clock, random: randomBytes });
      try {
        assert.equal(await cli.revoke(t.tokenIds.pro!), true);
        assert.equal((await get(t.tokens.pro!)).statusCode, 401);
        const fresh = await cli.createToken('late', 'startup');
        assert.equal((await get(fresh.token)).statusCode, 200, 'a token created elsewhere works at once');
      } finally {
        await cliStore.close();
      }
      assert.equal(await t.services.accounts.revoke(t.tokenIds.startup!), true);
      assert.equal((await get(t.tokens.startup!)).statusCode, 401);
      const listed = await t.services.accounts.list();
      assert.ok(listed.every((r) => !JSON.stringify(r).includes(t.tokens.pro!)), 'tokens are not stored in clear');
    } finally {
      await t.close();
      dir.cleanup();
    }
  });

  test('plan limits: startup history reaches back one year at most', async () => {
    const t = await makeTestApp();
    try {
      const res = await t.app.inject({ url: '/api/v2/crypto?coin=BTC&range=1y&interval=3mo&currency=USD', headers: { authorization: `Bearer ${t.tokens.startup}` } });
      assert.equal(res.statusCode, 200);
      const c = res.json<CryptoJson>().coins[0]!;
      const asOf = Date.parse(c.regularMarketTime) / 1000;
      assert.ok(c.historicalDataPrice!.every((p) => p.date >= asOf - 366 * 86_400), 'no bucket starts before the plan limit');
      assert.deepEqual(c.validRanges, ['1d', '5d', '1mo', '3mo', '6mo', '1y', 'ytd']);
      const pro = (await t.app.inject({ url: '/api/v2/crypto?coin=BTC&range=1y&interval=3mo&currency=USD', headers: { authorization: `Bearer ${t.tokens.pro}` } })).json<CryptoJson>().coins[0]!;
      assert.ok(pro.historicalDataPrice!.some((p) => p.date < asOf - 366 * 86_400), 'pro gets the whole first quarter');
    } finally {
      await t.close();
    }
  });

  test('extra limiters (burst limits) plug in after the monthly quota', async () => {
    let allow = true;
    const burst: RequestLimiter = {
      name: 'burst',
      admit: (account) => {
        if (!allow) return Promise.reject(new QuotesError('RATE_LIMITED', { retryAfterSeconds: 2 }));
        return Promise.resolve({ 'x-burst-plan': account.plan.id });
      },
    };
    const t = await makeTestApp({ extraLimiters: [burst] });
    try {
      const get = () => t.app.inject({ url: '/api/v2/crypto?coin=BTC', headers: { authorization: `Bearer ${t.tokens.pro}` } });
      const ok = await get();
      assert.equal(ok.statusCode, 200);
      assert.equal(ok.headers['x-burst-plan'], 'pro');
      allow = false;
      const limited = await get();
      assert.equal(limited.statusCode, 429);
      assert.equal(limited.headers['retry-after'], '2');
      assert.deepEqual(limited.json(), { error: true, message: 'You have exceeded the rate limit of your plan' });
    } finally {
      await t.close();
    }
  });
});
