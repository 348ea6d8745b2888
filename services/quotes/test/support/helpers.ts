import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { FakeClock, tempDir } from '@rls/testkit';
import type { FastifyInstance } from 'fastify';
import { composeApp, type AppDeps, type QuotesServices } from '../../src/compose.js';
import type { FastQuotePath } from '../../src/api/fast-quote.js';
import { defaultPlansFile, loadPlans, parsePlans, type PlanCatalog } from '../../src/accounts/plans.js';
import type { RequestLimiter } from '../../src/accounts/request-limiter.js';
import type { RateLimitGate } from '../../src/ratelimit/rate-limit-gate.js';
import { createLogging } from '../../src/logger.js';
import { SimulatedFx } from '../../src/market/simulated-fx.js';
import { SimulatedMarket } from '../../src/market/simulated-market.js';
import type { FxSource, MarketSource } from '../../src/domain/market.js';
import { packageRoot } from '../../src/package-root.js';
import { loadSettings } from '../../src/settings.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import type { Store } from '../../src/domain/repositories.js';

/** 15 March 2026, 12:34:56 UTC: mid-month, mid-day, not on a bucket boundary. */
export const T0 = Date.UTC(2026, 2, 15, 12, 34, 56);

export const shippedPlans = (): PlanCatalog => loadPlans(defaultPlansFile(packageRoot()));

export interface TestApp {
  app: FastifyInstance;
  /** The app's services (compose.ts), for CLI-like operations (tokens, flushing usage, snapshots). */
  services: QuotesServices;
  /** The cached-quote fast path, when installed (QUOTES_FAST_PATH). */
  fastPath: FastQuotePath | undefined;
  clock: FakeClock;
  store: Store;
  market: SimulatedMarket;
  fx: SimulatedFx;
  tokens: Record<string, string>;
  tokenIds: Record<string, string>;
  logs: string[];
  close: () => Promise<void>;
}

export interface TestAppOptions {
  clock?: FakeClock;
  store?: Store;
  plans?: PlanCatalog;
  settings?: Record<string, string>;
  /** Wraps the simulated market (e.g. to drop or age tickers). */
  wrapMarket?: (m: SimulatedMarket) => MarketSource;
  wrapFx?: (f: SimulatedFx) => FxSource;
  extraLimiters?: RequestLimiter[];
  logLevel?: string;
  /** Burst limits / sign-in throttling (none by default). */
  rateLimit?: RateLimitGate;
}

/** An app on a fresh SQLite file with the simulated market, one token per plan. */
export async function makeTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const clock = opts.clock ?? new FakeClock(T0);
  const dir = tempDir('quotes-test-');
  const store = opts.store ?? openSqliteStore(join(dir.path, 'quotes.sqlite'));
  await store.migrate();
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  const { logger, access: accessSink } = createLogging(opts.logLevel ?? 'info', sink);
  const market = new SimulatedMarket({ seed: 7, clock });
  const fx = new SimulatedFx({ seed: 7, clock });
  const plans = opts.plans ?? shippedPlans();
  const deps: AppDeps = {
    store,
    market: opts.wrapMarket?.(market) ?? market,
    fx: opts.wrapFx?.(fx) ?? fx,
    plans,
    clock,
    logger,
    accessSink,
    random: randomBytes,
    ...(opts.extraLimiters === undefined ? {} : { extraLimiters: opts.extraLimiters }),
    ...(opts.rateLimit === undefined ? {} : { rateLimit: opts.rateLimit }),
  };
  const settings = loadSettings({}, { QUOTES_DATA_DIR: dir.path, ...opts.settings });
  const { app, services, fastPath } = await composeApp(settings, deps);
  const tokens: Record<string, string> = {};
  const tokenIds: Record<string, string> = {};
  for (const planId of plans.keys()) {
    const { token, record } = await services.accounts.createToken(`test-${planId}`, planId);
    tokens[planId] = token;
    tokenIds[planId] = record.id;
  }
  return {
    app,
    services,
    fastPath,
    clock,
    store,
    market,
    fx,
    tokens,
    tokenIds,
    logs,
    close: async () => {
      await app.close();
      await store.close();
      dir.cleanup();
    },
  };
}

/** A plans document like the shipped one, with overrides per plan id. */
export function plansWith(overrides: Record<string, Record<string, unknown>>): PlanCatalog {
  const base = [...shippedPlans().values()].map((p) => ({ ...p, ...(overrides[p.id] ?? {}) }));
  return parsePlans({ plans: base }, 'test-plans');
}

export interface CoinJson {
  currency: string;
  currencyRateFromUSD: number;
  coinName: string;
  coin: string;
  regularMarketChange: number;
  regularMarketPrice: number;
  regularMarketChangePercent: number;
  regularMarketDayLow: number;
  regularMarketDayHigh: number;
  regularMarketDayRange: string;
  regularMarketVolume: number;
  marketCap: number;
  regularMarketTime: string;
  coinImageUrl: string;
  usedInterval?: string;
  usedRange?: string;
  historicalDataPrice?: Array<{ date: number; open: number | null; high: number | null; low: number | null; close: number | null; volume: number | null; adjustedClose: number | null }>;
  validRanges?: string[];
  validIntervals?: string[];
}

export interface CryptoJson {
  coins: CoinJson[];
  requestedAt: string;
  took: number;
}

export function closeTo(a: number, b: number, rel = 1e-9): boolean {
  return Math.abs(a - b) <= rel * Math.max(1, Math.abs(a), Math.abs(b));
}
