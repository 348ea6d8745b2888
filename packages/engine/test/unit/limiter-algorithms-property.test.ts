// Random request streams on an injected clock: the service on the memory store against a plain
// model of each algorithm written from its definition (docs/ratelimit.md, "Algorithms (extension)").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Code } from '@rls/engine';
import { harness } from '../support/limiter-support.js';

/** Small deterministic PRNG (mulberry32), so a failure names its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const RULES = `domain: p
descriptors:
  - {key: s, rate_limit: {unit: second, requests_per_unit: 7, algorithm: sliding_window}}
  - {key: m, rate_limit: {unit: minute, requests_per_unit: 30, algorithm: sliding_window}}
  - {key: b, rate_limit: {unit: second, requests_per_unit: 3, algorithm: token_bucket, burst: 5}}
  - {key: h, rate_limit: {unit: minute, requests_per_unit: 7, algorithm: token_bucket}}
`;

test('sliding windows and token buckets match their definitions on random streams', async () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const rnd = prng(seed);
    const start = 1_800_000_000;
    const h = harness(RULES, {}, start);
    let nowMs = start * 1000 + Math.floor(rnd() * 1000);
    h.clock.set(nowMs);
    const windows = new Map<string, number>(); // `${key}@${windowStart}` -> count
    const tats = new Map<string, number>(); // key -> TAT µs
    const sliding = { s: [7, 1], m: [30, 60] } as const;
    const bucket = { b: [3, 1, 5], h: [7, 60, 7] } as const;
    for (let step = 0; step < 1500; step++) {
      nowMs += Math.floor(rnd() ** 3 * 4000);
      h.clock.set(nowMs);
      const key = (['s', 'm', 'b', 'h'] as const)[Math.floor(rnd() * 4)]!;
      const addend = Math.floor(rnd() * 4);
      const r = await h.service.shouldRateLimit({ domain: 'p', descriptors: [{ entries: [{ key, value: 'x' }], hitsAddend: addend }], hitsAddend: 0 });
      const got = [r.statuses[0]!.code, r.statuses[0]!.limitRemaining];
      let want: number[];
      if (key === 's' || key === 'm') {
        const [L, W] = sliding[key];
        const ws = Math.floor(nowMs / 1000 / W) * W;
        const cur = (windows.get(`${key}@${ws}`) ?? 0) + addend;
        windows.set(`${key}@${ws}`, cur);
        const prev = windows.get(`${key}@${ws - W}`) ?? 0;
        const elapsed = nowMs - ws * 1000;
        const est = Math.floor((prev * (W * 1000 - elapsed)) / (W * 1000)) + cur;
        want = est > L ? [Code.OVER_LIMIT, 0] : [Code.OK, L - est];
      } else {
        const [rpu, W, burst] = bucket[key];
        const E = Math.round((W * 1e6) / rpu);
        const now = nowMs * 1000;
        const tat = Math.max(tats.get(key) ?? 0, now);
        const next = tat + addend * E;
        if (next - now > burst * E) want = [Code.OVER_LIMIT, 0];
        else {
          tats.set(key, next);
          want = [Code.OK, Math.floor((burst * E - (next - now)) / E)];
        }
      }
      assert.deepEqual(got, want, `seed ${seed}, step ${step}, key ${key}, addend ${addend}, t ${nowMs}`);
    }
  }
});
