// The tracing settings both services declare (docs/ratelimit.md and docs/quotes.md, "Tracing"): the same
// names, parsers and defaults, so one environment file configures both; each service words what is traced
// and names its own default service.name. The standard OTEL_EXPORTER_OTLP_* variables (endpoint, headers,
// timeout, certificates) are read by the OpenTelemetry exporters themselves and are not declared here.
import { clampedFloat, def, parseBool, parseEnum } from '@rls/settings';
import { parsePropagators } from './propagators.js';

const bool = (raw: string): boolean => (raw === '' ? false : parseBool(raw));
const str = (raw: string): string => raw;

export interface TracingSettingWords {
  /** TRACING_ENABLED's meaning: what gets a span in this service. */
  readonly enabledMeaning: string;
  /** OTEL_PROPAGATORS' meaning. */
  readonly propagatorsMeaning: string;
  /** TRACING_SAMPLING_RATE's meaning. */
  readonly samplingMeaning: string;
  /** TRACING_SERVICE_NAME's default. */
  readonly serviceName: string;
}

/** The TRACING_* and OTEL_PROPAGATORS definitions, to spread into a service's SETTING_DEFS. */
export function tracingSettingDefs(words: TracingSettingWords) {
  return {
    tracingEnabled: def({ name: 'TRACING_ENABLED', default: 'false', meaning: words.enabledMeaning, parse: bool }),
    tracingExporterProtocol: def({
      name: 'TRACING_EXPORTER_PROTOCOL',
      default: 'http',
      meaning: '`http` (OTLP/HTTP, JSON encoding) or `grpc` (OTLP/gRPC). The destination comes from the standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` (and `_HEADERS`, `_TIMEOUT`, certificate) variables.',
      parse: (raw: string) => (raw.trim() === '' ? ('http' as const) : parseEnum(raw, ['http', 'grpc'] as const)),
    }),
    tracingPropagators: def({ name: 'OTEL_PROPAGATORS', default: 'tracecontext,baggage,b3', meaning: words.propagatorsMeaning, parse: parsePropagators }),
    tracingServiceName: def({ name: 'TRACING_SERVICE_NAME', default: words.serviceName, meaning: 'Resource attribute service.name.', parse: str }),
    tracingServiceNamespace: def({ name: 'TRACING_SERVICE_NAMESPACE', default: '', meaning: 'Resource attribute service.namespace (omitted when empty).', parse: str }),
    tracingServiceInstanceId: def({ name: 'TRACING_SERVICE_INSTANCE_ID', default: '', meaning: 'Resource attribute service.instance.id; a random version 4 UUID when empty.', parse: str }),
    tracingSamplingRate: def({ name: 'TRACING_SAMPLING_RATE', default: '1', meaning: words.samplingMeaning, parse: (raw, ctx) => clampedFloat(raw, ctx, 0, 1, 1) }),
  } as const;
}
