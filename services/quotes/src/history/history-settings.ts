// Settings of history requests (range / interval / startDate / endDate on /api/v2/crypto and the
// CoinGecko charts), spread into SETTING_DEFS by settings.ts. Each is a bound on what one history
// request may cost the server.
import { def, parseInteger } from '@rls/settings';
import type { BaseInterval } from '../domain/intervals.js';

/** One series the backfill keeps (HISTORY_BACKFILL_WINDOWS). */
export interface BackfillWindow {
  base: BaseInterval;
  /** Days back from now; null = from the first candle the exchange has. */
  days: number | null;
}

const int = (min: number, max: number) => (raw: string): number => parseInteger(raw, min, max);

export const HISTORY_SETTING_DEFS = {
  historyMaxPoints: def({
    name: 'QUOTES_HISTORY_MAX_POINTS',
    default: '50000',
    unit: 'candles',
    meaning:
      'Most candles one request may ask for (coins × points per coin, counted from the window before any work); more is refused with 400 naming this limit (100–10000000). The default fits every single-coin brapi range/interval and 20 coins × 3 months of hourly candles.',
    parse: int(100, 10_000_000),
  }),
  historyCacheBytes: def({
    name: 'QUOTES_HISTORY_CACHE_BYTES',
    default: '67108864',
    unit: 'bytes',
    meaning: 'Memory for closed candle series kept between requests (least recently used first out; 56 bytes a candle; 0 turns the cache off; at most 8 GiB).',
    parse: int(0, 8 * 1024 ** 3),
  }),
  historyAnswerCacheBytes: def({
    name: 'QUOTES_HISTORY_ANSWER_CACHE_BYTES',
    default: '33554432',
    unit: 'bytes',
    meaning:
      'Memory for whole history answers (the `coins` JSON) of the current market snapshot, so a repeated chart request costs a lookup (least recently used first out; an answer over a sixteenth of this, 2 MiB by default, is streamed every time; 0 turns it off; at most 8 GiB).',
    parse: int(0, 8 * 1024 ** 3),
  }),
  historyConcurrency: def({
    name: 'QUOTES_HISTORY_CONCURRENCY',
    default: '4',
    unit: 'answers',
    meaning:
      'Large history answers (over a tenth of QUOTES_HISTORY_MAX_POINTS) produced at once; more wait their turn, first come first served. Each holds a few hundred KB of socket buffers while its client reads (1–1000).',
    parse: int(1, 1000),
  }),
  historyQueue: def({
    name: 'QUOTES_HISTORY_QUEUE',
    default: '1000',
    unit: 'requests',
    meaning: 'Large history requests waiting for a turn; one more is refused with 503 and Retry-After: 1 (0–100000).',
    parse: int(0, 100_000),
  }),
  historyChunkCandles: def({
    name: 'QUOTES_HISTORY_CHUNK_CANDLES',
    default: '5000',
    unit: 'candles',
    meaning: 'Base candles read from the database (and aggregated there) per step of a history request; one step of all history requests runs per event-loop turn, other requests between steps (~10 ms a step at the default on SQLite; 100–1000000).',
    parse: int(100, 1_000_000),
  }),
};
