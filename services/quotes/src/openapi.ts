import type { PlanCatalog } from './accounts/plans.js';
import { INTERVALS, RANGES } from './domain/intervals.js';
import { QUOTE_CURRENCIES } from './market/currencies.js';
import { COINGECKO_SECURITY_SCHEMES, coingeckoPaths } from './coingecko/cg-openapi.js';
import { coingeckoMorePaths } from './coingecko/cg-openapi-more.js';
import { currencyPaths } from './api/currency-openapi.js';

const num = { type: 'number' };
const nullableNum = { type: ['number', 'null'] };
const str = { type: 'string' };

function errorResponse(description: string, example: string): Record<string, unknown> {
  return { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example: { error: true, message: example } } } };
}

/** The OpenAPI 3.1 description of the service, built once at start-up. */
export function buildOpenApi(plans: PlanCatalog): Record<string, unknown> {
  const planText = [...plans.values()]
    .map((p) => `**${p.name}**: ${p.crypto ? `${p.monthlyRequests} requests/month, up to ${p.maxCoinsPerRequest} coins per request, ranges ${p.ranges.join(', ')}; intervals ${p.intervals.join(', ')}` : 'no crypto access'}`)
    .join('\n\n');
  const security = [{ bearer: [] }, { token: [] }];
  const tokenParam = { name: 'token', in: 'query', required: false, schema: str, description: 'Access token, when the Authorization header cannot be used' };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Crypto quotes API (brapi-compatible)',
      version: '2.0.0',
      description: `Self-hosted, brapi-compatible cryptocurrency quotes. Responses carry \`X-Data-Source\` naming the market source.\n\n${planText}`,
    },
    servers: [{ url: '/' }],
    security,
    paths: {
      '/api/v2/crypto': {
        get: {
          operationId: 'cryptoRetrieve',
          summary: 'Quotes (and optional history) for one or more coins',
          parameters: [
            { name: 'coin', in: 'query', required: true, schema: str, description: 'Comma-separated symbols, e.g. BTC,ETH', example: 'BTC,ETH' },
            { name: 'currency', in: 'query', required: false, schema: { type: 'string', enum: [...QUOTE_CURRENCIES], default: 'BRL' }, description: "brapi's BRL, USD, EUR, GBP, JPY, CHF, CAD, AUD, DKK, NOK, SEK; extension: more PTAX fiat currencies (served where an FX source has a rate, else 400) and BTC, ETH (priced by the coin's own USD price; amounts with 8 decimals) and USDT (1:1 with USD)" },
            { name: 'range', in: 'query', required: false, schema: { type: 'string', enum: [...RANGES] }, description: 'History period (default 1mo when interval is given)' },
            { name: 'interval', in: 'query', required: false, schema: { type: 'string', enum: [...INTERVALS] }, description: 'History granularity (default 1d when range is given)' },
            {
              name: 'startDate',
              in: 'query',
              required: false,
              schema: { type: 'string', maxLength: 40, examples: ['2026-03-01', '2026-03-01T06:00:00Z'] },
              description:
                "Extension (not in brapi's crypto API): history from this UTC day (YYYY-MM-DD) or ISO 8601 instant with a zone, instead of `range`; needs `endDate`; `usedRange` is then `custom`",
            },
            {
              name: 'endDate',
              in: 'query',
              required: false,
              schema: { type: 'string', maxLength: 40, examples: ['2026-03-31'] },
              description: 'Extension: end of the `startDate` window: a UTC day (included) or an ISO 8601 instant (excluded); capped at now',
            },
            tokenParam,
          ],
          responses: {
            '200': {
              description: 'Quotes',
              headers: { ETag: { schema: str }, 'Cache-Control': { schema: str }, 'X-Data-Source': { schema: str } },
              content: { 'application/json': { schema: { $ref: '#/components/schemas/CryptoResponse' } } },
            },
            '304': { description: 'Not modified (If-None-Match matched the ETag)' },
            '400': errorResponse(
              'Unknown coin, invalid currency, range, interval or startDate/endDate, too many coins for the plan, or more history candles than QUOTES_HISTORY_MAX_POINTS (coins x points)',
              "Invalid field 'range'. Valid ranges: 1d, 5d, 1mo",
            ),
            '401': errorResponse('Missing or invalid token', 'Your token is invalid, please check your token'),
            '402': errorResponse('Monthly request quota used up', 'You have reached the request limit of your plan. Please consider upgrading to a better plan'),
            '403': errorResponse('The plan has no crypto access', 'Your plan does not allow access to cryptocurrency data. Please consider upgrading to a paid plan'),
            '405': errorResponse('Method not allowed', 'Method not allowed'),
            '417': errorResponse('`coin` missing', 'Missing required parameter: `coin`'),
            '503': errorResponse('A requested quote is missing or stale', 'Quote temporarily unavailable: BTC'),
          },
        },
      },
      '/api/v2/crypto/available': {
        get: {
          operationId: 'cryptoListAvailable',
          summary: 'Symbols accepted by /api/v2/crypto',
          parameters: [{ name: 'search', in: 'query', required: false, schema: str, description: 'Case-insensitive part of the symbol or (extension) of the name: bitcoin finds BCH, BTC, WBTC' }, tokenParam],
          responses: {
            '200': { description: 'Sorted symbols', content: { 'application/json': { schema: { $ref: '#/components/schemas/AvailableResponse' } } } },
            '401': errorResponse('Missing or invalid token', 'Your token is invalid, please check your token'),
            '402': errorResponse('Monthly request quota used up', 'You have reached the request limit of your plan. Please consider upgrading to a better plan'),
            '403': errorResponse('The plan has no crypto access', 'Your plan does not allow access to cryptocurrency data. Please consider upgrading to a paid plan'),
            '404': {
              description: 'No symbol matches',
              content: { 'application/json': { schema: { type: 'object', properties: { message: str }, required: ['message'] }, example: { message: 'Coin not found' } } },
            },
          },
        },
      },
      '/api/v2/crypto/stream': {
        get: {
          operationId: 'cryptoStream',
          summary: 'Live quotes as Server-Sent Events (extension)',
          description:
            'Keeps the response open: `event: quote` with `id: <epoch>.<version>` and `data: {"coins":[Coin…],"requestedAt":…}`, first the current state, then after each market refresh only the coins that changed; a heartbeat comment every QUOTES_STREAM_HEARTBEAT; `Last-Event-ID` resumes with what changed since. Counts one request at open and one per QUOTES_STREAM_CHARGE_INTERVAL; a refused charge ends it with `event: error`.',
          parameters: [
            { name: 'coin', in: 'query', required: true, schema: str, example: 'BTC,ETH' },
            { name: 'currency', in: 'query', required: false, schema: { type: 'string', enum: [...QUOTE_CURRENCIES], default: 'BRL' } },
            { name: 'Last-Event-ID', in: 'header', required: false, schema: str, description: 'Id of the last event received (EventSource sends it when reconnecting)' },
            { name: 'lastEventId', in: 'query', required: false, schema: str, description: 'The same, for a first connection that cannot set headers' },
            tokenParam,
          ],
          responses: {
            '200': { description: 'Event stream', content: { 'text/event-stream': { schema: str } } },
            '400': errorResponse('Unknown coin, invalid currency, or too many coins for the plan', 'Coin not found: NOPE'),
            '401': errorResponse('Missing or invalid token', 'Your token is invalid, please check your token'),
            '402': errorResponse('Monthly request quota used up', 'You have reached the request limit of your plan. Please consider upgrading to a better plan'),
            '403': errorResponse('The plan has no crypto access', 'Your plan does not allow access to cryptocurrency data. Please consider upgrading to a paid plan'),
            '417': errorResponse('`coin` missing', 'Missing required parameter: `coin`'),
            '429': errorResponse('Too many open streams for the token, or burst limit reached', 'Too many open streams for this token (limit 5); close one first'),
            '503': errorResponse('Too many open streams on the server (Retry-After)', 'The server has too many open streams, please retry shortly'),
          },
        },
      },
      ...coingeckoPaths(),
      ...coingeckoMorePaths(),
      ...currencyPaths(),
      '/health': { get: { summary: 'Liveness and data freshness', security: [], responses: { '200': { description: 'Status' } } } },
      '/icons/{file}': {
        get: {
          summary: 'Coin icon (SVG); a generic icon for coins without one',
          security: [],
          parameters: [{ name: 'file', in: 'path', required: true, schema: str, example: 'btc.svg' }],
          responses: { '200': { description: 'SVG', content: { 'image/svg+xml': {} } } },
        },
      },
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <token> (preferred)' },
        token: { type: 'apiKey', in: 'query', name: 'token' },
        ...COINGECKO_SECURITY_SCHEMES,
      },
      schemas: {
        Error: { type: 'object', properties: { error: { const: true }, message: str }, required: ['error', 'message'] },
        HistoricalDataPrice: {
          type: 'object',
          properties: { date: { type: 'integer', description: 'Bucket start, Unix seconds' }, open: nullableNum, high: nullableNum, low: nullableNum, close: nullableNum, volume: { type: ['number', 'null'], description: "Traded value in `currency`: the exchange's own quote-asset volume (Binance kline field 7) converted like the prices, rounded to the currency's minor units. null before the first FX fixing, and for exchanges whose klines carry only base-asset volume (it is never approximated from base volume x price)" }, adjustedClose: nullableNum },
          required: ['date', 'open', 'high', 'low', 'close', 'volume', 'adjustedClose'],
        },
        Coin: {
          type: 'object',
          properties: {
            currency: str,
            currencyRateFromUSD: { type: 'number', description: '1 USD = X currency (current rate)' },
            coinName: str,
            coin: str,
            regularMarketChange: { type: 'number', description: 'Absolute change over a rolling 24 h window' },
            regularMarketPrice: num,
            regularMarketChangePercent: { type: 'number', description: 'Percent units (0.5 = 0.5 %)' },
            regularMarketDayLow: num,
            regularMarketDayHigh: num,
            regularMarketDayRange: { type: 'string', description: '"<low> - <high>"' },
            regularMarketVolume: { type: 'number', description: '24 h traded value in `currency`' },
            marketCap: num,
            regularMarketTime: { type: 'string', format: 'date-time' },
            coinImageUrl: { type: 'string', format: 'uri' },
            usedInterval: str,
            usedRange: str,
            historicalDataPrice: { type: 'array', items: { $ref: '#/components/schemas/HistoricalDataPrice' } },
            validRanges: { type: 'array', items: str },
            validIntervals: { type: 'array', items: str },
          },
          required: ['currency', 'currencyRateFromUSD', 'coinName', 'coin', 'regularMarketChange', 'regularMarketPrice', 'regularMarketChangePercent', 'regularMarketDayLow', 'regularMarketDayHigh', 'regularMarketDayRange', 'regularMarketVolume', 'marketCap', 'regularMarketTime', 'coinImageUrl'],
        },
        CryptoResponse: {
          type: 'object',
          properties: { coins: { type: 'array', items: { $ref: '#/components/schemas/Coin' } }, requestedAt: { type: 'string', format: 'date-time' }, took: { type: 'number', description: 'Milliseconds' } },
          required: ['coins', 'requestedAt', 'took'],
        },
        AvailableResponse: { type: 'object', properties: { coins: { type: 'array', items: str } }, required: ['coins'] },
      },
    },
  };
}
