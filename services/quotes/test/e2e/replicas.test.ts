// Several quotes replicas as production runs them: real processes on one PostgreSQL, burst limits
// in the real ratelimit service on Redis, one fake exchange counting requests.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import {
  spawnManaged,
  startFakeBinance,
  startPostgres,
  startRedis,
  tempDir,
  waitFor,
  type FakeBinance,
  type PostgresServer,
  type RedisServer,
} from '@rls/testkit';
import { AccountService } from '../../src/accounts/account-service.js';
import { loadPlans } from '../../src/accounts/plans.js';
import { monthKey } from '../../src/accounts/usage-month.js';
import { clusterStoreContract } from '../../src/cluster/cluster-store-contract.js';
import { openPostgresCluster } from '../../src/cluster/postgres-cluster.js';
import { shippedRulesDir } from '../../src/ratelimit/create-gate.js';
import { openPostgresStore } from '../../src/store/postgres-store.js';
import type { KyselyStore } from '../../src/store/kysely-store.js';
import { rulesTree, startRateLimit, type RateLimitProcess, type RulesTree } from './ratelimit-process.js';
import { ingestLease, startReplicaProcess, ticker, waitHealthy, type ReplicaProcess } from './replica-process.js';

const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
const PLANS = fileURLToPath(new URL('../../plans.json', import.meta.url));

/** The settings under test: a 1 s market refresh, a 2 s lease, a 200 ms state poll. */
const REFRESH_S = 1;
const LEASE_MS = 2000;
const POLL_MS = 200;
/** Documented fail-over bound: the lease, a fifth of it, and one refresh (plus a second of slack for process scheduling on a loaded machine). */
const FAILOVER_BOUND_MS = LEASE_MS * 1.2 + REFRESH_S * 1000 + 1000;
const TINY_QUOTA = 12;

type Replica = ReplicaProcess;

describe('ClusterStore contract (PostgreSQL)', () => {
  let pgs: PostgresServer;
  let n = 0;
  before(async () => {
    pgs = await startPostgres();
  });
  after(async () => {
    await pgs.stop();
  });
  clusterStoreContract(
    'postgres',
    async () => {
      const db = `contract${++n}`;
      await pgs.createDatabase(db);
      const store = openPostgresStore(pgs.urlFor(db));
      await store.migrate();
      await store.close();
      return openPostgresCluster(pgs.urlFor(db), { leaseStatementMs: 1000 });
    },
    (ms) => new Promise((r) => setTimeout(r, ms)),
  );
});

