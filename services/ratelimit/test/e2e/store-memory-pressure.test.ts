// Issue 23, findings 1 and 2, through the real process: the embedded memory store under pressure
// from other keys keeps enforcing the counters that decide requests. A small MEMORY_STORE_MAX_BYTES
// is filled many times over with distinct one-hour counters through POST /json while two victims
// keep asking: one limited to 10 per second (its counters are hot), one limited to 5 per hour that
// has used its 5 (a cold counter at its limit: "held"). Before the fix the store dropped the
// counters expiring soonest when full, so the per-second victim was admitted thousands of times.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { postJson, startService, writeRules } from '../support/service-process.js';

const RULES = `domain: pressure
descriptors:
  - {key: victim, rate_limit: {unit: second, requests_per_unit: 10}}
  - {key: hourly, rate_limit: {unit: hour, requests_per_unit: 5}}
  - {key: filler, rate_limit: {unit: hour, requests_per_unit: 1000}}
`;
const BUDGET = 1024 * 1024;
/** The flood runs at least this long, and on until it has offered FLOOD_KEYS counters (a loaded machine is slower). */
const FLOOD_MS = 5_000;
/** Counters the flood offers at least: five times what the budget holds (~330 B charged each). */
const FLOOD_KEYS = Math.ceil((5 * BUDGET) / 330);
/** Bound on the whole flood, so a stuck service fails the test instead of hanging it. */
const FLOOD_MAX_MS = 60_000;

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

function stat(text: string, name: string): number {
  const m = new RegExp(`^${name.replace(/\./g, '\\.')}: (\\d+)$`, 'm').exec(text);
  return m === null ? 0 : Number(m[1]);
}

test('a flood of distinct long-window counters does not reset a victim’s live counters (memory store at its byte bound)', async () => {
  const rules = writeRules({ 'pressure.yaml': RULES });
  const svc = await startService({ ...rules.env, BACKEND_TYPE: 'memory', MEMORY_STORE_MAX_BYTES: String(BUDGET), LOG_LEVEL: 'warn', USE_STATS_PUSH: 'false' });
  try {
    const pid = svc.proc.proc.pid!;
    // The hourly victim uses its 5 first.
    for (let i = 0; i < 5; i++) assert.equal((await postJson(svc.httpUrl, { domain: 'pressure', descriptors: [{ entries: [{ key: 'hourly', value: 'v' }] }] })).status, 200);
    const rss0 = rssBytes(pid);
    const started = Date.now();
    let fillerKeys = 0;
    const flooding = (): boolean => {
      const ms = Date.now() - started;
      return ms < FLOOD_MAX_MS && (ms < FLOOD_MS || fillerKeys < FLOOD_KEYS);
    };
    const flood = async (w: number): Promise<void> => {
      for (let n = 0; flooding(); n++) {
        // 20 new one-hour counters a request, each with a 100-character value (~330 B charged each).
        const descriptors = Array.from({ length: 20 }, (_, i) => ({ entries: [{ key: 'filler', value: `${w}-${n}-${i}-`.padEnd(100, 'x') }] }));
        await postJson(svc.httpUrl, { domain: 'pressure', descriptors });
        fillerKeys += 20;
      }
    };
    const victim = { admitted: [] as number[], first: 0, last: 0 };
    const hourly = { admitted: 0, asked: 0 };
    const victims = async (): Promise<void> => {
      victim.first = Date.now();
      while (flooding()) {
        const r = await postJson(svc.httpUrl, { domain: 'pressure', descriptors: [{ entries: [{ key: 'victim', value: 'v' }] }] });
        if (r.status === 200) victim.admitted.push(Date.now());
        const h = await postJson(svc.httpUrl, { domain: 'pressure', descriptors: [{ entries: [{ key: 'hourly', value: 'v' }] }] });
        hourly.asked++;
        if (h.status === 200) hourly.admitted++;
      }
      victim.last = Date.now();
    };
    await Promise.all([flood(0), flood(1), flood(2), victims()]);
    const stats = await (await fetch(`${svc.debugUrl}/stats`)).text();
    const seconds = Math.ceil((victim.last - victim.first) / 1000) + 1;
    assert.ok(fillerKeys * 330 > 4 * BUDGET, `the flood offered ${fillerKeys} counters, several times the budget`);
    assert.ok(victim.admitted.length <= 10 * seconds, `per-second victim admitted ${victim.admitted.length} times in at most ${seconds} window seconds (limit 10/s)`);
    assert.ok(victim.admitted.length >= 10, 'the victim is still served within its limit');
    assert.ok(hourly.asked > 10, `the hourly victim asked ${hourly.asked} times`);
    assert.equal(hourly.admitted, 0, 'the hourly counter at its limit survives the pressure (held, never reset)');
    const evicted = stat(stats, 'ratelimit.memory_store.evicted') + stat(stats, 'ratelimit.memory_store.expired');
    const refused = stat(stats, 'ratelimit.memory_store.refused');
    assert.ok(evicted + refused > 0, `the store made room or refused (evicted ${evicted}, refused ${refused})`);
    assert.ok(stat(stats, 'ratelimit.memory_store.bytes') <= BUDGET, 'the gauge stays within the budget');
    const grown = rssBytes(pid) - rss0;
    assert.ok(grown < 64 * 1024 * 1024, `RSS grew ${(grown / 1048576).toFixed(1)} MB under a 1 MiB store budget`);
  } finally {
    await svc.stop();
    rules.cleanup();
  }
});
