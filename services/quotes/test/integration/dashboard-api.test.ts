import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { runCli } from '../../src/cli/commands.js';
import { waitFor } from '@rls/testkit';
import { Browser, makeDashboardApp, type DashboardApp } from '../support/dashboard-support.js';
import { portOf, SseClient } from '../support/sse-client.js';

const PASSWORD = 'correct horse battery staple';
const EMAIL = 'Ana@Example.com';

/** Sign-up (202, the same answer for any email), then the first sign-in, which shows the token. */
async function signUp(t: DashboardApp, b = new Browser(t)): Promise<{ b: Browser; token: string }> {
  assert.equal((await b.get('/dashboard/api/session')).statusCode, 200);
  const res = await b.post('/dashboard/api/signup', { email: EMAIL, password: PASSWORD });
  assert.equal(res.statusCode, 202, res.body);
  const signin = await b.post('/dashboard/api/signin', { email: EMAIL, password: PASSWORD });
  assert.equal(signin.statusCode, 200, signin.body);
  const token = signin.json<{ token?: string }>().token;
  assert.ok(token !== undefined, 'the first sign-in shows the token');
  return { b, token };
}

const api = (t: DashboardApp, token: string) => t.app.inject({ url: '/api/v2/crypto?coin=BTC', headers: { authorization: `Bearer ${token}` } });

