import { startFakeBinance, type FakeBinance, type FakeMarket, type FakeTicker } from './fake-binance.js';

/**
 * The second exchange for multi-exchange tests: Binance.US (`binanceus` in ccxt), which speaks
 * Binance's REST and stream shapes from its own hosts. Point MARKET_EXCHANGE_URL_BINANCEUS at it.
 */
export function startFakeBinanceUs(opts: { markets: readonly FakeMarket[]; tickers?: readonly FakeTicker[] }): Promise<FakeBinance> {
  return startFakeBinance({ ...opts, apiPrefix: '/api/v3' });
}
