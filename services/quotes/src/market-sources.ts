import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { mathRandom, type RandomSource } from '@rls/engine';
import type { Clock } from './clock.js';
import type { Settings } from './settings.js';
import { EcbFx } from './market/ecb-fx.js';
import { CcxtExchangeClient } from './market/exchange-client.js';
import { ExchangeMarket } from './market/exchange-market.js';
import { httpGetter, type HttpGetter } from './market/http-json.js';
import { OfficialLatest, type OfficialRates } from './market/official-latest.js';
import { PtaxFx } from './market/ptax-fx.js';
import type { RetryPolicy, UpstreamCounters } from './market/retry.js';
import type { SupplySource } from './market/supply-source.js';
import type { FxSnapshot } from './domain/market.js';

/**
 * Builders of the market and FX sources, one implementation each, with the wiring they need
 * (clients, retry policy, caches). Which ones run is chosen by the composition root (compose.ts).
 */

export interface SourceOptions {
  clock: Clock;
  log: Logger;
  counters: UpstreamCounters;
  /** Backoff waits; tests inject one that records and returns at once. */
  sleep?: (ms: number) => Promise<void>;
  /** Backoff jitter; tests inject a fixed one. */
  random?: RandomSource;
}

/** How every upstream is called: the retry policy and the JSON/text getter built on it. */
export interface Upstreams {
  retry: RetryPolicy;
  http: HttpGetter;
}

export function upstreams(settings: Readonly<Settings>, o: SourceOptions): Upstreams {
  const retry: RetryPolicy = {
    attempts: settings.retryAttempts,
    baseMs: settings.retryBaseMs,
    maxMs: settings.retryMaxMs,
    sleep: o.sleep ?? ((ms) => delay(ms)),
    random: o.random ?? mathRandom,
  };
  const http = httpGetter({
    timeoutMs: settings.requestTimeoutMs,
    retry,
    clock: o.clock,
    counters: o.counters,
    onFailure: (upstream, failure, attempt, waitMs, err) =>
      o.log.warn({ upstream, reason: failure.reason, attempt, retryInMs: waitMs, err: (err as Error).message }, waitMs === undefined ? 'upstream call failed' : 'upstream call failed; retrying'),
  });
  return { retry, http };
}

/**
 * The exchange market: one ccxt client per configured exchange. `fxLatest` prices
 * fiat-quoted pairs; it is asked only after start-up.
 */
export function exchangeMarket(settings: Readonly<Settings>, o: SourceOptions, up: Upstreams, supply: SupplySource | undefined, fxLatest: () => Promise<FxSnapshot>): ExchangeMarket {
  const clients = settings.exchanges.map((id) => {
    const restUrl = settings.exchangeUrls[id];
    const wsUrl = settings.exchangeWsUrls[id];
    return new CcxtExchangeClient({
      id,
      ...(restUrl === undefined ? {} : { restUrl }),
      ...(wsUrl === undefined ? {} : { wsUrl }),
      timeoutMs: settings.requestTimeoutMs,
      ...(settings.rateLimitMs === undefined ? {} : { rateLimitMs: settings.rateLimitMs }),
      retry: up.retry,
      clock: o.clock,
      counters: o.counters,
      log: o.log.child({ component: 'exchange', exchange: id }),
    });
  });
  return new ExchangeMarket({
    clients,
    clock: o.clock,
    log: o.log.child({ component: 'market' }),
    counters: o.counters,
    outlierPercent: settings.outlierPercent,
    fiatPairs: settings.fiatPairs,
    staleMs: settings.staleSeconds * 1000,
    fxLatest,
    ...(supply === undefined ? {} : { supply }),
    websocket: settings.marketWebsocket,
  });
}

function officialLatest(settings: Readonly<Settings>, o: SourceOptions, name: string, fetchRates: () => Promise<OfficialRates>): OfficialLatest {
  return new OfficialLatest({ clock: o.clock, log: o.log.child({ component: 'fx' }), refreshMs: settings.fxRefreshSeconds * 1000, staleMs: settings.fxStaleSeconds * 1000, name }, fetchRates);
}

/** Banco Central do Brasil's PTAX bulletins, the latest one cached and refreshed. */
export function ptaxFx(settings: Readonly<Settings>, o: SourceOptions, up: Upstreams): PtaxFx {
  const p = new PtaxFx(settings.ptaxUrl, up.http, () => o.clock.now());
  p.useLatestCache(officialLatest(settings, o, 'ptax', () => p.fetchLatest()));
  return p;
}

/** The ECB reference rates, the latest day cached and refreshed. */
export function ecbFx(settings: Readonly<Settings>, o: SourceOptions, up: Upstreams): EcbFx {
  const e = new EcbFx(settings.ecbUrl, up.http, () => o.clock.now());
  e.useLatestCache(officialLatest(settings, o, 'ecb', async () => ({ rates: await e.fetchLatest() })));
  return e;
}
