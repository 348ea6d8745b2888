import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { HttpGetter } from './http-json.js';

/** Circulating supply per coin, for marketCap = price x supply; unknown coins get marketCap 0. */
export interface SupplySource {
  supply(symbol: string): number | undefined;
  /** Cheap when fresh; failures are logged and the last figures kept. */
  refresh(): Promise<void>;
}

/** Supplies from a JSON file `{"BTC": 19800000}` (MARKET_SUPPLY_FILE). */
export function fileSupply(path: string): SupplySource {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  const m = new Map<string, number>();
  for (const [k, v] of Object.entries(raw)) if (typeof v === 'number' && v > 0) m.set(k.toUpperCase(), v);
  return { supply: (s) => m.get(s), refresh: () => Promise.resolve() };
}

interface PaprikaTicker {
  symbol?: unknown;
  rank?: unknown;
  circulating_supply?: unknown;
}

/**
 * Supplies from a CoinPaprika-shaped `GET <url>/v1/tickers` (keyless), refreshed hourly. Symbols
 * are not unique there; the best-ranked coin wins a symbol.
 */
export class PaprikaSupply implements SupplySource {
  private bySymbol = new Map<string, number>();
  private fetchedAt = -Infinity;
  private inflight: Promise<void> | undefined;
  constructor(
    private readonly url: string,
    private readonly http: HttpGetter,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly everyMs = 3_600_000,
  ) {}

  supply(symbol: string): number | undefined {
    return this.bySymbol.get(symbol);
  }

  refresh(): Promise<void> {
    if (this.clock.now() - this.fetchedAt < this.everyMs) return Promise.resolve();
    this.inflight ??= this.load().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async load(): Promise<void> {
    try {
      const rows = await this.http.get('supply', `${this.url}/v1/tickers`, (body) => {
        const v = JSON.parse(body) as unknown;
        if (!Array.isArray(v)) throw new TypeError('tickers is not an array');
        return v as PaprikaTicker[];
      });
      const best = new Map<string, { rank: number; supply: number }>();
      for (const r of rows) {
        if (typeof r.symbol !== 'string' || typeof r.circulating_supply !== 'number' || !(r.circulating_supply > 0)) continue;
        const rank = typeof r.rank === 'number' && r.rank > 0 ? r.rank : Infinity;
        const sym = r.symbol.toUpperCase();
        const cur = best.get(sym);
        if (cur === undefined || rank < cur.rank) best.set(sym, { rank, supply: r.circulating_supply });
      }
      this.bySymbol = new Map([...best].map(([k, v]) => [k, v.supply]));
      this.fetchedAt = this.clock.now();
    } catch (err) {
      // Try again at the next refresh, not on every ticker refresh.
      this.fetchedAt = this.clock.now() - this.everyMs + 60_000;
      this.log.warn({ err: (err as Error).message }, 'circulating supply fetch failed; keeping the last figures');
    }
  }
}
