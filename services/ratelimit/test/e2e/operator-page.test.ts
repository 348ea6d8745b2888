// The operator page in headless Chromium against the real process on Redis (docs/ratelimit.md,
// "Operator page"): under load with over-limit traffic (HTTP and gRPC through the local answer
// memo) the rules tree, the top list and the charts are drawn, a broken rule file shows up as a
// reload error, and the page works by keyboard, on a narrow screen and in dark mode. Hostile
// values (a right-to-left override, controls, a 4,000-character value, stacked combining marks)
// are shown escaped and bounded; the labels say what an operator needs (the store configured,
// unlimited and whitelisted rules, every legend series visible, round axis ticks, a time axis).
// Screenshots are saved to .test-artifacts/operator-page/ (git-ignored) on every run.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { startRedis, waitFor, type RedisServer } from '@rls/testkit';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startService, writeRules, type ServiceProcess } from '../support/service-process.js';
import { grpcJsStubs, unaryCall, type GrpcJsStubs } from '../support/server-test-support.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const SHOTS = new URL('../../../../.test-artifacts/operator-page/', import.meta.url).pathname;

const RULES = `domain: shop
descriptors:
  - key: client
    rate_limit: { unit: minute, requests_per_unit: 5 }
  - key: path
    value: /checkout
    shadow_mode: true
    rate_limit: { unit: second, requests_per_unit: 2, name: checkout }
  - key: tenant
    descriptors:
      - key: user
        rate_limit: { unit: hour, requests_per_unit: 1000 }
  - key: internal
    rate_limit: { unlimited: true }
  - key: path
    value: /health
  - key: user
    detailed_metric: true
    rate_limit: { unit: minute, requests_per_unit: 1 }
`;

/** Values a hostile client sends: each must be shown escaped and cut, never as it would render. */
const HOSTILE = ['\u202Elive', 'L'.repeat(4000), 'zalgo' + '\u0301'.repeat(40), 'bell\u0007\u001B[2J\u200Bx'];

/** RGBA pixels of a PNG (8-bit RGB or RGBA, non-interlaced: what Chromium writes). */
function decodePng(png: Buffer): { width: number; height: number; px: (x: number, y: number) => [number, number, number] } {
  assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
  let off = 8;
  const idat: Buffer[] = [];
  let width = 0;
  let height = 0;
  let channels = 4;
  while (off < png.length) {
    const len = png.readUInt32BE(off);
    const type = png.subarray(off + 4, off + 8).toString('latin1');
    const data = png.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      assert.equal(data[8], 8, 'bit depth 8');
      channels = data[9] === 6 ? 4 : data[9] === 2 ? 3 : 0;
      assert.ok(channels > 0, `colour type ${data[9]}`);
    }
    if (type === 'IDAT') idat.push(data);
    off += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? out[y * stride + i - channels]! : 0;
      const b = y > 0 ? out[(y - 1) * stride + i]! : 0;
      const c = y > 0 && i >= channels ? out[(y - 1) * stride + i - channels]! : 0;
      let v = line[i]!;
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[y * stride + i] = v & 0xff;
    }
  }
  return { width, height, px: (x, y) => [out[y * stride + x * channels]!, out[y * stride + x * channels + 1]!, out[y * stride + x * channels + 2]!] };
}

/** Pixels within `tolerance` (per channel) of `rgb`. */
function countColour(png: Buffer, rgb: [number, number, number], tolerance = 40): number {
  const img = decodePng(png);
  let n = 0;
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) {
      const [r, g, b] = img.px(x, y);
      if (Math.abs(r - rgb[0]) <= tolerance && Math.abs(g - rgb[1]) <= tolerance && Math.abs(b - rgb[2]) <= tolerance) n++;
    }
  }
  return n;
}

const HITS_LIGHT: [number, number, number] = [0x09, 0x69, 0xda];
const OVER_LIGHT: [number, number, number] = [0xcf, 0x22, 0x2e];
const REQS_LIGHT: [number, number, number] = [0x82, 0x50, 0xdf];

