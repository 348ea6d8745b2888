// What the operator page shows, kept while the service runs (docs/ratelimit.md, "Operator page"):
// the rules and their reload history (rules-view.ts), the top over-limit descriptors (top-k.ts,
// sampled), per-rule rates (rate-history.ts, from the statistics every 10 s) and store latency
// (store-latency.ts, one round trip in 16). It is attached by the composition root as wrappers
// around the decision function and the store; neither the engine nor the transports know it.
import { Code, isPromise, type Clock, type CounterStore, type DescriptorStatus, type RandomSource, type RateLimitRequest, type StatsStore } from '@rls/engine';
import { decodeRateLimitRequest, type RequestLimits } from '@rls/rls-proto';
import type { EncodedShouldRateLimitFn, EncodedShouldRateLimitWrapper, ShouldRateLimitFn } from '../server/grpc-server-types.js';
import { BUCKET_MS, RateHistory, type RateHistoryView } from './rate-history.js';
import { displayText } from './display-text.js';
import { RulesRecorder, type RulesView } from './rules-view.js';
import { LatencyWindow, timedStore, type LatencyView } from './store-latency.js';
import { WindowedTopK } from './top-k.js';

/** Entries of one descriptor the top list keeps (deeper entries are dropped and marked). */
export const MAX_TOP_ENTRIES = 8;
/** How many of the top list the state shows. */
export const TOP_SHOWN = 20;

export interface TopItem {
  readonly domain: string;
  readonly entries: readonly { readonly key: string; readonly value: string }[];
  /** True when the descriptor had more than MAX_TOP_ENTRIES entries. */
  readonly more: boolean;
}

function sameEntries(a: readonly { key: string; value: string }[], b: readonly { key: string; value: string }[], n: number): boolean {
  if (a.length !== n) return false;
  for (let i = 0; i < n; i++) if (a[i]!.key !== b[i]!.key || a[i]!.value !== b[i]!.value) return false;
  return true;
}

export interface OperatorMonitorOptions {
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly stats: StatsStore;
  /** OPERATOR_TOP_SIZE. */
  readonly topSize: number;
  /** OPERATOR_SAMPLE_EVERY. */
  readonly sampleEvery: number;
  /** OPERATOR_CHART_RULES. */
  readonly chartRules: number;
  /** The request bounds, to decode a sampled memo answer's request. */
  readonly requestLimits?: RequestLimits | undefined;
}

/** Live facts the monitor does not own, read when the state is asked for. */
export interface OperatorContext {
  /** `kind` is the store's own name; `description` says what the settings configured (e.g. `redis sentinel`, `embedded memory`). */
  store(): { kind: string; description: string; connected: boolean };
  health(): readonly HealthLine[];
  localCache(): { entries: number; budgetBytes: number; hits: number; misses: number } | undefined;
  workers(): { mode: 'single' | 'worker'; id?: number; count: number } & Partial<WorkerSupervision>;
}

/** Worker mode: the primary's state of the workers (cluster/worker-supervisor.ts). Times in ms since the epoch. */
export interface WorkerSupervision {
  readonly serving: number;
  /** Replacements in a row that exited before listening. */
  readonly startFailures: number;
  readonly failingSince?: number;
  readonly lastFailure?: { readonly at: number; readonly reason: string };
  readonly nextStartAt?: number;
}

/** One health component as the page shows it. */
export interface HealthLine {
  /** The component's name in /healthcheck and the logs (upstream's: `redis` for any counter store). */
  readonly component: string;
  /** What the page calls it: the store component names the store actually configured. */
  readonly label: string;
  readonly healthy: boolean;
}