describe('dashboard API', () => {
  test('sign up: session cookie flags, token shown once, plan and usage (monthly and daily) on the account', async () => {
    const t = await makeDashboardApp();
    try {
      const { b, token } = await signUp(t);
      assert.match(token, /^qt_/);
      const signupRes = await b.get('/dashboard/api/account');
      const acc = signupRes.json<{ email: string; plan: { id: string }; token: { prefix: string }; usage: { count: number; limit: number; daily: Array<{ day: string; count: number }> } }>();
      assert.equal(acc.email, 'ana@example.com');
      assert.equal(acc.plan.id, 'startup');
      assert.equal(acc.token.prefix, token.slice(0, 9));
      assert.ok(!signupRes.body.includes(token), 'the full token is never shown again');
      assert.equal(acc.usage.count, 0);
      for (let i = 0; i < 3; i++) assert.equal((await api(t, token)).statusCode, 200);
      const after = (await b.get('/dashboard/api/account')).json<typeof acc>();
      assert.equal(after.usage.count, 3);
      assert.equal(after.usage.limit, 150000);
      assert.deepEqual(after.usage.daily.at(-1), { day: '2026-03-15', count: 3 });
      assert.equal(after.usage.daily.length, 15, 'every day of the month so far');
      await t.services.flushUsage();
      assert.deepEqual(await t.store.dailyUsage.range(acc.token.prefix === '' ? '' : (await t.store.users.findByEmail('ana@example.com'))!.tokenId!, '2026-03-01', '2026-03-31'), [{ day: '2026-03-15', count: 3 }]);
    } finally {
      await t.close();
    }
  });

  test('cookies: HttpOnly; SameSite=Lax; Path=/ always, Secure on loopback hosts and HTTPS only', async () => {
    const t = await makeDashboardApp({ QUOTES_TRUST_PROXY: 'true' });
    try {
      const cookieOf = async (headers: Record<string, string>) => {
        const res = await t.app.inject({ url: '/dashboard/api/session', headers });
        return String(res.headers['set-cookie']);
      };
      const local = await cookieOf({ host: '127.0.0.1:3000' });
      assert.match(local, /^qd_csrf=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Secure$/);
      assert.doesNotMatch(await cookieOf({ host: 'quotes.example.com' }), /Secure/);
      assert.match(await cookieOf({ host: 'quotes.example.com', 'x-forwarded-proto': 'https' }), /; Secure$/);
      const { b } = await signUp(t);
      const res = await b.post('/dashboard/api/signin', { email: EMAIL, password: PASSWORD });
      const set = [res.headers['set-cookie']].flat();
      assert.match(String(set[0]), /^qd_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=604800; Secure$/);
      assert.equal(set[1], 'qd_csrf=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0; Secure', 'the pre-session cookie is retired');
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal(res.headers['access-control-allow-origin'], undefined, 'no CORS on the dashboard');
    } finally {
      await t.close();
    }
  });

  test('CSRF: state-changing posts without the token, with a wrong one, cross-origin or as a form are 403', async () => {
    const t = await makeDashboardApp();
    try {
      const b = new Browser(t);
      await b.get('/dashboard/api/session');
      const body = { email: 'x@example.com', password: PASSWORD };
      for (const res of [
        await b.post('/dashboard/api/signup', body, { csrf: null }),
        await b.post('/dashboard/api/signup', body, { csrf: 'forged' }),
        await b.post('/dashboard/api/signup', body, { origin: 'https://evil.example' }),
        await b.post('/dashboard/api/signup', 'email=x%40example.com&password=xxxxxxxxxxxx', { contentType: 'application/x-www-form-urlencoded' }),
      ]) {
        assert.equal(res.statusCode, 403);
        assert.deepEqual(res.json(), { error: true, message: 'Missing or invalid CSRF token; reload the page and try again' });
      }
      assert.equal(await t.store.users.findByEmail('x@example.com'), undefined, 'nothing was created');
      const { b: user, token } = await signUp(t);
      // Another browser's valid pre-session token does not fit this session.
      const other = new Browser(t);
      await other.get('/dashboard/api/session');
      assert.equal((await user.post('/dashboard/api/token/rotate', {}, { csrf: other.csrf })).statusCode, 403);
      assert.equal((await user.post('/dashboard/api/token/rotate', {}, { csrf: null })).statusCode, 403);
      assert.equal((await user.post('/dashboard/api/signout', {}, { csrf: null })).statusCode, 403);
      assert.equal((await api(t, token)).statusCode, 200, 'the token survived the refused rotation');
    } finally {
      await t.close();
    }
  });

  test('rotation: the new token works at once, the old one gets 401 immediately, usage carries over', async () => {
    const t = await makeDashboardApp();
    try {
      const { b, token: old } = await signUp(t);
      for (let i = 0; i < 2; i++) assert.equal((await api(t, old)).statusCode, 200);
      const res = await b.post('/dashboard/api/token/rotate', {});
      assert.equal(res.statusCode, 201);
      const fresh = res.json<{ token: string }>().token;
      assert.notEqual(fresh, old);
      assert.equal((await api(t, old)).statusCode, 401);
      const ok = await api(t, fresh);
      assert.equal(ok.statusCode, 200);
      assert.equal(ok.headers['x-quota-remaining'], String(150000 - 3), 'rotating does not reset the monthly quota');
      const acc = (await b.get('/dashboard/api/account')).json<{ usage: { count: number; daily: Array<{ count: number }> } }>();
      assert.equal(acc.usage.count, 3);
      assert.equal(acc.usage.daily.at(-1)!.count, 3);
    } finally {
      await t.close();
    }
  });

  test('sign in: wrong password 401, throttled after 5 attempts per email (429 with Retry-After), sign out ends the session', async () => {
    const t = await makeDashboardApp();
    try {
      await signUp(t);
      const b = new Browser(t);
      await b.get('/dashboard/api/session');
      const wrong = await b.post('/dashboard/api/signin', { email: EMAIL, password: 'not the password' });
      assert.equal(wrong.statusCode, 401);
      assert.deepEqual(wrong.json(), { error: true, message: 'Wrong email or password' });
      const unknown = await b.post('/dashboard/api/signin', { email: 'nobody@example.com', password: PASSWORD });
      assert.equal(unknown.statusCode, 401, 'unknown emails look the same');
      assert.deepEqual(unknown.json(), wrong.json());
      const ok = await b.post('/dashboard/api/signin', { email: EMAIL.toUpperCase(), password: PASSWORD });
      assert.equal(ok.statusCode, 200);
      assert.equal((await b.get('/dashboard/api/account')).statusCode, 200);
      assert.equal((await b.post('/dashboard/api/signout', {})).statusCode, 200);
      assert.equal(b.cookies.has('qd_session'), false, 'cookie cleared');
      assert.equal((await b.get('/dashboard/api/account')).statusCode, 401);
      // Three attempts so far for this email (sign-up's first sign-in, the wrong one and the good one); two more reach 5.
      await b.get('/dashboard/api/session');
      for (let i = 0; i < 2; i++) assert.equal((await b.post('/dashboard/api/signin', { email: EMAIL, password: 'guess ' + i })).statusCode, 401);
      const throttled = await b.post('/dashboard/api/signin', { email: EMAIL, password: PASSWORD });
      assert.equal(throttled.statusCode, 429, 'even the right password waits out the window');
      assert.equal(throttled.headers['retry-after'], String(60 - (Math.floor(t.clock.now() / 1000) % 60)));
      t.clock.advance(60_000);
      assert.equal((await b.post('/dashboard/api/signin', { email: EMAIL, password: PASSWORD })).statusCode, 200);
    } finally {
      await t.close();
    }
  });

  test('session fixation: a planted or earlier session id never survives sign-in', async () => {
    const t = await makeDashboardApp();
    try {
      const { b } = await signUp(t);
      const first = b.cookies.get('qd_session')!;
      // Planted id (attacker-chosen) before signing in: replaced, and never valid.
      const victim = new Browser(t);
      victim.cookies.set('qd_session', 'attacker-chosen-session-id-0123456789abcdefghijk');
      await victim.get('/dashboard/api/session');
      assert.equal((await victim.post('/dashboard/api/signin', { email: EMAIL, password: PASSWORD })).statusCode, 200);
      const issued = victim.cookies.get('qd_session')!;
      assert.notEqual(issued, 'attacker-chosen-session-id-0123456789abcdefghijk');
      const planted = new Browser(t);
      planted.cookies.set('qd_session', 'attacker-chosen-session-id-0123456789abcdefghijk');
      assert.equal((await planted.get('/dashboard/api/account')).statusCode, 401);
      // Signing in again from a signed-in browser issues a new id and ends the old session.
      assert.equal((await b.post('/dashboard/api/signin', { email: EMAIL, password: PASSWORD })).statusCode, 200);
      const second = b.cookies.get('qd_session')!;
      assert.notEqual(second, first);
      const stale = new Browser(t);
      stale.cookies.set('qd_session', first);
      assert.equal((await stale.get('/dashboard/api/account')).statusCode, 401);
      assert.equal((await b.get('/dashboard/api/account')).statusCode, 200);
    } finally {
      await t.close();
    }
  });

  test('secrets at rest and in logs: no clear password, token or session id in the database or the log', async () => {
    const t = await makeDashboardApp();
    try {
      const { b, token } = await signUp(t);
      await b.post('/dashboard/api/signin', { email: EMAIL, password: 'wrong password here' });
      await b.post('/dashboard/api/signin', { email: EMAIL, password: PASSWORD });
      const sid = b.cookies.get('qd_session')!;
      assert.equal((await api(t, token)).statusCode, 200);
      assert.equal((await t.app.inject(`/api/v2/crypto?coin=BTC&token=${token}`)).statusCode, 200);
      const rotated = (await b.post('/dashboard/api/token/rotate', {})).json<{ token: string }>().token;
      await t.services.flushUsage();

      const db = new BetterSqlite3(t.file, { readonly: true });
      try {
        const user = db.prepare('SELECT email, password_hash FROM users').get() as { email: string; password_hash: string };
        assert.equal(user.email, 'ana@example.com');
        assert.match(user.password_hash, /^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
        const sessions = db.prepare('SELECT id_hash FROM sessions').all() as Array<{ id_hash: string }>;
        assert.ok(sessions.length >= 1 && sessions.every((s) => /^[0-9a-f]{64}$/.test(s.id_hash) && s.id_hash !== sid));
      } finally {
        db.close();
      }
      // Raw bytes of the database files, WAL included, hold none of the secrets.
      const raw = ['', '-wal'].map((s) => {
        try {
          return readFileSync(t.file + s).toString('latin1');
        } catch {
          return '';
        }
      }).join('');
      for (const secret of [PASSWORD, token, rotated, sid]) assert.ok(!raw.includes(secret), 'secret found in the database files');

      const logs = t.logs.join('');
      assert.ok(logs.includes('/dashboard/api/signin'), 'requests were logged (trace level)');
      for (const secret of [PASSWORD, 'wrong password here', token, rotated, sid]) assert.ok(!logs.includes(secret), 'secret found in the logs');
      assert.ok(logs.includes('token=[REDACTED]'));
    } finally {
      await t.close();
    }
  });

  test('operators change a plan with `quotes user plan EMAIL pro`; the account and the token follow', async () => {
    const t = await makeDashboardApp();
    try {
      const { b, token } = await signUp(t);
      const out: string[] = [];
      const err: string[] = [];
      const io = { out: (l: string) => void out.push(l), err: (l: string) => void err.push(l) };
      const env = { DATABASE_URL: `sqlite:${t.file}` };
      assert.equal(await runCli(['user', 'plan', 'ANA@example.com', 'pro'], env, io), 0, err.join('\n'));
      assert.match(out.join('\n'), /^ana@example\.com: plan pro \(token tok_[0-9a-f]+\)$/);
      assert.equal((await b.get('/dashboard/api/account')).json<{ plan: { id: string } }>().plan.id, 'pro');
      const res = await t.app.inject({ url: '/api/v2/crypto?coin=BTC', headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.headers['x-quota-limit'], '500000', 'the API applies the new plan at once');
      assert.equal(await runCli(['user', 'plan', 'nobody@example.com', 'pro'], env, io), 1);
      assert.equal(await runCli(['user', 'plan', 'ana@example.com', 'platinum'], env, io), 1);
      assert.match(err.join('\n'), /unknown plan "platinum"/);
    } finally {
      await t.close();
    }
  });
});

describe('dashboard live prices and token rotation (issue 23, finding 10)', () => {
  test('rotating the token ends the dashboard stream of the old one; reconnecting on the session streams under the new token', async () => {
    const t = await makeDashboardApp();
    const clients: SseClient[] = [];
    try {
      const { b } = await signUp(t);
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      const port = portOf(t.app.server.address());
      const open = async (): Promise<SseClient> => {
        const c = await SseClient.open(port, '/dashboard/api/market/stream?coin=BTC&currency=USD', { cookie: b.cookieHeader() });
        clients.push(c);
        assert.equal(c.status, 200, c.body);
        await waitFor(() => c.quoteEvents().length >= 1, { what: 'first event', timeoutMs: 10_000 });
        return c;
      };
      const first = await open();
      const rotated = await b.post('/dashboard/api/token/rotate', {});
      assert.equal(rotated.statusCode, 201, rotated.body);
      await waitFor(() => first.ended, { what: 'the old token\'s stream ended', timeoutMs: 10_000 });
      assert.ok(first.comments.some((x) => x.includes('revoked')));
      assert.equal(first.events.filter((e) => e.event === 'error').length, 0, 'no error event: the page\'s EventSource reconnects');
      const second = await open();
      assert.equal(second.ended, false, 'the session streams again, under the new token');
      assert.equal(t.services.streams.stats().closed.revoked, 1);
    } finally {
      for (const c of clients) c.close();
      await t.close();
    }
  });
});
