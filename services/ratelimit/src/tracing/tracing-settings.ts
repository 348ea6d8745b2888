// Tracing settings (docs/ratelimit.md, "Tracing"), spread into SETTING_DEFS. The standard OTEL_EXPORTER_OTLP_*
// variables (endpoint, headers, timeout, certificates) are read by the OpenTelemetry exporters
// themselves and are not declared here.
import { def, clampedFloat, parseBool, parseEnum } from '@rls/settings';
import { parsePropagators } from '@rls/tracing';

const bool = (raw: string): boolean => (raw === '' ? false : parseBool(raw));

// The names and their parser are shared with the quotes service (@rls/tracing).
export { PROPAGATOR_NAMES, parsePropagators, type PropagatorName } from '@rls/tracing';
const str = (raw: string): string => raw;

export const TRACING_SETTING_DEFS = {
  tracingEnabled: def({ name: 'TRACING_ENABLED', default: 'false', meaning: 'Export OpenTelemetry traces (OTLP): a span per ShouldRateLimit with the counter-store call as a child; incoming W3C and B3 trace context is continued (OTEL_PROPAGATORS). Off: no tracing code runs per request.', parse: bool }),
  tracingExporterProtocol: def({
    name: 'TRACING_EXPORTER_PROTOCOL',
    default: 'http',
    meaning: '`http` (OTLP/HTTP, JSON encoding) or `grpc` (OTLP/gRPC). The destination comes from the standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` (and `_HEADERS`, `_TIMEOUT`, certificate) variables.',
    parse: (raw) => (raw.trim() === '' ? ('http' as const) : parseEnum(raw, ['http', 'grpc'] as const)),
  }),
  tracingPropagators: def({
    name: 'OTEL_PROPAGATORS',
    default: 'tracecontext,baggage,b3',
    meaning:
      'Which incoming trace contexts are continued (the OpenTelemetry variable): `tracecontext` (W3C traceparent/tracestate), `b3` or `b3multi` (B3 single header `b3` and multiple `X-B3-*` headers; both names read both forms), `baggage` (accepted; spans do not use it), `none`. When several carry a context the later one in the list wins; the default is upstream\'s set, in which B3 wins over W3C.',
    parse: parsePropagators,
  }),
  tracingServiceName: def({ name: 'TRACING_SERVICE_NAME', default: 'RateLimit', meaning: 'Resource attribute service.name.', parse: str }),
  tracingServiceNamespace: def({ name: 'TRACING_SERVICE_NAMESPACE', default: '', meaning: 'Resource attribute service.namespace (omitted when empty).', parse: str }),
  tracingServiceInstanceId: def({ name: 'TRACING_SERVICE_INSTANCE_ID', default: '', meaning: 'Resource attribute service.instance.id; a random version 4 UUID when empty.', parse: str }),
  tracingSamplingRate: def({ name: 'TRACING_SAMPLING_RATE', default: '1', meaning: 'Share of new traces sampled (0–1, parent-based: a sampled incoming trace is always continued). Values outside 0–1, which upstream also accepts, are clamped with a warning (NaN: 1).', parse: (raw, ctx) => clampedFloat(raw, ctx, 0, 1, 1) }),
} as const;