export interface OperatorState {
  readonly now: number;
  readonly process: { readonly pid: number; readonly uptimeSeconds: number; readonly workers: ReturnType<OperatorContext['workers']> };
  readonly top: {
    readonly windowMs: number;
    readonly sampleEvery: number;
    readonly capacity: number;
    readonly entries: readonly {
      readonly domain: string;
      readonly entries: TopItem['entries'];
      readonly more: boolean;
      readonly count: number;
      readonly error: number;
      /** A descriptor that is not listed may have been counted more than this one's lower bound (`count - error`). */
      readonly uncertain: boolean;
    }[];
    /** Descriptors the sketch replaced in the window (more distinct over-limit descriptors than `capacity` in a slot). */
    readonly dropped: number;
    /** The most a descriptor that is not listed can have been counted in the window (estimated over-limit hits). */
    readonly hiddenMax: number;
    /** False when a descriptor that is not listed may rank above a listed one: the list cannot be trusted. */
    readonly complete: boolean;
  };
  readonly rates: RateHistoryView;
  readonly store: { readonly kind: string; readonly description: string; readonly connected: boolean; readonly latency: LatencyView };
  readonly health: readonly HealthLine[];
  readonly localCache: ({ readonly enabled: true } & NonNullable<ReturnType<OperatorContext['localCache']>>) | { readonly enabled: false };
}

export class OperatorMonitor {
  readonly rules = new RulesRecorder();
  private readonly top: WindowedTopK<TopItem>;
  private readonly rates: RateHistory;
  private readonly latency = new LatencyWindow();
  private countdown: number;
  private lastId: { domain: string; entries: readonly { key: string; value: string }[]; id: string } | undefined;
  /** Calls seen (decided or answered by the memo), for the request rate. */
  private decisions = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly startedAt: number;

  constructor(private readonly opts: OperatorMonitorOptions) {
    this.top = new WindowedTopK<TopItem>(opts.topSize);
    this.rates = new RateHistory(opts.stats, opts.chartRules, () => this.decisions);
    this.countdown = this.gap();
    this.startedAt = opts.clock.now();
  }

  /** Random spacing with mean `sampleEvery` (1 = every one), so periodic traffic is not aliased. */
  private gap(): number {
    const s = this.opts.sampleEvery;
    return s <= 1 ? 1 : 1 + this.opts.random.int(2 * s - 1);
  }

  /**
   * Whether this call is one of the sampled ones (about one in OPERATOR_SAMPLE_EVERY). Sampling
   * whole calls keeps the others free of any extra work: no promise reaction, no status loop.
   */
  private sampled(): boolean {
    this.decisions += 1;
    if (--this.countdown > 0) return false;
    this.countdown = this.gap();
    return true;
  }

  /** Counts the over-limit descriptors of a sampled answer, each with the sampling weight; `request` is built only when there is one. */
  private observe(statuses: readonly DescriptorStatus[], request: () => RateLimitRequest | undefined): void {
    let req: RateLimitRequest | undefined;
    for (let i = 0; i < statuses.length; i++) {
      if (statuses[i]!.code !== Code.OVER_LIMIT) continue;
      req ??= request();
      const d = req?.descriptors[i];
      if (req === undefined || d === undefined) return;
      this.count(req.domain, d.entries);
    }
  }

  private count(domain: string, entries: readonly { key: string; value: string }[]): void {
    // The id is built from the display text (escaped and cut), so it is bounded too; the label only
    // for a newcomer.
    // Over-limit traffic mostly repeats one descriptor: the last id is reused (building and hashing
    // a fresh string is most of a sample's cost).
    const n = Math.min(entries.length, MAX_TOP_ENTRIES);
    let id: string;
    const last = this.lastId;
    if (last !== undefined && last.domain === domain && sameEntries(last.entries, entries, n)) id = last.id;
    else {
      id = displayText(domain);
      for (let i = 0; i < n; i++) id += '\u0000' + displayText(entries[i]!.key) + '\u0001' + displayText(entries[i]!.value);
      this.lastId = { domain, entries: entries.slice(0, n).map((e) => ({ key: e.key, value: e.value })), id };
    }
    const item = (): TopItem => ({
      domain: displayText(domain),
      entries: entries.slice(0, n).map((e) => ({ key: displayText(e.key), value: displayText(e.value) })),
      more: entries.length > MAX_TOP_ENTRIES,
    });
    this.top.add(id, item, this.opts.sampleEvery, this.opts.clock.now());
  }

