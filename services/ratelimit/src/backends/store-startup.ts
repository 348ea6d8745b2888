// Start-up wait for the counter store (KVSTORE_STARTUP_*): the listeners open only once Redis
// answered, as upstream. The store reconnects by itself; this loop waits for it in growing windows
// (exponential, factor 2, ±25 % jitter, capped by the max interval; @rls/backoff), logs each miss, and gives up
// after the max elapsed time (0 = never) with upstream's message (credentials masked).
import { backoffDelayMs, type ExponentialBackoff } from '@rls/backoff';
import { StoreError, type RandomSource } from '@rls/engine';
import type { StoreLogger } from './connection-pool.js';

export interface StartupWaitOptions {
  initialIntervalMs: number;
  maxIntervalMs: number;
  /** 0 = wait forever. */
  maxElapsedMs: number;
  /** Masked URL for messages. */
  url: string;
  random: RandomSource;
  logger?: StoreLogger | undefined;
  now?: () => number;
}

/** Go-style duration text (`1.5s`, `2m0s`) for messages. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${Number(s.toFixed(3))}s`;
  const m = Math.floor(s / 60);
  return `${m}m${Number((s - m * 60).toFixed(3))}s`;
}

export async function waitForStore(store: { isConnected(): boolean; waitUntilConnected(timeoutMs: number): Promise<void> }, o: StartupWaitOptions): Promise<void> {
  const now = o.now ?? Date.now;
  const t0 = now();
  const policy: ExponentialBackoff = { initialMs: o.initialIntervalMs, maxMs: o.maxIntervalMs, jitter: { spread: 0.25 } };
  for (let misses = 0; ; misses++) {
    if (store.isConnected()) return;
    const elapsed = now() - t0;
    let window = backoffDelayMs(policy, misses, o.random);
    if (o.maxElapsedMs > 0) window = Math.min(window, o.maxElapsedMs - elapsed);
    try {
      await store.waitUntilConnected(Math.max(1, Math.round(window)));
      return;
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      const spent = now() - t0;
      if (o.maxElapsedMs > 0 && spent >= o.maxElapsedMs) {
        throw new StoreError(`timed out waiting for Redis connection to ${o.url} after ${formatDuration(spent)}: ${why}`, { cause: err });
      }
      o.logger?.warn({ url: o.url, err: why, waited: formatDuration(spent) }, 'redis not reachable yet; still waiting before opening the listeners');
    }
  }
}
