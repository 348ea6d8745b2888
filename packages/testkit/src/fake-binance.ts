import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { acceptWebSocket, type FakeWsConnection } from './fake-websocket.js';

/** A spot market as exchangeInfo lists it, e.g. { symbol: 'BTCUSDT', base: 'BTC', quote: 'USDT' }. */
export interface FakeMarket {
  symbol: string;
  base: string;
  quote: string;
  /** Default TRADING; anything else is listed but not tradable. */
  status?: string;
}

/** Rolling 24 h statistics; numbers are sent as Binance's decimal strings. */
export interface FakeTicker {
  symbol: string;
  lastPrice: number;
  openPrice: number;
  highPrice: number;
  lowPrice: number;
  /** Base-asset volume. */
  volume: number;
  quoteVolume: number;
  /** Milliseconds. */
  openTime: number;
  closeTime: number;
}

/** One kline; prices and volumes are numbers here and strings on the wire. */
export interface FakeKline {
  /** Milliseconds. */
  openTime: number;
  open: number;
  high: number;
  low: number;
  close: number;
  volume: number;
  quoteVolume: number;
}

/**
 * A scripted failure. `path` is a substring of the request path (all paths when absent);
 * `after` lets that many matching requests through first; `times` is how often it fires.
 */
export interface FakeFault {
  path?: string;
  after?: number;
  times?: number;
  /** status: answer `status` with `body`/`headers`; hang: never answer; garbage: 200 with a body that is not the API's shape; reset: destroy the socket. */
  kind: 'status' | 'hang' | 'garbage' | 'reset';
  status?: number;
  body?: string;
  headers?: Record<string, string>;
}

export interface RecordedHttpRequest {
  method: string;
  path: string;
  query: URLSearchParams;
}

export interface FakeBinanceOptions {
  markets: readonly FakeMarket[];
  tickers?: readonly FakeTicker[];
  /** Path prefix of the REST API; `/api/v3` for binance and binanceus. */
  apiPrefix?: string;
}

export interface FakeBinance {
  /** Origin of the server, e.g. http://127.0.0.1:PORT (REST under /api/v3, streams under /ws). */
  url: string;
  port: number;
  requests: RecordedHttpRequest[];
  setTicker(t: FakeTicker): void;
  setKlines(symbol: string, interval: string, rows: readonly FakeKline[]): void;
  addFault(f: FakeFault): void;
  clearFaults(): void;
  /** Streams names subscribed so far over WebSocket (e.g. `btcusdt@miniTicker`). */
  subscriptions(): string[];
  /** Sends a 24hrMiniTicker event to every connection subscribed to the symbol's miniTicker stream. */
  pushMiniTicker(t: FakeTicker, eventTime: number): number;
  close(): Promise<void>;
}

const INTERVAL_MS: Readonly<Record<string, number>> = {
  '1m': 60_000,
  '3m': 180_000,
  '5m': 300_000,
  '15m': 900_000,
  '30m': 1_800_000,
  '1h': 3_600_000,
  '2h': 7_200_000,
  '4h': 14_400_000,
  '1d': 86_400_000,
  '1w': 604_800_000,
};

function closeTimeOf(interval: string, openTime: number): number {
  const fixed = INTERVAL_MS[interval];
  if (fixed !== undefined) return openTime + fixed - 1;
  const d = new Date(openTime);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) - 1;
}

const s = (n: number): string => String(n);

function tickerJson(t: FakeTicker): Record<string, unknown> {
  const change = t.lastPrice - t.openPrice;
  return {
    symbol: t.symbol,
    priceChange: s(change),
    priceChangePercent: s(t.openPrice === 0 ? 0 : Math.round((change / t.openPrice) * 100 * 1000) / 1000),
    weightedAvgPrice: s(t.volume === 0 ? t.lastPrice : t.quoteVolume / t.volume),
    prevClosePrice: s(t.openPrice),
    lastPrice: s(t.lastPrice),
    lastQty: '0.001',
    bidPrice: s(t.lastPrice),
    bidQty: '1',
    askPrice: s(t.lastPrice),
    askQty: '1',
    openPrice: s(t.openPrice),
    highPrice: s(t.highPrice),
    lowPrice: s(t.lowPrice),
    volume: s(t.volume),
    quoteVolume: s(t.quoteVolume),
    openTime: t.openTime,
    closeTime: t.closeTime,
    firstId: 1,
    lastId: 100,
    count: 100,
  };
}

