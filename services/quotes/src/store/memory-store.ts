import { MemoryDailyUsage, MemorySessions, MemoryUsers } from './memory-dashboard.js';
import type { BaseInterval } from '../domain/intervals.js';
import type { Candle, DailyRate } from '../domain/market.js';
import type { BackfillState, BackfillStateRepository, CandleBucket, CandleRepository, Coverage, FxRateRepository, Store, TokenRecord, TokenRepository, UsageRepository, UsageRow } from '../domain/repositories.js';

class MemoryTokens implements TokenRepository {
  private readonly byId = new Map<string, TokenRecord>();
  insert(rec: TokenRecord): Promise<void> {
    for (const r of this.byId.values()) if (r.tokenHash === rec.tokenHash) return Promise.reject(new Error('duplicate token hash'));
    if (this.byId.has(rec.id)) return Promise.reject(new Error('duplicate token id'));
    this.byId.set(rec.id, { ...rec });
    return Promise.resolve();
  }
  findByHash(tokenHash: string): Promise<TokenRecord | undefined> {
    for (const r of this.byId.values()) if (r.tokenHash === tokenHash) return Promise.resolve({ ...r });
    return Promise.resolve(undefined);
  }
  findById(id: string): Promise<TokenRecord | undefined> {
    const r = this.byId.get(id);
    return Promise.resolve(r === undefined ? undefined : { ...r });
  }
  findByIds(ids: readonly string[]): Promise<TokenRecord[]> {
    const out: TokenRecord[] = [];
    for (const id of ids) {
      const r = this.byId.get(id);
      if (r !== undefined) out.push({ ...r });
    }
    return Promise.resolve(out);
  }
  list(): Promise<TokenRecord[]> {
    return Promise.resolve([...this.byId.values()].map((r) => ({ ...r })).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id)));
  }
  setPlan(id: string, planId: string): Promise<boolean> {
    const r = this.byId.get(id);
    if (r !== undefined) r.planId = planId;
    return Promise.resolve(r !== undefined);
  }
  revoke(id: string, at: number): Promise<boolean> {
    const r = this.byId.get(id);
    if (r === undefined || r.revokedAt !== null) return Promise.resolve(false);
    r.revokedAt = at;
    return Promise.resolve(true);
  }
}

class MemoryUsage implements UsageRepository {
  private readonly counts = new Map<string, UsageRow>();
  incrementIfBelow(tokenId: string, month: string, limit: number): Promise<number | undefined> {
    const key = `${tokenId}\u0000${month}`;
    const row = this.counts.get(key) ?? { tokenId, month, count: 0 };
    if (row.count >= limit) return Promise.resolve(undefined);
    row.count++;
    this.counts.set(key, row);
    return Promise.resolve(row.count);
  }
  add(tokenId: string, month: string, delta: number): Promise<number> {
    const key = `${tokenId}\u0000${month}`;
    const row = this.counts.get(key) ?? { tokenId, month, count: 0 };
    row.count += delta;
    this.counts.set(key, row);
    return Promise.resolve(row.count);
  }
  get(tokenId: string, month: string): Promise<number> {
    return Promise.resolve(this.counts.get(`${tokenId}\u0000${month}`)?.count ?? 0);
  }
  listMonth(month: string): Promise<UsageRow[]> {
    const rows = [...this.counts.values()].filter((r) => r.month === month).map((r) => ({ ...r }));
    return Promise.resolve(rows.sort((a, b) => a.tokenId.localeCompare(b.tokenId)));
  }
}

