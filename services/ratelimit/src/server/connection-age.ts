// GRPC_MAX_CONNECTION_AGE jitter, shared by both transports.
import { MAX_TIMER_MS } from './grpc-calls.js';
import type { GrpcRandom } from './grpc-server.js';

/** The maximum connection age with ±10 % jitter from the injected randomness (as grpc-go). */
export function jitteredAge(maxAgeMs: number, random: GrpcRandom): number {
  const jitter = 0.9 + (0.2 * random.int(1_000_000)) / 1_000_000;
  return Math.min(MAX_TIMER_MS, Math.round(maxAgeMs * jitter));
}
