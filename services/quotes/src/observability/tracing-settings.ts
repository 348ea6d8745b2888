// Tracing settings of the quotes service (docs/quotes.md, "Tracing"), spread into SETTING_DEFS. The names
// and meanings are the ratelimit service's, so one environment file configures both; the standard
// OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout, certificates) are read by the
// OpenTelemetry exporters themselves and are not declared here.
import { clampedFloat, def, parseBool, parseEnum } from '@rls/settings';
import { parsePropagators } from '@rls/tracing';

const bool = (raw: string): boolean => (raw === '' ? false : parseBool(raw));
const str = (raw: string): string => raw;

export const TRACING_SETTING_DEFS = {
  tracingEnabled: def({
    name: 'TRACING_ENABLED',
    default: 'false',
    meaning: 'Export OpenTelemetry traces (OTLP): a span per HTTP request with the rate limit call (its context sent to a remote ratelimit service as W3C `traceparent`) and the store calls as children, and a span per market refresh. Off: no tracing code runs per request. On: the cached-quote fast path is not installed, so every request gets its span.',
    parse: bool,
  }),
  tracingExporterProtocol: def({
    name: 'TRACING_EXPORTER_PROTOCOL',
    default: 'http',
    meaning: '`http` (OTLP/HTTP, JSON encoding) or `grpc` (OTLP/gRPC). The destination comes from the standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` (and `_HEADERS`, `_TIMEOUT`, certificate) variables.',
    parse: (raw) => (raw.trim() === '' ? ('http' as const) : parseEnum(raw, ['http', 'grpc'] as const)),
  }),
  tracingPropagators: def({
    name: 'OTEL_PROPAGATORS',
    default: 'tracecontext,baggage,b3',
    meaning: "Which incoming trace contexts a request continues, as the ratelimit service reads them: `tracecontext` (W3C traceparent/tracestate), `b3` or `b3multi` (B3 single and multiple headers), `baggage`, `none`; later ones win. Outgoing calls carry W3C traceparent.",
    parse: parsePropagators,
  }),
  tracingServiceName: def({ name: 'TRACING_SERVICE_NAME', default: 'quotes', meaning: 'Resource attribute service.name.', parse: str }),
  tracingServiceNamespace: def({ name: 'TRACING_SERVICE_NAMESPACE', default: '', meaning: 'Resource attribute service.namespace (omitted when empty).', parse: str }),
  tracingServiceInstanceId: def({ name: 'TRACING_SERVICE_INSTANCE_ID', default: '', meaning: 'Resource attribute service.instance.id; a random version 4 UUID when empty.', parse: str }),
  tracingSamplingRate: def({
    name: 'TRACING_SAMPLING_RATE',
    default: '1',
    meaning: 'Share of new traces sampled (0–1, parent-based: a sampled incoming trace is always continued); values outside are clamped with a warning.',
    parse: (raw, ctx) => clampedFloat(raw, ctx, 0, 1, 1),
  }),
} as const;
