import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FakeClock, freePort, spawnManaged, tempDir, waitFor, type Managed } from '@rls/testkit';
import { SimulatedMarket } from '../../src/market/simulated-market.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';

// Issue 14: one heavy history request must not hurt everyone else. The real process
// (bin/quotes.js, built by `npm run build`) serves a database holding a month of 1-minute candles
// for 16 coins; two clients repeat the heaviest request the default budget allows
// (QUOTES_HISTORY_MAX_POINTS=50000: 16 coins x 1 month of 15-minute candles = ~47,600 candles,
// aggregated from ~714,000 stored one-minute candles, ~6.9 MB of JSON), after a burst of 45 of them
// at once (the pro plan admits 50 a second), while a third asks for a cached quote every 20 ms. The
// quote's p99 stays under 250 ms and the process RSS under 600 MB.

const PKG = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(PKG, 'bin', 'quotes.js');
const BUILT = join(PKG, 'dist', 'src', 'history', 'priced-history.js');
const COINS = ['BTC', 'ETH', 'SOL', 'XRP', 'BNB', 'ADA', 'DOGE', 'TRX', 'LINK', 'AVAX', 'DOT', 'LTC', 'BCH', 'XLM', 'UNI', 'ATOM', 'ETC'];
const HEAVY_COINS = COINS.slice(0, 16);
const SEED_DAYS = 33;
const LOAD_MS = 12_000;
const BURST = 45;
const CHEAP_EVERY_MS = 20;
const P99_LIMIT_MS = 250;
const RSS_LIMIT_MB = 600;

function cli(args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } }, (err, stdout, stderr) => (err === null ? resolve(stdout) : reject(new Error(`${err.message}\n${stderr}`))));
  });
}

function rssMb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Number(m[1]) / 1024;
}

interface Got {
  status: number;
  bytes: number;
  ms: number;
  headers: Record<string, string | string[] | undefined>;
}

// Separate connection pools, so a cheap request never waits in the client for a heavy one's socket.
const heavyAgent = new Agent({ keepAlive: true, maxSockets: 64 });
const cheapAgent = new Agent({ keepAlive: true, maxSockets: 2 });

/** One GET, the body read and dropped as it arrives (the client must not be what holds memory). */
function get(port: number, path: string, token: string, agent: Agent = heavyAgent): Promise<Got> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - t0, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(60_000, () => req.destroy(new Error(`timeout: ${path}`)));
    req.end();
  });
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((s.length * p) / 100) - 1)] ?? NaN;
};

