import { DEFAULT_LIMITER_OPTIONS, loadRuleSet, MemoryStore, PreparedRequest, RateLimitService, readRuleFiles, StatsStore, type RandomSource } from '@rls/engine';
import type { RateLimitRequestMsg, RateLimitResponseMsg } from '@rls/rls-proto';
import type { Clock } from '../clock.js';
import type { MaybePromise } from '../maybe-promise.js';
import type { PreparedDecision, RateLimitDecider } from './decider.js';

export interface EmbeddedDeciderOptions {
  /** Directory of rule files (the shipped `ratelimit/` or RATELIMIT_RULES_DIR). */
  rulesDir: string;
  clock: Clock;
  random: RandomSource;
  /** Most bytes the counters may be charged (MemoryStore maxBytes; RATELIMIT_MEMORY_MAX_BYTES). */
  maxBytes?: number | undefined;
  /** Optional extra cap on counters kept. */
  maxKeys?: number | undefined;
}

/**
 * The rate limit service's own decision engine and memory store, in this process: the same rule
 * files, the same window arithmetic and statuses as a `ratelimit` deployment with
 * BACKEND_TYPE=memory. Counters are per process, so several quotes servers each enforce the
 * limits on their own; use remote mode to share counters.
 */
export class EmbeddedDecider implements RateLimitDecider {
  readonly kind = 'embedded';
  private readonly service: RateLimitService;
  constructor(opts: EmbeddedDeciderOptions) {
    const stats = new StatsStore();
    const rules = loadRuleSet(readRuleFiles(opts.rulesDir, { ignoreDotfiles: true }), { mergeDomainConfig: false, stats });
    // No expiry jitter: a counter never outlives its window here, and none is shared with others.
    const options = { ...DEFAULT_LIMITER_OPTIONS, expirationJitterMaxSeconds: 0 };
    this.service = new RateLimitService({ store: new MemoryStore({ clock: opts.clock, maxBytes: opts.maxBytes, maxKeys: opts.maxKeys }), stats, clock: opts.clock, random: opts.random, options });
    this.service.setRuleSet(rules);
  }
  /**
   * The engine's one decision method: answered at once, since every step of it does on the memory
   * store (a failure is thrown, never a rejected promise).
   */
  shouldRateLimit(req: RateLimitRequestMsg | PreparedDecision): MaybePromise<RateLimitResponseMsg> {
    // The message shapes are structurally the engine's domain types (see rls-messages.ts).
    if ('request' in req) {
      if (!(req instanceof PreparedRequest)) throw new TypeError('not a request prepared by this decider');
      return this.service.shouldRateLimitPrepared(req);
    }
    return this.service.shouldRateLimit(req);
  }
  /** The engine's PreparedRequest (rule matches and counter keys kept between calls). */
  prepare(req: RateLimitRequestMsg): PreparedDecision {
    return this.service.prepare(req);
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}