function marketJson(m: FakeMarket): Record<string, unknown> {
  return {
    symbol: m.symbol,
    status: m.status ?? 'TRADING',
    baseAsset: m.base,
    baseAssetPrecision: 8,
    quoteAsset: m.quote,
    quotePrecision: 8,
    quoteAssetPrecision: 8,
    baseCommissionPrecision: 8,
    quoteCommissionPrecision: 8,
    orderTypes: ['LIMIT', 'MARKET'],
    icebergAllowed: true,
    ocoAllowed: true,
    quoteOrderQtyMarketAllowed: true,
    allowTrailingStop: false,
    cancelReplaceAllowed: false,
    isSpotTradingAllowed: true,
    isMarginTradingAllowed: false,
    filters: [],
    permissions: ['SPOT'],
    permissionSets: [['SPOT']],
    defaultSelfTradePreventionMode: 'NONE',
    allowedSelfTradePreventionModes: ['NONE'],
  };
}

/**
 * A loopback Binance spot market-data server with the real payload shapes: exchangeInfo,
 * ticker/24hr (single, batch, all), klines with startTime/endTime/limit paging, the miniTicker
 * WebSocket stream, Binance error bodies, and scripted faults (errors, bans, hangs, garbage).
 */
export async function startFakeBinance(opts: FakeBinanceOptions): Promise<FakeBinance> {
  const prefix = opts.apiPrefix ?? '/api/v3';
  const markets = [...opts.markets];
  const tickers = new Map<string, FakeTicker>((opts.tickers ?? []).map((t) => [t.symbol, t]));
  const klines = new Map<string, FakeKline[]>();
  const faults: Array<FakeFault & { seen: number; fired: number }> = [];
  const requests: RecordedHttpRequest[] = [];
  const sockets = new Set<Socket>();
  const wsConns: Array<{ conn: FakeWsConnection; streams: Set<string> }> = [];
  const subscribed: string[] = [];

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { 'content-type': 'application/json;charset=UTF-8', ...headers });
    res.end(JSON.stringify(body));
  };
  const error = (res: ServerResponse, status: number, code: number, msg: string): void => json(res, status, { code, msg });

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const u = new URL(req.url ?? '/', 'http://fake');
    const rec = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams };
    requests.push(rec);
    for (const f of faults) {
      if (f.path !== undefined && !u.pathname.includes(f.path)) continue;
      f.seen++;
      if (f.seen <= (f.after ?? 0)) continue;
      if (f.fired >= (f.times ?? 1)) continue;
      f.fired++;
      switch (f.kind) {
        case 'hang':
          return; // the client's timeout has to end it
        case 'reset':
          req.socket.destroy();
          return;
        case 'garbage':
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(f.body ?? '<html>502 Bad Gateway</html>');
          return;
        case 'status':
          res.writeHead(f.status ?? 500, { 'content-type': 'application/json;charset=UTF-8', ...(f.headers ?? {}) });
          res.end(f.body ?? JSON.stringify({ code: -1003, msg: 'Too many requests.' }));
          return;
      }
    }
    const path = u.pathname.startsWith(prefix) ? u.pathname.slice(prefix.length) : u.pathname;
    const q = u.searchParams;
    if (path === '/ping') return json(res, 200, {});
    if (path === '/time') return json(res, 200, { serverTime: Date.now() });
    if (path === '/exchangeInfo') {
      return json(res, 200, { timezone: 'UTC', serverTime: Date.now(), rateLimits: [{ rateLimitType: 'REQUEST_WEIGHT', interval: 'MINUTE', intervalNum: 1, limit: 6000 }], exchangeFilters: [], symbols: markets.map(marketJson) });
    }
    if (path === '/ticker/24hr') {
      const one = q.get('symbol');
      const many = q.get('symbols');
      if (one !== null) {
        const t = tickers.get(one);
        return t === undefined ? error(res, 400, -1121, 'Invalid symbol.') : json(res, 200, tickerJson(t));
      }
      if (many !== null) {
        let names: unknown;
        try {
          names = JSON.parse(many);
        } catch {
          return error(res, 400, -1100, "Illegal characters found in parameter 'symbols'.");
        }
        if (!Array.isArray(names)) return error(res, 400, -1100, "Illegal characters found in parameter 'symbols'.");
        const out = [];
        for (const n of names) {
          const t = tickers.get(String(n));
          if (t === undefined) return error(res, 400, -1121, 'Invalid symbol.');
          out.push(tickerJson(t));
        }
        return json(res, 200, out);
      }
      return json(res, 200, [...tickers.values()].map(tickerJson));
    }
    if (path === '/klines' || path === '/uiKlines') {
      const symbol = q.get('symbol') ?? '';
      const interval = q.get('interval') ?? '';
      if (!markets.some((m) => m.symbol === symbol)) return error(res, 400, -1121, 'Invalid symbol.');
      const rows = klines.get(`${symbol}|${interval}`) ?? [];
      const limit = Math.min(1000, Math.max(1, Number(q.get('limit') ?? 500)));
      const start = q.get('startTime');
      const end = q.get('endTime');
      let sel = rows.filter((k) => (start === null || k.openTime >= Number(start)) && (end === null || k.openTime <= Number(end)));
      // Without startTime Binance answers the most recent candles.
      sel = start === null ? sel.slice(-limit) : sel.slice(0, limit);
      return json(
        res,
        200,
        sel.map((k) => [k.openTime, s(k.open), s(k.high), s(k.low), s(k.close), s(k.volume), closeTimeOf(interval, k.openTime), s(k.quoteVolume), 10, '0', '0', '0']),
      );
    }
    return error(res, 404, -1000, 'Unknown path.');
  };

  const server = createServer(handle);
  server.on('connection', (sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    sockets.add(socket);
    const entry = { conn: undefined as unknown as FakeWsConnection, streams: new Set<string>() };
    // Streams named in the URL (/ws/<stream> or /stream?streams=a/b) count as subscribed.
    const u = new URL(req.url ?? '/', 'http://fake');
    const inPath = u.pathname.startsWith('/ws/') ? u.pathname.slice(4) : '';
    for (const st of [...inPath.split('/'), ...(u.searchParams.get('streams') ?? '').split('/')]) if (st.includes('@')) entry.streams.add(st);
    entry.conn = acceptWebSocket(req, socket, (conn, text) => {
      let msg: { method?: string; params?: unknown; id?: unknown };
      try {
        msg = JSON.parse(text) as typeof msg;
      } catch {
        return;
      }
      if (msg.method === 'SUBSCRIBE' && Array.isArray(msg.params)) {
        for (const p of msg.params) {
          entry.streams.add(String(p));
          subscribed.push(String(p));
        }
      }
      conn.send(JSON.stringify({ result: null, id: msg.id ?? null }));
    });
    wsConns.push(entry);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    setTicker(t) {
      tickers.set(t.symbol, t);
    },
    setKlines(symbol, interval, rows) {
      klines.set(`${symbol}|${interval}`, [...rows].sort((a, b) => a.openTime - b.openTime));
    },
    addFault(f) {
      faults.push({ ...f, seen: 0, fired: 0 });
    },
    clearFaults() {
      faults.length = 0;
    },
    subscriptions: () => [...subscribed],
    pushMiniTicker(t, eventTime) {
      const stream = `${t.symbol.toLowerCase()}@miniTicker`;
      const ev = { e: '24hrMiniTicker', E: eventTime, s: t.symbol, c: s(t.lastPrice), o: s(t.openPrice), h: s(t.highPrice), l: s(t.lowPrice), v: s(t.volume), q: s(t.quoteVolume) };
      let sent = 0;
      for (const w of wsConns) {
        if (w.conn.closed) continue;
        if (w.streams.has(stream)) {
          w.conn.send(JSON.stringify(w.conn.path.startsWith('/stream') ? { stream, data: ev } : ev));
          sent++;
        } else if (w.streams.has('!miniTicker@arr')) {
          w.conn.send(JSON.stringify([ev]));
          sent++;
        }
      }
      return sent;
    },
    close: async () => {
      for (const w of wsConns) w.conn.close();
      for (const sock of sockets) sock.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
