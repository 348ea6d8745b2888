import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { FxSourceKind, Settings } from '../settings.js';
import { EcbFx } from './ecb-fx.js';
import { CcxtExchangeClient } from './exchange-client.js';
import { ExchangeFx } from './exchange-fx.js';
import { ExchangeMarket } from './exchange-market.js';
import { httpGetter } from './http-json.js';
import { LayeredFx } from './layered-fx.js';
import { OfficialLatest } from './official-latest.js';
import { PtaxFx } from './ptax-fx.js';
import type { RetryPolicy, UpstreamCounters } from './retry.js';
import { SimulatedFx } from './simulated-fx.js';
import { SimulatedMarket } from './simulated-market.js';
import { fileSupply, PaprikaSupply, type SupplySource } from './supply-source.js';
import type { FxSource, MarketSource } from './types.js';

export interface SourceOptions {
  clock: Clock;
  log: Logger;
  counters: UpstreamCounters;
  /** Backoff waits; tests inject one that records and returns at once. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/** Picks and wires the market and FX sources named by the settings. */
export function createSources(settings: Readonly<Settings>, o: SourceOptions): { market: MarketSource; fx: FxSource } {
  const retry: RetryPolicy = {
    attempts: settings.retryAttempts,
    baseMs: settings.retryBaseMs,
    maxMs: settings.retryMaxMs,
    sleep: o.sleep ?? ((ms) => delay(ms)),
    random: o.random ?? Math.random,
  };
  const http = httpGetter({
    timeoutMs: settings.requestTimeoutMs,
    retry,
    clock: o.clock,
    counters: o.counters,
    onFailure: (upstream, failure, attempt, waitMs, err) =>
      o.log.warn({ upstream, reason: failure.reason, attempt, retryInMs: waitMs, err: (err as Error).message }, waitMs === undefined ? 'upstream call failed' : 'upstream call failed; retrying'),
  });
  const now = (): number => o.clock.now();

  let market: MarketSource;
  let exchangeMarket: ExchangeMarket | undefined;
  // Filled in below; the market asks it only after start-up (to price fiat-quoted pairs).
  const fxRef: { current?: FxSource } = {};
  if (settings.marketSource === 'simulated') {
    market = new SimulatedMarket({ seed: settings.simulatedSeed, clock: o.clock });
  } else {
    let supply: SupplySource | undefined;
    if (settings.supplyFile !== undefined) supply = fileSupply(settings.supplyFile);
    else if (settings.supplyUrl !== undefined) supply = new PaprikaSupply(settings.supplyUrl, http, o.clock, o.log.child({ component: 'supply' }));
    const clients = settings.exchanges.map((id) => {
      const restUrl = settings.exchangeUrls[id];
      const wsUrl = settings.exchangeWsUrls[id];
      return new CcxtExchangeClient({
        id,
        ...(restUrl === undefined ? {} : { restUrl }),
        ...(wsUrl === undefined ? {} : { wsUrl }),
        timeoutMs: settings.requestTimeoutMs,
        ...(settings.rateLimitMs === undefined ? {} : { rateLimitMs: settings.rateLimitMs }),
        retry,
        clock: o.clock,
        counters: o.counters,
        log: o.log.child({ component: 'exchange', exchange: id }),
      });
    });
    exchangeMarket = new ExchangeMarket({
      clients,
      clock: o.clock,
      log: o.log.child({ component: 'market' }),
      counters: o.counters,
      outlierPercent: settings.outlierPercent,
      fiatPairs: settings.fiatPairs,
      staleMs: settings.staleSeconds * 1000,
      fxLatest: () => (fxRef.current === undefined ? Promise.reject(new Error('no FX yet')) : fxRef.current.latest()),
      ...(supply === undefined ? {} : { supply }),
      websocket: settings.marketWebsocket,
    });
    market = exchangeMarket;
  }

  const official = (name: string, fetchRates: () => Promise<Map<string, number>>): OfficialLatest =>
    new OfficialLatest({ clock: o.clock, log: o.log.child({ component: 'fx' }), refreshMs: settings.fxRefreshSeconds * 1000, staleMs: settings.fxStaleSeconds * 1000, name }, fetchRates);
  const make = (kind: FxSourceKind): FxSource => {
    switch (kind) {
      case 'simulated':
        return new SimulatedFx({ seed: settings.simulatedSeed, clock: o.clock });
      case 'ptax': {
        const p = new PtaxFx(settings.ptaxUrl, http, now);
        p.useLatestCache(official('ptax', () => p.fetchLatest()));
        return p;
      }
      case 'ecb': {
        const e = new EcbFx(settings.ecbUrl, http, now);
        e.useLatestCache(official('ecb', () => e.fetchLatest()));
        return e;
      }
      case 'exchange':
        if (exchangeMarket === undefined) throw new Error('FX_SOURCE=exchange needs MARKET_SOURCE=exchange');
        return new ExchangeFx(exchangeMarket);
    }
  };
  const list = settings.fxSources.map(make);
  const fx = list.length === 1 ? list[0]! : new LayeredFx(list, o.log.child({ component: 'fx' }), o.counters);
  fxRef.current = fx;
  return { market, fx };
}
