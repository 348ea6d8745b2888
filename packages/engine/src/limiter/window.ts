// Fixed-window arithmetic shared with the Go service: windows are aligned to the Unix epoch, so
// keys written by either implementation name the same window (upstream's UnitToDivider / CalculateReset).
/**
 * Window length in seconds, indexed by the wire unit number (see `Unit` in domain.ts: WEEK is 7);
 * 0 for UNKNOWN.
 */
const DIVIDERS: readonly number[] = [0, 1, 60, 3600, 86400, 2592000, 31536000, 604800];

export function unitDivider(unit: number): number {
  return Number.isInteger(unit) ? (DIVIDERS[unit] ?? 0) : 0;
}

export function isValidUnit(unit: number): boolean {
  return unitDivider(unit) > 0;
}

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
