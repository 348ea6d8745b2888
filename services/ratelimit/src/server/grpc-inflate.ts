// Inflating gzip-compressed gRPC request messages without letting a few KB on the wire become
// gigabytes in the process (issue 23, finding 3: 600 streams of a 4 KB message inflating to 4 MB
// each took one connection's process from 72 MB to 2.5 GB).
//
// Two steps, because almost every real message is small:
// - inflateSmall: synchronously, at most SMALL_INFLATE_BYTES of output (about 5 µs for a rate
//   limit request, a tenth of a round trip through the thread pool); nothing outlives the call,
//   so there is nothing to count.
// - inflateStreaming: the messages that inflate to more, through a zlib stream whose output is
//   counted chunk by chunk against the request budgets (the caller's `hold`), stopped as soon as
//   it passes the message limit or a budget refuses — never inflated whole and checked after.
//   An InflateScheduler runs the process's streaming inflations one at a time, connections in
//   turn, paced to GRPC_INFLATE_BYTES_PER_SECOND, so the process holds one zlib stream (its
//   state is counted too: INFLATER_BYTES) and inflation cannot take the CPU from other clients.
import { createGunzip, gunzipSync } from 'node:zlib';

/** Output up to which a message is inflated synchronously (and beyond which it takes the streaming path). */
export const SMALL_INFLATE_BYTES = 16 * 1024;
/**
 * Output chunk of the streaming path: zlib allocates one buffer of this size per chunk and the
 * event loop handles one callback per chunk. 64 KiB costs the event loop about half of what zlib's
 * default 16 KiB does per inflated byte (1.2 ms instead of 2.4 ms for 4 MB); larger chunks save
 * a little more but make every message, however small, allocate that much.
 */
export const INFLATE_CHUNK_BYTES = 64 * 1024;
/**
 * What one streaming inflation holds besides its output: zlib's state and 32 KiB window
 * (about 40 KiB) and the output chunk being filled (INFLATE_CHUNK_BYTES), rounded up.
 */
export const INFLATER_BYTES = 128 * 1024;

/**
 * What an inflation of `inflatedBytes` costs against the pace: its output, at least one chunk
 * (zlib allocated that much however little came out).
 */
export function paceCost(inflatedBytes: number): number {
  return Math.max(inflatedBytes, INFLATE_CHUNK_BYTES);
}

export const INFLATE_OK = 0;
/** The output passed the message limit. */
export const INFLATE_TOO_LARGE = 1;
/** A budget refused the next chunk (the reason is the refusal message). */
export const INFLATE_OVER_BUDGET = 2;
/** Not valid gzip data. */
export const INFLATE_CORRUPT = 3;
/** Cancelled by the caller (stream reset, deadline). */
export const INFLATE_CANCELLED = 4;

export interface InflateResult {
  readonly code: number;
  /** The inflated message (INFLATE_OK). */
  readonly out?: Buffer | undefined;
  /** The budget's refusal, or zlib's error message. */
  readonly reason?: string | undefined;
}

const TOO_LARGE: InflateResult = { code: INFLATE_TOO_LARGE };
const CANCELLED: InflateResult = { code: INFLATE_CANCELLED };

/**
 * Inflates `payload` if it inflates to at most SMALL_INFLATE_BYTES (and `maxOutput`); undefined
 * when it inflates to more. Synchronous: the work is bounded by the small output (plus the
 * compressed input, which the sender paid for byte for byte). A gzip member ends with its size
 * modulo 2^32: when that says more than a small message, the attempt is skipped (600 bombs
 * arriving together cost the event loop 50 ms in attempts). The size only picks the path: a
 * sender that lies gets one bounded attempt, a multi-member message the attempt or the stream.
 */
