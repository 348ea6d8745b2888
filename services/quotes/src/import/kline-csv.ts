import type { Candle } from '../domain/market.js';

/**
 * Binance spot kline timestamps: milliseconds (13 digits) before 2025, microseconds (16 digits)
 * from 2025-01-01 on. Returns Unix seconds, or undefined when neither.
 */
export function klineTimeSeconds(field: string): number | undefined {
  const t = field.trim();
  if (!/^\d+$/.test(t)) return undefined;
  if (t.length >= 16) return Math.floor(Number(t) / 1_000_000);
  if (t.length >= 12) return Math.floor(Number(t) / 1000);
  return undefined;
}

export class KlineFormatError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
    this.name = 'KlineFormatError';
  }
}

/**
 * Parses a spot klines CSV (no header, 12 columns: open time, open, high, low, close, volume,
 * close time, quote volume, trades, taker base, taker quote, ignore). A header line, as futures
 * dumps have, is skipped. Volume is the quote-asset volume: traded value in the (USD-stable) quote.
 */
export function parseKlinesCsv(text: string): Candle[] {
  const out: Candle[] = [];
  let pos = 0;
  let line = 0;
  const n = text.length;
  while (pos < n) {
    let end = text.indexOf('\n', pos);
    if (end < 0) end = n;
    line++;
    const raw = text.charCodeAt(end - 1) === 13 ? text.slice(pos, end - 1) : text.slice(pos, end);
    pos = end + 1;
    if (raw === '') continue;
    const f = raw.split(',');
    if (line === 1 && !/^\d/.test(f[0] ?? '')) continue; // header
    if (f.length < 8) throw new KlineFormatError(line, `expected 12 columns, got ${f.length}`);
    const time = klineTimeSeconds(f[0]!);
    if (time === undefined) throw new KlineFormatError(line, `bad open time ${JSON.stringify(f[0])}`);
    const open = Number(f[1]);
    const high = Number(f[2]);
    const low = Number(f[3]);
    const close = Number(f[4]);
    const volume = Number(f[7]);
    if (!(open > 0 && high > 0 && low > 0 && close > 0) || !Number.isFinite(volume + open + high + low + close)) throw new KlineFormatError(line, 'bad price or volume');
    out.push({ time, open, high, low, close, volume });
  }
  return out;
}
