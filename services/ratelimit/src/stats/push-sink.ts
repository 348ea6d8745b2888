// Periodic push of the stats registry (gostats' model, as upstream): every flush interval each
// counter is sent as its change since the previous flush, and only when that change is non-zero;
// each gauge is sent with its current value; timers are sent on every observation (integer ms).
// The same sink serves the plain statsd, DogStatsD and stdout-logging variants: only the line
// formatter and the transport differ.
import type { Logger } from '../logger.js';
import type { StatsdLineFormatter } from './statsd-line.js';
import type { StatsdTransport } from './statsd-transport.js';
import type { Counter, StatsStore, Timer } from '@rls/engine';

/** Injected interval timer, so tests drive flushes themselves. */
export interface IntervalScheduler {
  every(ms: number, fn: () => void): { cancel(): void };
}

export const realIntervalScheduler: IntervalScheduler = {
  every(ms, fn) {
    const h = setInterval(fn, ms);
    // A stats flush must not keep a stopping process alive.
    h.unref();
    return { cancel: () => clearInterval(h) };
  },
};

export interface PushSinkOptions {
  /** STATS_FLUSH_INTERVAL in ms. */
  flushIntervalMs: number;
}

export interface PushSinkDeps {
  store: StatsStore;
  formatter: StatsdLineFormatter;
  transport: StatsdTransport;
  logger: Logger;
  scheduler?: IntervalScheduler;
}

export class StatsPushSink {
  /** Counter total at the last flush; kept here (not in Counter.pending) so sinks stay independent. */
  private readonly flushed = new Map<Counter, number>();
  private interval: { cancel(): void } | undefined;
  private unsubscribeTimers: (() => void) | undefined;
  private stopped = false;

  constructor(
    private readonly opts: PushSinkOptions,
    private readonly deps: PushSinkDeps,
  ) {}

  /** Subscribes to timers and starts the flush interval. */
  start(): void {
    if (this.interval !== undefined || this.stopped) return;
    this.unsubscribeTimers = this.deps.store.onTimer((_name, ms, timer) => this.onTimer(timer, ms));
    const scheduler = this.deps.scheduler ?? realIntervalScheduler;
    if (this.opts.flushIntervalMs > 0) this.interval = scheduler.every(this.opts.flushIntervalMs, () => this.flush());
  }

  private onTimer(timer: Timer, ms: number): void {
    if (this.stopped) return;
    // Upstream sends whole milliseconds (Go duration / time.Millisecond truncates).
    this.deps.transport.write(this.deps.formatter.line(timer, Math.trunc(ms), 'ms'));
  }

  /** Sends counter deltas and gauge values now. Never throws. */
  flush(): void {
    try {
      const { formatter, transport, store } = this.deps;
      for (const c of store.allCounters()) {
        const last = this.flushed.get(c) ?? 0;
        const delta = c.total - last;
        if (delta === 0) continue;
        this.flushed.set(c, c.total);
        transport.write(formatter.line(c, delta, 'c'));
      }
      for (const g of store.allGauges()) {
        if (!Number.isFinite(g.current)) continue;
        transport.write(formatter.line(g, g.current, 'g'));
      }
      transport.flush();
    } catch (err) {
      this.deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'stats flush failed');
    }
  }

  /** Final flush, then closes the transport. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.interval?.cancel();
    this.interval = undefined;
    this.unsubscribeTimers?.();
    this.flush();
    this.stopped = true;
    await this.deps.transport.close();
  }
}