/** Whether `v` is a multiple of a 1-2-5 step that the ticks `all` share. */
function roundTicks(all: number[]): boolean {
  if (all.length < 2) return false;
  const step = all[1]! - all[0]!;
  const mantissa = step / 10 ** Math.floor(Math.log10(step));
  const roundStep = [1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-9);
  return roundStep && all.every((v, i) => Math.abs(v - i * step) < step * 1e-6);
}

/** A tick label as a number (`1.5k` is 1500). */
function tickValue(text: string): number {
  const m = /^([\d.]+)([kM]?)$/.exec(text);
  assert.ok(m !== null, `tick label ${JSON.stringify(text)}`);
  return Number(m[1]) * (m[2] === 'k' ? 1e3 : m[2] === 'M' ? 1e6 : 1);
}

describe('operator page in headless Chromium', () => {
  let redis: RedisServer;
  let svc: ServiceProcess;
  let rules: ReturnType<typeof writeRules>;
  let browser: Browser;
  let stubs: GrpcJsStubs;
  let loading = true;
  let load: Promise<void> = Promise.resolve();

  before(async () => {
    // Fail loudly, never skip: the CI installs Debian's chromium package.
    assert.ok(existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}: install the "chromium" package (.ci/run does)`);
    mkdirSync(SHOTS, { recursive: true });
    redis = await startRedis();
    rules = writeRules({ 'shop.yaml': RULES });
    svc = await startService({
      ...rules.env,
      RUNTIME_WATCH_ROOT: 'false',
      RUNTIME_WATCH_DEBOUNCE: '50ms',
      BACKEND_TYPE: 'redis',
      KVSTORE_SOCKET_TYPE: 'tcp',
      KVSTORE_URL: redis.url,
      LOCAL_CACHE_SIZE_IN_BYTES: '1000000',
      OPERATOR_SAMPLE_EVERY: '2',
    });
    stubs = grpcJsStubs(svc.grpcAddress);
    // Steady load until the tests are done: one hot client far over its limit (gRPC, answered by
    // the local answer memo once its key is cached), a few clients under it (HTTP), checkout
    // traffic in shadow mode and per-user traffic.
    load = (async () => {
      let i = 0;
      while (loading) {
        i++;
        const calls: Promise<unknown>[] = [
          unaryCall(stubs.rls, 'ShouldRateLimit', { domain: 'shop', descriptors: [{ entries: [{ key: 'client', value: 'hot-client' }] }] }),
          unaryCall(stubs.rls, 'ShouldRateLimit', { domain: 'shop', descriptors: [{ entries: [{ key: 'client', value: `warm-${i % 3}` }] }] }),
          fetch(`${svc.httpUrl}/json`, { method: 'POST', body: JSON.stringify({ domain: 'shop', descriptors: [{ entries: [{ key: 'path', value: '/checkout' }] }] }) }).then((r) => r.text()),
          fetch(`${svc.httpUrl}/json`, {
            method: 'POST',
            body: JSON.stringify({ domain: 'shop', descriptors: [{ entries: [{ key: 'tenant', value: 't1' }, { key: 'user', value: `u${i % 7}` }] }] }),
          }).then((r) => r.text()),
        ];
        // Hostile values every fourth round, so the hot client stays on top of the list.
        if (i % 4 === 0) {
          calls.push(
            fetch(`${svc.httpUrl}/json`, {
              method: 'POST',
              body: JSON.stringify({ domain: 'shop', descriptors: HOSTILE.map((value) => ({ entries: [{ key: 'user', value }] })) }),
            }).then((r) => r.text()),
          );
        }
        await Promise.allSettled(calls);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  });

  after(async () => {
    loading = false;
    await load;
    stubs?.rls.close();
    await browser?.close();
    await svc?.stop();
    await redis?.stop();
    rules?.cleanup();
  });

  async function openPage(opts: { width: number; height: number; dark?: boolean }): Promise<{ page: Page; errors: string[]; close: () => Promise<void> }> {
    const context = await browser.newContext({ viewport: { width: opts.width, height: opts.height }, colorScheme: opts.dark === true ? 'dark' : 'light' });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => void errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.setDefaultTimeout(30_000);
    await page.goto(`${svc.debugUrl}/operator/`);
    await page.waitForSelector('body[data-ready="true"]');
    return { page, errors, close: () => context.close() };
  }

  test('desktop: rules tree, top list, charts drawn under load, reload error after a broken rule file', async () => {
    // One 10-second rate bucket must close before the charts have data.
    await waitFor(
      async () => {
        const r = await fetch(`${svc.debugUrl}/operator/api/state`);
        const s = (await r.json()) as { rates: { buckets: number; series: unknown[] }; top: { entries: unknown[] } };
        return s.rates.buckets >= 2 && s.rates.series.length > 0 && s.top.entries.length > 0;
      },
      { what: 'two rate buckets and a top list', timeoutMs: 45_000, intervalMs: 500 },
    );
    const { page, errors, close } = await openPage({ width: 1280, height: 1000 });
    try {
      await page.screenshot({ path: join(SHOTS, 'desktop.png'), fullPage: true });
      // Rules tree: the domain from its file, nested descriptors, limit and shadow badges.
      const domain = page.locator('.rules details.domain').first();
      await assert.doesNotReject(domain.waitFor());
      assert.match((await domain.locator('summary').textContent()) ?? '', /shop.*file shop\.yaml/);
      const rulesText = (await page.locator('#rules').textContent()) ?? '';
      for (const s of ['client', '5/MINUTE', 'fixed_window', 'path=/checkout', 'shadow', 'name checkout', 'tenant', 'user', '1000/HOUR', 'unlimited']) {
        assert.ok(rulesText.includes(s), `rules tree lacks ${s}: ${rulesText}`);
      }
      // Top list: the hot client first.
      const firstRow = page.locator('#top tbody tr').first();
      assert.match((await firstRow.textContent()) ?? '', /shop\s*client=hot-client/);
      // Store: Redis, connected, latency measured.
      const store = (await page.locator('#store').textContent()) ?? '';
      assert.match(store, /Storeredis single/);
      assert.match(store, /Connectedyes/);
      assert.match(store, /p50 ≤ [\d.]+ ms · p99 ≤ [\d.]+ ms/);
      assert.match(store, /Local over-limit cache\d+ keys/);
      // Charts: lines drawn, checked on the pixels of the rendered chart.
      const total = page.locator('#chart-total svg');
      const png = await total.screenshot({ path: join(SHOTS, 'desktop-total-chart.png') });
      assert.ok(countColour(png, HITS_LIGHT) > 40, 'the hits line is drawn in the total chart');
      assert.ok(countColour(png, OVER_LIGHT) > 40, 'the over-limit line is drawn in the total chart');
      assert.ok((await page.locator('#charts figure.rule-chart').count()) >= 2);
      const clientChart = page.locator('#charts figure.rule-chart', { hasText: 'shop.client' }).first();
      assert.ok(countColour(await clientChart.locator('svg').screenshot(), OVER_LIGHT) > 20, 'the shop.client chart shows over-limit hits');

      // A broken rule file: the watcher reloads, the load fails, the page shows why; the tree stays.
      writeFileSync(join(rules.dir, 'zz-broken.yaml'), 'domain: broken\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n');
      const errorRow = page.locator('#reloads tbody tr.reload-error').first();
      await errorRow.waitFor({ timeout: 30_000 });
      assert.match((await errorRow.textContent()) ?? '', /file\s*error/);
      const detail = page.locator('#reloads tbody tr.reload-error + tr.reload-detail').first();
      assert.match((await detail.textContent()) ?? '', /^zz-broken\.yaml: .*fortnight/);
      assert.match((await domain.locator('summary').textContent()) ?? '', /shop/);
      await page.locator('#h-reloads').scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(SHOTS, 'desktop-reload-error.png'), fullPage: true });
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });

  test('hostile values: bidi overrides and controls shown as visible escapes, long values and captions cut', async () => {
    await waitFor(
      async () => {
        const r = await fetch(`${svc.debugUrl}/operator/api/state`);
        const st = (await r.json()) as { rates: { series: { key: string }[] }; top: { entries: { entries: { value: string }[] }[] } };
        return st.rates.series.some((x) => x.key.includes('\\u{202E}')) && st.top.entries.some((e) => e.entries[0]?.value === '\\u{202E}live');
      },
      { what: 'the hostile values in the top list and the charts', timeoutMs: 45_000, intervalMs: 500 },
    );
    const { page, errors, close } = await openPage({ width: 1280, height: 1000 });
    try {
      await page.locator('#charts figure.rule-chart').first().waitFor();
      // The override is visible as an escape: the row reads "\u{202E}live", never "evil".
      const row = page.locator('#top tbody tr', { hasText: 'live' }).first();
      assert.match((await row.locator('td.descriptor').textContent()) ?? '', /^user=\\u\{202E\}live$/);
      assert.equal(await row.locator('.esc').first().textContent(), '\\u{202E}');
      assert.match((await row.locator('.esc').first().getAttribute('title')) ?? '', /right-to-left override/);
      // No invisible, control or reordering character reaches the rendered text.
      const text = await page.evaluate<string>('document.body.innerText');
      assert.doesNotMatch(text, /\p{Cf}/u);
      for (const c of ['\u0007', '\u001B']) assert.ok(!text.includes(c), `control ${JSON.stringify(c)} in the page text`);
      assert.ok(text.includes('bell\\u{0007}\\u{001B}[2J\\u{200B}x'));
      // Stacked combining marks: two kept, the rest escaped.
      assert.ok(text.includes('zalgo\u0301\u0301\\u{0301}'));
      // The 4,000-character value: cut in the table and in its chart caption; no card is stretched.
      const longCell = page.locator('#top td.descriptor', { hasText: 'LLLL' }).first();
      assert.ok(((await longCell.textContent()) ?? '').length <= 5 + 64);
      const figures = page.locator('#charts figure.rule-chart');
      const n = await figures.count();
      for (let i = 0; i < n; i++) {
        const box = (await figures.nth(i).boundingBox())!;
        assert.ok(box.height < 260, `chart card ${i} is ${Math.round(box.height)} px tall`);
      }
      const longCaption = page.locator('#charts figure.rule-chart figcaption', { hasText: 'LLLL' }).first();
      assert.ok(((await longCaption.locator('.series-key').getAttribute('title')) ?? '').length <= 128);
      const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
      assert.ok(overflow <= 1, `page is ${overflow}px wider than the viewport`);
      await page.screenshot({ path: join(SHOTS, 'hostile-desktop.png'), fullPage: true });
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });

  test('labels: the store configured, unlimited and whitelisted rules, every legend series visible, round ticks, a time axis', async () => {
    const { page, errors, close } = await openPage({ width: 1280, height: 1000 });
    try {
      await page.locator('#charts figure.rule-chart').first().waitFor();
      // Health names the store configured (the component is `redis` in /healthcheck for any store).
      const health = (await page.locator('#store dt', { hasText: 'Health' }).locator('xpath=following-sibling::dd[1]').textContent()) ?? '';
      assert.match(health, /^store \(redis single\): ok, sigterm: ok$/);
      // unlimited: true and a leaf without rate_limit (whitelisted) both carry a badge.
      const internal = page.locator('#rules li.rule', { hasText: 'internal' }).first();
      assert.equal(await internal.locator('.badge.unlimited').textContent(), 'unlimited');
      const whitelisted = page.locator('#rules li.rule', { hasText: 'path=/health' }).first();
      assert.equal(await whitelisted.locator('.badge.unlimited').textContent(), 'no limit');
      // Every legend series is drawn in the live chart...
      const png = await page.locator('#chart-total svg').screenshot({ path: join(SHOTS, 'legend-total-chart.png') });
      assert.ok(countColour(png, HITS_LIGHT) > 10, 'the hits line is drawn');
      assert.ok(countColour(png, REQS_LIGHT) > 10, 'the requests line is drawn');
      assert.ok(countColour(png, OVER_LIGHT) > 10, 'the over-limit line is drawn');
      // ...and stays visible where requests equal hits (one descriptor per request): the page's own
      // chart function, drawing the same values for both, leaves both colours on screen.
      await page.evaluate(`(() => {
        const values = Array.from({ length: 60 }, (_, i) => 500 + 300 * Math.sin(i / 5));
        const box = document.createElement('div');
        box.id = 'legend-probe';
        box.style.width = '600px';
        box.append(lineChart([{ cls: 'hits', values }, { cls: 'over', values: values.map((v) => v / 3), area: true }, { cls: 'reqs', values, dashed: true }], 10000, Date.now(), 600, 160, 'probe'));
        document.body.prepend(box);
      })()`);
      const probe = await page.locator('#legend-probe svg').screenshot({ path: join(SHOTS, 'legend-equal-series.png') });
      assert.ok(countColour(probe, HITS_LIGHT) > 150, `hits visible under requests: ${countColour(probe, HITS_LIGHT)} px`);
      assert.ok(countColour(probe, REQS_LIGHT) > 150, `requests visible over hits: ${countColour(probe, REQS_LIGHT)} px`);
      // Axis ticks: round 1-2-5 steps from 0; the time axis has clock labels 5 minutes apart.
      const charts = page.locator('figure.chart svg');
      const count = await charts.count();
      assert.ok(count >= 3);
      for (let i = 0; i < count; i++) {
        const ys = (await charts.nth(i).locator('text.y-tick').allTextContents()).map(tickValue);
        assert.ok(roundTicks(ys), `chart ${i} y ticks ${JSON.stringify(ys)}`);
        const xs = await charts.nth(i).locator('text.x-tick').allTextContents();
        assert.ok(xs.length >= 3, `chart ${i} time labels ${JSON.stringify(xs)}`);
        const minutes = xs.map((t) => {
          const m = /^(\d\d):(\d\d)$/.exec(t);
          assert.ok(m !== null, `time label ${t}`);
          return Number(m[1]) * 60 + Number(m[2]);
        });
        for (let j = 1; j < minutes.length; j++) assert.equal((minutes[j]! - minutes[j - 1]! + 1440) % 1440, 5, JSON.stringify(xs));
      }
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });

  test('keyboard: skip link, pause button and the rule tree work without a mouse', async () => {
    const { page, errors, close } = await openPage({ width: 1024, height: 800 });
    try {
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Skip to content');
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate('document.activeElement?.id'), 'pause');
      await page.keyboard.press('Enter');
      assert.equal(await page.getAttribute('#pause', 'aria-pressed'), 'true');
      await page.keyboard.press('Space');
      assert.equal(await page.getAttribute('#pause', 'aria-pressed'), 'false');
      // The domain's summary is focusable and toggles its tree.
      const summary = page.locator('.rules details.domain summary').first();
      await summary.focus();
      const before = await page.locator('.rules details.domain').first().evaluate((d) => (d as unknown as { open: boolean }).open);
      await page.keyboard.press('Enter');
      const afterToggle = await page.locator('.rules details.domain').first().evaluate((d) => (d as unknown as { open: boolean }).open);
      assert.notEqual(afterToggle, before);
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });

  test('narrow screen in dark mode: no horizontal overflow, charts still drawn', async () => {
    const { page, errors, close } = await openPage({ width: 375, height: 812, dark: true });
    try {
      await page.locator('#charts figure.rule-chart').first().waitFor();
      const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
      assert.ok(overflow <= 1, `page is ${overflow}px wider than the viewport`);
      await page.screenshot({ path: join(SHOTS, 'narrow-dark.png'), fullPage: true });
      const bg = await page.evaluate<string>('getComputedStyle(document.body).backgroundColor');
      assert.equal(bg, 'rgb(13, 17, 23)');
      // Escapes stay whole on a narrow screen, and the hostile rows are there.
      await page.locator('#top tbody tr', { hasText: 'live' }).first().scrollIntoViewIfNeeded();
      await page.locator('#top').screenshot({ path: join(SHOTS, 'narrow-dark-top.png') });
      const png = await page.locator('#chart-total svg').screenshot();
      assert.ok(countColour(png, [0xf8, 0x51, 0x49]) > 20, 'the over-limit line is drawn in dark colours');
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });
});
