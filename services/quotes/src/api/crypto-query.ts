import type { Plan } from '../accounts/plans.js';
import { QuotesError } from '../errors.js';
import { resolveHistoryParams, type HistoryParams } from '../history/range-rules.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import { CURRENCIES, DEFAULT_CURRENCY, isQuoteCurrency } from '../market/currencies.js';
import { requestKey, type CryptoRequest } from '../service/quote-service.js';
import type { Origin } from '../origin.js';

export type RawQuery = Record<string, string | string[] | undefined>;

export interface ParsedCryptoQuery {
  coins: string[];
  currency: string;
  history: HistoryParams | undefined;
}

/** A repeated parameter (`?coin=BTC&coin=ETH`) is read as one comma-joined value. */
export function queryValue(q: RawQuery, name: string): string | undefined {
  const v = q[name];
  if (v === undefined) return undefined;
  return Array.isArray(v) ? v.join(',') : v;
}

/**
 * Validates `/api/v2/crypto` parameters for a plan, in brapi's order of complaints:
 * missing coin (417), currency, range/interval (and the startDate/endDate extension), too many
 * coins, unknown coins (400).
 */
export function parseCryptoQuery(q: RawQuery, plan: Plan, catalog: CoinCatalog): ParsedCryptoQuery {
  const coinRaw = queryValue(q, 'coin');
  const coins = [...new Set((coinRaw ?? '').split(',').map((c) => c.trim().toUpperCase()).filter((c) => c.length > 0))];
  if (coins.length === 0) throw new QuotesError('COIN_MISSING');

  const currencyRaw = queryValue(q, 'currency')?.trim().toUpperCase();
  const currency = currencyRaw === undefined || currencyRaw === '' ? DEFAULT_CURRENCY : currencyRaw;
  // Extension: more PTAX fiat currencies and BTC / ETH / USDT (market/currencies.ts); the error
  // still lists brapi's own set, as brapi does.
  if (!isQuoteCurrency(currency)) throw new QuotesError('CURRENCY_INVALID', { valid: CURRENCIES });

  const blankToUndefined = (v: string | undefined): string | undefined => (v === undefined || v.trim() === '' ? undefined : v.trim());
  const history = resolveHistoryParams(
    blankToUndefined(queryValue(q, 'range')),
    blankToUndefined(queryValue(q, 'interval')),
    plan,
    blankToUndefined(queryValue(q, 'startDate')),
    blankToUndefined(queryValue(q, 'endDate')),
  );

  if (coins.length > plan.maxCoinsPerRequest) throw new QuotesError('COINS_TOO_MANY', { limit: plan.maxCoinsPerRequest });
  const unknown = coins.filter((c) => catalog.get(c) === undefined);
  if (unknown.length > 0) throw new QuotesError('COIN_UNKNOWN', { coins: unknown });
  return { coins, currency, history };
}

/** The quote service's request for `/api/v2/crypto` parameters, validated for the plan (see parseCryptoQuery). */
export function cryptoRequest(q: RawQuery, plan: Plan, catalog: CoinCatalog, baseUrl: Origin): CryptoRequest {
  const parsed = parseCryptoQuery(q, plan, catalog);
  // Built field by field: on the cached path an object spread cost more than the rest of the check.
  return { coins: parsed.coins, currency: parsed.currency, history: parsed.history, plan, baseUrl, key: requestKey(parsed, plan) };
}
