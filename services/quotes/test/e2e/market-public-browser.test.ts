import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pngVariety, tempDir, waitFor } from '@rls/testkit';
import { chromium, type Browser, type Page } from 'playwright-core';
import { makeDashboardApp, type DashboardApp } from '../support/dashboard-support.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const quotesRoot = new URL('../..', import.meta.url).pathname;
/** Screenshots of every run, for review (git-ignored). */
const SHOTS = new URL('../../../../.test-artifacts/market-public/', import.meta.url).pathname;
const BOUND = { timeoutMs: 30_000 };

/**
 * The market page as a visitor sees it with QUOTES_PUBLIC_MARKET=true on the simulated market
 * (the quick start): the simulated-data notice, the global header from /global, 100 rows a page,
 * an icon for every coin, sparklines coloured as their 7 d change, the favicon. Screenshots of
 * desktop, phone and dark, and of a coin page, are written for review.
 */
describe('public market page in headless Chromium (simulated market)', () => {
  let t: DashboardApp;
  let browser: Browser;
  let base: string;
  const assets = tempDir('quotes-web-');

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}: install the "chromium" package (.ci/run does)`);
    await promisify(execFile)(join(quotesRoot, 'node_modules/.bin/vite'), ['build', '--config', 'web/vite.config.ts'], { cwd: quotesRoot, env: { ...process.env, DASHBOARD_BUILD_OUT: assets.path } });
    t = await makeDashboardApp({ DASHBOARD_ASSETS_DIR: assets.path, QUOTES_PUBLIC_MARKET: 'true' });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
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

  const open = async (path: string, viewport: { width: number; height: number }, colorScheme: 'light' | 'dark'): Promise<{ page: Page; errors: string[] }> => {
    const context = await browser.newContext({ viewport, colorScheme });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => void errors.push(e.message));
    page.setDefaultTimeout(30_000);
    await page.goto(`${base}${path}`);
    return { page, errors };
  };

  for (const v of [
    { name: 'desktop', width: 1280, height: 900, scheme: 'light' as const },
    { name: 'phone', width: 375, height: 812, scheme: 'light' as const },
    { name: 'dark', width: 1280, height: 900, scheme: 'dark' as const },
  ]) {
    test(`market page (${v.name}): notice, global header, rows with icons and sparklines, no sign-in needed`, async () => {
      // GET / leads a visitor to the market page when it is public.
      const home = await fetch(`${base}/`, { redirect: 'manual' });
      assert.equal(home.status, 302);
      assert.equal(home.headers.get('location'), '/dashboard/#/market');
      const { page, errors } = await open('/dashboard/#/market', { width: v.width, height: v.height }, v.scheme);
      await page.locator('#market tbody tr').first().waitFor();
      // The simulated-data notice: shown, with its text, and painted (not a zero-size box).
      const notice = page.locator('#data-notice');
      assert.equal(await notice.isVisible(), true);
      assert.match((await notice.textContent()) ?? '', /Simulated data/);
      const box = await notice.boundingBox();
      assert.ok(box !== null && box.height > 20 && box.width > 200, 'the notice takes real space on screen');
      const shot = await notice.screenshot();
      assert.ok(pngVariety(shot).distinct > 20, 'the notice is drawn (text and border), not blank');
      // The global header carries /api/v3/global's figures.
      const global = (await (await fetch(`${base}/api/v3/global`, { headers: { 'x-cg-demo-api-key': t.tokens.pro! } })).json()) as { data: { market_cap_percentage: { btc: number }; active_cryptocurrencies: number } };
      await page.locator('#global-header').waitFor();
      assert.equal((await page.locator('#global-dominance strong').textContent())?.trim(), `${global.data.market_cap_percentage.btc.toFixed(1)}%`);
      assert.equal((await page.locator('#global-coins strong').textContent())?.trim(), String(global.data.active_cryptocurrencies));
      assert.match((await page.locator('#global-cap strong').textContent()) ?? '', /^\d+(\.\d+)?[KMBT] USD$/);
      const headerShot = await page.locator('#global-header').screenshot();
      assert.ok(pngVariety(headerShot).distinct > 20, 'the header is drawn');
      // Every listed coin on one page of 100 rows, each with an icon that loaded.
      const rows = await page.locator('#market tbody tr').count();
      assert.equal(rows, Math.min(100, global.data.active_cryptocurrencies));
      const icons = await page.evaluate<{ total: number; loaded: number }>('(() => { const imgs = [...document.querySelectorAll("#market tbody img")]; return { total: imgs.length, loaded: imgs.filter((i) => i.complete && i.naturalWidth > 0).length }; })()');
      if (v.name !== 'phone') {
        await waitFor(async () => (await page.evaluate<number>('[...document.querySelectorAll("#market tbody img")].filter((i) => i.complete && i.naturalWidth > 0).length')) === rows, { what: 'every coin icon loaded', ...BOUND });
        // A sparkline's colour follows the 7 d change shown beside it.
        const mismatches = await page.evaluate<number>(
          '[...document.querySelectorAll("#market tbody tr")].filter((tr) => { const cells = tr.querySelectorAll("td"); const d7 = cells[5]; const spark = tr.querySelector("canvas.spark"); if (!d7 || !spark || spark.dataset.trend === undefined) return false; return (d7.classList.contains("down") ? "down" : "up") !== spark.dataset.trend; }).length',
        );
        assert.equal(mismatches, 0, 'no sparkline disagrees with its 7 d change');
      }
      assert.equal(icons.total, rows, 'an icon for every row');
      const favicon = await page.evaluate<string | null>('document.querySelector("link[rel=icon]")?.getAttribute("href") ?? null');
      assert.equal(favicon, '/favicon.svg');
      assert.equal((await fetch(`${base}/favicon.svg`)).status, 200);
      writeFileSync(join(SHOTS, `market-${v.name}.png`), await page.screenshot());
      assert.deepEqual(errors, []);
      await page.context().close();
    });
  }

  test('coin page as a visitor: the notice, the chart, a price axis formatted like the price', async () => {
    const { page, errors } = await open('/dashboard/#/coin/BTC', { width: 1280, height: 900 }, 'light');
    await waitFor(async () => Number((await page.locator('#chart').getAttribute('data-candles')) ?? 0) > 0, { what: 'chart drawn', ...BOUND });
    assert.equal(await page.locator('#data-notice').isVisible(), true);
    assert.match((await page.locator('#coin-price').textContent()) ?? '', /^\d{1,3}(,\d{3})+\.\d{2} USD/);
    const chart = await page.locator('#chart').screenshot();
    assert.ok(pngVariety(chart).distinct > 50, 'the chart is drawn');
    writeFileSync(join(SHOTS, 'coin-btc.png'), await page.screenshot({ fullPage: true }));
    assert.deepEqual(errors, []);
    await page.context().close();
  });
});
