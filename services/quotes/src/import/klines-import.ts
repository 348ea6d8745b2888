import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { bucketEnd, isBaseInterval, type BaseInterval } from '../domain/intervals.js';
import { USD_QUOTES } from '../market/pair-catalog.js';
import type { CandleRepository } from '../domain/repositories.js';
import { dumpCsvTexts, parseDumpName, verifyChecksum } from './dump-files.js';
import { parseKlinesCsv } from './kline-csv.js';

export interface ImportResult {
  file: string;
  coin: string;
  base: BaseInterval;
  rows: number;
  /** Candles that did not exist before (0 on a re-import). */
  added: number;
  checksum: 'verified' | 'absent';
  from: number;
  to: number;
}

/** `BTCUSDT` -> `BTC`, when quoted in a USD-stable coin (candles are stored in USD). */
export function coinOfPair(pair: string): string | undefined {
  for (const q of [...USD_QUOTES].sort((a, b) => b.length - a.length)) {
    if (pair.endsWith(q) && pair.length > q.length) return pair.slice(0, -q.length);
  }
  return undefined;
}

export interface ImportOptions {
  /** Override the coin / interval taken from the file name. */
  coin?: string;
  interval?: string;
}

/**
 * Imports one Binance spot klines dump (CSV or zip, checksum verified when present) into the
 * candle store. Upserts, so importing the same file again changes nothing; the covered span is
 * extended when the file touches it.
 */
export async function importKlinesFile(candles: CandleRepository, file: string, opts: ImportOptions = {}): Promise<ImportResult> {
  const name = parseDumpName(file);
  const interval = opts.interval ?? name?.interval;
  const coin = opts.coin?.toUpperCase() ?? (name === undefined ? undefined : coinOfPair(name.pair));
  if (interval === undefined || coin === undefined) throw new Error(`${basename(file)}: cannot tell coin and interval from the name (expected e.g. BTCUSDT-1m-2024-01.zip with a USD-stable quote); pass --coin and --interval`);
  if (!isBaseInterval(interval)) throw new Error(`${basename(file)}: interval ${interval} is not stored (use 1m, 30m, 1h, 1d or 1mo dumps)`);
  const bytes = readFileSync(file);
  const checked = verifyChecksum(file, bytes);
  const rows = dumpCsvTexts(file, bytes).flatMap(parseKlinesCsv);
  rows.sort((a, b) => a.time - b.time);
  const from = rows[0]?.time ?? 0;
  const to = rows.length === 0 ? 0 : bucketEnd(interval, rows[rows.length - 1]!.time);
  const before = rows.length === 0 ? 0 : await candles.count(coin, interval, from, to);
  await candles.upsert(coin, interval, rows);
  const after = rows.length === 0 ? 0 : await candles.count(coin, interval, from, to);
  if (rows.length > 0) {
    const cov = await candles.coverage(coin, interval);
    if (cov === undefined) await candles.setCoverage(coin, interval, { from, to });
    else if (from <= cov.to && to >= cov.from) {
      const merged = { from: Math.min(cov.from, from), to: Math.max(cov.to, to) };
      if (merged.from !== cov.from || merged.to !== cov.to) await candles.setCoverage(coin, interval, merged);
    }
  }
  return { file, coin, base: interval, rows: rows.length, added: after - before, checksum: checked ? 'verified' : 'absent', from, to };
}
