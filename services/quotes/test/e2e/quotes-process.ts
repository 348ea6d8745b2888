// One quotes service as a real process (from the sources, through tsx) on its own SQLite file and
// the simulated market, for the e2e attacks on it: start, health wait, tokens, RSS, raw requests.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest, type Agent } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, GiveUp, spawnManaged, tempDir, waitFor, type Managed } from '@rls/testkit';
import { AccountService } from '../../src/accounts/account-service.js';
import { defaultPlansFile, loadPlans } from '../../src/accounts/plans.js';
import { packageRoot } from '../../src/package-root.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';

const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));

export interface QuotesProcess {
  port: number;
  url: string;
  proc: Managed;
  dataDir: string;
  /** Resident set size of the process now (MB). */
  rssMb: () => number;
  stop: () => Promise<void>;
}

/** Creates tokens (name -> plan) in the SQLite database of `dataDir` (migrated first); returns name -> token. */
export async function createTokens(dataDir: string, wanted: Record<string, string>): Promise<Record<string, string>> {
  const store = openSqliteStore(join(dataDir, 'quotes.sqlite'));
  try {
    await store.migrate();
    const accounts = new AccountService({ tokens: store.tokens, usage: store.usage, plans: loadPlans(defaultPlansFile(packageRoot())), clock: { now: () => Date.now() }, random: randomBytes });
    const out: Record<string, string> = {};
    for (const [name, plan] of Object.entries(wanted)) out[name] = (await accounts.createToken(name, plan)).token;
    return out;
  } finally {
    await store.close();
  }
}

/** Starts `quotes serve` on the simulated market with `env` on top; resolves once it serves fresh data. */
export async function startQuotesProcess(env: Record<string, string>, dataDir = tempDir('quotes-e2e-').path): Promise<QuotesProcess> {
  const port = await freePort();
  const proc = spawnManaged(process.execPath, ['--conditions=source', '--import', 'tsx', CLI, 'serve'], {
    cwd: ROOT,
    env: {
      ...process.env,
      QUOTES_DATA_DIR: dataDir,
      QUOTES_HOST: '127.0.0.1',
      QUOTES_METRICS_PORT: '0', QUOTES_PORT: String(port),
      MARKET_SOURCE: 'simulated',
      QUOTES_LOG_LEVEL: 'warn',
      ...env,
    },
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      if (proc.proc.exitCode !== null) throw new GiveUp(`quotes exited early:\n${proc.output()}`);
      const res = await fetch(`${url}/health`).catch(() => undefined);
      return res !== undefined && ((await res.json()) as { status: string }).status === 'ok';
    },
    { what: 'quotes serving fresh market data', timeoutMs: 60_000, intervalMs: 100 },
  );
  const pid = proc.proc.pid ?? 0;
  return {
    port,
    url,
    proc,
    dataDir,
    rssMb: () => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024,
    stop: () => proc.stop(),
  };
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  ms: number;
}

/**
 * One GET with exactly these headers (fetch would not let a test choose Host): the body read
 * whole, the time from sending to its end.
 */
export function rawGet(port: number, path: string, headers: Record<string, string>, agent?: Agent): Promise<RawAnswer> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers, ...(agent === undefined ? {} : { agent }) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - t0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error(`timeout: ${path}`)));
    req.end();
  });
}

/** The p-th percentile (0–100) of `xs`. */
export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((s.length * p) / 100) - 1))] ?? NaN;
}
