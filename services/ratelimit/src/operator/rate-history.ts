// Per-rule hit and over-limit rates over the last 15 minutes, for the operator page's charts. Fed
// from the statistics the engine already keeps (`ratelimit.service.rate_limit.<key>.total_hits` and
// `.over_limit`): a timer reads them every bucket (10 s) and keeps the differences in fixed rings,
// so the request path pays nothing. At most `maxKeys` statistics keys are charted: the busiest over
// the window; a quieter one gives its place to a busier newcomer.
//
// Clients create statistics (a detailed_metric rule has one set per value, up to
// STATS_MAX_SERIES_PER_RULE per rule), so the work of a tick must not be string work per statistic:
// each counter is looked at by name once, when it is new, and kept as a (hits, over-limit) pair of
// handles; a tick reads the pairs' totals. Measured on the shared 2-core machine: 300,000 counters
// took about 100 ms per tick when every name was parsed each time (a stall every 10 s), 15-20 ms
// now; 1.2 million, 470 ms then and about 50 ms now. Counters of one key with different tag sets
// are added up (they used to overwrite each other's previous total).
import { RATE_LIMIT_STATS_PREFIX, type Counter, type StatsStore } from '@rls/engine';
import { displayText } from './display-text.js';

export const BUCKET_MS = 10_000;
/** 90 × 10 s = 15 minutes. */
export const BUCKETS = 90;

const HITS_SUFFIX = '.total_hits';
const OVER_SUFFIX = '.over_limit';

/** One statistics key's counters (one per tag set, usually one), with their totals at the last tick (NaN: not read yet). */
interface Pair {
  readonly key: string;
  readonly hits: Counter[];
  readonly over: Counter[];
  lastHits: number;
  lastOver: number;
}

function total(counters: readonly Counter[]): number {
  let t = 0;
  for (const c of counters) t += c.total;
  return t;
}

interface Tracked {
  readonly hits: Float64Array;
  readonly over: Float64Array;
}

/** Bound of a chart's caption (a statistics key embeds descriptor values, which clients choose). */
export const MAX_SERIES_KEY = 128;

export interface RateSeries {
  /**
   * The statistics key (`domain.key_value…`: the rule path, or one value of a detailed_metric
   * rule), escaped and cut at MAX_SERIES_KEY characters for display (display-text.ts).
   */
  readonly key: string;
  /** Hits per bucket, oldest first (a hit is one unit of `hits_addend`). */
  readonly hits: number[];
  readonly overLimit: number[];
}

export interface RateHistoryView {
  readonly bucketMs: number;
  /** Buckets filled so far (at most BUCKETS); every array below has this length. */
  readonly buckets: number;
  /** End time (ms since the epoch) of the newest bucket; 0 before the first. */
  readonly endAt: number;
  /** ShouldRateLimit decisions answered per bucket (gRPC and HTTP; errors not counted). */
  readonly requests: number[];
  readonly totalHits: number[];
  readonly totalOverLimit: number[];
  /** Busiest first (hits over the window). */
  readonly series: RateSeries[];
}

export class RateHistory {
  private readonly pairsByKey = new Map<string, Pair>();
  private readonly pairs: Pair[] = [];
  /** Counters of the registry already looked at (the registry only grows, in insertion order). */
  private classified = 0;
  private readonly tracked = new Map<string, Tracked>();
  private readonly requests = new Float64Array(BUCKETS);
  private readonly totalHits = new Float64Array(BUCKETS);
  private readonly totalOver = new Float64Array(BUCKETS);
  private lastRequests: number | undefined;
  /** Samples taken after the baseline; the ring position is `filled % BUCKETS`. */
  private filled = 0;
  private endAt = 0;

  constructor(
    private readonly stats: StatsStore,
    readonly maxKeys: number,
    /** Decisions answered since start (the operator monitor counts them). */
    private readonly decisions: () => number,
  ) {}

  /** Pairs up the counters created since the last tick (the only per-name work). */
  private classifyNew(): void {
    let i = 0;
    for (const c of this.stats.allCounters()) {
      if (i++ < this.classified) continue;
      const name = c.name;
      if (!name.startsWith(RATE_LIMIT_STATS_PREFIX)) continue;
      const isHits = name.endsWith(HITS_SUFFIX);
      if (!isHits && !name.endsWith(OVER_SUFFIX)) continue;
      const key = name.slice(RATE_LIMIT_STATS_PREFIX.length, name.length - (isHits ? HITS_SUFFIX.length : OVER_SUFFIX.length));
      let pair = this.pairsByKey.get(key);
      if (pair === undefined) {
        pair = { key, hits: [], over: [], lastHits: Number.NaN, lastOver: Number.NaN };
        this.pairsByKey.set(key, pair);
        this.pairs.push(pair);
      }
      (isHits ? pair.hits : pair.over).push(c);
    }
    this.classified = i;
  }

