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

export class StatsStore {
  private readonly counters = new Map<string, Counter>();
  private readonly gauges = new Map<string, Gauge>();
  private readonly timers = new Map<string, Timer>();
  private readonly timerListeners: TimerListener[] = [];

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
