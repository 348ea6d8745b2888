// Counter keys, byte-compatible with upstream (src/limiter/cache_key.go) so both services can share a Redis:
// `<prefix><domain>_<k1>_<v1>_<k2>_<v2>_<windowStart>`, no escaping.
import type { DescriptorEntry } from '../domain.js';

export function buildCacheKey(
  prefix: string,
  domain: string,
  entries: readonly DescriptorEntry[],
  sharePatterns: readonly (string | undefined)[] | undefined,
  windowStart: number,
): string {
  return cacheKeyBase(prefix, domain, entries, sharePatterns) + String(windowStart);
}

/** The key up to the window: `<prefix><domain>_<k1>_<v1>_..._` (the other algorithms append their own tails). */
export function cacheKeyBase(
  prefix: string,
  domain: string,
  entries: readonly DescriptorEntry[],
  sharePatterns: readonly (string | undefined)[] | undefined,
): string {
  let key = prefix + domain + '_';
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    // share_threshold: every value matching the wildcard counts against the pattern's counter
    const value = sharePatterns?.[i] ?? e.value;
    key += e.key + '_' + value + '_';
  }
  return key;
}

/**
 * The store keys of one limit at `nowSeconds` (docs/ratelimit.md, "Counters on the debug port"):
 * the key the limiter counts in, and a sliding window's previous window key. The same keys the
 * limiter's `plan` builds (fixed-window-limiter.ts; a test checks they agree).
 */
export function limitKeys(
  prefix: string,
  domain: string,
  entries: readonly DescriptorEntry[],
  sharePatterns: readonly (string | undefined)[] | undefined,
  limit: { readonly algorithm: string; readonly windowSeconds: number; readonly keyTail: string },
  nowSeconds: number,
): { key: string; previousKey?: string } {
  const base = cacheKeyBase(prefix, domain, entries, sharePatterns);
  if (limit.algorithm === 'token_bucket') return { key: base + limit.keyTail };
  const start = nowSeconds - (nowSeconds % limit.windowSeconds);
  if (limit.algorithm === 'sliding_window') return { key: base + String(start) + limit.keyTail, previousKey: base + String(start - limit.windowSeconds) + limit.keyTail };
  return { key: base + String(start) + limit.keyTail };
}
