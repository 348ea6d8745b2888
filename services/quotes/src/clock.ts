/** The one source of "now" (milliseconds since the Unix epoch); injected wherever time matters. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
