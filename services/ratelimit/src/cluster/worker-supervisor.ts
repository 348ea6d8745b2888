// What the primary of worker mode does when a worker exits (issue 23, finding 6). A worker that
// dies after it started is replaced; so is a replacement that cannot start — a certificate file
// broken on disk while cert-manager rotates it, a store briefly unreachable — while the other
// workers keep serving: the primary retries with the one backoff formula (@rls/backoff: 0.5 s
// doubling to 10 s, reset once a worker listens), logs every failure with the worker's own reason,
// counts it (ratelimit.workers.start_failures) and sends its state to every worker for the
// operator page. Only when no worker has ever listened — the service's own start, where a broken
// configuration should stop the deployment — does a worker that cannot start stop the service.
// Time and timers are injected, so the tests pin every delay.
import { baseDelayMs, type ExponentialBackoff } from '@rls/backoff';
import type { StatsStore } from '@rls/engine';
import type { Logger } from '../logger.js';
import { START_FAILURE_REASON_MAX, type WorkersStatus } from './worker-status.js';

/** Doubling, no jitter: one primary restarts its own workers, nothing to spread. */
export const RESPAWN_BACKOFF: ExponentialBackoff = { initialMs: 500, maxMs: 10_000, jitter: 'none' };

export const WORKERS_SERVING = 'ratelimit.workers.serving';
export const WORKERS_START_FAILURES = 'ratelimit.workers.start_failures';
export const WORKERS_UNEXPECTED_EXITS = 'ratelimit.workers.unexpected_exits';

export interface WorkerSupervisorOptions {
  /** WORKERS. */
  wanted: number;
  stats: StatsStore;
  logger: Logger;
  /** Forks one worker. */
  fork: () => void;
  /** Stops the service (a worker failed to start before any worker ever listened). */
  giveUp: (reason: string) => void;
  /** Sends the new state to every worker. */
  publish: (status: WorkersStatus) => void;
  now: () => number;
  /** Calls `fn` after `ms` (a timer that does not keep the process alive). */
  delay: (fn: () => void, ms: number) => void;
  backoff?: ExponentialBackoff | undefined;
}

export class WorkerSupervisor {
  /** Listening workers: id → pid. */
  private readonly serving = new Map<number, number | undefined>();
  private readonly reasons = new Map<number, string>();
  private everServed = false;
  private announced = false;
  private stopped = false;
  /** Exits in a row since a worker last started listening: the backoff's failure count. */
  private exitsInRow = 0;
  private startFailures = 0;
  private failingSince: number | undefined;
  private lastFailure: { at: number; reason: string } | undefined;
  /** When the forks waiting for their delay are due. */
  private readonly due: number[] = [];
  private readonly backoff: ExponentialBackoff;
  private readonly servingGauge;
  private readonly startFailureCount;
  private readonly exitCount;

  constructor(private readonly o: WorkerSupervisorOptions) {
    this.backoff = o.backoff ?? RESPAWN_BACKOFF;
    this.servingGauge = o.stats.gauge(WORKERS_SERVING);
    this.startFailureCount = o.stats.counter(WORKERS_START_FAILURES);
    this.exitCount = o.stats.counter(WORKERS_UNEXPECTED_EXITS);
  }

  /** The worker's listeners are open. */
  ready(id: number, pid: number | undefined): void {
    this.serving.set(id, pid);
    this.everServed = true;
    this.exitsInRow = 0;
    if (this.announced) this.o.logger.info({ worker: id, pid, ...(this.startFailures > 0 ? { failedStarts: this.startFailures } : {}) }, 'replacement worker listening');
    this.startFailures = 0;
    this.failingSince = undefined;
    if (!this.announced && this.serving.size >= this.o.wanted) {
      this.announced = true;
      this.o.logger.info({ workers: this.o.wanted, pids: [...this.serving.values()] }, 'all workers listening');
    }
    this.changed();
  }

  /** A worker said why it cannot start (it exits next). */
  startFailed(id: number, reason: string): void {
    this.reasons.set(id, reason.slice(0, START_FAILURE_REASON_MAX));
  }

  /** A worker exited while the service is not stopping. */
  exited(id: number, code: number | null, signal: string | null): void {
    const wasServing = this.serving.delete(id);
    const reason = this.reasons.get(id) ?? (signal !== null ? `killed by ${signal}` : `exited with code ${String(code)}`);
    this.reasons.delete(id);
    if (this.stopped) return;
    if (!wasServing && !this.everServed) {
      this.o.logger.fatal({ worker: id, code, signal, reason }, 'worker failed to start; stopping the service');
      this.o.giveUp('worker start failure');
      return;
    }
    const delayMs = baseDelayMs(this.backoff, this.exitsInRow);
    this.exitsInRow = Math.min(this.exitsInRow + 1, 30);
    const serving = this.serving.size;
    if (wasServing) {
      this.exitCount.inc();
      this.o.logger.error({ worker: id, code, signal, serving, respawnInMs: delayMs }, 'worker died; starting a replacement');
    } else {
      const now = this.o.now();
      this.startFailures++;
      this.failingSince ??= now;
      this.lastFailure = { at: now, reason };
      this.startFailureCount.inc();
      this.o.logger.error(
        { worker: id, code, signal, reason, failuresInRow: this.startFailures, serving, wanted: this.o.wanted, retryInMs: delayMs },
        serving > 0 ? 'replacement worker failed to start; the other workers keep serving; retrying' : 'replacement worker failed to start; no worker is serving; retrying',
      );
    }
    const at = this.o.now() + delayMs;
    this.due.push(at);
    this.o.delay(() => this.forkDue(at), delayMs);
    this.changed();
  }

  /** The service is stopping: no more forks. */
  stop(): void {
    this.stopped = true;
  }

  status(): WorkersStatus {
    const s: WorkersStatus = { t: 'rls-workers', wanted: this.o.wanted, serving: this.serving.size, startFailures: this.startFailures };
    if (this.failingSince !== undefined) s.failingSince = this.failingSince;
    if (this.lastFailure !== undefined) s.lastFailure = this.lastFailure;
    if (this.due.length > 0) s.nextStartAt = Math.min(...this.due);
    return s;
  }

  private forkDue(at: number): void {
    const i = this.due.indexOf(at);
    if (i >= 0) this.due.splice(i, 1);
    if (this.stopped) return;
    this.o.fork();
    this.changed();
  }

  private changed(): void {
    this.servingGauge.set(this.serving.size);
    this.o.publish(this.status());
  }
}
