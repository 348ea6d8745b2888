// In-process statistics: counters, gauges and timers registered by their statsd-style name
// (`ratelimit.service.rate_limit.<key>.total_hits`). Handles are created once (at rule load or
// start-up) and kept by their users, so the hot path is a property increment. Sinks (statsd push,
// Prometheus pull, /stats) read the registry; they live in their own modules.
//
// Tags: a stat may carry per-stat tags (e.g. memcache's `code=success`). They are kept apart from
// the name so each sink can render them its own way (statsd name suffix, DogStatsD tags,
// Prometheus labels); the registry key is the gostats-style serialised name so two tag sets of
// one name are two stats.

/** Per-stat tags, key → value. */
export type StatTags = Readonly<Record<string, string>>;

const NO_TAGS: StatTags = Object.freeze({});

/** Registry key of a tagged stat: `<name>.__k=v` per tag sorted by key (gostats' serialisation). */
function registryKey(name: string, tags: StatTags | undefined): string {
  if (tags === undefined) return name;
  const keys = Object.keys(tags);
  if (keys.length === 0) return name;
  keys.sort();
  let out = name;
  for (const k of keys) out += `.__${k}=${tags[k] ?? ''}`;
  return out;
}

export class Counter {
  /** Running total since start. */
  total = 0;
  /** Amount not yet flushed to a push sink. */
  pending = 0;
  constructor(
    readonly name: string,
    readonly tags: StatTags = NO_TAGS,
  ) {}
  add(n: number): void {
    if (n === 0) return;
    this.total += n;
    this.pending += n;
  }
  inc(): void {
    this.total += 1;
    this.pending += 1;
  }
  value(): number {
    return this.total;
  }
}

export class Gauge {
  current = 0;
  constructor(
    readonly name: string,
    readonly tags: StatTags = NO_TAGS,
  ) {}
  set(v: number): void {
    this.current = v;
  }
  add(n: number): void {
    this.current += n;
  }
  value(): number {
    return this.current;
  }
}

/** `timer` is passed too so sinks can key per-stat caches on the object (and read its tags). */
export type TimerListener = (name: string, ms: number, timer: Timer) => void;

export class Timer {
  count = 0;
  sumMs = 0;
  private listeners: TimerListener[] = [];
  constructor(
    readonly name: string,
    readonly tags: StatTags = NO_TAGS,
  ) {}
  record(ms: number): void {
    this.count += 1;
    this.sumMs += ms;
    for (const l of this.listeners) l(this.name, ms, this);
  }
  onRecord(l: TimerListener): void {
    this.listeners.push(l);
  }
  offRecord(l: TimerListener): void {
    const i = this.listeners.indexOf(l);
    if (i >= 0) this.listeners.splice(i, 1);
  }
}

export interface StatsStoreOptions {
  /**
   * Most dynamic series one group may hold (per-value statistics of one rule: detailed_metric,
   * value_to_metric, request overrides per domain); default 1000. See `admitSeries`.
   */
  maxSeriesPerGroup?: number | undefined;
  /** Called once per group, when it first turns a series away (for a log line). */
  onGroupFull?: ((group: string, max: number) => void) | undefined;
}

export const DEFAULT_MAX_SERIES_PER_GROUP = 1000;

export class StatsStore {
  private readonly counters = new Map<string, Counter>();
  private readonly gauges = new Map<string, Gauge>();
  private readonly timers = new Map<string, Timer>();
  private readonly timerListeners: TimerListener[] = [];
  /** Admitted members per group; kept across rule reloads, like the counters they stand for. */
  private readonly groups = new Map<string, Set<string>>();
  private readonly fullGroups = new Set<string>();
  private maxPerGroup: number;
  private onGroupFull: ((group: string, max: number) => void) | undefined;

  constructor(opts: StatsStoreOptions = {}) {
    this.maxPerGroup = opts.maxSeriesPerGroup ?? DEFAULT_MAX_SERIES_PER_GROUP;
    this.onGroupFull = opts.onGroupFull;
  }

  /**
   * Sets the series cap at composition time, for a store made before the settings were known
   * (worker mode makes its store first). Members admitted already stay admitted.
   */
  limitSeries(opts: StatsStoreOptions): void {
    if (opts.maxSeriesPerGroup !== undefined) this.maxPerGroup = opts.maxSeriesPerGroup;
    if (opts.onGroupFull !== undefined) this.onGroupFull = opts.onGroupFull;
  }

  /** The cap `admitSeries` applies. */
  get maxSeriesPerGroup(): number {
    return this.maxPerGroup;
  }

  /**
   * Whether `member` may have its own series in `group`: true for members admitted before and
   * for new ones while the group has fewer than maxSeriesPerGroup; false once it is full (the
   * caller then counts into the group's overflow series). Bounds the memory request values can
   * make the registry (and every sink) hold: one Set entry plus the series per admitted member.
   */
  admitSeries(group: string, member: string): boolean {
    let set = this.groups.get(group);
    if (set === undefined) {
      set = new Set();
      this.groups.set(group, set);
    }
    if (set.has(member)) return true;
    if (set.size < this.maxPerGroup) {
      set.add(member);
      return true;
    }
    if (!this.fullGroups.has(group)) {
      this.fullGroups.add(group);
      this.onGroupFull?.(group, this.maxPerGroup);
    }
    return false;
  }

  counter(name: string, tags?: StatTags): Counter {
    const key = registryKey(name, tags);
    let c = this.counters.get(key);
    if (c === undefined) {
      c = new Counter(name, tags);
      this.counters.set(key, c);
    }
    return c;
  }

  gauge(name: string, tags?: StatTags): Gauge {
    const key = registryKey(name, tags);
    let g = this.gauges.get(key);
    if (g === undefined) {
      g = new Gauge(name, tags);
      this.gauges.set(key, g);
    }
    return g;
  }

  timer(name: string, tags?: StatTags): Timer {
    const key = registryKey(name, tags);
    let t = this.timers.get(key);
    if (t === undefined) {
      t = new Timer(name, tags);
      for (const l of this.timerListeners) t.onRecord(l);
      this.timers.set(key, t);
    }
    return t;
  }

  /**
   * Registers a listener for every timer observation, existing and future timers alike.
   * Returns a function that removes it again (sinks call it when they stop).
   */
  onTimer(l: TimerListener): () => void {
    this.timerListeners.push(l);
    for (const t of this.timers.values()) t.onRecord(l);
    return () => {
      const i = this.timerListeners.indexOf(l);
      if (i >= 0) this.timerListeners.splice(i, 1);
      for (const t of this.timers.values()) t.offRecord(l);
    };
  }

  /** Current value of a counter, 0 when it was never created (handy in tests). */
  counterValue(name: string, tags?: StatTags): number {
    return this.counters.get(registryKey(name, tags))?.total ?? 0;
  }

  allCounters(): IterableIterator<Counter> {
    return this.counters.values();
  }
  allGauges(): IterableIterator<Gauge> {
    return this.gauges.values();
  }
  allTimers(): IterableIterator<Timer> {
    return this.timers.values();
  }
}
