// Store round-trip latency for the operator page: a CounterStore wrapper that times one call in
// SAMPLE_EVERY (the others go straight through, untouched) into log-scale histograms of 10-second
// slots; p50/p99 come from the last six slots (one minute). Memory is fixed: 6 × 100 counters.
import { decorateStore, isPromise, type Clock, type CounterOp, type CounterStore, type MaybePromise } from '@rls/engine';

const SLOT_MS = 10_000;
const SLOTS = 6;
/** Four buckets per power of two of microseconds: bucket i covers [2^(i/4), 2^((i+1)/4)) µs, up to about 2^25 µs (33 s). */
const BINS = 100;
export const LATENCY_SAMPLE_EVERY = 16;

function binOf(us: number): number {
  if (us < 1) return 0;
  const b = Math.floor(Math.log2(us) * 4);
  return b >= BINS ? BINS - 1 : b;
}

/** Upper edge of a bin in milliseconds (what a percentile in that bin is reported as). */
function binUpperMs(b: number): number {
  return 2 ** ((b + 1) / 4) / 1000;
}

export interface LatencyView {
  /** Round trips timed in the window (about one in LATENCY_SAMPLE_EVERY). */
  readonly samples: number;
  readonly windowMs: number;
  /** Upper bucket edge (±19 %) of the median and the 99th percentile; null without samples. */
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly maxMs: number | null;
}

export class LatencyWindow {
  private readonly bins = Array.from({ length: SLOTS }, () => new Uint32Array(BINS));
  private readonly slotOf = new Array<number>(SLOTS).fill(-1);
  private readonly maxUs = new Float64Array(SLOTS);

  record(ms: number, nowMs: number): void {
    const slot = Math.floor(nowMs / SLOT_MS);
    const i = slot % SLOTS;
    if (this.slotOf[i] !== slot) {
      this.bins[i]!.fill(0);
      this.maxUs[i] = 0;
      this.slotOf[i] = slot;
    }
    const us = ms * 1000;
    this.bins[i]![binOf(us)]! += 1;
    if (us > this.maxUs[i]!) this.maxUs[i] = us;
  }

  view(nowMs: number): LatencyView {
    const slot = Math.floor(nowMs / SLOT_MS);
    const merged = new Array<number>(BINS).fill(0);
    let n = 0;
    let maxUs = 0;
    for (let i = 0; i < SLOTS; i++) {
      const s = this.slotOf[i]!;
      if (s < 0 || s <= slot - SLOTS || s > slot) continue;
      const b = this.bins[i]!;
      for (let j = 0; j < BINS; j++) {
        merged[j]! += b[j]!;
        n += b[j]!;
      }
      if (this.maxUs[i]! > maxUs) maxUs = this.maxUs[i]!;
    }
    const pct = (p: number): number | null => {
      if (n === 0) return null;
      const rank = Math.ceil(p * n);
      let seen = 0;
      for (let j = 0; j < BINS; j++) {
        seen += merged[j]!;
        if (seen >= rank) return round3(binUpperMs(j));
      }
      return round3(binUpperMs(BINS - 1));
    };
    return { samples: n, windowMs: SLOT_MS * SLOTS, p50Ms: pct(0.5), p99Ms: pct(0.99), maxMs: n === 0 ? null : round3(maxUs / 1000) };
  }
}

function round3(v: number): number {
  return Math.round(v * 1000) / 1000;
}

/**
 * The store as the service sees it, with one call in `every` timed (increment, execute and get
 * alike, whether answered at once or later); failures, thrown or rejected, are timed too. Built
 * with decorateStore: every other member (delete, algorithms, onConnectionChange, ...) is
 * forwarded, and optional members are present exactly when the inner store has them.
 */
export function timedStore(inner: CounterStore, window: LatencyWindow, clock: Clock, every = LATENCY_SAMPLE_EVERY): CounterStore {
  let countdown = every;
  const time = <A, T>(call: (a: A) => MaybePromise<T>, a: A): MaybePromise<T> => {
    const start = performance.now();
    const done = (): void => window.record(performance.now() - start, clock.now());
    let out: MaybePromise<T>;
    try {
      out = call(a);
    } catch (err) {
      done();
      throw err;
    }
    if (isPromise(out)) out.then(done, done);
    else done();
    return out;
  };
  const sampled = (): boolean => {
    if (--countdown > 0) return false;
    countdown = every;
    return true;
  };
  return decorateStore(inner, {
    increment: (increment) => (ops: readonly CounterOp[]) => (sampled() ? time(increment, ops) : increment(ops)),
    get: (get) => (keys: readonly string[]) => (sampled() ? time(get, keys) : get(keys)),
    execute: (execute) => (ops: readonly CounterOp[]) => (sampled() ? time(execute, ops) : execute(ops)),
  });
}
