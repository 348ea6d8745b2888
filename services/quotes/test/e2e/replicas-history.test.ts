// History on several quotes replicas: only the ingesting replica asks the exchange for candles
// (closed or in progress); every replica serves history from PostgreSQL and the published market
// state, with the same bodies and ETags. Each replica talks to its own fake exchange (all serving
// the same market), so the requests each one makes are counted separately.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import {
  startFakeBinance,
  startPostgres,
  tempDir,
  waitFor,
  type FakeBinance,
  type FakeKline,
  type PostgresServer,
} from '@rls/testkit';
import { AccountService } from '../../src/accounts/account-service.js';
import { loadPlans } from '../../src/accounts/plans.js';
import { openPostgresStore } from '../../src/store/postgres-store.js';
import type { KyselyStore } from '../../src/store/kysely-store.js';
import { ingestLease, startReplicaProcess, ticker, waitHealthy, type ReplicaProcess } from './replica-process.js';

const PLANS = fileURLToPath(new URL('../../plans.json', import.meta.url));

const LEASE_MS = 2000;
const POLL_MS = 200;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const COINS = [
  { symbol: 'BTCUSDT', base: 'BTC', price: 90_000 },
  { symbol: 'ETHUSDT', base: 'ETH', price: 3000 },
  { symbol: 'SOLUSDT', base: 'SOL', price: 150 },
];
const PATHS = ['/api/v2/crypto?coin=BTC,ETH,SOL&range=1d&interval=1h', '/api/v2/crypto?coin=BTC,ETH,SOL&range=5d&interval=1d', '/api/v2/crypto?coin=ETH&range=5d&interval=1d&currency=USD', '/api/v2/crypto?coin=SOL&range=1d&interval=1h&currency=EUR'];

interface Replica extends ReplicaProcess {
  /** The fake exchange only this replica talks to. */
  exchange: FakeBinance;
}

/** Candles of `stepMs` from `count` buckets ago through the next two buckets (the exchange publishes the in-progress one; later ones are never served as closed). */
function klines(price: number, stepMs: number, count: number): FakeKline[] {
  const start = Math.floor(Date.now() / stepMs) * stepMs - count * stepMs;
  return Array.from({ length: count + 3 }, (_, i) => {
    const open = price * (1 + i / 1000);
    return { openTime: start + i * stepMs, open, high: open * 1.01, low: open * 0.99, close: open * 1.002, volume: 5 + i, quoteVolume: (5 + i) * open };
  });
}

interface HistoryPoint {
  date: number;
  close: number | null;
}

