// The RLQS server's decisions, without a transport: streams register here, their usage reports
// come in, and every tick the balancer divides each bucket's quota among the data plane
// instances reporting it (on this replica and, through the QuotaShareStore, on every other) and
// hands each stream the bucket actions to send. The transport (phase 2: the lean HTTP/2 server)
// only decodes reports, calls `report`, calls `tick` on a timer and writes what `send` is given.
//
// One data plane instance is one stream: the balancer names it `<replicaId>-<n>`, so instance ids
// never collide across replicas and sort the same everywhere. Per bucket and instance it keeps
// the smoothed demand, the grant held in the store and the strategy last pushed.
//
// Rules of a tick (docs/ratelimit.md, "RLQS", "Fairness"):
//   - demand: (allowed + denied) / time_elapsed of each report, smoothed so a rise counts at once
//     and a fall by `demandDecay` of the difference per report; an instance whose rate is not
//     known yet (its watch, time_elapsed 0) asks for the whole quota, so max-min gives it an equal
//     part of whatever is contested until its first real report;
//   - division: max-min over every live instance of the bucket (fair-share.ts), spare split equally;
//   - hysteresis: a new share within `hysteresis` of the current grant keeps the grant (a token
//     bucket pushed anew starts full, so needless changes cost bursts);
//   - reservation: the store caps increases so the bucket's grants stay within the quota;
//   - pushes: a strategy that changed, or one whose pushed TTL is half gone;
//   - abandon: an instance that has not reported a bucket for `abandonAfterMs`, or has reported
//     only zero traffic for `idleAbandonMs`, gets an abandon action and its entry is released.
// When the store fails, each bucket gets its rule's `on_store_failure`: keep_last re-pushes the
// last strategy (an instance without one gets nothing, so its no_assignment_behavior applies),
// allow_all / deny_all push that blanket rule.
import { bucketKey, type BucketEntryMsg, type BucketActionMsg, type RateLimitQuotaResponseMsg, type RateLimitQuotaUsageReportsMsg, type RateLimitStrategyMsg } from '@rls/rls-proto';
import type { Clock } from '../clock.js';
import { RateLimitError, StoreError } from '../errors.js';
import type { Counter, Gauge, StatsStore } from '../stats/stats-store.js';
import { divideFairly } from './fair-share.js';
import { demandUnits, quotaCapacity, strategyForShare } from './quota-assignment.js';
import type { QuotaRule } from '../config/quota-matcher.js';
import type { QuotaRuleSet } from '../config/quota-rule-set.js';
import { quotaShareKey } from './quota-share-key.js';
import type { QuotaShareStore } from './share-store.js';

export interface QuotaBalancerOptions {
  /** Unique per process (e.g. random at start-up): the prefix of this replica's instance ids. */
  readonly replicaId: string;
  readonly clock: Clock;
  readonly store: QuotaShareStore;
  /** The rule snapshot in force (swapped on reload). */
  readonly rules: () => QuotaRuleSet;
  readonly stats: StatsStore;
  /** Prefix of the store keys (the counter store's key prefix). */
  readonly keyPrefix: string;
  /** How often the transport calls `tick` (ms). */
  readonly tickMs: number;
  /** TTL pushed with every assignment (ms). */
  readonly assignmentTtlMs: number;
  /** How long a lowered grant stays reserved: the time a push needs to reach the data plane (ms). */
  readonly holdMs: number;
  /** No report of a bucket from an instance for this long: abandon (ms). */
  readonly abandonAfterMs: number;
  /** Only zero-traffic reports of a bucket for this long: abandon, to reclaim its state (ms; 0 never). */
  readonly idleAbandonMs: number;
  /** Relative change of a share below which the current grant is kept (0.05 = 5 %). */
  readonly hysteresis: number;
  /** Fraction of a fall in demand taken per report (0..1; 1 follows at once). */
  readonly demandDecay: number;
  readonly maxStreams: number;
  readonly maxBucketsPerStream: number;
  /** Buckets one domain may have on this process (all streams together). */
  readonly maxBucketsPerDomain: number;
}

export const DEFAULT_BALANCER_TUNING = Object.freeze({
  tickMs: 1000,
  assignmentTtlMs: 10_000,
  holdMs: 1000,
  abandonAfterMs: 60_000,
  idleAbandonMs: 600_000,
  hysteresis: 0.05,
  demandDecay: 0.5,
  maxStreams: 10_000,
  maxBucketsPerStream: 4096,
  maxBucketsPerDomain: 100_000,
});

/** Where a stream's actions go (the transport writes them as one message). */
export type ActionSink = (msg: RateLimitQuotaResponseMsg) => void;