class MemoryCandles implements CandleRepository {
  private readonly series = new Map<string, { byTime: Map<number, Candle>; coverage?: Coverage }>();
  private get(symbol: string, base: BaseInterval): { byTime: Map<number, Candle>; coverage?: Coverage } {
    const key = `${symbol}\u0000${base}`;
    let s = this.series.get(key);
    if (s === undefined) {
      s = { byTime: new Map() };
      this.series.set(key, s);
    }
    return s;
  }
  upsert(symbol: string, base: BaseInterval, candles: readonly Candle[]): Promise<number> {
    const s = this.get(symbol, base);
    for (const k of candles) s.byTime.set(k.time, { ...k });
    return Promise.resolve(candles.length);
  }
  range(symbol: string, base: BaseInterval, from: number, to: number): Promise<Candle[]> {
    const s = this.get(symbol, base);
    const out = [...s.byTime.values()].filter((k) => k.time >= from && k.time < to).map((k) => ({ ...k }));
    return Promise.resolve(out.sort((a, b) => a.time - b.time));
  }
  coverage(symbol: string, base: BaseInterval): Promise<Coverage | undefined> {
    const c = this.get(symbol, base).coverage;
    return Promise.resolve(c === undefined ? undefined : { ...c });
  }
  setCoverage(symbol: string, base: BaseInterval, coverage: Coverage): Promise<void> {
    this.get(symbol, base).coverage = { ...coverage };
    return Promise.resolve();
  }
  count(symbol: string, base: BaseInterval, from: number, to: number): Promise<number> {
    let n = 0;
    for (const t of this.get(symbol, base).byTime.keys()) if (t >= from && t < to) n++;
    return Promise.resolve(n);
  }
  async buckets(symbol: string, base: BaseInterval, from: number, to: number, step: number, offset: number): Promise<CandleBucket[]> {
    const out: CandleBucket[] = [];
    let cur: CandleBucket | undefined;
    for (const k of await this.range(symbol, base, from, to)) {
      const b = k.time - ((((k.time - offset) % step) + step) % step);
      if (cur === undefined || cur.time !== b) {
        cur = { time: b, lastTime: k.time, open: k.open, high: k.high, low: k.low, close: k.close, volume: k.volume };
        out.push(cur);
      } else {
        cur.lastTime = k.time;
        cur.high = Math.max(cur.high, k.high);
        cur.low = Math.min(cur.low, k.low);
        cur.close = k.close;
        cur.volume = cur.volume === null || k.volume === null ? null : cur.volume + k.volume;
      }
    }
    return out;
  }
}

class MemoryFxRates implements FxRateRepository {
  private readonly byCurrency = new Map<string, Map<string, number>>();
  upsert(currency: string, _source: string, rows: readonly DailyRate[]): Promise<number> {
    let m = this.byCurrency.get(currency);
    if (m === undefined) this.byCurrency.set(currency, (m = new Map<string, number>()));
    for (const r of rows) m.set(r.date, r.rate);
    return Promise.resolve(rows.length);
  }
  range(currency: string, fromDate: string, toDate: string): Promise<DailyRate[]> {
    const m = this.byCurrency.get(currency) ?? new Map<string, number>();
    const out = [...m].filter(([d]) => d >= fromDate && d <= toDate).map(([date, rate]) => ({ date, rate }));
    return Promise.resolve(out.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0)));
  }
  lastDate(currency: string): Promise<string | undefined> {
    const dates = [...(this.byCurrency.get(currency)?.keys() ?? [])].sort();
    return Promise.resolve(dates[dates.length - 1]);
  }
}

class MemoryBackfillState implements BackfillStateRepository {
  private readonly states = new Map<string, BackfillState>();
  get(symbol: string, base: BaseInterval): Promise<BackfillState | undefined> {
    const s = this.states.get(`${symbol}\u0000${base}`);
    return Promise.resolve(s === undefined ? undefined : { ...s });
  }
  put(state: BackfillState): Promise<void> {
    this.states.set(`${state.symbol}\u0000${state.base}`, { ...state });
    return Promise.resolve();
  }
  list(): Promise<BackfillState[]> {
    const all = [...this.states.values()].map((s) => ({ ...s }));
    return Promise.resolve(all.sort((a, b) => a.symbol.localeCompare(b.symbol) || a.base.localeCompare(b.base)));
  }
}

/** In-memory store: same contract as the SQL stores, for tests and throwaway runs. */
export class MemoryStore implements Store {
  readonly kind = 'memory';
  /** Everything lives in this process, so nothing changes behind a caller's back. */
  readonly changeVersion = (): number => 0;
  readonly tokens = new MemoryTokens();
  readonly usage = new MemoryUsage();
  readonly candles = new MemoryCandles();
  readonly fxRates = new MemoryFxRates();
  readonly backfill = new MemoryBackfillState();
  readonly users = new MemoryUsers();
  readonly sessions = new MemorySessions();
  readonly dailyUsage = new MemoryDailyUsage();
  migrate(): Promise<string[]> {
    return Promise.resolve([]);
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}
