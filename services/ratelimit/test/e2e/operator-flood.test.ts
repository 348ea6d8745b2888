// The operator page's top list under a flood of distinct over-limit descriptors, through the real
// process (docs/ratelimit.md, "Operator page"): with the largest OPERATOR_TOP_SIZE and every call
// sampled, 100,000 distinct decoys keep /healthcheck answering quickly (the sketch's update is
// O(log k); operator-parts.test.ts shows the complexity), and the list says it cannot be trusted
// once decoys have pushed the real offender out: the JSON's `complete` is false and the page in
// Chromium shows the warning.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { readFile } from 'node:fs/promises';
import { measureStall } from '../support/health-probe.js';
import { startService, writeRules, type ServiceProcess } from '../support/service-process.js';
import type { OperatorState } from '../../src/operator/operator-monitor.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const SHOTS = new URL('../../../../.test-artifacts/operator-page/', import.meta.url).pathname;

const RULES = `domain: flood
descriptors:
  - key: client
    rate_limit: { unit: hour, requests_per_unit: 1 }
`;

/** The top list's slot (top-k.ts: two slots of 30 s are shown merged). */
const SLOT_MS = 30_000;
/** Distinct decoys in the flood; each is sent twice in one request, so its second hit is over the limit. */
const DECOYS = 100_000;
/** Decoys per request: 128 × 2 = 256 descriptors, MAX_REQUEST_DESCRIPTORS' default. */
const PER_REQUEST = 128;
/** Requests in flight at once. */
const CONCURRENCY = 8;
/**
 * The slowest /healthcheck answer allowed while the flood runs. Measured: 53–62 ms on a quiet 2-core
 * machine, up to ~300 ms in all three attempts while other suites loaded both cores. The stall this
 * guards against (the top list scanning its whole map per new decoy) lasted seconds; the sketch's
 * complexity itself is checked without wall-clock time in operator-parts.test.ts.
 */
const HEALTH_BOUND_MS = 1000;

/** CPU seconds (user + system) a process has used, from /proc. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat (utime, stime), counted after the command name; in clock ticks of 1/100 s.
  return (Number(f[11]) + Number(f[12])) / 100;
}

async function post(httpUrl: string, body: unknown): Promise<void> {
  const r = await fetch(`${httpUrl}/json`, { method: 'POST', body: JSON.stringify(body) });
  await r.text();
  assert.ok(r.status === 200 || r.status === 429, `status ${r.status}`);
}

async function flood(httpUrl: string, prefix: string, decoys: number): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const start = next;
      next += PER_REQUEST;
      if (start >= decoys) return;
      const descriptors = [];
      for (let i = start; i < Math.min(start + PER_REQUEST, decoys); i++) {
        const entries = [{ key: 'client', value: `${prefix}-${i}` }];
        descriptors.push({ entries }, { entries });
      }
      await post(httpUrl, { domain: 'flood', descriptors });
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

describe('operator top list under a flood of distinct decoys', () => {
  let svc: ServiceProcess;
  let rules: ReturnType<typeof writeRules>;

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}: install the "chromium" package (.ci/run does)`);
    mkdirSync(SHOTS, { recursive: true });
    rules = writeRules({ 'flood.yaml': RULES });
    svc = await startService({ ...rules.env, BACKEND_TYPE: 'memory', OPERATOR_TOP_SIZE: '1000', OPERATOR_SAMPLE_EVERY: '1', USE_STATS_PUSH: 'false' });
  });
  after(async () => {
    await svc?.stop();
    rules?.cleanup();
  });

  test('decoys that push the real offender out: the JSON and the page say the list cannot be trusted', async () => {
    // A fresh process (nothing counted yet) and a fresh 30-second slot, so the offender and the
    // decoys are counted in the same one.
    const intoSlot = Date.now() % SLOT_MS;
    if (intoSlot > 10_000) await new Promise((r) => setTimeout(r, SLOT_MS - intoSlot + 200));
    // The real offender: 11 calls, 10 of them over its limit.
    for (let i = 0; i < 11; i++) await post(svc.httpUrl, { domain: 'flood', descriptors: [{ entries: [{ key: 'client', value: 'offender' }] }] });
    let state = (await (await fetch(`${svc.debugUrl}/operator/api/state`)).json()) as OperatorState;
    assert.equal(state.top.entries[0]!.entries[0]!.value, 'offender');
    assert.equal(state.top.entries[0]!.count, 10);
    // 30,000 decoys counted once each: the sketch's minimum climbs to about 30 and evicts the offender.
    await flood(svc.httpUrl, 'hide', 30_000);
    state = (await (await fetch(`${svc.debugUrl}/operator/api/state`)).json()) as OperatorState;
    assert.ok(!state.top.entries.some((e) => e.entries[0]!.value === 'offender'), 'the decoys pushed the offender out of the list');
    assert.ok(state.top.dropped > 0);
    assert.ok(state.top.hiddenMax >= 10, `hiddenMax ${state.top.hiddenMax}`);
    assert.equal(state.top.complete, false);

    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`${svc.debugUrl}/operator/`);
      await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
      const warning = page.locator('#top-warning');
      assert.equal(await warning.isVisible(), true);
      assert.match((await warning.textContent()) ?? '', /^Incomplete: more distinct over-limit descriptors than the 1000 tracked .* may have had up to [\d.k]+ over-limit hits/);
      assert.ok((await page.locator('#top tbody tr.uncertain').count()) > 0);
      await page.locator('section[aria-labelledby="h-top"]').screenshot({ path: join(SHOTS, 'flood-incomplete-top.png') });
    } finally {
      await browser.close();
    }
  });

  test('100,000 distinct decoys with the largest top list: /healthcheck stays responsive', async (t) => {
    let attempt = 0;
    const pid = svc.proc.proc.pid!;
    const cpuBefore = await cpuSeconds(pid);
    const started = performance.now();
    const probe = await measureStall(svc.httpUrl, () => flood(svc.httpUrl, `decoy${attempt++}`, DECOYS), HEALTH_BOUND_MS);
    const floodMs = performance.now() - started;
    const cpuPerDecoyUs = (((await cpuSeconds(pid)) - cpuBefore) / (DECOYS * probe.attempts)) * 1e6;
    t.diagnostic(
      `flood of ${DECOYS} decoys: ${(floodMs / 1000).toFixed(1)} s, service CPU ${cpuPerDecoyUs.toFixed(1)} µs per decoy, slowest /healthcheck ${probe.maxMs.toFixed(1)} ms, ${probe.answers} answers, ${probe.attempts} attempt(s)`,
    );
    assert.equal(probe.failures, 0);
    assert.ok(probe.maxMs < HEALTH_BOUND_MS, `slowest /healthcheck ${probe.maxMs.toFixed(0)} ms during the flood`);
    const state = (await (await fetch(`${svc.debugUrl}/operator/api/state`)).json()) as OperatorState;
    assert.equal(state.top.capacity, 1000);
    assert.equal(state.top.entries.length, 20);
  });
});