interface LocalInstance {
  readonly stream: BalancerStream;
  /** Smoothed demand, requests per second; meaningful once `known`. */
  rate: number;
  known: boolean;
  lastReportAt: number;
  /** Last report with traffic (or the watch). */
  lastActiveAt: number;
  /** Grant held in the store (allocator units). */
  grant: number;
  pushed: string | undefined;
  pushedStrategy: RateLimitStrategyMsg | undefined;
  pushedAt: number;
}

interface BucketState {
  readonly domain: string;
  readonly id: BucketEntryMsg[];
  readonly storeKey: string;
  rule: QuotaRule;
  ruleStats: RuleQuotaStats;
  rulesVersion: QuotaRuleSet;
  readonly instances: Map<string, LocalInstance>;
}

interface RuleQuotaStats {
  readonly allowed: Counter;
  readonly denied: Counter;
  readonly assignments: Counter;
  readonly abandoned: Counter;
  readonly storeFallbacks: Counter;
  readonly demand: Gauge;
}

/** A registered stream; the transport keeps it and calls `report` / `close`. */
export class BalancerStream {
  /** The domain of the stream, set by its first report. */
  domain = '';
  readonly buckets = new Set<BucketState>();
  closed = false;
  /** Actions waiting for the next flush. */
  pending: BucketActionMsg[] = [];
  constructor(
    readonly instance: string,
    readonly sink: ActionSink,
  ) {}
}

export class QuotaBalancer {
  private readonly streams = new Set<BalancerStream>();
  private readonly buckets = new Map<string, BucketState>();
  private readonly perDomain = new Map<string, number>();
  private readonly ruleStats = new Map<string, RuleQuotaStats>();
  private nextStream = 0;
  private ticking: Promise<void> | undefined;
  private readonly stats: {
    readonly streams: Gauge;
    readonly buckets: Gauge;
    readonly invalidUsages: Counter;
    readonly storeErrors: Counter;
    readonly refusedStreams: Counter;
    readonly refusedBuckets: Counter;
  };

  constructor(private readonly opts: QuotaBalancerOptions) {
    const s = opts.stats;
    this.stats = {
      streams: s.gauge('ratelimit.rlqs.streams'),
      buckets: s.gauge('ratelimit.rlqs.buckets'),
      invalidUsages: s.counter('ratelimit.rlqs.invalid_usage'),
      storeErrors: s.counter('ratelimit.rlqs.store_error'),
      refusedStreams: s.counter('ratelimit.rlqs.streams_refused'),
      refusedBuckets: s.counter('ratelimit.rlqs.buckets_refused'),
    };
  }

  /** Registers a new stream; throws RateLimitError('resource_exhausted') beyond maxStreams. */
  openStream(sink: ActionSink): BalancerStream {
    if (this.streams.size >= this.opts.maxStreams) {
      this.stats.refusedStreams.inc();
      throw new RateLimitError('resource_exhausted', `more than ${this.opts.maxStreams} RLQS streams on this process`);
    }
    const s = new BalancerStream(`${this.opts.replicaId}-${(this.nextStream++).toString(36).padStart(6, '0')}`, sink);
    this.streams.add(s);
    this.stats.streams.set(this.streams.size);
    return s;
  }

  /**
   * One usage report message of `stream`. Throws RateLimitError: 'invalid_request' for a missing
   * or changed domain (the transport ends the stream with INVALID_ARGUMENT), 'resource_exhausted'
   * when a new bucket would pass maxBucketsPerStream or maxBucketsPerDomain (RESOURCE_EXHAUSTED).
   * Usages without a usable bucket id are skipped and counted (`invalid_usage`). Returns how many
   * buckets the stream newly watches (the transport may tick early so they get assignments soon).
   */
  report(stream: BalancerStream, msg: RateLimitQuotaUsageReportsMsg): number {
    if (stream.closed) return 0;
    if (stream.domain === '') {
      if (msg.domain === '') throw new RateLimitError('invalid_request', 'the first RLQS report of a stream must name its domain');
      stream.domain = msg.domain;
    } else if (msg.domain !== '' && msg.domain !== stream.domain) {
      throw new RateLimitError('invalid_request', `RLQS stream changed domain from '${stream.domain}' to '${msg.domain}'; open a new stream for another domain`);
    }
    const now = this.opts.clock.now();
    let watched = 0;
    for (const u of msg.bucketQuotaUsages) {
      const id = u.bucketId;
      if (id === undefined || id.length === 0 || id.some((e) => e.key === '' || e.value === '')) {
        this.stats.invalidUsages.inc();
        continue;
      }
      const state = this.bucketFor(stream, id);
      let inst = state.instances.get(stream.instance);
      if (inst === undefined) {
        if (stream.buckets.size >= this.opts.maxBucketsPerStream) {
          this.stats.refusedBuckets.inc();
          throw new RateLimitError('resource_exhausted', `more than ${this.opts.maxBucketsPerStream} buckets on one RLQS stream`);
        }
        inst = { stream, rate: 0, known: false, lastReportAt: now, lastActiveAt: now, grant: 0, pushed: undefined, pushedStrategy: undefined, pushedAt: 0 };
        state.instances.set(stream.instance, inst);
        stream.buckets.add(state);
        watched++;
      }
      const allowed = u.numRequestsAllowed;
      const denied = u.numRequestsDenied;
      state.ruleStats.allowed.add(allowed);
      state.ruleStats.denied.add(denied);
      inst.lastReportAt = now;
      if (allowed + denied > 0) inst.lastActiveAt = now;
      const elapsed = u.timeElapsed;
      if (elapsed !== undefined && elapsed > 0) {
        const observed = (allowed + denied) / elapsed;
        if (!inst.known || observed >= inst.rate) inst.rate = observed;
        else inst.rate += (observed - inst.rate) * this.opts.demandDecay;
        inst.known = true;
      }
    }
    return watched;
  }

