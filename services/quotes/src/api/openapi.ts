import type { PlanCatalog } from '../accounts/plans.js';
import { INTERVALS, RANGES } from '../history/intervals.js';
import { CURRENCIES } from '../market/currencies.js';

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
            { name: 'currency', in: 'query', required: false, schema: { type: 'string', enum: [...CURRENCIES], default: 'BRL' } },
            { name: 'range', in: 'query', required: false, schema: { type: 'string', enum: [...RANGES] }, description: 'History period (default 1mo when interval is given)' },
            { name: 'interval', in: 'query', required: false, schema: { type: 'string', enum: [...INTERVALS] }, description: 'History granularity (default 1d when range is given)' },
            tokenParam,
          ],
          responses: {
            '200': {
              description: 'Quotes',
              headers: { ETag: { schema: str }, 'Cache-Control': { schema: str }, 'X-Data-Source': { schema: str } },
              content: { 'application/json': { schema: { $ref: '#/components/schemas/CryptoResponse' } } },
            },
            '304': { description: 'Not modified (If-None-Match matched the ETag)' },
            '400': errorResponse('Unknown coin, invalid currency, range or interval, or too many coins for the plan', "Invalid field 'range'. Valid ranges: 1d, 5d, 1mo"),
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
          parameters: [{ name: 'search', in: 'query', required: false, schema: str, description: 'Case-insensitive part of the symbol' }, tokenParam],
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
