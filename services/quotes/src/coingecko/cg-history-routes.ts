import type { FastifyInstance } from 'fastify';
import { QuotesError } from '../errors.js';
import { DAY } from '../domain/intervals.js';
import { badParam } from './cg-errors.js';
import { bool, instant, list, precision, required, text } from './cg-params.js';
import { cgBaseUrl, cgCoin, cgRoute, cgVs, type CgBodyCache, type CgRouteDeps } from './cg-route.js';
import { exchangeRatesView, historyDate, historyView, MOVER_DURATIONS, MOVER_WINDOWS, moversView, TOP_COINS, type MoversParams } from './history-views.js';
import type { ChangeWindow } from './market-data.js';
import { ohlcView, planFloor } from './views.js';

/** Longest span of /ohlc/range per interval, in days (CoinGecko: 180 daily candles, 31 days of hourly ones). */
export const OHLC_RANGE_MAX_DAYS = { daily: 180, hourly: 31 } as const;

/**
 * /coins/{id}/history, /coins/{id}/ohlc/range, /exchange_rates and /coins/top_gainers_losers
 * (docs/quotes.md, "CoinGecko-compatible API"). Each body is built once per market snapshot and
 * parameters (`bodies`).
 */
export function registerCoinGeckoHistoryRoutes(app: FastifyInstance, deps: CgRouteDeps, bodies: CgBodyCache): void {
  const { data, catalog } = deps;

  cgRoute(app, deps, '/api/v3/coins/:id/history', (request, q, board, plan) => {
    const c = cgCoin(catalog, request, board);
    const day = historyDate(required(q, 'date'));
    if (plan.historyDays !== null && day < planFloor(plan, board.asOf)) throw new QuotesError('HISTORY_BEYOND_PLAN', { limit: plan.historyDays });
    const p = { day, localization: bool(q, 'localization', true), baseUrl: cgBaseUrl() };
    return bodies.get(board, { kind: 'history', coin: c.id, date: String(day), localization: p.localization }, () => historyView(data, board, c, p));
  });

  cgRoute(app, deps, '/api/v3/coins/:id/ohlc/range', (request, q, board, plan) => {
    const c = cgCoin(catalog, request, board);
    const vs = cgVs(data, q, board);
    const interval = required(q, 'interval').toLowerCase();
    if (interval !== 'daily' && interval !== 'hourly') throw badParam("invalid 'interval' parameter: expected daily or hourly");
    let from = instant(q, 'from');
    const to = Math.min(instant(q, 'to'), board.asOf);
    if (!(from < to)) throw badParam("'from' must be earlier than 'to' (and than now)");
    const maxDays = OHLC_RANGE_MAX_DAYS[interval];
    if (to - from > maxDays * DAY) throw badParam(`interval=${interval} is limited to ${maxDays} days per request`);
    from = Math.max(from, planFloor(plan, board.asOf));
    const prec = precision(q);
    const granularity = { interval: interval === 'daily' ? ('1d' as const) : ('1h' as const) };
    return bodies.get(board, { kind: 'ohlc-range', coin: c.id, vs, from, to, interval, precision: String(prec) }, () =>
      ohlcView(data, { coin: c, vs, from, to: Math.max(from, to), granularity, precision: prec }),
    );
  });

  cgRoute(app, deps, '/api/v3/exchange_rates', (_request, _q, board) => bodies.get(board, { kind: 'exchange-rates' }, () => exchangeRatesView(data, board)));

  cgRoute(app, deps, '/api/v3/coins/top_gainers_losers', (request, q, board) => {
    const vs = cgVs(data, q, board);
    const duration = (text(q, 'duration') ?? '24h').toLowerCase();
    if (!(MOVER_DURATIONS as readonly string[]).includes(duration)) throw badParam(`invalid 'duration' parameter: expected one of ${MOVER_DURATIONS.join(', ')}`);
    const topCoins = (text(q, 'top_coins') ?? '1000').toLowerCase();
    if (!(TOP_COINS as readonly string[]).includes(topCoins)) throw badParam(`invalid 'top_coins' parameter: expected one of ${TOP_COINS.join(', ')}`);
    const changes: ChangeWindow[] = [];
    for (const w of list(q, 'price_change_percentage') ?? []) {
      if (!(MOVER_WINDOWS as readonly string[]).includes(w)) throw badParam(`invalid 'price_change_percentage' parameter: expected ${MOVER_WINDOWS.join(', ')}`);
      changes.push(w as ChangeWindow);
    }
    const p: MoversParams = { vs, duration: duration as ChangeWindow, topCoins: topCoins as MoversParams['topCoins'], changes, baseUrl: cgBaseUrl() };
    return bodies.get(board, { kind: 'movers', vs, duration, topCoins, changes: changes.join(',') }, () => moversView(data, board, p));
  });
}