  /** Reads the counters and closes one bucket (the first call only takes the baseline). */
  sample(nowMs: number): void {
    this.classifyNew();
    const baseline = this.endAt === 0;
    // A counter seen for the first time counts from zero (it was created since the last tick),
    // except at the baseline, which only records where every counter stands.
    const delta = (value: number, before: number): number => Math.max(0, value - (Number.isNaN(before) ? (baseline ? value : 0) : before));
    const deltas = new Map<string, { hits: number; over: number }>();
    for (const p of this.pairs) {
      const hitsNow = total(p.hits);
      const overNow = total(p.over);
      const hits = p.hits.length === 0 ? 0 : delta(hitsNow, p.lastHits);
      const over = p.over.length === 0 ? 0 : delta(overNow, p.lastOver);
      if (p.hits.length > 0) p.lastHits = hitsNow;
      if (p.over.length > 0) p.lastOver = overNow;
      if (hits !== 0 || over !== 0) deltas.set(p.key, { hits, over });
    }
    const requestsNow = this.decisions();
    const requestsDelta = this.lastRequests === undefined ? 0 : Math.max(0, requestsNow - this.lastRequests);
    this.lastRequests = requestsNow;
    if (this.endAt === 0) {
      this.endAt = nowMs;
      return;
    }
    const at = this.filled % BUCKETS;
    this.filled += 1;
    this.endAt = nowMs;
    let hitsSum = 0;
    let overSum = 0;
    for (const d of deltas.values()) {
      hitsSum += d.hits;
      overSum += d.over;
    }
    // The tracked keys' slot first (it still holds the bucket of 15 minutes ago), then newcomers.
    for (const [key, t] of this.tracked) {
      const d = deltas.get(key);
      t.hits[at] = d?.hits ?? 0;
      t.over[at] = d?.over ?? 0;
    }
    this.admit(deltas, at);
    this.requests[at] = requestsDelta;
    this.totalHits[at] = hitsSum;
    this.totalOver[at] = overSum;
  }

  /** Busy newcomers join while there is room, or replace the quietest tracked key when busier than it over the window. */
  private admit(deltas: ReadonlyMap<string, { hits: number; over: number }>, at: number): void {
    const newcomers = [...deltas.entries()].filter(([k]) => !this.tracked.has(k)).sort(([, a], [, b]) => b.hits + b.over - (a.hits + a.over));
    for (const [key, d] of newcomers.slice(0, this.maxKeys)) {
      if (this.tracked.size >= this.maxKeys) {
        let quietest: string | undefined;
        let quietSum = Infinity;
        for (const [k, t] of this.tracked) {
          const s = sum(t.hits) + sum(t.over);
          if (s < quietSum) {
            quietSum = s;
            quietest = k;
          }
        }
        if (quietest === undefined || d.hits + d.over <= quietSum) break;
        this.tracked.delete(quietest);
      }
      const t = { hits: new Float64Array(BUCKETS), over: new Float64Array(BUCKETS) };
      t.hits[at] = d.hits;
      t.over[at] = d.over;
      this.tracked.set(key, t);
    }
  }

  view(): RateHistoryView {
    const n = Math.min(this.filled, BUCKETS);
    const series = [...this.tracked.entries()]
      .map(([key, t]) => ({ key, hits: this.ordered(t.hits), overLimit: this.ordered(t.over) }))
      .sort((a, b) => sumArr(b.hits) + sumArr(b.overLimit) - (sumArr(a.hits) + sumArr(a.overLimit)) || (a.key < b.key ? -1 : 1))
      .map((s) => ({ ...s, key: displayText(s.key, MAX_SERIES_KEY) }));
    return {
      bucketMs: BUCKET_MS,
      buckets: n,
      endAt: this.endAt,
      requests: this.ordered(this.requests),
      totalHits: this.ordered(this.totalHits),
      totalOverLimit: this.ordered(this.totalOver),
      series,
    };
  }

  /** The filled part of a ring, oldest first. */
  private ordered(ring: Float64Array): number[] {
    const n = Math.min(this.filled, BUCKETS);
    const out = new Array<number>(n);
    const start = this.filled - n;
    for (let i = 0; i < n; i++) out[i] = ring[(start + i) % BUCKETS]!;
    return out;
  }
}

function sum(a: Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]!;
  return s;
}

function sumArr(a: readonly number[]): number {
  let s = 0;
  for (const v of a) s += v;
  return s;
}
