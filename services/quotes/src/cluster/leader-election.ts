import type { Logger } from 'pino';
import type { LeaseStore, LeaseTerm } from './types.js';

export interface LeaderElectionOptions {
  lease: LeaseStore;
  /** Lease name: one ingesting replica per name (`ingest`). */
  name: string;
  /** This replica's identity, unique per process. */
  holder: string;
  /** Lease length (ms). */
  ttlMs: number;
  /** Monotonic milliseconds (performance.now in production; a fake clock in tests). */
  now: () => number;
  log: Logger;
  /** Called once per term when this replica takes the lease. */
  onElected: (term: LeaseTerm) => void;
  /** Called when this replica's term ended (not renewed in time, or taken); it must already have stopped ingesting by then. */
  onLost: (reason: string) => void;
  /** Timers, replaceable in tests. */
  timers?: { setInterval: typeof setInterval; clearInterval: typeof clearInterval; setTimeout: typeof setTimeout; clearTimeout: typeof clearTimeout };
}

/** Fraction of the lease a leader trusts after sending a renewal that then succeeded. */
export const TRUSTED_FRACTION = 0.8;

/**
 * Leader election on a lease with fencing. Every fifth of the lease the replica tries to take or
 * renew it. A renewal that succeeds lets the leader ingest until `sent + 0.8 × lease` on its own
 * monotonic clock, where `sent` is when the renewal was sent: the store started its lease no
 * earlier than that, so it expires no earlier than `sent + lease` on the store's clock, and
 * nobody else can take it before then. `isLeader()` compares the clock synchronously (every
 * ingest step asks it), and a timer at the deadline calls `onLost`; the 20 % margin absorbs
 * clock-rate differences and a late timer. Writes to the shared state also carry the fence, so
 * the database itself refuses a term that has ended.
 */
export class LeaderElection {
  private term: LeaseTerm | undefined;
  private validUntil = -Infinity;
  private interval: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private inflight: Promise<void> | undefined;
  private stopped = false;
  private readonly t: NonNullable<LeaderElectionOptions['timers']>;
  readonly periodMs: number;

  constructor(private readonly o: LeaderElectionOptions) {
    this.t = o.timers ?? { setInterval, clearInterval, setTimeout, clearTimeout };
    this.periodMs = Math.max(50, Math.floor(o.ttlMs / 5));
  }

  /** True while this replica holds the lease by its own clock; ingestion asks before every step. */
  isLeader(): boolean {
    return this.term !== undefined && this.o.now() < this.validUntil;
  }

  /** The current term, while leader. */
  currentTerm(): LeaseTerm | undefined {
    return this.isLeader() ? this.term : undefined;
  }

  start(): void {
    if (this.interval !== undefined || this.stopped) return;
    void this.tick();
    this.interval = this.t.setInterval(() => void this.tick(), this.periodMs);
    this.interval.unref?.();
  }

  /** One attempt to take or renew the lease (also what the timer runs). */
  tick(): Promise<void> {
    this.inflight ??= this.attempt().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async attempt(): Promise<void> {
    if (this.stopped) return;
    const sentAt = this.o.now();
    let fence: number | undefined;
    try {
      fence = await this.o.lease.acquire(this.o.name, this.o.holder, this.o.ttlMs);
    } catch (err) {
      if (this.term !== undefined) this.o.log.warn({ err: (err as Error).message }, 'renewing the ingest lease failed; still leader until the lease runs out');
      return;
    }
    if (this.stopped) return;
    if (fence === undefined) {
      this.lose('another replica holds the ingest lease');
      return;
    }
    // A different fence is a new term: the old one ran out meanwhile. It ends here; the next
    // attempt starts the new term cleanly.
    if (this.term !== undefined && fence !== this.term.fence) {
      this.lose('the ingest lease ran out before it was renewed');
      return;
    }
    // Only a renewal sent while the previous one still held extends the term.
    if (this.term !== undefined && sentAt >= this.validUntil) {
      this.lose('the ingest lease ran out before it was renewed');
      return;
    }
    this.validUntil = sentAt + this.o.ttlMs * TRUSTED_FRACTION;
    this.armDeadline();
    if (this.term === undefined) {
      this.term = { name: this.o.name, holder: this.o.holder, fence };
      this.o.log.info({ fence, holder: this.o.holder }, 'this replica now ingests (took the ingest lease)');
      this.o.onElected(this.term);
    }
  }

  private armDeadline(): void {
    if (this.deadline !== undefined) this.t.clearTimeout(this.deadline);
    this.deadline = this.t.setTimeout(() => {
      this.deadline = undefined;
      if (this.term !== undefined && this.o.now() >= this.validUntil) this.lose('the ingest lease was not renewed in time');
    }, Math.max(0, this.validUntil - this.o.now()));
    this.deadline.unref?.();
  }

  private lose(reason: string): void {
    if (this.term === undefined) return;
    const fence = this.term.fence;
    this.term = undefined;
    this.validUntil = -Infinity;
    if (this.deadline !== undefined) this.t.clearTimeout(this.deadline);
    this.deadline = undefined;
    this.o.log.error({ fence, reason }, 'this replica stopped ingesting: lost the ingest lease');
    this.o.onLost(reason);
  }

  /** Stops competing; a leader gives the lease up so another replica takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.interval !== undefined) this.t.clearInterval(this.interval);
    if (this.deadline !== undefined) this.t.clearTimeout(this.deadline);
    await this.inflight;
    const wasLeader = this.term !== undefined;
    this.term = undefined;
    this.validUntil = -Infinity;
    if (wasLeader) await this.o.lease.release(this.o.name, this.o.holder).catch((err: unknown) => this.o.log.warn({ err: (err as Error).message }, 'releasing the ingest lease failed; it expires on its own'));
  }
}
