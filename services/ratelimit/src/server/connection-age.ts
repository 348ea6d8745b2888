// GRPC_MAX_CONNECTION_AGE jitter.
import type { RandomSource } from '@rls/engine';
import { MAX_TIMER_MS } from './grpc-calls.js';

/** The maximum connection age with ±10 % jitter from the injected randomness (as grpc-go). */
export function jitteredAge(maxAgeMs: number, random: RandomSource): number {
  const jitter = 0.9 + (0.2 * random.int(1_000_000)) / 1_000_000;
  return Math.min(MAX_TIMER_MS, Math.round(maxAgeMs * jitter));
}
