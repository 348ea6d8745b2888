// Statistics in worker mode. Each worker counts into its own registry on the hot path as usual;
// a relay sends what changed to the primary over the cluster IPC channel in batches (every
// RELAY_INTERVAL_MS and once more when the worker stops): counter deltas, gauge values that
// changed, and the timer observations made since the last batch. The primary applies the batches
// to one aggregate registry — counters summed, gauges summed over the live workers, every timer
// observation recorded — and that registry is the only one the sinks (statsd push, Prometheus
// pull) read, so they report the service as a whole. No request ever waits on IPC.
import type { Counter, Gauge, StatsStore, StatTags, Timer } from '@rls/engine';

export const RELAY_INTERVAL_MS = 250;

type WireTags = StatTags | 0;
export interface StatsBatch {
  t: 'rls-stats';
  /** Counters: name, tags, delta. */
  c: [string, WireTags, number][];
  /** Gauges: name, tags, current value. */
  g: [string, WireTags, number][];
  /** Timers: name, tags, observations in ms. */
  h: [string, WireTags, number[]][];
}

export function isStatsBatch(msg: unknown): msg is StatsBatch {
  return typeof msg === 'object' && msg !== null && (msg as { t?: unknown }).t === 'rls-stats';
}

const wireTags = (tags: StatTags): WireTags => (Object.keys(tags).length === 0 ? 0 : tags);

/** Worker side: collects changes and hands batches to `send` (which calls back once written). */
export class WorkerStatsRelay {
  private readonly sent = new Map<Counter, number>();
  private readonly gaugeSent = new Map<Gauge, number>();
  private observations = new Map<Timer, number[]>();
  private interval: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly store: StatsStore,
    private readonly send: (batch: StatsBatch, done: () => void) => void,
    private readonly intervalMs = RELAY_INTERVAL_MS,
  ) {}

  start(): void {
    this.unsubscribe = this.store.onTimer((_name, ms, timer) => {
      const list = this.observations.get(timer);
      if (list === undefined) this.observations.set(timer, [ms]);
      else list.push(ms);
    });
    this.interval = setInterval(() => void this.flush(), this.intervalMs);
    this.interval.unref();
  }

  /** Sends what changed since the last batch; resolves once it was handed to the channel. */
  flush(): Promise<void> {
    const batch: StatsBatch = { t: 'rls-stats', c: [], g: [], h: [] };
    for (const c of this.store.allCounters()) {
      const delta = c.total - (this.sent.get(c) ?? 0);
      if (delta === 0) continue;
      this.sent.set(c, c.total);
      batch.c.push([c.name, wireTags(c.tags), delta]);
    }
    for (const g of this.store.allGauges()) {
      if (this.gaugeSent.get(g) === g.current) continue;
      this.gaugeSent.set(g, g.current);
      batch.g.push([g.name, wireTags(g.tags), g.current]);
    }
    for (const [t, list] of this.observations) batch.h.push([t.name, wireTags(t.tags), list]);
    this.observations = new Map();
    if (batch.c.length + batch.g.length + batch.h.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.send(batch, resolve));
  }

  /** Last batch, then no more. */
  async stop(): Promise<void> {
    if (this.interval !== undefined) clearInterval(this.interval);
    this.interval = undefined;
    this.unsubscribe?.();
    await this.flush();
  }
}

/** Primary side: folds worker batches into one registry. */
export class StatsAggregator {
  /** Gauge → worker id → that worker's value; the aggregate gauge holds the sum. */
  private readonly gaugeParts = new Map<Gauge, Map<number, number>>();

  /**
   * `primaryOwned`: stat names the primary counts itself (the rule loads: it owns the rule source,
   * so a load counts once, not once per worker); the workers' own values of them are ignored.
   */
  constructor(
    private readonly store: StatsStore,
    private readonly primaryOwned: ReadonlySet<string> = new Set(),
  ) {}

  apply(workerId: number, batch: StatsBatch): void {
    const owned = this.primaryOwned;
    for (const [name, tags, delta] of batch.c) {
      if (!owned.has(name)) this.store.counter(name, tags === 0 ? undefined : tags).add(delta);
    }
    for (const [name, tags, value] of batch.g) {
      if (owned.has(name)) continue;
      const g = this.store.gauge(name, tags === 0 ? undefined : tags);
      let parts = this.gaugeParts.get(g);
      if (parts === undefined) {
        parts = new Map();
        this.gaugeParts.set(g, parts);
      }
      parts.set(workerId, value);
      g.set(sum(parts));
    }
    for (const [name, tags, list] of batch.h) {
      const t = this.store.timer(name, tags === 0 ? undefined : tags);
      for (const ms of list) t.record(ms);
    }
  }

  /** A worker is gone: its gauge values no longer count (its counters and timers stay counted). */
  forget(workerId: number): void {
    for (const [g, parts] of this.gaugeParts) {
      if (parts.delete(workerId)) g.set(sum(parts));
    }
  }
}

function sum(parts: Map<number, number>): number {
  let s = 0;
  for (const v of parts.values()) s += v;
  return s;
}

/**
 * The totals for a debug `/stats` request in worker mode: a worker asks (`rls-stats-get`), the
 * primary answers with its aggregate registry as values (`rls-stats-totals`).
 */
export interface StatsTotalsQuery {
  t: 'rls-stats-get';
  id: number;
}
export interface StatsTotals {
  t: 'rls-stats-totals';
  id: number;
  /** Counters: name, tags, total. */
  c: [string, WireTags, number][];
  /** Gauges: name, tags, value. */
  g: [string, WireTags, number][];
  /** Timers: name, tags, observation count, sum in ms. */
  h: [string, WireTags, number, number][];
}

export function isStatsTotalsQuery(msg: unknown): msg is StatsTotalsQuery {
  return typeof msg === 'object' && msg !== null && (msg as { t?: unknown }).t === 'rls-stats-get' && typeof (msg as { id?: unknown }).id === 'number';
}

export function isStatsTotals(msg: unknown): msg is StatsTotals {
  return typeof msg === 'object' && msg !== null && (msg as { t?: unknown }).t === 'rls-stats-totals' && typeof (msg as { id?: unknown }).id === 'number';
}

/** Primary side: the aggregate registry's current values. */
export function statsTotalsOf(store: StatsStore, id: number): StatsTotals {
  const out: StatsTotals = { t: 'rls-stats-totals', id, c: [], g: [], h: [] };
  for (const c of store.allCounters()) out.c.push([c.name, wireTags(c.tags), c.total]);
  for (const g of store.allGauges()) out.g.push([g.name, wireTags(g.tags), g.current]);
  for (const t of store.allTimers()) out.h.push([t.name, wireTags(t.tags), t.count, t.sumMs]);
  return out;
}

/** Worker side: a read-only registry holding the totals, for the debug server to render as usual. */
export function storeOfTotals(totals: StatsTotals, into: StatsStore): StatsStore {
  for (const [name, tags, total] of totals.c) into.counter(name, tags === 0 ? undefined : tags).add(total);
  for (const [name, tags, value] of totals.g) into.gauge(name, tags === 0 ? undefined : tags).set(value);
  for (const [name, tags, count, sumMs] of totals.h) {
    const t = into.timer(name, tags === 0 ? undefined : tags);
    // Set, not recorded: no observation happens here, only the primary's sums are shown.
    t.count = count;
    t.sumMs = sumMs;
  }
  return into;
}
