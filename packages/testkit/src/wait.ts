import { setTimeout as delay } from 'node:timers/promises';

export interface WaitOptions {
  /** Give up after this many milliseconds (default 10 000). */
  timeoutMs?: number;
  /** Poll interval in milliseconds (default 25). */
  intervalMs?: number;
  /** Text used in the timeout error. */
  what?: string;
}

/**
 * Thrown from a `waitFor` check when waiting longer cannot help (the process being waited on
 * has exited, say): `waitFor` rethrows it at once instead of polling until its bound.
 */
export class GiveUp extends Error {
  override name = 'GiveUp';
}

/**
 * Polls `check` until it returns a truthy value (which is returned) or the bound passes.
 * Exceptions thrown by `check` count as "not yet" and the last one is reported on timeout,
 * except `GiveUp`, which ends the wait at once.
 */
export async function waitFor<T>(check: () => T | Promise<T>, opts: WaitOptions = {}): Promise<NonNullable<T>> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 25;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      if (err instanceof GiveUp) throw err;
      lastError = err;
    }
    if (Date.now() > deadline) {
      const suffix = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${opts.what ?? 'condition'}${suffix}`);
    }
    await delay(intervalMs);
  }
}

/**
 * For tests that count against a real-time fixed window in another process (whose clock cannot
 * be injected): waits, at most `needMs`, until the current wall-clock window of `windowSeconds`
 * has at least `needMs` left, so a short sequence of requests cannot straddle a window boundary.
 * Returns the window's start (Unix seconds).
 */
export async function clearOfWindowEdge(windowSeconds: number, needMs: number): Promise<number> {
  const windowMs = windowSeconds * 1000;
  if (needMs >= windowMs) throw new Error(`clearOfWindowEdge: ${needMs} ms does not fit in a ${windowSeconds} s window`);
  const found = await waitFor(
    () => {
      const now = Date.now();
      return windowMs - (now % windowMs) >= needMs ? { start: Math.floor(now / windowMs) * windowSeconds } : undefined;
    },
    { what: `${needMs} ms left in the current ${windowSeconds} s window`, timeoutMs: needMs + 1000, intervalMs: 10 },
  );
  return found.start;
}
