import { randomBytes } from 'node:crypto';
import { AccountService } from '../accounts/account-service.js';
import { DailyUsage } from '../accounts/daily-usage.js';
import { UserService } from '../accounts/user-service.js';
import { defaultPlansFile, loadPlans } from '../accounts/plans.js';
import { systemClock, type Clock } from '../clock.js';
import { createLogger, createLogging, logDestination } from '../logger.js';
import { startServer, stopOnSignals } from '../main.js';
import { packageRoot } from '../package-root.js';
import { loadSettings, SETTING_DEFS, SettingsError, type Settings } from '../settings.js';
import { createSources, openStore } from '../compose.js';
import { importKlinesFile } from '../import/klines-import.js';
import { ChecksumError } from '../import/dump-files.js';
import { UpstreamCounters } from '../market/retry.js';
import { Backfiller } from '../history/backfill.js';
import { HistoryService } from '../history/history-service.js';

export interface CliIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

const USAGE = `usage: quotes [command]
  serve                                   start the HTTP service (default)
  quickstart                              migrate, create a pro token, print it with a curl line, serve
  migrate                                 apply database migrations
  token create --plan PLAN --name NAME    create a token (printed once)
  token list                              list tokens (hashes are never shown)
  token revoke ID                         revoke a token at once
  usage [--month YYYY-MM]                 requests per token in a UTC month (default: current)
  user plan EMAIL PLAN                    move a dashboard user (and their token) to another plan
  import-klines FILE... [--coin C] [--interval I]
                                          import Binance spot kline dumps (CSV or zip; .CHECKSUM verified)
  backfill                                one history backfill/sync pass from the exchanges, then exit
  settings                                list environment variables and defaults`;

/** What `quotes quickstart` changes in the defaults (each still overridable by its variable). */
export const QUICKSTART_DEFAULTS: Readonly<Record<string, string>> = Object.freeze({ MARKET_SOURCE: 'simulated', QUOTES_HOST: '127.0.0.1', QUOTES_PUBLIC_MARKET: 'true', QUOTES_REFRESH_SECONDS: '5' });

/** Names of the tokens the quick start creates (one per start; the previous ones are revoked). */
const QUICKSTART_TOKEN = /^quickstart-/;

/** The quick start's banner: every place to look at, with the token where a URL needs one. */
export function quickstartBanner(url: string, token: { id: string; token: string }, revoked: number, publicMarket: boolean, simulated: boolean, metricsUrl?: string): string[] {
  const t = token.token;
  return [
    '',
    `Quotes service listening on ${url}  (${simulated ? 'SIMULATED market data, not real prices' : 'live market data'}; SQLite unless DATABASE_URL is set)`,
    '',
    `  Market page       ${url}/dashboard/#/market${publicMarket ? '' : '   (sign in first: QUOTES_PUBLIC_MARKET=false)'}`,
    `  Dashboard         ${url}/dashboard/   (sign up, then your token, usage and the coin pages)`,
    `  API docs          ${url}/docs   (OpenAPI 3.1: ${url}/openapi.json)`,
    `  brapi API         ${url}/api/v2/crypto?coin=BTC,ETH&currency=BRL&token=${t}`,
    `  brapi currencies  ${url}/api/v2/currency?currency=USD-BRL,EUR-BRL&token=${t}`,
    `  CoinGecko API     ${url}/api/v3   (e.g. ${url}/api/v3/coins/markets?vs_currency=usd&x_cg_demo_api_key=${t})`,
    `  Live stream       ${url}/api/v2/crypto/stream?coin=BTC,ETH&currency=USD&token=${t}`,
    `  Health            ${url}/health`,
    ...(metricsUrl === undefined ? [] : [`  Metrics           ${metricsUrl}   (Prometheus, a port of its own: QUOTES_METRICS_PORT)`]),
    '',
    `Token ${token.id} (plan pro), shown once: ${t}${revoked > 0 ? `   (the previous quick-start token${revoked === 1 ? ' was' : 's were'} revoked)` : ''}`,
    'Try:',
    `  curl -H "Authorization: Bearer ${t}" "${url}/api/v2/crypto?coin=BTC,ETH&currency=BRL&range=5d&interval=1d"`,
    `  curl -N "${url}/api/v2/crypto/stream?coin=BTC&currency=USD&token=${t}"`,
    'Stop: Ctrl+C',
    '',
  ];
}

function option(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i >= 0) return args[i + 1];
  const eq = args.find((a) => a.startsWith(`${name}=`));
  return eq?.slice(name.length + 1);
}

function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd());
}

async function withAccounts<T>(settings: Readonly<Settings>, clock: Clock, fn: (a: AccountService) => Promise<T>): Promise<T> {
  const plans = loadPlans(settings.plansFile ?? defaultPlansFile(packageRoot()));
  const store = openStore(settings);
  try {
    await store.migrate();
    return await fn(new AccountService({ tokens: store.tokens, usage: store.usage, plans, clock, random: randomBytes }));
  } finally {
    await store.close();
  }
}

