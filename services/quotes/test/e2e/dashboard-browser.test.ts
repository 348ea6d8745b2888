import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pngVariety, tempDir, waitFor } from '@rls/testkit';
import { chromium, type Browser, type Page } from 'playwright-core';
import { runCli } from '../../src/cli/commands.js';
import { makeDashboardApp, type DashboardApp } from '../support/dashboard-support.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const quotesRoot = new URL('../..', import.meta.url).pathname;
const artifacts = new URL('../../../../.test-artifacts/', import.meta.url).pathname;
const PASSWORD = 'a long enough password';
const EMAIL = 'bruno@example.com';

async function apiStatus(base: string, token: string): Promise<number> {
  return (await fetch(`${base}/api/v2/crypto?coin=BTC`, { headers: { authorization: `Bearer ${token}` } })).status;
}

describe('dashboard in headless Chromium', () => {
  let t: DashboardApp;
  let browser: Browser;
  let base: string;
  const assets = tempDir('quotes-web-');

  before(async () => {
    // Fail loudly, never skip: the CI installs Debian's chromium package.
    assert.ok(existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}: install the "chromium" package (.ci/run does)`);
    // Build the current sources (not whatever dist/ holds) with the same Vite config as `npm run build`.
    await promisify(execFile)(join(quotesRoot, 'node_modules/.bin/vite'), ['build', '--config', 'web/vite.config.ts'], {
      cwd: quotesRoot,
      env: { ...process.env, DASHBOARD_BUILD_OUT: assets.path },
    });
    t = await makeDashboardApp({ DASHBOARD_ASSETS_DIR: assets.path });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const addr = t.app.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr !== null ? addr.port : 0}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    assets.cleanup();
  });

  test('sign up, token, usage, rotation, market chart, plan change, sign out and sign in', async () => {
    const context = await browser.newContext({ viewport: { width: 375, height: 812 } });
    const page: Page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => void pageErrors.push(e.message));
    page.on('dialog', (d) => void d.accept());
    // Generous bounds: the suite shares two cores with real servers and scrypt hashing.
    page.setDefaultTimeout(30_000);
    try {
      await page.goto(`${base}/dashboard`);
      // Sign up through labelled fields.
      const signup = page.locator('form', { has: page.getByRole('heading', { name: 'Create an account' }) });
      await signup.getByLabel('Email').fill(EMAIL);
      await signup.getByLabel('Password').fill(PASSWORD);
      await signup.getByRole('button', { name: 'Sign up' }).click();
      await page.locator('#new-token, #signup-error:not(:empty)').first().waitFor().catch(async (err: unknown) => {
        throw new Error(`no token after sign-up; page says: ${await page.locator('body').innerText()}; errors: ${pageErrors.join(' | ')}`, { cause: err });
      });
      if ((await page.locator('#new-token').count()) === 0) assert.fail(`sign-up failed: ${await page.locator('#signup-error').textContent()}`);
      const token = (await page.locator('#new-token').textContent())?.trim() ?? '';
      assert.match(token, /^qt_[A-Za-z0-9_-]{43}$/);
      assert.equal(await page.locator('#plan-name').textContent(), 'Startup');
      const cookies = await context.cookies();
      const session = cookies.find((c) => c.name === 'qd_session');
      assert.ok(session !== undefined && session.httpOnly && session.secure && session.sameSite === 'Lax', 'session cookie flags as the browser sees them');
      assert.equal(await page.evaluate<string>('document.cookie'), '', 'no cookie readable by scripts');
      const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
      assert.ok(overflow <= 0, `no horizontal scrolling at 375 px (overflow ${overflow})`);

      // Usage grows after API calls.
      for (let i = 0; i < 4; i++) assert.equal(await apiStatus(base, token), 200);
      await page.reload();
      await page.locator('#usage-count').waitFor();
      assert.match((await page.locator('#usage-count').textContent()) ?? '', /^4 of 150,000 requests/);
      assert.equal(await page.locator('#new-token').count(), 0, 'the token is shown only once');
      assert.equal(await page.locator('#daily tbody tr').first().locator('td').nth(1).textContent(), '4');

      // Rotate with the keyboard: the old token is refused by the API at once.
      await page.locator('#rotate').focus();
      await page.keyboard.press('Enter');
      await page.locator('#new-token').waitFor();
      const rotated = (await page.locator('#new-token').textContent())?.trim() ?? '';
      assert.notEqual(rotated, token);
      assert.equal(await apiStatus(base, token), 401);
      assert.equal(await apiStatus(base, rotated), 200);
      assert.match((await page.locator('#status').textContent()) ?? '', /Token rotated/);

      // A CSRF-less post from the page itself is refused.
      const forged = await page.evaluate(async () => (await fetch('/dashboard/api/token/rotate', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status);
      assert.equal(forged, 403);

      // Market page: the ranked board, then a coin's candlestick chart, on the session (no token).
      await page.getByRole('link', { name: 'Market', exact: true }).click();
      await page.locator('#market tbody tr').first().waitFor();
      assert.ok((await page.locator('#market tbody tr').count()) >= 3, 'the board lists coins');
      await page.getByLabel('Currency', { exact: true }).selectOption('BRL');
      await waitFor(async () => ((await page.locator('#market-count').textContent()) ?? '').endsWith('prices in BRL'), { what: 'prices in BRL', timeoutMs: 30_000 });
      await page.locator('#market tbody tr[data-coin="BTC"] a').click();
      await page.locator('button[data-range="3mo"]').click();
      await waitFor(async () => (await page.locator('#chart').getAttribute('data-range')) === '3mo', { what: 'chart of 3 months', timeoutMs: 30_000 });
      const candles = Number(await page.locator('#chart').getAttribute('data-candles'));
      assert.ok(candles > 80, `${candles} daily candles for 3 months`);
      assert.ok((await page.locator('#chart canvas').count()) > 0, 'the chart drew on canvas');
      mkdirSync(artifacts, { recursive: true });
      const png = await page.locator('#chart').screenshot();
      writeFileSync(join(artifacts, 'dashboard-chart.png'), png);
      const v = pngVariety(png);
      assert.ok(png.length > 4000, `chart screenshot is ${png.length} bytes`);
      assert.ok(v.width >= 300 && v.height >= 200, `chart is ${v.width}x${v.height}`);
      assert.ok(v.distinct > 20, `chart is not uniform (${v.distinct} distinct byte values)`);
      assert.match((await page.locator('#chart-note').getAttribute('aria-live')) ?? '', /polite/);

      // The page's CSP forbids eval, so conditions are polled from here rather than with waitForFunction.
      // Operators move the user to pro; a reload shows it.
      const io = { out: () => undefined, err: (l: string) => assert.fail(l) };
      assert.equal(await runCli(['user', 'plan', EMAIL, 'pro'], { DATABASE_URL: `sqlite:${t.file}` }, io), 0);
      await page.goto(`${base}/dashboard#/account`);
      await page.reload();
      await page.locator('#plan-name').waitFor();
      assert.equal(await page.locator('#plan-name').textContent(), 'Pro');

      // Sign out, a wrong password is rejected, the right one signs in.
      await page.getByRole('button', { name: 'Sign out' }).click();
      const signin = page.locator('form', { has: page.getByRole('heading', { name: 'Sign in' }) });
      await signin.getByLabel('Email').fill(EMAIL);
      await signin.getByLabel('Password').fill('not my password at all');
      await signin.getByRole('button', { name: 'Sign in' }).click();
      await waitFor(async () => (await page.locator('#signin-error').textContent()) === 'Wrong email or password', { what: 'sign-in error shown', timeoutMs: 30_000 });
      await signin.getByLabel('Password').fill(PASSWORD);
      await signin.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('#usage-count').waitFor();
      assert.equal(await page.locator('#plan-name').textContent(), 'Pro');
      assert.deepEqual(pageErrors, []);
    } finally {
      await context.close();
    }
  });
});
