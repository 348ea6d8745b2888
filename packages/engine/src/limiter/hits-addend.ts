// How much one descriptor consumes: its own hits_addend, else the request's, else 1 (upstream's GetHitsAddends).
import type { RequestDescriptor } from '../domain.js';

/**
 * The most one descriptor adds per request: 2^32, one more than the largest limit (limits are
 * uint32), so a clamped addend is over every limit exactly when the requested one is, and every
 * decision is unchanged. It bounds how fast a counter can grow (see backends/counter-store.ts);
 * only the descriptor-level hits_addend (UInt64Value) can exceed it, the request-level one is uint32.
 */
export const MAX_HITS_ADDEND = 2 ** 32;

/** A descriptor-level addend wins whenever present, even 0 ("check without consuming"); else max(1, request addend). At most MAX_HITS_ADDEND. */
export function hitsAddendFor(descriptor: RequestDescriptor, requestAddend: number): number {
  const a = descriptor.hitsAddend !== undefined ? descriptor.hitsAddend : requestAddend > 1 ? requestAddend : 1;
  return a > MAX_HITS_ADDEND ? MAX_HITS_ADDEND : a;
}
