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
//   An InflateLane runs one connection's streaming inflations one at a time, so a connection
//   holds at most one zlib stream (its state is counted too: INFLATER_BYTES).
import { createGunzip, gunzipSync } from 'node:zlib';

/** Output up to which a message is inflated synchronously (and beyond which it takes the streaming path). */
export const SMALL_INFLATE_BYTES = 16 * 1024;
/**
 * Output chunk of the streaming path. 64 KiB costs the event loop a quarter of what zlib's
 * default 16 KiB does per inflated byte (0.6 ms instead of 2.4 ms for 4 MB: one callback per chunk).
 */
export const INFLATE_CHUNK_BYTES = 64 * 1024;
/**
 * What one streaming inflation holds besides its output: zlib's state and 32 KiB window
 * (about 40 KiB) and the output chunk being filled (INFLATE_CHUNK_BYTES), rounded up.
 */
export const INFLATER_BYTES = 128 * 1024;

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
 * compressed input, which the sender paid for byte for byte).
 */
export function inflateSmall(payload: Buffer, maxOutput: number): InflateResult | undefined {
  const cap = Math.min(SMALL_INFLATE_BYTES, maxOutput);
  try {
    return { code: INFLATE_OK, out: gunzipSync(payload, { maxOutputLength: cap, chunkSize: SMALL_INFLATE_BYTES }) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_BUFFER_TOO_LARGE') return { code: INFLATE_CORRUPT, reason: (err as Error).message };
    return cap < maxOutput ? undefined : TOO_LARGE;
  }
}

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

/**
 * One connection's streaming inflations, one at a time in arrival order: a connection holds at
 * most one zlib stream, and a client's bombs queue behind each other instead of beside everyone
 * else's work. A queued message holds only its compressed bytes (counted by the caller).
 */
export class InflateLane {
  private busy = false;
  private pumping = false;
  private readonly waiting: (InflateJob | undefined)[] = [];
  private head = 0;
  private readonly next = (): void => {
    this.busy = false;
    this.pump();
  };

  /** Runs `job` now, or after the jobs before it; `job` must call the function it gets once, when it is done. */
  enter(job: InflateJob): void {
    this.waiting.push(job);
    this.pump();
  }

  /** Jobs waiting for their turn. */
  get queued(): number {
    return this.waiting.length - this.head;
  }

  // A loop rather than recursion: jobs that finish at once (cancelled calls) must not deepen the stack.
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    while (!this.busy && this.head < this.waiting.length) {
      const job = this.waiting[this.head]!;
      this.waiting[this.head++] = undefined;
      this.busy = true;
      job(this.next);
    }
    if (this.head === this.waiting.length) {
      this.waiting.length = 0;
      this.head = 0;
    }
    this.pumping = false;
  }
}

export type InflateJob = (next: () => void) => void;