describe('three quotes replicas on one PostgreSQL, one fake exchange, the ratelimit service', () => {
  let pgs: PostgresServer;
  let redis: RedisServer;
  let rules: RulesTree;
  let rls: RateLimitProcess;
  let binance: FakeBinance;
  let store: KyselyStore;
  let accounts: AccountService;
  let sql: pg.Pool;
  const dir = tempDir('quotes-replicas-');
  const replicas: Replica[] = [];
  let startupToken = '';
  let proToken = '';
  let tinyToken = '';
  let tinyId = '';

  const tickerCalls = (): number => binance.requests.filter((r) => r.path.endsWith('/ticker/24hr')).length;
  const get = (r: Replica, path: string, token: string, headers: Record<string, string> = {}) => fetch(`${r.url}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } });
  const leader = async (): Promise<{ holder: string; fence: number; replica: Replica | undefined }> => {
    const lease = await ingestLease(sql);
    if (lease === undefined) return { holder: '', fence: 0, replica: undefined };
    return { holder: lease.holder, fence: lease.fence, replica: replicas.find((r) => r.proc.proc.pid === lease.pid) };
  };

  async function startReplica(name: string, role: Replica['role']): Promise<Replica> {
    const r = await startReplicaProcess(name, role, {
      databaseUrl: pgs.urlFor('quotes'),
      plansFile: join(dir.path, 'plans.json'),
      exchangeUrl: binance.url,
      leaseMs: LEASE_MS,
      pollMs: POLL_MS,
      env: {
        RATELIMIT_GRPC_ADDR: rls.grpcAddress,
        RATELIMIT_TIMEOUT: '2s',
        RATELIMIT_FAILURE_MODE: 'deny',
        MARKET_REFRESH_INTERVAL: String(REFRESH_S),
        HISTORY_BACKFILL: 'false',
      },
    });
    replicas.push(r);
    return r;
  }

  const healthy = waitHealthy;

  before(async () => {
    [pgs, redis] = await Promise.all([startPostgres(), startRedis()]);
    rules = rulesTree({ 'quotes.yaml': { copyFrom: join(shippedRulesDir(), 'quotes.yaml') } });
    rls = await startRateLimit(redis.port, rules);
    binance = await startFakeBinance({
      markets: [
        { symbol: 'BTCUSDT', base: 'BTC', quote: 'USDT' },
        { symbol: 'ETHUSDT', base: 'ETH', quote: 'USDT' },
      ],
      tickers: [ticker('BTCUSDT', 90_000), ticker('ETHUSDT', 3000)],
    });
    // The shipped plans plus one with a tiny monthly quota (and no burst rule) to test exactness.
    const shipped = JSON.parse(readFileSync(PLANS, 'utf8')) as { plans: Record<string, unknown>[] };
    const startup = shipped.plans.find((p) => p.id === 'startup')!;
    shipped.plans.push({ ...startup, id: 'tiny', name: 'Tiny', monthlyRequests: TINY_QUOTA });
    writeFileSync(join(dir.path, 'plans.json'), JSON.stringify(shipped));

    await pgs.createDatabase('quotes');
    store = openPostgresStore(pgs.urlFor('quotes'));
    await store.migrate();
    accounts = new AccountService({ tokens: store.tokens, usage: store.usage, plans: loadPlans(join(dir.path, 'plans.json')), clock: { now: () => Date.now() }, random: randomBytes });
    startupToken = (await accounts.createToken('startup', 'startup')).token;
    proToken = (await accounts.createToken('pro', 'pro')).token;
    const tiny = await accounts.createToken('tiny', 'tiny');
    tinyToken = tiny.token;
    tinyId = tiny.record.id;
    sql = new pg.Pool({ connectionString: pgs.urlFor('quotes'), max: 2 });

    // The first replica finds an empty database: it takes the lease, lists the exchange's coins and
    // publishes the first state. The others start from that state (the api replica without any
    // exchange call; the standby lists the markets once, to be ready to poll when elected).
    const first = await startReplica('q1', 'all');
    await healthy(first);
    const others = [await startReplica('q2', 'all'), await startReplica('q3', 'api')];
    await Promise.all(others.map(healthy));
  });

  after(async () => {
    await Promise.allSettled(replicas.map((r) => r.proc.stop()));
    await sql?.end();
    await store?.close();
    await rls?.stop();
    await binance?.close();
    await Promise.allSettled([pgs?.stop(), redis?.stop()]);
    rules?.cleanup();
    dir.cleanup();
  });

  test('one replica ingests: the exchange sees one replica\'s polling; the api replica never asks it', async () => {
    const info = binance.requests.filter((r) => r.path.endsWith('/exchangeInfo')).length;
    assert.equal(info, 2, 'each replica that may ingest listed the markets once at start-up; the api replica took the shared list');
    const { replica } = await leader();
    assert.equal(replica?.name, 'q1', 'the first replica holds the lease');
    const before = tickerCalls();
    const started = Date.now();
    await new Promise((r) => setTimeout(r, 5000));
    const calls = tickerCalls() - before;
    const seconds = (Date.now() - started) / 1000;
    // One replica refreshing every second: about `seconds` calls; three would make about three times as many.
    // (The lower bound only shows the leader does poll; a loaded machine may slow its refresh.)
    assert.ok(calls >= Math.floor(seconds / REFRESH_S / 2) && calls <= seconds / REFRESH_S + 1, `${calls} ticker calls in ${seconds.toFixed(1)} s`);
  });

  test('every replica returns the same body and ETag for the same data, and 304 on another replica\'s ETag', async () => {
    // Prices move every 50 ms: replicas polling on their own would each hold a different price.
    let price = 90_000;
    const moving = setInterval(() => binance.setTicker(ticker('BTCUSDT', (price += 1.25))), 50);
    await new Promise((r) => setTimeout(r, 2500));
    clearInterval(moving);
    // The exchange now fails every ticker call: no replica can fetch anything newer.
    binance.addFault({ path: '/ticker/24hr', kind: 'status', status: 503, times: 1_000_000, body: 'down' });
    try {
      const path = '/api/v2/crypto?coin=BTC,ETH';
      const answers = await waitFor(
        async () => {
          const got = await Promise.all(
            replicas.map(async (r) => {
              const res = await get(r, path, proToken);
              const body = (await res.json()) as { coins: unknown };
              return { status: res.status, etag: res.headers.get('etag'), coins: JSON.stringify(body.coins) };
            }),
          );
          if (got.every((a) => a.status === 200 && a.etag === got[0]!.etag)) return got;
          throw new Error(`answers: ${got.map((a) => `${a.status} ${a.etag}`).join(' | ')}`);
        },
        { what: 'all replicas on the last published state', timeoutMs: 10_000, intervalMs: 100 },
      );
      for (const a of answers) assert.equal(a.coins, answers[0]!.coins, 'identical coins on every replica');
      const btc = (JSON.parse(answers[0]!.coins) as { coin: string; regularMarketPrice: number }[]).find((c) => c.coin === 'BTC');
      assert.ok(btc !== undefined && btc.regularMarketPrice > 90_000, `a moved price: ${btc?.regularMarketPrice}`);
      const etag = answers[0]!.etag!;
      for (const r of replicas) {
        const res = await get(r, path, proToken, { 'if-none-match': etag });
        assert.equal(res.status, 304, `${r.name} honours the ETag another replica produced`);
      }
    } finally {
      binance.clearFaults();
    }
  });

  test('a token\'s burst limit holds across replicas (round robin), and usage counts are exact', async () => {
    const month = monthKey(Date.now());
    // 15 concurrent requests spread over the three replicas, inside one wall-clock second (the
    // per-second window of the startup plan: 10). A batch that straddles a second boundary on a
    // loaded machine says nothing about the limit: it is repeated with a fresh token.
    for (let attempt = 1; ; attempt++) {
      const { token, record } = await accounts.createToken(`burst-${attempt}`, 'startup');
      await waitFor(() => Date.now() % 1000 < 100, { what: 'start of a second', timeoutMs: 5000, intervalMs: 5 });
      const t0 = Date.now();
      const statuses = await Promise.all(Array.from({ length: 15 }, (_, i) => get(replicas[i % 3]!, '/api/v2/crypto?coin=BTC', token).then((r) => r.status)));
      const t1 = Date.now();
      if (Math.floor(t0 / 1000) !== Math.floor(t1 / 1000)) {
        assert.ok(attempt < 5, 'five batches in a row straddled a second boundary');
        continue;
      }
      const admitted = statuses.filter((x) => x === 200).length;
      assert.equal(admitted, 10, `statuses ${statuses.join(',')}`);
      assert.equal(statuses.filter((x) => x === 429).length, 5);
      assert.equal(await store.usage.get(record.id, month), admitted, 'every admitted request counted once, none refused counted');
      break;
    }
  });

  test('a monthly quota is exact across replicas: concurrent requests never overshoot it', async () => {
    const statuses = await Promise.all(Array.from({ length: 30 }, (_, i) => get(replicas[i % 3]!, '/api/v2/crypto?coin=BTC', tinyToken).then((r) => r.status)));
    assert.equal(statuses.filter((s) => s === 200).length, TINY_QUOTA, `statuses ${statuses.join(',')}`);
    assert.equal(statuses.filter((s) => s === 402).length, 30 - TINY_QUOTA);
    assert.equal(await store.usage.get(tinyId, monthKey(Date.now())), TINY_QUOTA);
  });

  test('SIGKILL of the ingesting replica: another takes over within the bound and polls at one replica\'s rate', async () => {
    const old = await leader();
    assert.ok(old.replica !== undefined && old.replica.role === 'all');
    const before = tickerCalls();
    const killedAt = Date.now();
    old.replica.proc.proc.kill('SIGKILL');
    let electedMs = -1;
    await waitFor(
      async () => {
        if (electedMs < 0 && (await leader()).fence > old.fence) electedMs = Date.now() - killedAt;
        return tickerCalls() > before;
      },
      { what: 'ticker polling resumed', timeoutMs: FAILOVER_BOUND_MS + 5000, intervalMs: 20 },
    );
    const failoverMs = Date.now() - killedAt;
    const now = await leader();
    assert.notEqual(now.replica?.name, old.replica.name);
    assert.equal(now.replica?.role, 'all', 'the api replica never ingests');
    assert.ok(now.fence > old.fence, 'a new term has a higher fence');
    assert.ok(failoverMs <= FAILOVER_BOUND_MS, `polling resumed ${failoverMs} ms after the kill (lease taken after ${electedMs} ms; bound ${FAILOVER_BOUND_MS} ms)`);

    const from = tickerCalls();
    const started = Date.now();
    await new Promise((r) => setTimeout(r, 4000));
    const calls = tickerCalls() - from;
    const seconds = (Date.now() - started) / 1000;
    assert.ok(calls >= Math.floor(seconds / REFRESH_S / 2) && calls <= seconds / REFRESH_S + 1, `${calls} ticker calls in ${seconds.toFixed(1)} s after the fail-over`);
    // The survivors serve the new leader's data.
    const live = replicas.filter((r) => r !== old.replica);
    for (const r of live) assert.equal((await get(r, '/api/v2/crypto?coin=ETH', startupToken)).status, 200);
    process.stdout.write(`# fail-over: lease taken ${electedMs} ms and ticker polling resumed ${failoverMs} ms after SIGKILL of the leader (lease ${LEASE_MS} ms, refresh ${REFRESH_S} s)\n`);
  });

  test('a leader frozen past its lease (SIGSTOP) is replaced, and on waking stops ingesting and exits 75 without polling again', async () => {
    const standby = await startReplica('q4', 'all');
    await healthy(standby);
    const old = await leader();
    assert.ok(old.replica !== undefined && old.replica !== standby);
    const frozen = old.replica;
    frozen.proc.proc.kill('SIGSTOP');
    try {
      await waitFor(async () => (await leader()).fence > old.fence, { what: 'another replica took the lease', timeoutMs: FAILOVER_BOUND_MS + 5000, intervalMs: 50 });
      assert.equal((await leader()).replica?.name, 'q4');
    } finally {
      frozen.proc.proc.kill('SIGCONT');
    }
    const exited = await waitFor(() => (frozen.proc.proc.exitCode !== null ? { code: frozen.proc.proc.exitCode } : undefined), { what: `${frozen.name} exiting after losing the lease`, timeoutMs: 5000, intervalMs: 20 });
    assert.equal(exited.code, 75, frozen.proc.output());
    assert.match(frozen.proc.output(), /lost the ingest lease/);
    // The woken replica made no ticker call of its own: the rate stayed at one replica's.
    const from = tickerCalls();
    const started = Date.now();
    await new Promise((r) => setTimeout(r, 3000));
    const calls = tickerCalls() - from;
    const seconds = (Date.now() - started) / 1000;
    assert.ok(calls <= seconds / REFRESH_S + 1, `${calls} ticker calls in ${seconds.toFixed(1)} s`);
  });

  test('a leader stopped gracefully (SIGTERM) releases the lease: a standby takes over before the lease would have expired', async () => {
    const standby = await startReplica('q5', 'all');
    await healthy(standby);
    const old = await leader();
    assert.ok(old.replica !== undefined && old.replica !== standby);
    await old.replica.proc.stop();
    assert.equal(old.replica.proc.proc.exitCode, 0, old.replica.proc.output());
    const exitedAt = Date.now();
    // Released, not left to expire: the row already ended (or the standby already holds it).
    const row = (await sql.query<{ holder: string; expires_at: string }>(`SELECT holder, expires_at FROM cluster_lease WHERE name = 'ingest'`)).rows[0]!;
    assert.ok(row.holder !== old.holder || Number(row.expires_at) === 0, `lease row after the stop: ${JSON.stringify(row)}`);
    await waitFor(async () => (await leader()).replica === standby, { what: 'the standby holding the lease', timeoutMs: 10_000, intervalMs: 20 });
    const tookMs = Date.now() - exitedAt;
    assert.ok(tookMs < LEASE_MS, `took over ${tookMs} ms after the old leader exited (lease ${LEASE_MS} ms)`);
  });

  test('a revoked token is refused by every replica within the stated bound (two state polls)', async () => {
    const { token, record } = await accounts.createToken('revoke-me', 'startup');
    const live = replicas.filter((r) => r.proc.proc.exitCode === null && r.proc.proc.signalCode === null);
    // Known (and cached) by every replica first.
    for (let i = 0; i < 3; i++) for (const r of live) assert.equal((await get(r, '/api/v2/crypto?coin=BTC', token)).status, 200);
    // Revoked by another process (as the CLI, or the dashboard on another replica, would).
    assert.equal(await accounts.revoke(record.id), true);
    const revokedAt = Date.now();
    const boundMs = 2 * POLL_MS + 600; // two polls and a query (the 600 ms absorb a loaded machine)
    const seenAfter = await Promise.all(
      live.map(async (r) => {
        await waitFor(async () => (await get(r, '/api/v2/crypto?coin=BTC', token)).status === 401, { what: `${r.name} refusing the revoked token`, timeoutMs: 5000, intervalMs: 10 });
        return Date.now() - revokedAt;
      }),
    );
    for (const [i, ms] of seenAfter.entries()) assert.ok(ms <= boundMs, `${live[i]!.name} refused it after ${ms} ms (bound ${boundMs} ms)`);
    process.stdout.write(`# revocation seen after ${seenAfter.join(', ')} ms (poll ${POLL_MS} ms)\n`);
  });
});

