// Shared by the limiter and service tests: a counter store that records the operations the
// service sends (the observable output of the limiter) and passes them on to the real MemoryStore.
import { FakeClock } from '@rls/testkit';
import { DEFAULT_LIMITER_OPTIONS, MemoryStore, RateLimitService, StatsStore, loadRuleSet, type Algorithm, type CounterOp, type CounterStore, type LimiterOptions, type MaybePromise, type OpResult } from '@rls/engine';

export class RecordingStore implements CounterStore {
  readonly kind = 'recording';
  readonly increments: CounterOp[][] = [];
  /** Batches sent to `execute` (sliding windows and token buckets). */
  readonly executes: CounterOp[][] = [];
  readonly gets: string[][] = [];
  readonly algorithms?: ReadonlySet<Algorithm>;
  /** When set, the next call fails with it (and the flag clears): rejected, or thrown when `failHow` is 'throw'. */
  failNext: Error | undefined;
  /** How the next failure surfaces: a rejected promise (a network store) or a synchronous throw (an in-process store). */
  failHow: 'reject' | 'throw' = 'reject';
  constructor(readonly inner: CounterStore) {
    if (inner.algorithms !== undefined) this.algorithms = inner.algorithms;
  }
  execute(ops: readonly CounterOp[]): MaybePromise<OpResult[]> {
    this.executes.push(ops.map((o) => ({ ...o })));
    const execute = this.inner.execute?.bind(this.inner);
    return this.failOr(() => (execute === undefined ? Promise.reject(new Error('no execute')) : execute(ops)));
  }
  increment(ops: readonly CounterOp[]): MaybePromise<number[]> {
    this.increments.push(ops.map((o) => ({ ...o })));
    return this.failOr(() => this.inner.increment(ops));
  }
  get(keys: readonly string[]): MaybePromise<number[]> {
    this.gets.push([...keys]);
    return this.failOr(() => this.inner.get(keys));
  }
  isConnected(): boolean {
    return this.inner.isConnected();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  /** Sets a counter to an absolute value (INCRBY the difference). */
  async preset(key: string, value: number, windowSeconds = 3600): Promise<void> {
    const [current] = await this.inner.get([key]);
    await this.inner.increment([{ key, addend: value - (current ?? 0), expireSeconds: windowSeconds, windowSeconds }]);
  }
  private failOr<T>(run: () => MaybePromise<T>): MaybePromise<T> {
    const err = this.failNext;
    this.failNext = undefined;
    if (err === undefined) return run();
    if (this.failHow === 'throw') throw err;
    return Promise.reject(err);
  }
}

export interface Harness {
  clock: FakeClock;
  stats: StatsStore;
  store: RecordingStore;
  service: RateLimitService;
}

export function harness(yaml: string | undefined, options: Partial<LimiterOptions>, nowSeconds: number, randomValue = 0): Harness {
  const clock = new FakeClock();
  clock.setSeconds(nowSeconds);
  const stats = new StatsStore();
  const store = new RecordingStore(new MemoryStore({ clock }));
  const service = new RateLimitService({
    store,
    stats,
    clock,
    random: { int: (max) => Math.min(randomValue, max - 1) },
    options: { ...DEFAULT_LIMITER_OPTIONS, expirationJitterMaxSeconds: 0, ...options },
  });
  if (yaml !== undefined) service.setRuleSet(loadRuleSet([{ name: 'rules.yaml', content: yaml }], { mergeDomainConfig: false, stats }));
  return { clock, stats, store, service };
}

/** Counter values of one stats key (shared with the ratelimit tests through the testkit). */
export { ruleCounters } from '@rls/testkit';
