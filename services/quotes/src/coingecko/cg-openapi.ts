/**
 * The OpenAPI 3.1 paths of the CoinGecko-compatible API (merged into openapi.ts). Response
 * schemas are summarised: CoinGecko's own documentation and the `@coingecko/coingecko-typescript`
 * SDK describe the fields; docs/quotes.md lists the subset and the differences.
 */

export const str = { type: 'string' };
export const bool = { type: 'boolean' };
const security = [{ cgDemoKey: [] }, { cgProKey: [] }, { cgDemoKeyQuery: [] }, { cgProKeyQuery: [] }, { bearer: [] }, { token: [] }];

export const cgError = (description: string, example: unknown): Record<string, unknown> => ({ description, content: { 'application/json': { example } } });

const ERRORS: Record<string, unknown> = {
  '400': cgError('Invalid parameter', { error: 'invalid vs_currency' }),
  '401': cgError('Missing or unknown key', { status: { error_code: 10002, error_message: 'API Key Missing. ...' } }),
  '403': cgError('The plan has no crypto access', { status: { error_code: 10005, error_message: 'Your plan does not include the cryptocurrency API. ...' } }),
  '429': cgError('Burst limit or monthly quota exceeded (Retry-After says when to retry)', { status: { error_code: 429, error_message: "You've exceeded the Rate Limit. ..." } }),
  '503': cgError('Market data missing or stale', { status: { error_code: 503, error_message: 'Quote temporarily unavailable: BTC' } }),
};
const NOT_FOUND = { '404': cgError('Unknown coin id', { error: 'coin not found' }) };

export const q = (name: string, schema: Record<string, unknown>, description: string, required = false): Record<string, unknown> => ({ name, in: 'query', required, schema, description });
export const idParam = { name: 'id', in: 'path', required: true, schema: str, description: 'CoinGecko coin id (see /api/v3/coins/list)', example: 'bitcoin' };
export const vs = q('vs_currency', str, 'Target currency, see /api/v3/simple/supported_vs_currencies', true);
export const precision = q('precision', str, 'Decimal places of prices: full or 0-18 (default: 10 significant digits)');

export function op(operationId: string, summary: string, parameters: unknown[], extra: Record<string, unknown> = {}, auth = true): Record<string, unknown> {
  return {
    get: {
      operationId,
      summary,
      tags: ['CoinGecko-compatible'],
      ...(auth ? { security } : { security: [] }),
      parameters,
      responses: { '200': { description: 'CoinGecko-shaped JSON', content: { 'application/json': {} } }, ...(auth ? ERRORS : {}), ...extra },
    },
  };
}

