// B3 trace context (Zipkin's headers; docs/ratelimit.md and docs/quotes.md, "Tracing"), extract only: both
// services continue a caller's B3 trace; what they call themselves gets W3C traceparent. Both encodings
// are read, as upstream's B3 propagator reads them (envoyproxy/ratelimit #1110):
//   single header   b3: {TraceId}-{SpanId}[-{SamplingState}[-{ParentSpanId}]]
//   multiple        X-B3-TraceId, X-B3-SpanId, X-B3-Sampled (1/0, true/false), X-B3-Flags (1: debug)
// The single header wins when both are present and it is valid. A 64-bit trace id is left-padded
// to 128 bits; "d" (debug) counts as sampled; a context without a sampling decision is taken as not
// sampled (so the parent-based sampler drops it, as upstream's does). Malformed values are ignored:
// the request is then traced from whatever else carried a context, or as a new trace.
import { isValidSpanId, isValidTraceId, trace, TraceFlags, type Context, type TextMapGetter, type TextMapPropagator } from '@opentelemetry/api';

const HEX16 = 16;
const HEX32 = 32;

function isLowerHex(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false;
  }
  return true;
}

/** A trace id of 16 or 32 lower-case hex digits, as 32 digits; undefined when invalid. */
function traceIdOf(raw: string): string | undefined {
  if ((raw.length !== HEX16 && raw.length !== HEX32) || !isLowerHex(raw)) return undefined;
  const id = raw.length === HEX16 ? '0000000000000000' + raw : raw;
  return isValidTraceId(id) ? id : undefined;
}

function spanIdOf(raw: string): string | undefined {
  return raw.length === HEX16 && isLowerHex(raw) && isValidSpanId(raw) ? raw : undefined;
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

interface B3Context {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

function fromSingle(value: string): B3Context | undefined {
  const parts = value.trim().split('-');
  // A lone sampling state ("0", "1", "d") carries no context.
  if (parts.length < 2 || parts.length > 4) return undefined;
  const traceId = traceIdOf(parts[0]!);
  const spanId = spanIdOf(parts[1]!);
  if (traceId === undefined || spanId === undefined) return undefined;
  const state = parts[2];
  if (state !== undefined && state !== '0' && state !== '1' && state !== 'd') return undefined;
  if (parts[3] !== undefined && spanIdOf(parts[3]) === undefined) return undefined;
  return { traceId, spanId, sampled: state === '1' || state === 'd' };
}

function fromMultiple(get: (name: string) => string | undefined): B3Context | undefined {
  const rawTrace = get('x-b3-traceid');
  const rawSpan = get('x-b3-spanid');
  if (rawTrace === undefined || rawSpan === undefined) return undefined;
  const traceId = traceIdOf(rawTrace.trim());
  const spanId = spanIdOf(rawSpan.trim());
  if (traceId === undefined || spanId === undefined) return undefined;
  const sampled = get('x-b3-sampled')?.trim();
  const debug = get('x-b3-flags')?.trim() === '1';
  return { traceId, spanId, sampled: debug || sampled === '1' || sampled === 'true' };
}

export class B3Propagator implements TextMapPropagator {
  inject(): void {
    // Outgoing calls carry W3C traceparent (the tracecontext propagator), which both services read.
  }

  extract(context: Context, carrier: unknown, getter: TextMapGetter): Context {
    const get = (name: string): string | undefined => first(getter.get(carrier, name));
    const single = get('b3');
    const found = (single !== undefined ? fromSingle(single) : undefined) ?? fromMultiple(get);
    if (found === undefined) return context;
    return trace.setSpanContext(context, {
      traceId: found.traceId,
      spanId: found.spanId,
      traceFlags: found.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
      isRemote: true,
    });
  }

  fields(): string[] {
    return ['b3', 'x-b3-traceid', 'x-b3-spanid', 'x-b3-parentspanid', 'x-b3-sampled', 'x-b3-flags'];
  }
}