  /** Around the decision function (HTTP /json, and gRPC calls the answer memo did not answer). */
  wrapDecision(fn: ShouldRateLimitFn): ShouldRateLimitFn {
    return (req, ctx) => {
      if (!this.sampled()) return fn(req, ctx);
      const res = fn(req, ctx);
      if (!isPromise(res)) {
        this.observe(res.statuses, () => req);
        return res;
      }
      return res.then((r) => {
        this.observe(r.statuses, () => req);
        return r;
      });
    };
  }

  /**
   * Outside the local answer memo: its answers are observed here, decoding the request bytes only
   * when a descriptor is sampled. Answers the decision function produced (at once or later) were
   * observed by wrapDecision and pass untouched.
   */
  readonly wrapMemo: EncodedShouldRateLimitWrapper = (next: EncodedShouldRateLimitFn): EncodedShouldRateLimitFn => {
    const limits = this.opts.requestLimits;
    // Memo answers are repeats of the same bytes: the last decoded request is kept for the next sample.
    let lastPayload: Buffer | undefined;
    let lastRequest: RateLimitRequest | undefined;
    const decode = (payload: Buffer): RateLimitRequest | undefined => {
      if (lastPayload !== undefined && lastPayload.equals(payload)) return lastRequest;
      try {
        lastRequest = decodeRateLimitRequest(payload, limits);
      } catch {
        lastRequest = undefined;
      }
      // A copy: the transport may reuse the payload's memory.
      lastPayload = Buffer.from(payload);
      return lastRequest;
    };
    return (payload, ctx) => {
      // A call the decision function answered went through wrapDecision, which counted it
      // (`decisions`), whether it answered at once or later: only the memo's own answers are left.
      const seen = this.decisions;
      const answer = next(payload, ctx);
      if (isPromise(answer) || this.decisions !== seen || !this.sampled()) return answer;
      this.observe(answer.response.statuses, () => decode(payload));
      return answer;
    };
  };

  /** The store with one round trip in 16 timed. */
  timeStore(store: CounterStore): CounterStore {
    return timedStore(store, this.latency, this.opts.clock);
  }

  /** Starts the 10-second rate sampling (the first sample is the baseline). */
  start(): void {
    if (this.timer !== undefined) return;
    this.rates.sample(this.opts.clock.now());
    this.timer = setInterval(() => this.sampleRates(), BUCKET_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One rate bucket now (the timer's job; tests call it with an injected clock). */
  sampleRates(): void {
    this.rates.sample(this.opts.clock.now());
  }

  rulesView(): RulesView {
    return this.rules.view();
  }

  state(ctx: OperatorContext): OperatorState {
    const now = this.opts.clock.now();
    const cache = ctx.localCache();
    const top = this.top.top(Math.min(TOP_SHOWN, this.top.capacity), now);
    return {
      now,
      process: { pid: process.pid, uptimeSeconds: Math.round((now - this.startedAt) / 1000), workers: ctx.workers() },
      top: {
        windowMs: this.top.slotMs * 2,
        sampleEvery: this.opts.sampleEvery,
        capacity: this.top.capacity,
        entries: top.entries.map((e) => ({ domain: e.item.domain, entries: e.item.entries, more: e.item.more, count: e.count, error: e.error, uncertain: e.uncertain })),
        dropped: top.dropped,
        hiddenMax: top.hiddenMax,
        complete: top.complete,
      },
      rates: this.rates.view(),
      store: { ...ctx.store(), latency: this.latency.view(now) },
      health: ctx.health(),
      localCache: cache === undefined ? { enabled: false } : { enabled: true, ...cache },
    };
  }
}