/** Paths under /api/v3. */
export function coingeckoPaths(): Record<string, unknown> {
  return {
    '/api/v3/ping': op('cgPing', 'Server status (no key needed, not counted)', [], {}, false),
    '/api/v3/simple/price': op('cgSimplePrice', 'Prices of coins by id (or names / symbols) in one or more currencies', [
      q('ids', str, 'Comma-separated coin ids'),
      q('names', str, 'Comma-separated coin names (used when ids is absent)'),
      q('symbols', str, 'Comma-separated symbols (used when ids and names are absent)'),
      q('vs_currencies', str, 'Comma-separated target currencies', true),
      q('include_market_cap', bool, 'Add <vs>_market_cap'),
      q('include_24hr_vol', bool, 'Add <vs>_24h_vol'),
      q('include_24hr_change', bool, 'Add <vs>_24h_change (percent)'),
      q('include_last_updated_at', bool, 'Add last_updated_at (UNIX seconds)'),
      precision,
    ]),
    '/api/v3/simple/supported_vs_currencies': op('cgSupportedVsCurrencies', 'Currencies with a rate now (fiat) and tracked CoinGecko crypto units', []),
    '/api/v3/coins/list': op('cgCoinsList', 'Every listed coin: id, symbol, name', [q('include_platform', bool, 'Add platforms ({} here)'), q('status', str, 'active (default) or inactive (always empty)')]),
    '/api/v3/coins/markets': op('cgCoinsMarkets', 'Ranked market table in one currency', [
      vs,
      q('ids', str, 'Comma-separated coin ids'),
      q('names', str, 'Comma-separated names'),
      q('symbols', str, 'Comma-separated symbols'),
      q('order', { type: 'string', enum: ['market_cap_desc', 'market_cap_asc', 'volume_desc', 'volume_asc', 'id_asc', 'id_desc'], default: 'market_cap_desc' }, 'Sort order'),
      q('per_page', { type: 'integer', minimum: 1, maximum: 250, default: 100 }, 'Rows per page'),
      q('page', { type: 'integer', minimum: 1, default: 1 }, 'Page number'),
      q('sparkline', bool, 'Add sparkline_in_7d.price (hourly closes of 7 days, then the current price)'),
      q('price_change_percentage', str, 'Comma-separated windows among 1h, 24h, 7d, 14d, 30d, 200d, 1y -> price_change_percentage_<w>_in_currency'),
      precision,
    ]),
    '/api/v3/coins/{id}': op(
      'cgCoin',
      'One coin: the documented subset (docs/quotes.md)',
      [idParam, q('localization', bool, 'Include localization (default true)'), q('tickers', bool, 'Include tickers ([] here; default true)'), q('market_data', bool, 'Include market_data (default true)'), q('sparkline', bool, 'Add market_data.sparkline_7d'), q('community_data', bool, 'Accepted, no effect'), q('developer_data', bool, 'Accepted, no effect')],
      NOT_FOUND,
    ),
    '/api/v3/coins/{id}/market_chart': op(
      'cgMarketChart',
      'prices, market_caps, total_volumes as [ms, value]; 1 day -> 5-minute, up to 90 days -> hourly, beyond -> daily',
      [idParam, vs, q('days', str, 'Days back, or max', true), q('interval', { type: 'string', enum: ['daily', 'hourly', '5m'] }, 'Fixed granularity (hourly up to 100 days, 5m up to 1 day)'), precision],
      NOT_FOUND,
    ),
    '/api/v3/coins/{id}/market_chart/range': op(
      'cgMarketChartRange',
      'As market_chart between from and to (UNIX seconds or ISO dates)',
      [idParam, vs, q('from', str, 'UNIX seconds or YYYY-MM-DD[THH:MM]', true), q('to', str, 'UNIX seconds or YYYY-MM-DD[THH:MM]', true), q('interval', { type: 'string', enum: ['daily', 'hourly', '5m'] }, 'Fixed granularity'), precision],
      NOT_FOUND,
    ),
    '/api/v3/coins/{id}/ohlc': op(
      'cgOhlc',
      '[ms, open, high, low, close] at each candle close; 1-2 days -> 30 min, 3-30 days -> 4 h, beyond -> 4 days',
      [idParam, vs, q('days', { type: 'string', enum: ['1', '7', '14', '30', '90', '180', '365', 'max'] }, 'Days back', true), q('interval', { type: 'string', enum: ['daily', 'hourly'] }, 'daily (up to 180 days) or hourly (up to 90 days)'), precision],
      NOT_FOUND,
    ),
    '/api/v3/search': op('cgSearch', 'Coins whose id, name or symbol contains the query', [q('query', str, 'Search text (at most 100 characters)', true)]),
    '/api/v3/global': op('cgGlobal', 'Totals of the coins this deployment tracks (not the whole market)', []),
  };
}

/** Security schemes of the CoinGecko key forms (merged into components.securitySchemes). */
export const COINGECKO_SECURITY_SCHEMES: Record<string, unknown> = {
  cgDemoKey: { type: 'apiKey', in: 'header', name: 'x-cg-demo-api-key', description: 'The access token, as a CoinGecko demo key' },
  cgProKey: { type: 'apiKey', in: 'header', name: 'x-cg-pro-api-key', description: 'The access token, as a CoinGecko pro key' },
  cgDemoKeyQuery: { type: 'apiKey', in: 'query', name: 'x_cg_demo_api_key' },
  cgProKeyQuery: { type: 'apiKey', in: 'query', name: 'x_cg_pro_api_key' },
};
