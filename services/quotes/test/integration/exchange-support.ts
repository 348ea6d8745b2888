import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { FakeClock, tempDir } from '@rls/testkit';
import type { FastifyInstance } from 'fastify';
import { composeApp, createDeps, type QuotesServices } from '../../src/compose.js';
import { createLogging } from '../../src/logger.js';
import { loadSettings } from '../../src/settings.js';

export interface ExchangeApp {
  app: FastifyInstance;
  services: QuotesServices;
  clock: FakeClock;
  token: string;
  logs: string[];
  sleeps: number[];
  close: () => Promise<void>;
}

/**
 * The service exactly as production wires it (createDeps + buildApp with MARKET_SOURCE=exchange),
 * its upstreams pointed at fake servers through the URL settings. Backoff waits are recorded and
 * skipped, so retry tests are exact and fast.
 */
export async function makeExchangeApp(clockMs: number, env: Record<string, string>, dbPath?: string): Promise<ExchangeApp> {
  const clock = new FakeClock(clockMs);
  const dir = tempDir('quotes-ex-');
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  const settings = loadSettings(
    {},
    {
      MARKET_SOURCE: 'exchange',
      DATABASE_URL: `sqlite:${dbPath ?? join(dir.path, 'q.sqlite')}`,
      HISTORY_BACKFILL: 'false',
      MARKET_REFRESH_INTERVAL: '3600',
      MARKET_RATE_LIMIT_MS: '0',
      MARKET_REQUEST_TIMEOUT_MS: '1500',
      ...env,
    },
  );
  const logging = createLogging('info', sink);
  const sleeps: number[] = [];
  const deps = createDeps(settings, logging, clock, {
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
  });
  await deps.store.migrate();
  const { app, services } = await composeApp(settings, { ...deps, random: randomBytes });
  const { token } = await services.accounts.createToken('t', 'pro');
  return {
    app,
    services,
    clock,
    token,
    logs,
    sleeps,
    close: async () => {
      await app.close();
      await deps.store.close();
      dir.cleanup();
    },
  };
}
