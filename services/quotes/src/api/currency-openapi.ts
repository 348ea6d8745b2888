/** OpenAPI paths of brapi's currency endpoints (api/currency-routes.ts), merged into openapi.ts. */
export function currencyPaths(): Record<string, unknown> {
  const str = { type: 'string' };
  const tokenParam = { name: 'token', in: 'query', required: false, schema: str, description: 'Access token, when the Authorization header cannot be used' };
  const error = (description: string, message: string): Record<string, unknown> => ({ description, content: { 'application/json': { example: { error: true, message } } } });
  const quote = {
    type: 'object',
    description: 'Every value is a string, as brapi sends it; `source` (extension) says where bid and ask come from: ptax, or the FX source of the rates',
    properties: Object.fromEntries(['fromCurrency', 'toCurrency', 'name', 'high', 'low', 'bidVariation', 'percentageChange', 'bidPrice', 'askPrice', 'updatedAtTimestamp', 'updatedAtDate', 'source'].map((k) => [k, str])),
  };
  return {
    '/api/v2/currency': {
      get: {
        operationId: 'currencyRetrieve',
        summary: 'Fiat currency pairs: PTAX bid/ask where the pair is official (X-BRL, BRL-X), the FX layer otherwise',
        parameters: [{ name: 'currency', in: 'query', required: true, schema: str, description: 'Comma-separated FROM-TO pairs, at most the plan\'s coins per request', example: 'USD-BRL,EUR-BRL' }, tokenParam],
        responses: {
          '200': { description: 'Quotes', content: { 'application/json': { schema: { type: 'object', properties: { currency: { type: 'array', items: quote }, requestedAt: str, took: { type: 'number' } } } } } },
          '400': error('A pair is not two currencies with a rate, or too many pairs', 'Currency pair not available: USD-XYZ'),
          '401': error('Missing or invalid token', 'Your token is invalid, please check your token'),
          '402': error('Monthly request quota used up', 'You have reached the request limit of your plan. Please consider upgrading to a better plan'),
          '403': error('The plan has no API access', 'Your plan does not allow access to cryptocurrency data. Please consider upgrading to a paid plan'),
          '417': error('Missing currency', "Missing required parameter: 'currency', e.g. /api/v2/currency?currency=USD-BRL"),
          '429': error('Burst limit of the plan', 'You have exceeded the rate limit of your plan'),
          '503': error('FX rates missing or stale', 'Quote temporarily unavailable: FX rates'),
        },
      },
    },
    '/api/v2/currency/available': {
      get: {
        operationId: 'currencyListAvailable',
        summary: 'Every pair of two currencies with a rate now',
        parameters: [{ name: 'search', in: 'query', required: false, schema: str, description: 'Case-insensitive part of the name or of the FROM-TO code' }, tokenParam],
        responses: {
          '200': { description: 'Pairs', content: { 'application/json': { example: { currencies: [{ currency: 'Dólar Americano/Real Brasileiro', name: 'USD-BRL' }] } } } },
          '401': error('Missing or invalid token', 'Your token is invalid, please check your token'),
          '404': { description: 'No pair matches', content: { 'application/json': { example: { message: 'Currency not found' } } } },
        },
      },
    },
  };
}
