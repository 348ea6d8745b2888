// The operator page's counters lookup in headless Chromium against the real process
// (docs/ratelimit.md, "Counters on the debug port"): a descriptor with several limits is looked up
// through the form and each limit's count appears; a screenshot is saved to
// .test-artifacts/operator-page/counters.png on every run.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { postJson, startService, writeRules, type ServiceProcess } from '../support/service-process.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const SHOTS = new URL('../../../../.test-artifacts/operator-page/', import.meta.url).pathname;
const RULES = `domain: shop
descriptors:
  - key: api_key
    rate_limits:
      - { unit: hour, requests_per_unit: 10, name: hourly }
      - { unit: day, requests_per_unit: 1000, name: daily }
`;

let svc: ServiceProcess;
let browser: Browser;
let rules: ReturnType<typeof writeRules>;

before(async () => {
  rules = writeRules({ 'shop.yaml': RULES });
  svc = await startService({ ...rules.env, BACKEND_TYPE: 'memory', USE_STATS_PUSH: 'false' });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
});

after(async () => {
  await browser.close();
  await svc.stop();
  rules.cleanup();
});

test('the counters form shows every limit of a descriptor with its count', async () => {
  for (let i = 0; i < 3; i++) {
    const r = await postJson(svc.httpUrl, { domain: 'shop', descriptors: [{ entries: [{ key: 'api_key', value: 'alice' }] }] });
    assert.equal(r.status, 200);
  }
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  try {
    await page.goto(`${svc.debugUrl}/operator/`);
    await page.fill('#counters-domain', 'shop');
    await page.fill('#counters-entries', 'api_key=alice');
    await page.click('#counters-form button');
    await page.waitForSelector('#counters tbody tr:nth-child(2)', { timeout: 10_000 });
    const cells = await page.locator('#counters tbody td').allTextContents();
    const rows = [cells.slice(0, 6), cells.slice(6, 12)];
    assert.deepEqual(
      rows.map((r) => [r[0], r[1], r[2], r[3]]),
      [
        ['hourly: 10/HOUR', 'fixed_window', '3', '7'],
        ['daily: 1000/DAY', 'fixed_window', '3', '997'],
      ],
    );
    assert.match(rows[1]![5] ?? '', /^shop_api_key_alice_\d+_w86400$/);
    assert.equal(await page.textContent('#counters-status'), '2 limit(s) on the memory store.');
    await page.fill('#counters-entries', 'nobody=x');
    await page.click('#counters-form button');
    // A selector wait, not waitForFunction: the operator page's CSP forbids eval, which a string predicate needs.
    await page.locator('#counters-status', { hasText: /^no rule/ }).waitFor({ timeout: 10_000 });
    await page.fill('#counters-entries', 'api_key=alice');
    await page.click('#counters-form button');
    await page.waitForSelector('#counters tbody tr:nth-child(2)', { timeout: 10_000 });
    mkdirSync(SHOTS, { recursive: true });
    await page.locator('section[aria-labelledby="h-counters"]').screenshot({ path: `${SHOTS}counters.png` });
  } finally {
    await page.close();
  }
});