describe('history on three replicas: one asks the exchange, all serve the database', () => {
  let pgs: PostgresServer;
  let store: KyselyStore;
  let sql: pg.Pool;
  let token = '';
  const dir = tempDir('quotes-replicas-history-');
  const replicas: Replica[] = [];
  const klineCalls = (r: Replica): number => r.exchange.requests.filter((q) => q.path.endsWith('/klines') || q.path.endsWith('/uiKlines')).length;
  let tickerTimer: NodeJS.Timeout | undefined;

  async function fakeExchange(): Promise<FakeBinance> {
    const b = await startFakeBinance({ markets: COINS.map((c) => ({ symbol: c.symbol, base: c.base, quote: 'USDT' })), tickers: COINS.map((c) => ticker(c.symbol, c.price)) });
    for (const c of COINS) {
      b.setKlines(c.symbol, '1h', klines(c.price, HOUR_MS, 4 * 24));
      b.setKlines(c.symbol, '1d', klines(c.price, DAY_MS, 14));
    }
    return b;
  }

  async function startReplica(name: string, role: Replica['role']): Promise<Replica> {
    const exchange = await fakeExchange();
    const r = await startReplicaProcess(name, role, {
      databaseUrl: pgs.urlFor('quotes'),
      plansFile: join(dir.path, 'plans.json'),
      exchangeUrl: exchange.url,
      leaseMs: LEASE_MS,
      pollMs: POLL_MS,
      env: {
        // Burst limits are not under test here (replicas.test.ts runs them in the ratelimit service).
        RATELIMIT_ENABLED: 'false',
        MARKET_REFRESH_INTERVAL: '1',
        HISTORY_BACKFILL: 'true',
        HISTORY_BACKFILL_WINDOWS: '1h:3d,1d:10d',
      },
    });
    const replica: Replica = { ...r, exchange };
    replicas.push(replica);
    return replica;
  }

  const healthy = waitHealthy;

  const leaderPid = async (): Promise<number | undefined> => (await ingestLease(sql))?.pid;

  before(async () => {
    pgs = await startPostgres();
    const plans = JSON.parse(readFileSync(PLANS, 'utf8')) as unknown;
    writeFileSync(join(dir.path, 'plans.json'), JSON.stringify(plans));
    await pgs.createDatabase('quotes');
    store = openPostgresStore(pgs.urlFor('quotes'));
    await store.migrate();
    const accounts = new AccountService({ tokens: store.tokens, usage: store.usage, plans: loadPlans(join(dir.path, 'plans.json')), clock: { now: () => Date.now() }, random: randomBytes });
    token = (await accounts.createToken('pro', 'pro')).token;
    sql = new pg.Pool({ connectionString: pgs.urlFor('quotes'), max: 2 });
    sql.on('error', () => undefined); // an idle connection ended by the server's shutdown
    const first = await startReplica('q1', 'all');
    await healthy(first);
    const others = [await startReplica('q2', 'all'), await startReplica('q3', 'api')];
    await Promise.all(others.map(healthy));
    // Tickers move on like an exchange's (closeTime = now), so the history's as-of instant does too.
    tickerTimer = setInterval(() => {
      for (const r of replicas) for (const c of COINS) r.exchange.setTicker(ticker(c.symbol, c.price));
    }, 250);
  });

  after(async () => {
    if (tickerTimer !== undefined) clearInterval(tickerTimer);
    await Promise.allSettled(replicas.map((r) => r.proc.stop()));
    await Promise.allSettled(replicas.map((r) => r.exchange.close()));
    await sql?.end();
    await store?.close();
    await pgs?.stop();
    dir.cleanup();
  });

  test('every replica returns the same history bodies and ETags, today\'s candle included, and only the leader asks for klines', async () => {
    assert.equal(await leaderPid(), replicas[0]!.proc.proc.pid, 'the first replica holds the ingest lease');
    await waitFor(async () => Number((await sql.query<{ n: string }>(`SELECT count(*) AS n FROM backfill_state WHERE done = 1`)).rows[0]!.n) === COINS.length * 2, {
      what: 'the leader\'s backfill of 1h and 1d',
      timeoutMs: 60_000,
      intervalMs: 200,
    });
    for (const path of PATHS) {
      // Replicas serve the same published state once the followers polled it: ask all three at once until they agree.
      const answers = await waitFor(
        async () => {
          const got = await Promise.all(
            replicas.map(async (r) => {
              const res = await fetch(`${r.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
              // The envelope's requestedAt and took are per request; the coins are the data.
              const text = await res.text();
              const coins = res.status === 200 ? JSON.stringify((JSON.parse(text) as { coins: unknown }).coins) : text;
              return { status: res.status, etag: res.headers.get('etag'), body: `{"coins":${coins}}` };
            }),
          );
          if (got.every((a) => a.status === 200 && a.etag === got[0]!.etag)) {
            // Complete: prices on every point (FX fixings stored) and the bucket in progress now.
            const coins = (JSON.parse(got[0]!.body) as { coins: { historicalDataPrice: HistoryPoint[] }[] }).coins;
            const step = path.includes('interval=1h') ? HOUR_MS : DAY_MS;
            const current = Math.floor(Date.now() / step) * step;
            const complete = coins.every((c) => c.historicalDataPrice.length > 0 && c.historicalDataPrice.every((p) => p.close !== null) && c.historicalDataPrice.at(-1)!.date * 1000 >= current - step);
            if (complete) return got;
          }
          throw new Error(`answers: ${got.map((a) => `${a.status} ${a.etag} ${a.body.slice(0, 200)}`).join(' | ')}`);
        },
        { what: `all replicas agreeing on ${path}`, timeoutMs: 30_000, intervalMs: 100 },
      );
      for (const a of answers) assert.ok(a.body === answers[0]!.body, `identical coins on every replica for ${path}`);
      const coins = (JSON.parse(answers[0]!.body) as { coins: { historicalDataPrice: HistoryPoint[] }[] }).coins;
      const step = path.includes('interval=1h') ? HOUR_MS : DAY_MS;
      const current = Math.floor(Date.now() / step) * step;
      for (const c of coins) {
        const last = c.historicalDataPrice.at(-1)!;
        // The in-progress bucket (or, right after a boundary, the one before it) ends the series.
        assert.ok(last.date * 1000 >= current - step, `newest point ${new Date(last.date * 1000).toISOString()} for ${path}`);
      }
      const etag = answers[0]!.etag!;
      for (const r of replicas) {
        const res = await fetch(`${r.url}${path}`, { headers: { authorization: `Bearer ${token}`, 'if-none-match': etag } });
        await res.arrayBuffer();
        // The state may have moved on meanwhile (a new snapshot each second): 304 or a new answer.
        assert.ok(res.status === 304 || res.status === 200, `${r.name}: ${res.status}`);
      }
    }
    // The leader's keeper: one in-progress kline request per coin and refresh (its finest kept
    // series, 1h; today's candle is built from the stored hours), plus top-ups when a bucket closes.
    const from = klineCalls(replicas[0]!);
    const started = Date.now();
    await new Promise((r) => setTimeout(r, 3000));
    const seconds = (Date.now() - started) / 1000;
    const keeperCalls = klineCalls(replicas[0]!) - from;
    process.stdout.write(`# leader kline requests: ${keeperCalls} in ${seconds.toFixed(1)} s (${COINS.length} coins, 1h and 1d kept, 1 s refresh)\n`);
    assert.ok(keeperCalls <= COINS.length * (Math.ceil(seconds) + 1) + 2 * COINS.length, `${keeperCalls} kline requests in ${seconds.toFixed(1)} s`);
    const calls = replicas.map((r) => `${r.name}: ${klineCalls(r)} kline requests, ${r.exchange.requests.length} in all`);
    process.stdout.write(`# exchange requests per replica: ${calls.join('; ')}\n`);
    assert.ok(klineCalls(replicas[0]!) > 0, 'the leader keeps history current');
    assert.equal(klineCalls(replicas[1]!), 0, `the standby never asks for klines (${calls.join('; ')})`);
    assert.equal(klineCalls(replicas[2]!), 0, `the api replica never asks for klines (${calls.join('; ')})`);
    assert.equal(replicas[2]!.exchange.requests.length, 0, 'the api replica never talks to the exchange');
  });

  test('a follower serves the in-progress candle the leader publishes, and it moves as the exchange\'s does', async () => {
    const path = '/api/v2/crypto?coin=BTC&range=1d&interval=1h&currency=USD';
    const hour = Math.floor(Date.now() / HOUR_MS) * HOUR_MS;
    const moved = 123_456.5;
    for (const r of replicas) {
      r.exchange.setKlines('BTCUSDT', '1h', klines(90_000, HOUR_MS, 4 * 24).map((k) => (k.openTime === hour ? { ...k, close: moved, high: Math.max(k.high, moved) } : k)));
    }
    const apiReplica = replicas[2]!;
    const before = klineCalls(apiReplica);
    const last = await waitFor(
      async () => {
        const res = await fetch(`${apiReplica.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
        const body = (await res.json()) as { coins: { historicalDataPrice: HistoryPoint[] }[] };
        const p = body.coins[0]?.historicalDataPrice.at(-1);
        return p !== undefined && p.date * 1000 === hour && p.close === moved ? p : undefined;
      },
      { what: 'the api replica serving the moved in-progress candle', timeoutMs: 15_000, intervalMs: 100 },
    );
    assert.equal(last.close, moved);
    assert.equal(klineCalls(apiReplica), before, 'still no exchange request from the api replica');
    assert.equal(klineCalls(replicas[1]!), 0, 'nor from the standby');
  });

  test('after the leader dies, the new leader alone keeps history current; the api replica still never asks', async () => {
    const [q1, q2, q3] = replicas as [Replica, Replica, Replica];
    q1.proc.proc.kill('SIGKILL');
    await waitFor(async () => (await leaderPid()) === q2.proc.proc.pid, { what: 'q2 taking the ingest lease', timeoutMs: 15_000, intervalMs: 50 });
    await waitFor(() => klineCalls(q2) > 0, { what: 'the new leader asking for klines', timeoutMs: 15_000, intervalMs: 50 });
    const path = '/api/v2/crypto?coin=BTC,ETH,SOL&range=5d&interval=1d';
    await waitFor(
      async () => {
        const day = Math.floor(Date.now() / DAY_MS) * DAY_MS;
        const got = await Promise.all(
          [q2, q3].map(async (r) => {
            const res = await fetch(`${r.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
            const body = (await res.json()) as { coins?: { historicalDataPrice: HistoryPoint[] }[] };
            return { status: res.status, etag: res.headers.get('etag'), coins: body.coins };
          }),
        );
        const [a, b] = got as [(typeof got)[0], (typeof got)[0]];
        return a.status === 200 && a.etag === b.etag && JSON.stringify(a.coins) === JSON.stringify(b.coins) && (a.coins ?? []).every((c) => c.historicalDataPrice.at(-1)?.date === day / 1000);
      },
      { what: 'q2 and q3 agreeing on history with today\'s candle after the fail-over', timeoutMs: 15_000, intervalMs: 100 },
    );
    assert.equal(klineCalls(q3), 0, 'the api replica never asked for klines');
    assert.equal(q3.exchange.requests.length, 0, 'nor anything else');
  });
});
