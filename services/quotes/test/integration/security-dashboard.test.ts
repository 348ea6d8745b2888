// Security of the dashboard and of the data at rest: the pre-session CSRF token rotated at
// sign-in and sign-out, sign-up throttled per address and globally, sign-up answers that do
// not tell whether an email has an account, and database files only the owner can read.
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { tempDir } from '@rls/testkit';
import { SIGNUP_ACCEPTED } from '../../src/dashboard/dashboard-routes.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import { Browser, makeDashboardApp, type DashboardApp } from '../support/dashboard-support.js';

const PASSWORD = 'correct horse battery staple';

async function signUpAndIn(t: DashboardApp, email: string): Promise<Browser> {
  const b = new Browser(t);
  await b.get('/dashboard/api/session');
  assert.equal((await b.post('/dashboard/api/signup', { email, password: PASSWORD })).statusCode, 202);
  assert.equal((await b.post('/dashboard/api/signin', { email, password: PASSWORD })).statusCode, 200);
  return b;
}

/** A browser at another client address (behind a trusted proxy that sets X-Forwarded-For). */
async function signupFrom(t: DashboardApp, ip: string, email: string, password = PASSWORD) {
  const s = await t.app.inject({ url: '/dashboard/api/session', headers: { host: 'localhost', 'x-forwarded-for': ip } });
  const cookie = String(s.headers['set-cookie']).split(';')[0]!;
  return await t.app.inject({
    method: 'POST',
    url: '/dashboard/api/signup',
    headers: { host: 'localhost', cookie, 'x-csrf-token': s.json<{ csrfToken: string }>().csrfToken, 'content-type': 'application/json', 'x-forwarded-for': ip },
    payload: JSON.stringify({ email, password }),
  });
}

