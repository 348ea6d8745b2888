// The quotes service for the stream bench (run with tsx from the sources): simulated market whose
// every refresh moves every price a little, so each refresh fans out to every stream; a pro token
// with a huge quota; stream caps raised for 1,000+ streams. Prints one JSON line {port, token}.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { composeApp, createDeps } from '../services/quotes/src/compose.ts';
import { createLogging } from '../services/quotes/src/logger.ts';
import { loadSettings } from '../services/quotes/src/settings.ts';

const dir = mkdtempSync(join(tmpdir(), 'quotes-stream-bench-'));
const plans = JSON.parse(readFileSync(new URL('../services/quotes/plans.json', import.meta.url), 'utf8'));
for (const p of plans.plans) p.monthlyRequests = 1_000_000_000;
writeFileSync(join(dir, 'plans.json'), JSON.stringify(plans));
const settings = loadSettings({
  MARKET_SOURCE: 'simulated',
  QUOTES_DATA_DIR: dir,
  QUOTES_PLANS_FILE: join(dir, 'plans.json'),
  QUOTES_LOG_LEVEL: 'warn',
  RATELIMIT_ENABLED: 'false',
  QUOTES_REFRESH_SECONDS: process.env.REFRESH_SECONDS ?? '2',
  QUOTES_STREAM_MAX_PER_TOKEN: '1000',
  QUOTES_STREAM_MAX_TOTAL: '100000',
});
const deps = createDeps(settings, createLogging('warn'));
let step = 0;
const m = deps.market;
deps.market = {
  kind: m.kind,
  listSymbols: () => m.listSymbols(),
  candles: (r) => m.candles(r),
  tickers: async (symbols) => {
    const by = 1 + ++step * 1e-6;
    const t = await m.tickers(symbols);
    return { ...t, coins: t.coins.map((x) => ({ ...x, lastPrice: x.lastPrice * by })) };
  },
};
await deps.store.migrate();
const { app, services } = await composeApp(settings, deps);
const tokens = [];
for (let i = 0; i < Number(process.env.TOKENS ?? '1'); i++) tokens.push((await services.accounts.createToken(`bench-${i}`, 'pro')).token);
await app.listen({ host: '127.0.0.1', port: 0 });
const addr = app.server.address();
console.log(JSON.stringify({ port: typeof addr === 'object' && addr !== null ? addr.port : 0, tokens }));
process.once('SIGINT', () => process.exit(0));
process.once('SIGTERM', () => process.exit(0));
