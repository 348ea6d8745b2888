import type { Ticker } from '../domain/market.js';

/** One exchange's view of a coin, already in USD. */
export interface ExchangeQuote {
  exchange: string;
  /** The pair it was read from (ccxt symbol); absent when not tracked. */
  pair?: string;
  last: number;
  open: number;
  high: number;
  low: number;
  /** Traded value in USD. */
  quoteVolume: number;
  /** Source time (ms). */
  time: number;
}

export interface Aggregated {
  ticker: Ticker;
  /** Exchanges used, and those left out as outliers (with their deviation in percent). */
  used: string[];
  outliers: Array<{ exchange: string; deviationPercent: number }>;
}

/** The price at which half the volume lies on either side; with equal volumes, the lower middle. */
function volumeWeightedMedian(quotes: readonly ExchangeQuote[]): number {
  const sorted = [...quotes].sort((a, b) => a.last - b.last);
  const total = sorted.reduce((s, q) => s + Math.max(0, q.quoteVolume), 0);
  if (total <= 0) return sorted[Math.floor((sorted.length - 1) / 2)]!.last;
  let acc = 0;
  for (const q of sorted) {
    acc += Math.max(0, q.quoteVolume);
    if (acc >= total / 2) return q.last;
  }
  return sorted[sorted.length - 1]!.last;
}

/**
 * Combines one coin's quotes from several exchanges: quotes deviating from the volume-weighted
 * median by more than `outlierPercent` are left out; the rest give a volume-weighted price
 * (open, high and low alike, so low <= price <= high still holds) and a summed volume. The
 * source time is the oldest one used: the figure is no fresher than its stalest input.
 */
export function aggregateQuotes(symbol: string, quotes: readonly ExchangeQuote[], outlierPercent: number): Aggregated | undefined {
  if (quotes.length === 0) return undefined;
  const outliers: Aggregated['outliers'] = [];
  let kept: ExchangeQuote[] = [...quotes];
  if (quotes.length > 1) {
    const ref = volumeWeightedMedian(quotes);
    kept = [];
    for (const q of quotes) {
      const dev = (Math.abs(q.last - ref) / ref) * 100;
      if (dev > outlierPercent) outliers.push({ exchange: q.exchange, deviationPercent: dev });
      else kept.push(q);
    }
  }
  let last: number, open: number, high: number, low: number;
  if (kept.length === 1) {
    // Exactly the exchange's numbers: no arithmetic that could perturb the last digit.
    ({ last, open, high, low } = kept[0]!);
  } else {
    const totalVol = kept.reduce((s, q) => s + Math.max(0, q.quoteVolume), 0);
    const w = (q: ExchangeQuote): number => (totalVol > 0 ? Math.max(0, q.quoteVolume) / totalVol : 1 / kept.length);
    last = kept.reduce((s, q) => s + w(q) * q.last, 0);
    open = kept.reduce((s, q) => s + w(q) * q.open, 0);
    high = kept.reduce((s, q) => s + w(q) * q.high, 0);
    low = kept.reduce((s, q) => s + w(q) * q.low, 0);
  }
  const quoteVolume = kept.reduce((s, q) => s + q.quoteVolume, 0);
  const closeTime = Math.min(...kept.map((q) => q.time));
  const priceChange = last - open;
  return {
    ticker: {
      symbol,
      lastPrice: last,
      openPrice: open,
      priceChange,
      priceChangePercent: open > 0 ? (priceChange / open) * 100 : 0,
      highPrice: Math.max(high, last),
      lowPrice: Math.min(low, last),
      quoteVolume,
      openTime: closeTime - 86_400_000,
      closeTime,
    },
    used: kept.map((q) => q.exchange),
    outliers,
  };
}