describe('start-up refuses configurations that would multiply limits', () => {
  const run = async (env: Record<string, string>): Promise<{ code: number | null; output: string }> => {
    const p = spawnManaged(process.execPath, ['--conditions=source', '--import', 'tsx', CLI, 'serve'], { cwd: ROOT, env: { ...process.env, QUOTES_LOG_LEVEL: 'warn', QUOTES_METRICS_PORT: '0', QUOTES_PORT: '0', MARKET_SOURCE: 'simulated', ...env } });
    await waitFor(() => p.proc.exitCode !== null, { what: 'quotes exits', timeoutMs: 30_000 });
    return { code: p.proc.exitCode, output: p.output() };
  };

  test('PostgreSQL with the embedded limiter, and api/ingest roles without PostgreSQL', async () => {
    const pgRun = await run({ DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    assert.equal(pgRun.code, 1);
    assert.match(pgRun.output, /RATELIMIT_GRPC_ADDR is unset/);
    assert.match(pgRun.output, /services\/quotes\/ratelimit\/quotes\.yaml/);
    assert.match(pgRun.output, /QUOTES_SINGLE_REPLICA=true/);
    const dir = tempDir('quotes-role-');
    try {
      const sqliteRun = await run({ QUOTES_DATA_DIR: dir.path, QUOTES_ROLE: 'api' });
      assert.equal(sqliteRun.code, 1);
      assert.match(sqliteRun.output, /QUOTES_ROLE=api needs PostgreSQL/);
    } finally {
      dir.cleanup();
    }
  });
});

