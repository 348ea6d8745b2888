import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badParam } from './cg-errors.js';
import { bool, int, list, text } from './cg-params.js';
import { cgBaseUrl, cgCoin, cgRoute, type CgBodyCache, type CgRouteDeps } from './cg-route.js';
import { COIN_TICKER_ORDERS, EXCHANGE_TICKER_ORDERS, exchangeOf, exchangesListView, exchangesView, exchangeTickersView, exchangeView, coinTickersView, type TickerOrder } from './ticker-views.js';

/** Most pages of ticker lists (100 tickers a page; MARKET_EXCHANGE_TICKERS_MAX bounds what exists). */
const MAX_PAGE = 1000;
const PER_PAGE_MAX = 250;

function orderOf(q: Parameters<typeof text>[0], allowed: readonly string[]): TickerOrder {
  const order = (text(q, 'order') ?? 'trust_score_desc').toLowerCase();
  if (!allowed.includes(order)) throw badParam(`invalid 'order' parameter: expected one of ${allowed.join(', ')}`);
  return order as TickerOrder;
}

/**
 * /coins/{id}/tickers, /exchanges, /exchanges/list, /exchanges/{id}, /exchanges/{id}/tickers
 * (docs/quotes.md, "CoinGecko-compatible API"), from the per-exchange tickers of the snapshot.
 */
export function registerCoinGeckoExchangeRoutes(app: FastifyInstance, deps: CgRouteDeps, bodies: CgBodyCache): void {
  const { catalog } = deps;
  const idOf = (request: FastifyRequest): string => ((request.params as { id?: string }).id ?? '').slice(0, 100).toLowerCase();

  cgRoute(app, deps, '/api/v3/coins/:id/tickers', (request, q, board) => {
    const c = cgCoin(catalog, request, board);
    const p = {
      exchanges: list(q, 'exchange_ids'),
      logo: bool(q, 'include_exchange_logo', false),
      page: int(q, 'page', 1, 1, MAX_PAGE),
      order: orderOf(q, COIN_TICKER_ORDERS),
      depth: bool(q, 'depth', false),
      baseUrl: cgBaseUrl(),
    };
    // Accepted for compatibility, no effect: DEX pairs are not ingested.
    text(q, 'dex_pair_format');
    return bodies.get(board, { kind: 'coin-tickers', coin: c.id, exchanges: (p.exchanges ?? []).join(','), logo: p.logo, page: p.page, order: p.order, depth: p.depth }, () => coinTickersView(board, catalog, c.symbol, c.name, p));
  });

  cgRoute(app, deps, '/api/v3/exchanges', (request, q, board) => {
    const p = { page: int(q, 'page', 1, 1, MAX_PAGE), perPage: int(q, 'per_page', 100, 1, PER_PAGE_MAX), baseUrl: cgBaseUrl() };
    return bodies.get(board, { kind: 'exchanges', ...p }, () => exchangesView(board, p));
  });

  cgRoute(app, deps, '/api/v3/exchanges/list', (_request, q, board) => {
    const status = text(q, 'status') ?? 'active';
    if (status !== 'active' && status !== 'inactive') throw badParam("invalid 'status' parameter: expected active or inactive");
    return bodies.get(board, { kind: 'exchanges-list', status }, () => (status === 'inactive' ? [] : exchangesListView(board)));
  });

  cgRoute(app, deps, '/api/v3/exchanges/:id', (request, q, board) => {
    const e = exchangeOf(board, idOf(request));
    text(q, 'dex_pair_format');
    const baseUrl = cgBaseUrl();
    return bodies.get(board, { kind: 'exchange', id: e.identity.id }, () => exchangeView(board, catalog, e, baseUrl));
  });

  cgRoute(app, deps, '/api/v3/exchanges/:id/tickers', (request, q, board) => {
    const e = exchangeOf(board, idOf(request));
    const p = {
      coinIds: list(q, 'coin_ids'),
      logo: bool(q, 'include_exchange_logo', false),
      page: int(q, 'page', 1, 1, MAX_PAGE),
      order: orderOf(q, EXCHANGE_TICKER_ORDERS),
      depth: bool(q, 'depth', false),
      baseUrl: cgBaseUrl(),
    };
    text(q, 'dex_pair_format');
    return bodies.get(board, { kind: 'exchange-tickers', id: e.identity.id, coins: (p.coinIds ?? []).join(','), logo: p.logo, page: p.page, order: p.order, depth: p.depth }, () => exchangeTickersView(board, catalog, e, p));
  });
}
