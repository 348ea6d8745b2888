// What a counter means right now (docs/ratelimit.md, "Counters on the debug port"): the values a
// store holds for one limit turned into the count, the requests left and the seconds until reset,
// by the same arithmetic the limiter decides with. Pure: the caller reads the store.
import type { Limit } from '../config/rule-tree.js';
import { SATURATED_COUNT } from '../store/counter-store.js';
import { slidingEstimate } from './algorithms.js';
import { secondsUntilReset, windowStart } from './window.js';

export interface CounterView {
  /** Hits counted in the window (a sliding window: the weighted estimate); a bucket: tokens in use. */
  readonly count: number;
  /** Requests a new request could still take (a bucket: whole tokens left). */
  readonly remaining: number;
  /** Whole seconds until the window ends (a bucket: until it is full again). */
  readonly resetSeconds: number;
}

/** `value`: the stored counter (a bucket: its TAT in µs; 0 when missing); `previous`: a sliding window's previous counter. */
export function counterView(limit: Limit, value: number, previous: number, nowMs: number): CounterView {
  const nowSeconds = Math.floor(nowMs / 1000);
  const L = limit.requestsPerUnit;
  if (limit.algorithm === 'token_bucket') {
    const usedUs = Math.max(0, value - nowMs * 1000);
    if (value >= SATURATED_COUNT) return { count: limit.burst, remaining: 0, resetSeconds: Math.ceil(usedUs / 1_000_000) };
    const remaining = Math.max(0, Math.floor((limit.toleranceUs - usedUs) / limit.emissionUs));
    return { count: limit.burst - remaining, remaining, resetSeconds: Math.ceil(usedUs / 1_000_000) };
  }
  const w = limit.windowSeconds;
  let count = value;
  if (limit.algorithm === 'sliding_window') count = slidingEstimate(previous, value, nowMs - windowStart(nowSeconds, w) * 1000, w * 1000);
  return { count, remaining: count >= L ? 0 : L - count, resetSeconds: secondsUntilReset(nowSeconds, w) };
}