async function withUsers<T>(settings: Readonly<Settings>, clock: Clock, fn: (u: UserService) => Promise<T>): Promise<T> {
  const plans = loadPlans(settings.plansFile ?? defaultPlansFile(packageRoot()));
  const store = openStore(settings);
  try {
    await store.migrate();
    const accounts = new AccountService({ tokens: store.tokens, usage: store.usage, plans, clock, random: randomBytes });
    const users = new UserService({
      users: store.users,
      sessions: store.sessions,
      accounts,
      plans,
      usage: store.usage,
      usageStore: store.usage,
      daily: new DailyUsage(store.dailyUsage),
      flushUsage: () => Promise.resolve(),
      clock,
      random: randomBytes,
      signupPlan: settings.dashboardSignupPlan,
      sessionTtlMs: settings.dashboardSessionSeconds * 1000,
    });
    return await fn(users);
  } finally {
    await store.close();
  }
}

/** Runs one CLI command; resolves with the exit code (serve resolves once listening). */
export async function runCli(argv: readonly string[], env: NodeJS.ProcessEnv, io: CliIo, clock: Clock = systemClock): Promise<number> {
  const [cmd = 'serve', sub, ...rest] = argv;
  if (cmd === '--help' || cmd === '-h' || cmd === 'help') {
    io.out(USAGE);
    return 0;
  }
  let settings: Readonly<Settings>;
  try {
    // The quick start is the offline demo: simulated unless the caller chose a source, on loopback
    // only (it prints a pro token), the market page public, prices moving every 5 seconds.
    settings = loadSettings(env, {}, cmd === 'quickstart' ? QUICKSTART_DEFAULTS : {});
  } catch (err) {
    if (err instanceof SettingsError) {
      io.err(err.message);
      return 2;
    }
    throw err;
  }
  try {
    switch (cmd) {
      case 'serve': {
        const logging = createLogging(settings.logLevel, logDestination(settings.logFormat));
        const logger = logging.logger;
        const server = await startServer(settings, logging);
        stopOnSignals(server, logger);
        return 0;
      }
      case 'quickstart': {
        // One live quick-start token at a time: restarting revokes the previous ones (only their
        // hashes are stored, so they could not be shown again anyway).
        const { created, revoked } = await withAccounts(settings, clock, async (a) => {
          let n = 0;
          for (const t of await a.list()) if (t.revokedAt === null && QUICKSTART_TOKEN.test(t.name) && (await a.revoke(t.id))) n++;
          return { created: await a.createToken(`quickstart-${new Date(clock.now()).toISOString().slice(0, 10)}`, 'pro'), revoked: n };
        });
        const logging = createLogging(settings.logLevel, logDestination(settings.logFormat));
        const logger = logging.logger;
        const server = await startServer(settings, logging);
        stopOnSignals(server, logger);
        // The market page's first board reads a week of hourly candles of every coin: built now, so
        // the newcomer's first visit finds it ready.
        if (settings.publicMarket) server.app.inject({ url: '/dashboard/api/public/market?currency=USD' }).catch((err: unknown) => logger.warn({ err }, 'warming the market page failed'));
        for (const line of quickstartBanner(server.url, { id: created.record.id, token: created.token }, revoked, settings.publicMarket, settings.marketSource === 'simulated', server.metricsUrl)) io.out(line);
        return 0;
      }
      case 'migrate': {
        const store = openStore(settings);
        try {
          const applied = await store.migrate();
          io.out(applied.length === 0 ? `${store.kind}: already up to date` : `${store.kind}: applied ${applied.join(', ')}`);
        } finally {
          await store.close();
        }
        return 0;
      }
      case 'token': {
        if (sub === 'create') {
          const plan = option(rest, '--plan');
          const name = option(rest, '--name');
          if (plan === undefined || name === undefined || name === '') {
            io.err('usage: quotes token create --plan PLAN --name NAME');
            return 2;
          }
          const { record, token } = await withAccounts(settings, clock, (a) => a.createToken(name, plan));
          io.out(`id:    ${record.id}`);
          io.out(`name:  ${record.name}`);
          io.out(`plan:  ${record.planId}`);
          io.out(`token: ${token}`);
          io.out('Store the token now: only its hash is kept, it cannot be shown again.');
          return 0;
        }
        if (sub === 'list') {
          const tokens = await withAccounts(settings, clock, (a) => a.list());
          const rows = [['ID', 'NAME', 'PLAN', 'PREFIX', 'CREATED', 'REVOKED']];
          for (const t of tokens) rows.push([t.id, t.name, t.planId, `${t.prefix}...`, new Date(t.createdAt).toISOString(), t.revokedAt === null ? '-' : new Date(t.revokedAt).toISOString()]);
          for (const line of table(rows)) io.out(line);
          return 0;
        }
        if (sub === 'revoke') {
          const id = rest[0];
          if (id === undefined) {
            io.err('usage: quotes token revoke ID');
            return 2;
          }
          const ok = await withAccounts(settings, clock, (a) => a.revoke(id));
          if (!ok) {
            io.err(`no live token with id ${id}`);
            return 1;
          }
          io.out(`revoked ${id}`);
          return 0;
        }
        io.err('usage: quotes token create|list|revoke');
        return 2;
      }
      case 'user': {
        const [email, planId] = rest;
        if (sub !== 'plan' || email === undefined || planId === undefined) {
          io.err('usage: quotes user plan EMAIL PLAN');
          return 2;
        }
        const moved = await withUsers(settings, clock, (u) => u.setPlan(email, planId));
        if (moved === undefined) {
          io.err(`no dashboard user with email ${email}`);
          return 1;
        }
        io.out(`${moved.email}: plan ${moved.planId}${moved.tokenId === null ? '' : ` (token ${moved.tokenId})`}`);
        return 0;
      }
      case 'usage': {
        const month = option([sub ?? '', ...rest], '--month');
        if (month !== undefined && !/^\d{4}-(0[1-9]|1[0-2])$/.test(month)) {
          io.err('--month must be YYYY-MM');
          return 2;
        }
        const rows = await withAccounts(settings, clock, (a) => a.usage(month));
        const out = [['ID', 'NAME', 'PLAN', 'MONTH', 'REQUESTS', 'LIMIT', 'STATE']];
        for (const r of rows) out.push([r.tokenId, r.name, r.planId, r.month, String(r.count), r.limit === null ? '-' : String(r.limit), r.revoked ? 'revoked' : 'active']);
        for (const line of table(out)) io.out(line);
        return 0;
      }
      case 'import-klines': {
        const args = [sub ?? '', ...rest].filter((a) => a !== '');
        const coin = option(args, '--coin');
        const interval = option(args, '--interval');
        const files = args.filter((a, i) => !a.startsWith('--') && !['--coin', '--interval'].includes(args[i - 1] ?? ''));
        if (files.length === 0) {
          io.err('usage: quotes import-klines FILE... [--coin BTC] [--interval 1m]');
          return 2;
        }
        const store = openStore(settings);
        let failed = 0;
        try {
          await store.migrate();
          for (const f of files) {
            const started = performance.now();
            try {
              const r = await importKlinesFile(store.candles, f, { ...(coin === undefined ? {} : { coin }), ...(interval === undefined ? {} : { interval }) });
              const span = r.rows === 0 ? '' : ` ${new Date(r.from * 1000).toISOString()} .. ${new Date(r.to * 1000).toISOString()}`;
              io.out(`${f}: ${r.coin}/${r.base} ${r.rows} candles, ${r.added} new, checksum ${r.checksum},${span} (${Math.round(performance.now() - started)} ms)`);
            } catch (err) {
              failed++;
              io.err(err instanceof ChecksumError ? `${f}: ${err.message}; not imported` : `${f}: ${(err as Error).message}`);
            }
          }
        } finally {
          await store.close();
        }
        return failed === 0 ? 0 : 1;
      }
      case 'backfill': {
        if (settings.marketSource !== 'exchange') {
          io.err('backfill needs MARKET_SOURCE=exchange');
          return 2;
        }
        const logger = createLogger(settings.logLevel, logDestination(settings.logFormat));
        const store = openStore(settings);
        const { market } = createSources(settings, { clock, log: logger, counters: new UpstreamCounters() });
        try {
          await store.migrate();
          const symbols = await market.listSymbols();
          const wanted = settings.backfillCoins.includes('*') ? symbols : symbols.filter((x) => settings.backfillCoins.includes(x));
          const history = new HistoryService({ candles: store.candles, source: market });
          const b = new Backfiller({ source: market, candles: store.candles, states: store.backfill, history, clock, log: logger, windows: settings.backfillWindows });
          const outcome = await b.runOnce(wanted);
          let bad = 0;
          for (const [k, v] of outcome) {
            io.out(`${k}: ${v}`);
            if (v !== 'done') bad++;
          }
          return bad === 0 ? 0 : 1;
        } finally {
          await market.close?.();
          await store.close();
        }
      }
      case 'settings': {
        for (const d of Object.values(SETTING_DEFS)) {
          const unit = d.unit === undefined ? '' : ` (${d.unit})`;
          io.out(`${d.name.padEnd(24)} default ${(d.default ?? '(unset)').padEnd(10)} ${d.meaning}${unit}`);
        }
        return 0;
      }
      default:
        io.err(`unknown command: ${cmd}\n${USAGE}`);
        return 2;
    }
  } catch (err) {
    io.err(`quotes ${cmd}: ${(err as Error).message}`);
    return 1;
  }
}
