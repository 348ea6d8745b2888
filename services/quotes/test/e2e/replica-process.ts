// Quotes replicas as real processes on one PostgreSQL (replicas.test.ts, replicas-history.test.ts):
// the settings every replica shares, start, health wait, and who holds the ingest lease.
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { freePort, GiveUp, spawnManaged, waitFor, type FakeTicker, type Managed } from '@rls/testkit';

const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));

export interface ReplicaProcess {
  name: string;
  role: 'all' | 'api';
  port: number;
  url: string;
  proc: Managed;
}

export interface ReplicaOptions {
  databaseUrl: string;
  plansFile: string;
  exchangeUrl: string;
  leaseMs: number;
  pollMs: number;
  /** Settings on top of the shared ones (burst limits, refresh, backfill). */
  env: Record<string, string>;
}

/** Starts `quotes serve` as replica `name` (it is not waited for: see waitHealthy). */
export async function startReplicaProcess(name: string, role: ReplicaProcess['role'], o: ReplicaOptions): Promise<ReplicaProcess> {
  const port = await freePort();
  const env = {
    ...process.env,
    DATABASE_URL: o.databaseUrl,
    QUOTES_ROLE: role,
    QUOTES_HOST: '127.0.0.1',
    QUOTES_METRICS_PORT: '0', QUOTES_PORT: String(port),
    QUOTES_LOG_LEVEL: 'warn',
    QUOTES_PLANS_FILE: o.plansFile,
    QUOTES_LEADER_LEASE: String(o.leaseMs / 1000),
    QUOTES_STATE_POLL_INTERVAL: String(o.pollMs / 1000),
    MARKET_SOURCE: 'exchange',
    MARKET_EXCHANGES: 'binance',
    MARKET_EXCHANGE_URL_BINANCE: o.exchangeUrl,
    // Behind a load balancer every replica builds absolute URLs (coinImageUrl) from one origin.
    PUBLIC_BASE_URL: 'https://quotes.example.test',
    MARKET_RATE_LIMIT_MS: '0',
    MARKET_RETRY_ATTEMPTS: '1',
    FX_SOURCE: 'simulated',
    ...o.env,
  };
  const proc = spawnManaged(process.execPath, ['--conditions=source', '--import', 'tsx', CLI, 'serve'], { cwd: ROOT, env });
  return { name, role, port, url: `http://127.0.0.1:${port}`, proc };
}

/** Waits until the replica serves fresh market data (fails at once if it exited). */
export async function waitHealthy(r: ReplicaProcess): Promise<void> {
  await waitFor(
    async () => {
      if (r.proc.proc.exitCode !== null) throw new GiveUp(`${r.name} exited early:\n${r.proc.output()}`);
      const res = await fetch(`${r.url}/health`).catch(() => undefined);
      if (res === undefined) return false;
      return ((await res.json()) as { status: string }).status === 'ok';
    },
    { what: `${r.name} serving fresh market data`, timeoutMs: 60_000, intervalMs: 100 },
  );
}

/** The live ingest lease: its holder (`host:pid`), fence and the holder's pid; undefined when none is live. */
export async function ingestLease(sql: pg.Pool): Promise<{ holder: string; fence: number; pid: number } | undefined> {
  const row = (await sql.query<{ holder: string; fence: string }>(`SELECT holder, fence FROM cluster_lease WHERE name = 'ingest' AND expires_at > (extract(epoch from clock_timestamp()) * 1000)::bigint`)).rows[0];
  return row === undefined ? undefined : { holder: row.holder, fence: Number(row.fence), pid: Number(row.holder.split(':')[1]) };
}

/** A 24-hour ticker closing now. */
export const ticker = (symbol: string, lastPrice: number): FakeTicker => {
  const now = Date.now();
  return { symbol, lastPrice, openPrice: lastPrice * 0.98, highPrice: lastPrice * 1.01, lowPrice: lastPrice * 0.97, volume: 10, quoteVolume: 10 * lastPrice, openTime: now - 86_400_000, closeTime: now };
};