describe('dashboard security', () => {
  test('the pre-session CSRF token stops working at sign-in, the session token at sign-out, and sign-out hands out a fresh pre-session token', async () => {
    const t = await makeDashboardApp();
    try {
      const b = new Browser(t);
      await b.get('/dashboard/api/session');
      assert.equal((await b.post('/dashboard/api/signup', { email: 'ana@example.com', password: PASSWORD })).statusCode, 202);
      const pre = b.csrf;
      const preCookie = b.cookies.get('qd_csrf')!;
      const signin = await b.post('/dashboard/api/signin', { email: 'ana@example.com', password: PASSWORD });
      assert.equal(signin.statusCode, 200);
      assert.match(String(signin.headers['set-cookie']), /qd_csrf=; Path=\/; HttpOnly; SameSite=Lax; Max-Age=0/, 'the pre-session cookie is deleted');
      assert.equal(b.cookies.has('qd_csrf'), false);
      const session = b.csrf;
      assert.notEqual(session, pre);
      // The old pre-session token is refused, even replayed with its old cookie beside the session.
      assert.equal((await b.post('/dashboard/api/token/rotate', {}, { csrf: pre })).statusCode, 403);
      b.cookies.set('qd_csrf', preCookie);
      assert.equal((await b.post('/dashboard/api/token/rotate', {}, { csrf: pre })).statusCode, 403);
      assert.equal((await b.post('/dashboard/api/signin', { email: 'ana@example.com', password: PASSWORD }, { csrf: pre })).statusCode, 403);
      b.cookies.delete('qd_csrf');
      assert.equal((await b.post('/dashboard/api/token/rotate', {}, { csrf: session })).statusCode, 201, 'the session token works');
      // Sign-out: the session token dies with the session; a new pre-session secret replaces any old one.
      const out = await b.post('/dashboard/api/signout', {});
      assert.equal(out.statusCode, 200);
      const fresh = out.json<{ signedIn: boolean; csrfToken: string }>();
      assert.equal(fresh.signedIn, false);
      assert.ok(![pre, session].includes(fresh.csrfToken));
      assert.notEqual(b.cookies.get('qd_csrf'), preCookie);
      for (const old of [pre, session]) {
        assert.equal((await b.post('/dashboard/api/signin', { email: 'ana@example.com', password: PASSWORD }, { csrf: old })).statusCode, 403);
      }
      assert.equal((await b.post('/dashboard/api/signin', { email: 'ana@example.com', password: PASSWORD }, { csrf: fresh.csrfToken })).statusCode, 200);
    } finally {
      await t.close();
    }
  });

  test('sign-up answers a taken email exactly as a new one, doing the same work, and never signs anyone in', async () => {
    const t = await makeDashboardApp({ QUOTES_TRUST_PROXY: 'true' });
    try {
      await signUpAndIn(t, 'taken@example.com');
      const answer = async (ip: string, email: string, password: string) => {
        const started = performance.now();
        const res = await signupFrom(t, ip, email, password);
        const { date: _d, 'x-ratelimit-remaining': _r, ...headers } = res.headers;
        return { status: res.statusCode, body: res.body, headers, ms: performance.now() - started };
      };
      const taken = await answer('10.0.0.1', 'Taken@Example.com', 'another password entirely');
      const fresh = await answer('10.0.0.2', 'new@example.com', 'another password entirely');
      assert.equal(taken.status, 202);
      assert.deepEqual({ ...taken, ms: 0 }, { ...fresh, ms: 0 }, 'same status, headers and body');
      assert.deepEqual(JSON.parse(taken.body), { message: SIGNUP_ACCEPTED });
      assert.equal(taken.headers['set-cookie'], undefined, 'no session either way');
      // Both answers hash the password (scrypt dominates): a taken email is not answered faster.
      const times = { taken: [] as number[], fresh: [] as number[] };
      for (let i = 0; i < 3; i++) {
        times.taken.push((await answer(`10.0.1.${i}`, 'taken@example.com', 'another password entirely')).ms);
        times.fresh.push((await answer(`10.0.2.${i}`, `new${i}@example.com`, 'another password entirely')).ms);
      }
      const med = (a: number[]) => [...a].sort((x, y) => x - y)[1]!;
      assert.ok(med(times.taken) > med(times.fresh) / 3, `taken ${med(times.taken).toFixed(1)} ms vs new ${med(times.fresh).toFixed(1)} ms`);
      // The taken account kept its password; the new one works with its own.
      const owner = new Browser(t);
      await owner.get('/dashboard/api/session');
      assert.equal((await owner.post('/dashboard/api/signin', { email: 'taken@example.com', password: 'another password entirely' })).statusCode, 401);
      assert.equal((await owner.post('/dashboard/api/signin', { email: 'taken@example.com', password: PASSWORD })).statusCode, 200);
      const first = await owner.post('/dashboard/api/signin', { email: 'new@example.com', password: 'another password entirely' });
      assert.equal(first.statusCode, 200);
      assert.match(String(first.json<{ token?: string }>().token), /^qt_/, 'first sign-in issues the token');
      const again = await owner.post('/dashboard/api/signin', { email: 'new@example.com', password: 'another password entirely' });
      assert.equal(again.json<{ token?: string }>().token, undefined, 'shown once');
    } finally {
      await t.close();
    }
  });

  test('sign-up is throttled: 3 an hour per client address, 100 an hour for the whole service (429 with Retry-After)', async () => {
    const t = await makeDashboardApp({ QUOTES_TRUST_PROXY: 'true' });
    try {
      // Attempts count whether or not the form is valid (a short password: no hashing, quick).
      for (let i = 0; i < 3; i++) assert.equal((await signupFrom(t, '10.1.0.1', `a${i}@example.com`, 'short')).statusCode, 400);
      const limited = await signupFrom(t, '10.1.0.1', 'a9@example.com');
      assert.equal(limited.statusCode, 429);
      assert.deepEqual(limited.json(), { error: true, message: 'Too many attempts; please wait before trying again' });
      const retry = Number(limited.headers['retry-after']);
      assert.ok(retry > 0 && retry <= 3600, `Retry-After ${retry}`);
      assert.equal(await t.store.users.findByEmail('a9@example.com'), undefined);
      assert.equal((await signupFrom(t, '10.1.0.2', 'b@example.com')).statusCode, 202, 'another address is not affected');
      // 100 an hour in all: 5 counted so far (a refused attempt counts too, as with any rate
      // limit), 95 more from many addresses.
      for (let i = 0; i < 95; i++) assert.equal((await signupFrom(t, `10.2.${i >> 8}.${i & 255}`, `c${i}@example.com`, 'short')).statusCode, 400, `attempt ${i}`);
      assert.equal((await signupFrom(t, '10.3.0.1', 'd@example.com')).statusCode, 429, 'the global window is full');
      t.clock.advance(3600_000);
      assert.equal((await signupFrom(t, '10.3.0.1', 'd@example.com')).statusCode, 202, 'a new hour');
      assert.equal((await signupFrom(t, '10.1.0.1', 'a9@example.com')).statusCode, 202);
    } finally {
      await t.close();
    }
  });

  test('the SQLite database, its -wal and -shm files are created 0600 and a created data directory 0700', async () => {
    const dir = tempDir('quotes-perm-');
    try {
      const dataDir = join(dir.path, 'data', 'nested');
      const file = join(dataDir, 'quotes.sqlite');
      const store = openSqliteStore(file);
      await store.migrate();
      try {
        for (const f of [file, `${file}-wal`, `${file}-shm`]) {
          assert.ok(existsSync(f), `${f} exists`);
          assert.equal(statSync(f).mode & 0o777, 0o600, `${f}: mode ${(statSync(f).mode & 0o777).toString(8)}`);
        }
        for (const d of [dataDir, join(dir.path, 'data')]) assert.equal(statSync(d).mode & 0o777, 0o700, `${d}: mode ${(statSync(d).mode & 0o777).toString(8)}`);
      } finally {
        await store.close();
      }
    } finally {
      dir.cleanup();
    }
  });
});
