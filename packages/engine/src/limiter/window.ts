// Fixed-window arithmetic shared with the Go service: windows are aligned to the Unix epoch, so
// keys written by either implementation name the same window (upstream's CalculateReset). A unit's
// window length (unitDivider) is in ../units.ts.

/** Start of the window containing `nowSeconds`. */
export function windowStart(nowSeconds: number, divider: number): number {
  return nowSeconds - (nowSeconds % divider);
}

/** Whole seconds until the window resets: 1..divider. */
export function secondsUntilReset(nowSeconds: number, divider: number): number {
  return divider - (nowSeconds % divider);
}

/** TTL for a counter: one window plus a uniform jitter in [0, maxJitter) (0 disables jitter). */
export function expireSeconds(divider: number, maxJitterSeconds: number, random: { int(max: number): number }): number {
  return maxJitterSeconds > 0 ? divider + random.int(maxJitterSeconds) : divider;
}
