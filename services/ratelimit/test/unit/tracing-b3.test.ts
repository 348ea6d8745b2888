// B3 extraction and OTEL_PROPAGATORS (docs/ratelimit.md, "Tracing"): what is read from which header,
// what is refused, and which context wins when several are present. The real-process test with an
// OTLP receiver is test/e2e/tracing-otlp.test.ts.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ROOT_CONTEXT, trace, TraceFlags, type TextMapGetter } from '@opentelemetry/api';
import { B3Propagator } from '@rls/tracing';
import { parsePropagators } from '../../src/tracing/tracing-settings.js';
import { propagatorFor } from '../../src/tracing/tracing.js';

type Carrier = Record<string, string | string[]>;
const getter: TextMapGetter<Carrier> = { keys: (c) => Object.keys(c), get: (c, k) => c[k] };
const T = '4bf92f3577b34da6a3ce929d0e0e4736';
const S = '00f067aa0ba902b7';
const ctxOf = (p: { extract: B3Propagator['extract'] }, c: Carrier) => trace.getSpanContext(p.extract(ROOT_CONTEXT, c, getter));

describe('B3 propagator', () => {
  const b3 = new B3Propagator();
  test('single header: trace-span[-sampling[-parent]]; d and 1 are sampled', () => {
    assert.deepEqual(ctxOf(b3, { b3: `${T}-${S}-1` }), { traceId: T, spanId: S, traceFlags: TraceFlags.SAMPLED, isRemote: true });
    assert.equal(ctxOf(b3, { b3: `${T}-${S}-d-0000000000000001` })?.traceFlags, TraceFlags.SAMPLED);
    assert.equal(ctxOf(b3, { b3: `${T}-${S}-0` })?.traceFlags, TraceFlags.NONE);
    assert.equal(ctxOf(b3, { b3: `${T}-${S}` })?.traceFlags, TraceFlags.NONE, 'no decision: not sampled');
    assert.equal(ctxOf(b3, { b3: `${T.slice(16)}-${S}-1` })?.traceId, '0000000000000000' + T.slice(16));
  });
  test('multiple headers; the single header wins when both are valid', () => {
    assert.deepEqual(ctxOf(b3, { 'x-b3-traceid': T, 'x-b3-spanid': S, 'x-b3-sampled': '1' }), { traceId: T, spanId: S, traceFlags: TraceFlags.SAMPLED, isRemote: true });
    assert.equal(ctxOf(b3, { 'x-b3-traceid': T, 'x-b3-spanid': S, 'x-b3-flags': '1' })?.traceFlags, TraceFlags.SAMPLED, 'debug');
    assert.equal(ctxOf(b3, { 'x-b3-traceid': T, 'x-b3-spanid': S, 'x-b3-sampled': 'false' })?.traceFlags, TraceFlags.NONE);
    const other = 'ffffffffffffffffffffffffffffffff';
    assert.equal(ctxOf(b3, { b3: `${other}-${S}-1`, 'x-b3-traceid': T, 'x-b3-spanid': S })?.traceId, other);
    assert.equal(ctxOf(b3, { b3: 'garbage', 'x-b3-traceid': T, 'x-b3-spanid': S })?.traceId, T, 'an invalid single header falls back to the multiple ones');
  });
  test('malformed contexts are ignored', () => {
    for (const c of [
      { b3: '1' },
      { b3: `${T}` },
      { b3: `${T}-${S}-x` },
      { b3: `${T.toUpperCase()}-${S}-1` },
      { b3: `${'0'.repeat(32)}-${S}-1` },
      { b3: `${T}-${'0'.repeat(16)}-1` },
      { b3: `${T}-${S}-1-zz` },
      { b3: `${T}1-${S}-1` },
      { 'x-b3-traceid': T },
      { 'x-b3-traceid': T, 'x-b3-spanid': 'xyz' },
    ] as Carrier[]) {
      assert.equal(ctxOf(b3, c), undefined, JSON.stringify(c));
    }
  });
});

describe('OTEL_PROPAGATORS', () => {
  const both: Carrier = { traceparent: `00-${T}-${S}-01`, b3: `5bf92f3577b34da6a3ce929d0e0e4737-10f067aa0ba902b8-1` };
  test('default (upstream\'s set): W3C, and B3 over it when both are present', () => {
    const p = propagatorFor(parsePropagators('tracecontext,baggage,b3'));
    assert.equal(ctxOf(p, both)?.traceId, '5bf92f3577b34da6a3ce929d0e0e4737');
    assert.equal(ctxOf(p, { traceparent: `00-${T}-${S}-01` })?.traceId, T);
  });
  test('the order decides; a list without b3 ignores B3; none continues nothing', () => {
    assert.equal(ctxOf(propagatorFor(parsePropagators('b3multi, tracecontext')), both)?.traceId, T);
    assert.equal(ctxOf(propagatorFor(parsePropagators('tracecontext')), { b3: `${T}-${S}-1` }), undefined);
    assert.equal(ctxOf(propagatorFor(parsePropagators('none')), both), undefined);
  });
  test('bad lists are refused with the reason', () => {
    assert.throws(() => parsePropagators('tracecontext,jaeger'), /unknown propagator 'jaeger' \(expected tracecontext, baggage, b3, b3multi, none\)/);
    assert.throws(() => parsePropagators('none,b3'), /none cannot be combined/);
    assert.throws(() => parsePropagators(' , '), /expected a comma-separated list/);
    assert.deepEqual(parsePropagators(' TraceContext , B3 '), ['tracecontext', 'b3']);
  });
});
