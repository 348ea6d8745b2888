// Tracing settings (docs/ratelimit.md, "Tracing"), spread into SETTING_DEFS: the names, parsers and
// defaults both services share (@rls/tracing).
import { tracingSettingDefs } from '@rls/tracing';

// The names and their parser are shared with the quotes service (@rls/tracing).
export { PROPAGATOR_NAMES, parsePropagators, type PropagatorName } from '@rls/tracing';

export const TRACING_SETTING_DEFS = tracingSettingDefs({
  enabledMeaning: 'Export OpenTelemetry traces (OTLP): a span per ShouldRateLimit with the counter-store call as a child; incoming W3C and B3 trace context is continued (OTEL_PROPAGATORS). Off: no tracing code runs per request.',
  propagatorsMeaning:
    'Which incoming trace contexts are continued (the OpenTelemetry variable): `tracecontext` (W3C traceparent/tracestate), `b3` or `b3multi` (B3 single header `b3` and multiple `X-B3-*` headers; both names read both forms), `baggage` (accepted; spans do not use it), `none`. When several carry a context the later one in the list wins; the default is upstream\'s set, in which B3 wins over W3C.',
  samplingMeaning: 'Share of new traces sampled (0–1, parent-based: a sampled incoming trace is always continued). Values outside 0–1, which upstream also accepts, are clamped with a warning (NaN: 1).',
  serviceName: 'RateLimit',
});
