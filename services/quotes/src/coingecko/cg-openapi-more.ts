import { bool, cgError, idParam, op, precision, q, str, vs } from './cg-openapi.js';

/**
 * OpenAPI paths of the /api/v3 endpoints added in issue 26 (history, OHLC range, exchange rates,
 * movers, tickers, exchanges, key), merged into openapi.ts beside `coingeckoPaths`.
 */
export function coingeckoMorePaths(): Record<string, unknown> {
  const int = { type: 'integer' };
  const coinNotFound = { '404': cgError('Unknown coin id', { error: 'coin not found' }) };
  const exchangeNotFound = { '404': cgError('Unknown exchange id', { error: 'exchange not found' }) };
  const exchangeId = { name: 'id', in: 'path', required: true, schema: str, description: 'CoinGecko exchange id (see /api/v3/exchanges/list)', example: 'binance' };
  const tickerParams = [
    q('include_exchange_logo', bool, 'Add market.logo'),
    q('page', int, 'Page of 100 tickers (1-1000)'),
    q('depth', bool, 'Accepted; no order books are ingested, so nothing is added'),
    q('dex_pair_format', str, 'Accepted, no effect'),
  ];
  return {
    '/api/v3/coins/{id}/history': op(
      'cgCoinHistory',
      'The coin at 00:00 UTC of a date: the daily candle closing then, in every vs_currency (no market_data before our history)',
      [idParam, q('date', str, 'dd-mm-yyyy or yyyy-mm-dd', true), q('localization', bool, 'Include localization (default true)')],
      { ...coinNotFound, '401': cgError('Missing or unknown key, or a date beyond the plan\'s history (error_code 10012)', { error: { status: { error_code: 10012, error_message: 'Your request exceeds the allowed time range. ...' } } }) },
    ),
    '/api/v3/coins/{id}/ohlc/range': op(
      'cgCoinOhlcRange',
      'OHLC candles starting in [from, to): daily (at most 180 days) or hourly (at most 31 days)',
      [idParam, vs, q('from', str, 'UNIX seconds or ISO date', true), q('to', str, 'UNIX seconds or ISO date', true), q('interval', str, 'daily or hourly', true), precision],
      coinNotFound,
    ),
    '/api/v3/exchange_rates': op('cgExchangeRates', 'BTC in every supported vs_currency (= /simple/price of bitcoin), plus bits and sats', []),
    '/api/v3/coins/top_gainers_losers': op('cgTopGainersLosers', 'Up to 30 coins with the largest rise and fall over a duration (24 h volume at least 50,000 USD)', [
      vs,
      q('duration', str, '1h, 24h (default), 7d, 14d, 30d, 60d, 1y'),
      q('top_coins', str, '300, 500, 1000 (default) or all'),
      q('price_change_percentage', str, 'Extra windows: 1h,24h,7d,14d,30d,60d,200d,1y'),
    ]),
    '/api/v3/coins/{id}/tickers': op(
      'cgCoinTickers',
      'The coin on every exchange and pair we ingest (is_anomaly: left out by the outlier rejection)',
      [idParam, q('exchange_ids', str, 'Comma-separated exchange ids'), q('order', str, 'trust_score_desc (default), trust_score_asc, volume_desc, volume_asc'), ...tickerParams],
      coinNotFound,
    ),
    '/api/v3/exchanges': op('cgExchanges', 'The exchanges we ingest, by 24 h volume in BTC', [q('per_page', int, '1-250 (default 100)'), q('page', int, 'Page (default 1)')]),
    '/api/v3/exchanges/list': op('cgExchangesList', 'Id and name of every exchange we ingest', [q('status', str, 'active (default) or inactive (always empty)')]),
    '/api/v3/exchanges/{id}': op('cgExchange', 'One exchange: figures from its tickers and its 100 most traded tickers', [exchangeId, q('dex_pair_format', str, 'Accepted, no effect')], exchangeNotFound),
    '/api/v3/exchanges/{id}/tickers': op(
      'cgExchangeTickers',
      "One exchange's tickers, 100 per page",
      [exchangeId, q('coin_ids', str, 'Comma-separated coin ids'), q('order', str, 'trust_score_desc (default), trust_score_asc, volume_desc, volume_asc, market_cap_desc, market_cap_asc, base_target'), ...tickerParams],
      exchangeNotFound,
    ),
    '/api/v3/key': op('cgKey', "The calling key's plan, per-minute limit and this month's calls (passes the burst limits, never counted in the monthly quota)", []),
  };
}
