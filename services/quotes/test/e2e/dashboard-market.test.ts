import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pngVariety, tempDir, waitFor } from '@rls/testkit';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { makeDashboardApp, type DashboardApp } from '../support/dashboard-support.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const quotesRoot = new URL('../..', import.meta.url).pathname;
/** Screenshots of every run, for review (git-ignored). */
const SHOTS = new URL('../../../../test-output/screenshots/quotes/', import.meta.url).pathname;
const PASSWORD = 'a long enough password';
const BOUND = { timeoutMs: 30_000 };

const num = (text: string | null): number => Number((text ?? '').replace(/[^0-9.-]/g, ''));

describe('market dashboard in headless Chromium', () => {
  let t: DashboardApp;
  let browser: Browser;
  let base: string;
  const assets = tempDir('quotes-web-');
  /** Every request the server received (URL and time), to count what a tab costs. */
  const requests: string[] = [];

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}: install the "chromium" package (.ci/run does)`);
    await promisify(execFile)(join(quotesRoot, 'node_modules/.bin/vite'), ['build', '--config', 'web/vite.config.ts'], { cwd: quotesRoot, env: { ...process.env, DASHBOARD_BUILD_OUT: assets.path } });
    t = await makeDashboardApp({ DASHBOARD_ASSETS_DIR: assets.path });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    t.app.server.on('request', (req: { url?: string }) => void requests.push(req.url ?? ''));
    const addr = t.app.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr !== null ? addr.port : 0}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    mkdirSync(SHOTS, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    assets.cleanup();
  });

  const shoot = async (page: Page, name: string): Promise<void> => {
    writeFileSync(join(SHOTS, `${name}.png`), await page.screenshot({ fullPage: true }));
  };
  const noHorizontalScroll = async (page: Page, where: string): Promise<void> => {
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    assert.ok(overflow <= 0, `${where}: no horizontal scrolling (overflow ${overflow} px)`);
    const cut = await page.evaluate<number>('Math.max(0, ...[...document.querySelectorAll(".table-wrap")].map((w) => w.scrollWidth - w.clientWidth))');
    assert.ok(cut <= 0, `${where}: no table column cut off (${cut} px hidden)`);
  };
  const signUp = async (context: BrowserContext, email: string): Promise<{ page: Page; token: string; errors: string[] }> => {
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => void errors.push(e.message));
    page.on('dialog', (d) => void d.accept());
    page.setDefaultTimeout(30_000);
    await page.goto(`${base}/dashboard`);
    const form = page.locator('form', { has: page.getByRole('heading', { name: 'Create an account' }) });
    await form.getByLabel('Email').fill(email);
    await form.getByLabel('Password').fill(PASSWORD);
    await form.getByRole('button', { name: 'Sign up' }).click();
    await page.locator('#new-token').waitFor();
    return { page, token: ((await page.locator('#new-token').textContent()) ?? '').trim(), errors };
  };
  const setVisibility = async (page: Page, state: 'hidden' | 'visible'): Promise<void> => {
    // What Chrome does when the tab goes to the background (headless has no real tabs to switch).
    await page.evaluate(
      `Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => '${state}' });` +
        `Object.defineProperty(document, 'hidden', { configurable: true, get: () => ${state === 'hidden'} });` +
        `document.dispatchEvent(new Event('visibilitychange'));`,
    );
  };

  for (const vp of [
    { name: 'desktop', width: 1280, height: 900 },
    { name: '375px', width: 375, height: 812 },
  ]) {
    test(`${vp.name}: account (token copy, snippets, usage), market board (sort, search, sparkline, live), hidden tab, coin chart`, async () => {
      const context = await browser.newContext({ viewport: { width: vp.width, height: vp.height } });
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
      try {
        const { page, token, errors } = await signUp(context, `market-${vp.name}@example.com`);
        assert.match(token, /^qt_[A-Za-z0-9_-]{43}$/);

        // Account page: copy the token, snippets with this server's URL, usage chart at zero.
        await page.locator('#copy-token').click();
        await waitFor(async () => /Token copied/.test((await page.locator('#status').textContent()) ?? ''), { what: 'copy announced', ...BOUND });
        assert.equal(await page.evaluate<string>('navigator.clipboard.readText()'), token, 'the clipboard holds the token');
        const curl = (await page.locator('#snippet-curl').textContent()) ?? '';
        assert.ok(curl.includes(`${base}/api/v2/crypto?coin=BTC`) && curl.includes(token), 'curl snippet with the base URL and the token');
        assert.ok(((await page.locator('#snippet-python').textContent()) ?? '').includes(`"${base}/api/v2/crypto"`));
        assert.ok(((await page.locator('#snippet-js').textContent()) ?? '').includes('EventSource'));
        assert.equal(await page.locator('.usage-chart').getAttribute('aria-label'), 'No requests yet this month');
        await noHorizontalScroll(page, 'account');
        await shoot(page, `${vp.name}-account`);

        // Market page: the board from the session.
        await page.getByRole('link', { name: 'Market', exact: true }).click();
        await page.locator('#market tbody tr').first().waitFor();
        assert.equal(await page.locator('#status').textContent(), '', 'the account page\'s message stayed there');
        await waitFor(async () => (await page.locator('#live-state').getAttribute('data-state')) === 'live', { what: 'stream open', ...BOUND });
        await noHorizontalScroll(page, 'market');
        await shoot(page, `${vp.name}-market`);
        const ranks = await page.locator('#market tbody td.rank').allTextContents();
        assert.deepEqual(ranks.slice(0, 3), ['1', '2', '3'], 'ranked by market cap');
        assert.ok((await page.locator('#market tbody img').count()) > 0, 'coin icons');

        // Sorting by price: largest first, then the other way round.
        await page.locator('button[data-sort="price"]').click();
        const desc = (await page.locator('#market tbody td.price').allTextContents()).map(num);
        assert.deepEqual(desc, [...desc].sort((a, b) => b - a), `prices descending: ${desc.join(' ')}`);
        assert.equal(await page.locator('th[aria-sort="descending"] button[data-sort="price"]').count(), 1);
        await page.locator('button[data-sort="price"]').click();
        const asc = (await page.locator('#market tbody td.price').allTextContents()).map(num);
        assert.deepEqual(asc, [...asc].sort((a, b) => a - b), 'prices ascending');

        // Search by name or symbol; small prices keep their significant digits.
        await page.getByLabel('Search').fill('pepe');
        await waitFor(async () => (await page.locator('#market tbody tr').count()) === 1, { what: 'one match', ...BOUND });
        const pepe = (await page.locator('#market tbody tr[data-coin="PEPE"] td.price').textContent()) ?? '';
        assert.match(pepe, /^0\.0000\d{2,4}$/, `PEPE shown as ${pepe}`);
        await page.getByLabel('Search').fill('ethereum');
        await waitFor(async () => (await page.locator('#market tbody tr[data-coin="ETH"]').count()) === 1, { what: 'search by name', ...BOUND });
        await page.getByLabel('Search').fill('');
        await page.locator('button[data-sort="rank"]').click();

        if (vp.width > 760) {
          // The 7-day sparkline drew something (narrow screens leave that column out).
          const spark = await page.locator('#market tbody canvas.spark').first().screenshot();
          const v = pngVariety(spark);
          assert.ok(v.distinct > 8, `sparkline is not blank (${v.distinct} distinct byte values)`);
        } else {
          assert.equal(await page.locator('#market th.spark-col').isVisible(), false, 'no sparkline column at 375 px');
        }

        // Live update without reload: the market moves, the row changes.
        const before = Number(await page.locator('#market').getAttribute('data-live-updates'));
        const btcBefore = await page.locator('#market tbody tr[data-coin="BTC"] td.price').textContent();
        t.clock.advance(60_000);
        await t.services.snapshots.refreshNow();
        await waitFor(async () => Number(await page.locator('#market').getAttribute('data-live-updates')) > before, { what: 'live update', ...BOUND });
        await waitFor(async () => (await page.locator('#market tbody tr[data-coin="BTC"] td.price').textContent()) !== btcBefore, { what: 'BTC price changed in place', ...BOUND });

        // Hidden tab: the stream closes and nothing is requested while the market keeps moving.
        await setVisibility(page, 'hidden');
        await waitFor(() => t.services.streams.stats().open === 0, { what: 'stream closed while hidden', ...BOUND });
        assert.equal(await page.locator('#live-state').getAttribute('data-state'), 'paused');
        const seen = requests.length;
        for (let i = 0; i < 5; i++) {
          t.clock.advance(60_000);
          await t.services.snapshots.refreshNow();
        }
        // Longer than the old 15 s poll would need to show one request is not affordable here;
        // the tab's own timers would fire within 3 s of real time if it had any left.
        await new Promise((r) => setTimeout(r, 3000));
        assert.deepEqual(requests.slice(seen), [], 'a hidden tab sends no requests');
        const updatesHidden = Number(await page.locator('#market').getAttribute('data-live-updates'));
        await setVisibility(page, 'visible');
        await waitFor(async () => Number(await page.locator('#market').getAttribute('data-live-updates')) > updatesHidden, { what: 'caught up when shown again', ...BOUND });
        const reopened = requests.slice(seen);
        assert.equal(reopened.length, 1, `one request to resume: ${reopened.join(', ')}`);
        assert.match(reopened[0]!, /^\/dashboard\/api\/market\/stream\?.*lastEventId=/);

        // Coin page: candlesticks and volume; the picker shows what is drawn.
        await page.locator('#market tbody tr[data-coin="BTC"] a').click();
        await waitFor(async () => (await page.locator('#chart').getAttribute('data-range')) === '1mo', { what: 'BTC chart', ...BOUND });
        await page.locator('button[data-range="1y"]').click();
        await waitFor(async () => (await page.locator('#chart').getAttribute('data-range')) === '1y', { what: 'one year drawn', ...BOUND });
        assert.equal(await page.locator('button[data-range="1y"]').getAttribute('aria-pressed'), 'true');
        assert.match((await page.locator('#chart-note').textContent()) ?? '', /range 1y, \d+ candles of 1d/);
        assert.ok(Number(await page.locator('#chart').getAttribute('data-candles')) > 300);
        await page.waitForTimeout(300);
        const png = await page.locator('#chart').screenshot();
        const v = pngVariety(png);
        assert.ok(v.distinct > 20, `chart drawn (${v.distinct} distinct byte values)`);
        await noHorizontalScroll(page, 'coin');
        await shoot(page, `${vp.name}-coin-btc`);

        // PEPE: the axis needs more than two decimals.
        await page.goto(`${base}/dashboard#/coin/PEPE`);
        await waitFor(async () => ((await page.locator('#chart-note').textContent()) ?? '').startsWith('PEPE/'), { what: 'PEPE chart', ...BOUND });
        assert.ok(Number(await page.locator('#chart').getAttribute('data-precision')) >= 8, 'PEPE axis keeps significant digits');
        assert.match((await page.locator('#coin-price').textContent()) ?? '', /^0\.0000\d{2,4} /);
        await page.waitForTimeout(300);
        await shoot(page, `${vp.name}-coin-pepe`);

        // Keyboard: the sort buttons and coin links are reachable and work with Enter.
        await page.goto(`${base}/dashboard#/market`);
        await page.locator('#market tbody tr').first().waitFor();
        await page.locator('button[data-sort="h24"]').focus();
        await page.keyboard.press('Enter');
        assert.equal(await page.locator('th[aria-sort="descending"] button[data-sort="h24"]').count(), 1, 'sorted by 24h from the keyboard');
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    });
  }

  test('a new browser signs in and sees the market without rotating the token', async () => {
    const first = await browser.newContext();
    const { token } = await signUp(first, 'second-browser@example.com');
    await first.close();
    const context = await browser.newContext({ viewport: { width: 375, height: 812 }, colorScheme: 'dark' });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(30_000);
      await page.goto(`${base}/dashboard#/market`);
      const form = page.locator('form', { has: page.getByRole('heading', { name: 'Sign in' }) });
      await form.getByLabel('Email').fill('second-browser@example.com');
      await form.getByLabel('Password').fill(PASSWORD);
      await form.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('link', { name: 'Market', exact: true }).click();
      await page.locator('#market tbody tr').first().waitFor();
      const res = await fetch(`${base}/api/v2/crypto?coin=BTC`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200, 'the token still works: nothing was rotated');
      const bg = await page.evaluate<string>('getComputedStyle(document.body).backgroundColor');
      assert.equal(bg, 'rgb(11, 17, 32)', 'dark scheme followed');
      await noHorizontalScroll(page, 'market (dark)');
      await shoot(page, '375px-market-dark');

      // At full quota the account page still reads well, and the market says why it stops.
      const rec = (await t.services.accounts.list()).find((r) => r.name === 'dashboard:second-browser@example.com' && r.revokedAt === null)!;
      await t.services.flushUsage();
      const used = await t.store.usage.get(rec.id, '2026-03');
      await t.store.usage.add(rec.id, '2026-03', 150_000 - used);
      // Write-behind counts: flushing drops the cached entries, so the store's count is read again.
      await t.services.flushUsage();
      await t.services.flushUsage();
      await page.getByRole('link', { name: 'Account', exact: true }).click();
      await page.locator('#usage-count').waitFor();
      assert.match((await page.locator('#usage-count').textContent()) ?? '', /^150,000 of 150,000 requests \(0 left/);
      assert.match((await page.locator('.meter-label').textContent()) ?? '', /Quota used up/);
      await shoot(page, '375px-account-full-dark');
      await page.getByRole('link', { name: 'Market', exact: true }).click();
      await waitFor(async () => /request limit of your plan/.test((await page.locator('#status').textContent()) ?? ''), { what: 'quota message on the market page', ...BOUND });
    } finally {
      await context.close();
    }
  });
});