export function inflateSmall(payload: Buffer, maxOutput: number): InflateResult | undefined {
  const cap = Math.min(SMALL_INFLATE_BYTES, maxOutput);
  if (payload.length >= GZIP_MIN_BYTES && payload.readUInt32LE(payload.length - 4) > cap) return cap < maxOutput ? undefined : TOO_LARGE;
  try {
    // One byte more than the cap per chunk: a larger message is refused after the first chunk.
    return { code: INFLATE_OK, out: gunzipSync(payload, { maxOutputLength: cap, chunkSize: cap + 1 }) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_BUFFER_TOO_LARGE') return { code: INFLATE_CORRUPT, reason: (err as Error).message };
    return cap < maxOutput ? undefined : TOO_LARGE;
  }
}

/** A gzip header (10 bytes), an empty deflate stream (2) and the trailer (8). */
const GZIP_MIN_BYTES = 20;

/** A streaming inflation in progress. */
export interface Inflation {
  /** Stops it; `done` is called with INFLATE_CANCELLED (unless it already finished). */
  cancel(): void;
}

/**
 * Inflates `payload` in INFLATE_CHUNK_BYTES chunks. Each chunk is passed to `hold` before it is
 * kept: a refusal (a message) stops the inflation at once, as does output beyond `maxOutput`.
 * `done` is called exactly once, asynchronously.
 */
export function inflateStreaming(payload: Buffer, maxOutput: number, hold: (n: number) => string | undefined, done: (r: InflateResult) => void): Inflation {
  const z = createGunzip({ chunkSize: INFLATE_CHUNK_BYTES });
  const parts: Buffer[] = [];
  let total = 0;
  let finished = false;
  const finish = (r: InflateResult): void => {
    if (finished) return;
    finished = true;
    parts.length = 0;
    done(r);
  };
  const stop = (r: InflateResult): void => {
    z.destroy();
    finish(r);
  };
  z.on('data', (chunk: Buffer) => {
    if (finished) return;
    total += chunk.length;
    if (total > maxOutput) {
      stop(TOO_LARGE);
      return;
    }
    const refused = hold(chunk.length);
    if (refused !== undefined) {
      stop({ code: INFLATE_OVER_BUDGET, reason: refused });
      return;
    }
    if (!finished) parts.push(chunk); // `hold` may have led to cancel()
  });
  z.on('end', () => {
    if (finished) return;
    const out = parts.length === 1 ? parts[0]! : Buffer.concat(parts, total);
    finish({ code: INFLATE_OK, out });
  });
  z.on('error', (err: Error) => finish({ code: INFLATE_CORRUPT, reason: err.message }));
  z.end(payload);
  return { cancel: () => stop(CANCELLED) };
}

/** One streaming inflation; it calls `done` once, with the bytes it inflated (whether it finished or stopped). */
export type InflateJob = (done: (inflatedBytes: number) => void) => void;

/** How fast the process may inflate (GRPC_INFLATE_BYTES_PER_SECOND), on an injected clock. */
export interface InflatePacing {
  readonly bytesPerSecond: number;
  readonly now: () => number;
  /** Calls `fn` after `ms` (a timer that does not keep the process alive). */
  readonly delay: (fn: () => void, ms: number) => void;
}

/** One connection's queue of streaming inflations, in arrival order; its scheduler runs them. */
export class InflateLane {
  private readonly jobs: (InflateJob | undefined)[] = [];
  private head = 0;
  /** In the scheduler's ring of lanes with work. */
  inRing = false;

  constructor(private readonly scheduler: InflateScheduler) {}

  /** Queues `job`; it runs after the jobs before it, when the scheduler gets to this lane. */
  enter(job: InflateJob): void {
    this.jobs.push(job);
    this.scheduler.ready(this);
  }

  /** Jobs waiting for their turn. */
  get queued(): number {
    return this.jobs.length - this.head;
  }

  take(): InflateJob | undefined {
    if (this.head === this.jobs.length) return undefined;
    const job = this.jobs[this.head];
    this.jobs[this.head++] = undefined;
    if (this.head === this.jobs.length) {
      this.jobs.length = 0;
      this.head = 0;
    }
    return job;
  }
}

/**
 * The process's streaming inflations: one at a time, connections in turn (one message from each
 * lane with work, round robin), paced to `bytesPerSecond` of output by a token bucket holding at
 * most one second's worth. Inflating costs about 0.5 ns of a thread-pool thread and, in chunk
 * callbacks and copies, 0.1-0.4 ns of the event loop per byte: 4 KB of gzip can buy 4 MB of
 * that, so without pacing a few connections of bombs took a well-behaved client's p99 latency
 * from 9 to 109 ms (bench/hostile.sh gzip-bomb). Queued messages hold only their compressed
 * bytes, counted in their connection's budget, so a client that queues many stalls on flow
 * control instead of growing memory.
 */
export class InflateScheduler {
  private readonly ring: (InflateLane | undefined)[] = [];
  private ringHead = 0;
  private running = false;
  private pumping = false;
  private sleeping = false;
  private tokens: number;
  private refilledAt: number;
  private readonly burst: number;
  private readonly finished = (inflatedBytes: number): void => {
    this.tokens -= inflatedBytes;
    this.running = false;
    this.pump();
  };
  private readonly wake = (): void => {
    this.sleeping = false;
    this.pump();
  };

  constructor(private readonly pacing: InflatePacing) {
    this.burst = pacing.bytesPerSecond;
    this.tokens = this.burst;
    this.refilledAt = pacing.now();
  }

  /** A new lane (one per connection). */
  lane(): InflateLane {
    return new InflateLane(this);
  }

  /** Lanes with work waiting their turn. */
  get waitingLanes(): number {
    return this.ring.length - this.ringHead;
  }

  ready(lane: InflateLane): void {
    if (!lane.inRing) {
      lane.inRing = true;
      this.ring.push(lane);
    }
    this.pump();
  }

  // A loop rather than recursion: jobs that finish at once (cancelled calls) must not deepen the stack.
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    while (!this.running && !this.sleeping && this.ringHead < this.ring.length) {
      const waitMs = this.waitMs();
      if (waitMs > 0) {
        this.sleeping = true;
        this.pacing.delay(this.wake, waitMs);
        break;
      }
      const lane = this.ring[this.ringHead]!;
      this.ring[this.ringHead++] = undefined;
      const job = lane.take();
      if (lane.queued > 0) this.ring.push(lane);
      else lane.inRing = false;
      if (this.ringHead > 1024 && this.ringHead * 2 > this.ring.length) {
        this.ring.splice(0, this.ringHead);
        this.ringHead = 0;
      }
      if (job === undefined) continue;
      this.running = true;
      job(this.finished);
    }
    this.pumping = false;
  }

  /** Milliseconds until the bucket is positive again (0: a job may start now). */
  private waitMs(): number {
    const now = this.pacing.now();
    const rate = this.pacing.bytesPerSecond;
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.refilledAt) * rate) / 1000);
    this.refilledAt = now;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / rate);
  }
}
