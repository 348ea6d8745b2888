// OTEL_PROPAGATORS (the OpenTelemetry variable) for both services: which incoming trace contexts are
// continued, in list order, later ones winning (docs/ratelimit.md, "Tracing"; docs/quotes.md, "Tracing").
import type { TextMapPropagator } from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { B3Propagator } from './b3-propagator.js';

/** Names OTEL_PROPAGATORS may list. */
export const PROPAGATOR_NAMES = ['tracecontext', 'baggage', 'b3', 'b3multi', 'none'] as const;
export type PropagatorName = (typeof PROPAGATOR_NAMES)[number];

/** `tracecontext,b3`-style list: lower-cased, trimmed, each a known name; `none` only alone. */
export function parsePropagators(raw: string): readonly PropagatorName[] {
  const names = raw
    .split(',')
    .map((n) => n.trim().toLowerCase())
    .filter((n) => n !== '');
  if (names.length === 0) throw new Error(`expected a comma-separated list of ${PROPAGATOR_NAMES.join(', ')}`);
  for (const n of names) {
    if (!(PROPAGATOR_NAMES as readonly string[]).includes(n)) throw new Error(`unknown propagator '${n}' (expected ${PROPAGATOR_NAMES.join(', ')})`);
  }
  if (names.includes('none') && names.length > 1) throw new Error('none cannot be combined with other propagators');
  return Object.freeze(names as PropagatorName[]);
}

/**
 * The propagator for OTEL_PROPAGATORS' names, extracting in list order (each found context replaces
 * the one before, as upstream's composite does). `b3` and `b3multi` both read both B3 encodings.
 * Injection writes what the list's injecting propagators write: W3C traceparent/tracestate and baggage.
 */
export function propagatorFor(names: readonly PropagatorName[]): TextMapPropagator {
  const list: TextMapPropagator[] = [];
  let b3 = false;
  for (const n of names) {
    if (n === 'tracecontext') list.push(new W3CTraceContextPropagator());
    else if (n === 'baggage') list.push(new W3CBaggagePropagator());
    else if ((n === 'b3' || n === 'b3multi') && !b3) {
      b3 = true;
      list.push(new B3Propagator());
    }
  }
  return new CompositePropagator({ propagators: list });
}

/** Upstream's default set: W3C, baggage, B3 (B3 wins when both carry a context). */
export const DEFAULT_PROPAGATORS: readonly PropagatorName[] = Object.freeze(['tracecontext', 'baggage', 'b3'] as PropagatorName[]);
