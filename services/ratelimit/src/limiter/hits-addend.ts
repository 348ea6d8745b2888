// How much one descriptor consumes (reference §3.8).
import type { RequestDescriptor } from '../domain.js';

/** A descriptor-level addend wins whenever present, even 0 ("check without consuming"); else max(1, request addend). */
export function hitsAddendFor(descriptor: RequestDescriptor, requestAddend: number): number {
  if (descriptor.hitsAddend !== undefined) return descriptor.hitsAddend;
  return requestAddend > 1 ? requestAddend : 1;
}
