// Tracing settings of the quotes service (docs/quotes.md, "Tracing"), spread into SETTING_DEFS: the
// ratelimit service's names, parsers and defaults (@rls/tracing), so one environment file configures both.
import { tracingSettingDefs } from '@rls/tracing';

export const TRACING_SETTING_DEFS = tracingSettingDefs({
  enabledMeaning:
    'Export OpenTelemetry traces (OTLP): a span per HTTP request with the rate limit call (its context sent to a remote ratelimit service as W3C `traceparent`) and the store calls as children, and a span per market refresh. Off: no tracing code runs per request. On: the cached-quote fast path is not installed, so every request gets its span.',
  propagatorsMeaning:
    "Which incoming trace contexts a request continues, as the ratelimit service reads them: `tracecontext` (W3C traceparent/tracestate), `b3` or `b3multi` (B3 single and multiple headers), `baggage`, `none`; later ones win. Outgoing calls carry W3C traceparent.",
  samplingMeaning: 'Share of new traces sampled (0–1, parent-based: a sampled incoming trace is always continued); values outside are clamped with a warning.',
  serviceName: 'quotes',
});