  /** The stream ended: its instances stop reporting; their store entries expire on their own. */
  closeStream(stream: BalancerStream): void {
    if (stream.closed) return;
    stream.closed = true;
    this.streams.delete(stream);
    for (const state of stream.buckets) {
      state.instances.delete(stream.instance);
      if (state.instances.size === 0) this.dropBucket(state);
    }
    stream.buckets.clear();
    this.stats.streams.set(this.streams.size);
  }

  /** Runs one tick (ticks never overlap: a call during one waits for it). */
  tick(): Promise<void> {
    this.ticking ??= this.runTick().finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  get bucketCount(): number {
    return this.buckets.size;
  }

  private bucketFor(stream: BalancerStream, id: BucketEntryMsg[]): BucketState {
    const key = bucketKey(id);
    const storeKey = quotaShareKey(this.opts.keyPrefix, stream.domain, key);
    let state = this.buckets.get(storeKey);
    if (state !== undefined) return state;
    const count = this.perDomain.get(stream.domain) ?? 0;
    if (count >= this.opts.maxBucketsPerDomain) {
      this.stats.refusedBuckets.inc();
      throw new RateLimitError('resource_exhausted', `more than ${this.opts.maxBucketsPerDomain} RLQS buckets in domain '${stream.domain}' on this process`);
    }
    const rules = this.opts.rules();
    const rule = rules.match(stream.domain, id);
    state = {
      domain: stream.domain,
      id: id.map((e) => ({ key: e.key, value: e.value })),
      storeKey,
      rule: rule.rule,
      ruleStats: this.statsOf(rule.domainKnown ? stream.domain : undefined, rule.rule),
      rulesVersion: rules,
      instances: new Map(),
    };
    this.buckets.set(storeKey, state);
    this.perDomain.set(stream.domain, count + 1);
    this.stats.buckets.set(this.buckets.size);
    return state;
  }

  private dropBucket(state: BucketState): void {
    if (!this.buckets.delete(state.storeKey)) return;
    const n = (this.perDomain.get(state.domain) ?? 1) - 1;
    if (n > 0) this.perDomain.set(state.domain, n);
    else this.perDomain.delete(state.domain);
    this.stats.buckets.set(this.buckets.size);
  }

  /** Stats per rule: `ratelimit.rlqs.<domain>.<rule name>.<stat>`; unknown domains share one series. */
  private statsOf(domain: string | undefined, rule: QuotaRule): RuleQuotaStats {
    const base = domain === undefined ? 'ratelimit.rlqs.unknown_domain' : `ratelimit.rlqs.${domain}.${rule.name}`;
    let s = this.ruleStats.get(base);
    if (s === undefined) {
      const st = this.opts.stats;
      s = {
        allowed: st.counter(`${base}.allowed`),
        denied: st.counter(`${base}.denied`),
        assignments: st.counter(`${base}.assignments`),
        abandoned: st.counter(`${base}.abandoned`),
        storeFallbacks: st.counter(`${base}.store_fallback`),
        demand: st.gauge(`${base}.demand`),
      };
      this.ruleStats.set(base, s);
    }
    return s;
  }

  private async runTick(): Promise<void> {
    const o = this.opts;
    const now = o.clock.now();
    const rules = o.rules();
    const entryTtlMs = o.assignmentTtlMs + 2 * o.tickMs;
    const released: { bucket: string; instances: string[] }[] = [];
    const shared: BucketState[] = [];
    const demandByRule = new Map<RuleQuotaStats, number>();

    for (const state of this.buckets.values()) {
      if (state.rulesVersion !== rules) {
        const m = rules.match(state.domain, state.id);
        state.rule = m.rule;
        state.ruleStats = this.statsOf(m.domainKnown ? state.domain : undefined, m.rule);
        state.rulesVersion = rules;
      }
      const gone: string[] = [];
      for (const [id, inst] of state.instances) {
        const silent = now - inst.lastReportAt >= o.abandonAfterMs;
        const idle = o.idleAbandonMs > 0 && now - inst.lastActiveAt >= o.idleAbandonMs;
        if (!silent && !idle) continue;
        inst.stream.pending.push({ bucketId: state.id, action: { kind: 'abandon' } });
        inst.stream.buckets.delete(state);
        state.ruleStats.abandoned.inc();
        gone.push(id);
      }
      for (const id of gone) state.instances.delete(id);
      if (gone.length > 0) released.push({ bucket: state.storeKey, instances: gone });
      if (state.instances.size === 0) {
        this.dropBucket(state);
        continue;
      }
      const q = state.rule.quota;
      if (quotaCapacity(q) === 0) {
        for (const inst of state.instances.values()) this.push(state, inst, strategyForShare(q, 0), now);
        continue;
      }
      shared.push(state);
      let sum = demandByRule.get(state.ruleStats) ?? 0;
      for (const inst of state.instances.values()) sum += inst.known ? inst.rate : 0;
      demandByRule.set(state.ruleStats, sum);
    }
    for (const [s, d] of demandByRule) s.demand.set(d);

    try {
      for (const r of released) await o.store.release(r.bucket, r.instances);
      if (shared.length > 0) await this.balance(shared, now, entryTtlMs);
    } catch (err) {
      if (!(err instanceof StoreError)) throw err;
      this.stats.storeErrors.inc();
      for (const state of shared) this.fallback(state, now);
    }
    this.flush();
  }

  private async balance(shared: readonly BucketState[], now: number, entryTtlMs: number): Promise<void> {
    const o = this.opts;
    const timing = { nowMs: now, entryTtlMs };
    const live = await o.store.exchange(
      shared.map((state) => ({
        bucket: state.storeKey,
        updates: [...state.instances].map(([instance, inst]) => ({
          instance,
          demand: inst.known ? demandUnits(state.rule.quota, inst.rate) : quotaCapacity(state.rule.quota),
        })),
      })),
      timing,
    );
    const reserve = shared.map((state, i) => {
      const entries = live[i]!;
      const cap = quotaCapacity(state.rule.quota);
      const { share } = divideFairly(
        cap,
        entries.map((e) => e.demand),
      );
      const requests: { instance: string; want: number }[] = [];
      entries.forEach((e, j) => {
        const inst = state.instances.get(e.instance);
        if (inst === undefined) return;
        inst.grant = e.grant;
        const desired = share[j]!;
        const keep = e.grant > 0 && Math.abs(desired - e.grant) <= o.hysteresis * e.grant;
        requests.push({ instance: e.instance, want: keep ? e.grant : desired });
      });
      return { bucket: state.storeKey, capacity: cap, requests };
    });
    const granted = await o.store.reserve(reserve, { ...timing, holdMs: o.holdMs });
    shared.forEach((state, i) => {
      const req = reserve[i]!.requests;
      req.forEach((r, j) => {
        const inst = state.instances.get(r.instance);
        if (inst === undefined) return;
        inst.grant = granted[i]![j]!;
        this.push(state, inst, strategyForShare(state.rule.quota, inst.grant), now);
      });
    });
  }

  private fallback(state: BucketState, now: number): void {
    state.ruleStats.storeFallbacks.inc();
    const mode = state.rule.quota.onStoreFailure;
    for (const inst of state.instances.values()) {
      if (mode === 'keep_last') {
        if (inst.pushedStrategy !== undefined) this.push(state, inst, inst.pushedStrategy, now);
      } else {
        this.push(state, inst, { kind: 'blanket_rule', blanketRule: mode === 'allow_all' ? 0 : 1 }, now);
      }
    }
  }

  /** Queues an assignment when the strategy changed or half of its pushed TTL is gone. */
  private push(state: BucketState, inst: LocalInstance, strategy: RateLimitStrategyMsg, now: number): void {
    const text = JSON.stringify(strategy);
    if (text === inst.pushed && now - inst.pushedAt < this.opts.assignmentTtlMs / 2) return;
    inst.pushed = text;
    inst.pushedStrategy = strategy;
    inst.pushedAt = now;
    state.ruleStats.assignments.inc();
    inst.stream.pending.push({
      bucketId: state.id,
      action: { kind: 'quota_assignment', assignmentTimeToLive: this.opts.assignmentTtlMs / 1000, rateLimitStrategy: strategy },
    });
  }

  private flush(): void {
    for (const s of this.streams) {
      if (s.pending.length === 0) continue;
      const actions = s.pending;
      s.pending = [];
      s.sink({ bucketAction: actions });
    }
  }
}
