/** Injected time source, so window arithmetic and jitter are tested on exact instants. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Injected randomness: a uniform integer in [0, maxExclusive). */
export interface RandomSource {
  int(maxExclusive: number): number;
}

export const mathRandom: RandomSource = { int: (max) => (max <= 0 ? 0 : Math.floor(Math.random() * max)) };