describe('history under load: the real process, the heaviest allowed request beside cheap ones', () => {
  const dir = tempDir('quotes-history-load-');
  const env = { QUOTES_DATA_DIR: dir.path, MARKET_SOURCE: 'simulated', QUOTES_SIM_SEED: '42', QUOTES_HOST: '127.0.0.1' };
  let server: Managed | undefined;
  let port = 0;
  let heavyToken = '';
  let cheapToken = '';

  before(async () => {
    assert.ok(existsSync(BUILT), `${BUILT} is missing: build first (npm run build, or npx tsc -b)`);
    await cli(['migrate'], env);
    // The candles the server's simulated source would produce (same seed), stored beforehand so
    // the test measures serving, not the first fill.
    const now = Date.now();
    const market = new SimulatedMarket({ seed: 42, clock: new FakeClock(now) });
    const store = openSqliteStore(join(dir.path, 'quotes.sqlite'));
    const to = Math.floor(now / 60_000) * 60;
    const from = to - SEED_DAYS * 86_400;
    for (const symbol of COINS) {
      let cursor: number | undefined = from;
      while (cursor !== undefined && cursor < to) {
        const page = await market.candles({ symbol, base: '1m', from: cursor, to, limit: 50_000 });
        await store.candles.upsert(symbol, '1m', page.candles);
        cursor = page.nextFrom;
      }
      await store.candles.setCoverage(symbol, '1m', { from, to });
    }
    await store.close();
    heavyToken = /token: (qt_\S+)/.exec(await cli(['token', 'create', '--plan', 'pro', '--name', 'heavy'], env))?.[1] ?? '';
    cheapToken = /token: (qt_\S+)/.exec(await cli(['token', 'create', '--plan', 'pro', '--name', 'cheap'], env))?.[1] ?? '';
    assert.ok(heavyToken !== '' && cheapToken !== '');
    port = await freePort();
    server = spawnManaged(process.execPath, [BIN, 'serve'], { env: { ...process.env, ...env, QUOTES_METRICS_PORT: '0', QUOTES_PORT: String(port) } });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health`)).ok, { what: 'quotes serve', timeoutMs: 30_000 });
  });

  after(async () => {
    heavyAgent.destroy();
    cheapAgent.destroy();
    await server?.stop();
    dir.cleanup();
  });

  test('the budget refuses one coin more; the heaviest allowed request keeps cheap requests under 250 ms at p99 and RSS under 600 MB', async () => {
    const heavy = `/api/v2/crypto?coin=${HEAVY_COINS.join(',')}&range=1mo&interval=15m`;
    const over = await get(port, `/api/v2/crypto?coin=${COINS.join(',')}&range=1mo&interval=15m`, heavyToken);
    assert.equal(over.status, 400, 'one coin more than the heaviest allowed request is refused');

    const pid = server!.proc.pid!;
    const rssStart = rssMb(pid);
    assert.equal((await get(port, '/api/v2/crypto?coin=BTC', cheapToken, cheapAgent)).status, 200, 'warm: the first quote builds the market snapshot');
    const first = await get(port, heavy, heavyToken);
    assert.equal(first.status, 200, server!.output().slice(-2000));
    assert.equal(first.headers['transfer-encoding'], 'chunked');
    assert.ok(first.bytes > 5_000_000, `heavy body ${first.bytes} bytes`);

    let stop = false;
    let peakRss = rssMb(pid);
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(pid))), 50);
    const heavyMs: number[] = [];
    const heavyLoop = async (): Promise<void> => {
      while (!stop) {
        const r = await get(port, heavy, heavyToken);
        assert.equal(r.status, 200);
        heavyMs.push(r.ms);
      }
    };
    const cheapMs: number[] = [];
    const cheapLoop = async (): Promise<void> => {
      while (!stop) {
        const r = await get(port, '/api/v2/crypto?coin=BTC', cheapToken, cheapAgent);
        assert.equal(r.status, 200);
        cheapMs.push(r.ms);
        await new Promise((res) => setTimeout(res, CHEAP_EVERY_MS));
      }
    };
    const timer = setTimeout(() => (stop = true), LOAD_MS);
    const burst = async (): Promise<void> => {
      const all = await Promise.all(Array.from({ length: BURST }, () => get(port, heavy, heavyToken)));
      for (const r of all) assert.equal(r.status, 200, 'the burst is queued, not refused');
      heavyMs.push(...all.map((r) => r.ms));
    };
    // The burst within one second, the repeating clients from the next (the pro plan: 50 a second).
    const loops = async (): Promise<void> => {
      await new Promise((res) => setTimeout(res, 1100));
      await Promise.all([heavyLoop(), heavyLoop()]);
    };
    try {
      await Promise.all([burst(), loops(), cheapLoop()]);
    } finally {
      clearTimeout(timer);
      clearInterval(sampler);
    }
    peakRss = Math.max(peakRss, rssMb(pid));
    const line =
      `first heavy ${first.ms.toFixed(0)} ms, ${(first.bytes / 1e6).toFixed(1)} MB; ${heavyMs.length} heavy requests p50 ${pct(heavyMs, 50).toFixed(0)} ms; ` +
      `cheap n=${cheapMs.length} p50 ${pct(cheapMs, 50).toFixed(1)} ms p99 ${pct(cheapMs, 99).toFixed(1)} ms, slowest ${[...cheapMs].sort((a, b) => b - a).slice(0, 5).map((x) => x.toFixed(0)).join('/')} ms; ` +
      `RSS start ${rssStart.toFixed(0)} MB peak ${peakRss.toFixed(0)} MB`;
    console.log(`# history-load: ${line}`);
    assert.ok(heavyMs.length >= BURST + 4, `heavy requests completed: ${line}`);
    assert.ok(cheapMs.length >= 100, `cheap requests completed: ${line}`);
    assert.ok(pct(cheapMs, 99) < P99_LIMIT_MS, `cheap p99 over ${P99_LIMIT_MS} ms: ${line}`);
    assert.ok(peakRss < RSS_LIMIT_MB, `RSS over ${RSS_LIMIT_MB} MB: ${line}`);
  });
});
