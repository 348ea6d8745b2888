// Settings of the Prometheus endpoint (docs/quotes.md, "Observability"), spread into SETTING_DEFS by
// settings.ts. The metrics have a listener of their own, on loopback by default: the public API port
// must never show internals (pool sizes, upstream names, error counts) to its clients, and a scrape
// must not compete with the API's connection and request bounds.
import { def, parseInteger } from '@rls/settings';

const text = (raw: string): string => raw.trim();
const int = (min: number, max: number) => (raw: string): number => parseInteger(raw, min, max);

export const METRICS_SETTING_DEFS = {
  metricsPort: def({
    name: 'QUOTES_METRICS_PORT',
    default: '9464',
    unit: 'port',
    meaning: 'TCP port of the Prometheus endpoint `GET /metrics` (a listener of its own, never the API port); 0 turns it off.',
    parse: int(0, 65535),
  }),
  metricsHost: def({
    name: 'QUOTES_METRICS_HOST',
    default: '127.0.0.1',
    meaning: 'Address the metrics listener binds to: loopback by default; `0.0.0.0` when a Prometheus on another host or container scrapes it (then keep the port off the public network).',
    parse: text,
  }),
  metricsMaxConnections: def({
    name: 'QUOTES_METRICS_MAX_CONNECTIONS',
    default: '16',
    unit: 'connections',
    meaning: 'Connections the metrics listener holds at once; more are closed at once (a few scrapers need a few; 1–1000). Idle and slow connections are closed after 10 s.',
    parse: int(1, 1000),
  }),
} as const;
