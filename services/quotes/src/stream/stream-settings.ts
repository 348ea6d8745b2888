// Settings of the live-price streams (GET /api/v2/crypto/stream), spread into SETTING_DEFS by
// settings.ts. Every one is a bound on what one client or all of them can hold on the server.
import { def, parseInteger, parseSecondsIn } from '@rls/settings';

const int = (min: number, max: number) => (raw: string): number => parseInteger(raw, min, max);
/** A duration in whole seconds (`90`, `15m`, `4h`) within [min, max] seconds. */
const seconds = (min: number, max: number) => (raw: string): number => Math.round(parseSecondsIn(raw, min, max));

export const STREAM_SETTING_DEFS = {
  streamMaxPerToken: def({
    name: 'QUOTES_STREAM_MAX_PER_TOKEN',
    default: '5',
    unit: 'streams',
    meaning: 'Live-price streams one token (or one dashboard user) may hold open at once; one more is refused with 429 (1–1000).',
    parse: int(1, 1000),
  }),
  streamMaxTotal: def({
    name: 'QUOTES_STREAM_MAX_TOTAL',
    default: '10000',
    unit: 'streams',
    meaning: 'Live-price streams the whole server holds open at once; one more is refused with 503 and Retry-After (1–1000000).',
    parse: int(1, 1_000_000),
  }),
  streamHeartbeatSeconds: def({
    name: 'QUOTES_STREAM_HEARTBEAT',
    default: '15',
    unit: 'seconds (or 1m)',
    meaning: 'Time between heartbeat comment lines on an open stream, so proxies keep it and clients notice a dead one (1 s–5 min).',
    parse: seconds(1, 300),
  }),
  streamChargeSeconds: def({
    name: 'QUOTES_STREAM_CHARGE_INTERVAL',
    default: '60',
    unit: 'seconds (or 1m)',
    meaning: 'A stream counts as one request when it opens and one more per this much connection time, through the burst limits and the monthly quota; a refused charge closes it (1 s–1 d).',
    parse: seconds(1, 86_400),
  }),
  streamBufferBytes: def({
    name: 'QUOTES_STREAM_BUFFER_BYTES',
    default: '65536',
    unit: 'bytes',
    meaning: 'Unsent bytes one stream may hold; past it, updates for a slow client are coalesced to the latest quote per coin instead of queued (1024–16777216).',
    parse: int(1024, 16 * 1024 * 1024),
  }),
  streamStallSeconds: def({
    name: 'QUOTES_STREAM_STALL_TIMEOUT',
    default: '60',
    unit: 'seconds (or 1m)',
    meaning: 'A stream whose client reads nothing for this long while its buffer is full is closed (1 s–1 h).',
    parse: seconds(1, 3600),
  }),
  streamLifetimeSeconds: def({
    name: 'QUOTES_STREAM_MAX_LIFETIME',
    default: '24h',
    unit: 'seconds (or 30m, 24h)',
    meaning: 'A stream is closed after this long; EventSource clients reconnect with Last-Event-ID and miss nothing (10 s–7 d).',
    parse: seconds(10, 7 * 86_400),
  }),
} as const;
