// CPU per cached quote through the pre-router and the crypto pipeline, in-process (no HTTP, no load generator): the service's own
// work for GET /api/v2/crypto?coin=BTC,ETH,SOL, steady on a shared machine where req/s is not.
// Four configurations: access log at info / warn, burst limits (embedded, lifted) on / off.
// Run: node --conditions=source --import tsx bench/quotes-fastpath-cpu.mjs
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { composeApp, createDeps } from '../services/quotes/src/compose.ts';
import { createLogging, defaultLogDestination } from '../services/quotes/src/logger.ts';
import { loadSettings } from '../services/quotes/src/settings.ts';

const root = new URL('../services/quotes/', import.meta.url);
const N = Number(process.env.N ?? 50_000);

async function measure(level, rateLimit) {
  const dir = mkdtempSync(join(tmpdir(), 'quotes-fastpath-'));
  const plans = JSON.parse(readFileSync(new URL('plans.json', root), 'utf8'));
  for (const p of plans.plans) p.monthlyRequests = 1_000_000_000;
  writeFileSync(join(dir, 'plans.json'), JSON.stringify(plans));
  mkdirSync(join(dir, 'rules'));
  writeFileSync(join(dir, 'rules', 'quotes.yaml'), readFileSync(new URL('ratelimit/quotes.yaml', root), 'utf8').replace(/requests_per_unit: \d+/g, 'requests_per_unit: 1000000000'));
  const settings = loadSettings({ MARKET_SOURCE: 'simulated', QUOTES_DATA_DIR: dir, QUOTES_PLANS_FILE: join(dir, 'plans.json'), QUOTES_LOG_LEVEL: level, RATELIMIT_ENABLED: String(rateLimit), RATELIMIT_RULES_DIR: join(dir, 'rules') });
  // The service's default destination (synchronous sonic-boom), to /dev/null.
  const logging = createLogging(level, defaultLogDestination('/dev/null'));
  const deps = createDeps(settings, logging);
  await deps.store.migrate();
  const { app, services, fastPath } = await composeApp(settings, deps);
  const { token } = await services.accounts.createToken('bench', 'pro');
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = app.server.address().port;
  const url = '/api/v2/crypto?coin=BTC,ETH,SOL';
  await (await fetch(`http://127.0.0.1:${port}${url}`, { headers: { authorization: `Bearer ${token}` } })).text();
  const fast = fastPath;
  const req = { method: 'GET', url, headers: { host: `127.0.0.1:${port}`, authorization: `Bearer ${token}` }, socket: { remoteAddress: '127.0.0.1', encrypted: false } };
  const res = { writeHead: () => res, end: () => undefined, headersSent: false, req, statusCode: 200 };
  const rounds = [];
  for (let round = 0; round < 5; round++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < N; i++) {
      if (!fast.handle(req, res)) throw new Error('the pre-router did not take the request');
      // About as many requests per event-loop turn as under load (access lines are written per turn).
      if ((i & 31) === 0) await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => setImmediate(r));
    const c = process.cpuUsage(c0);
    rounds.push((c.user + c.system) / N);
  }
  await app.close();
  rmSync(dir, { recursive: true, force: true });
  return Math.min(...rounds.slice(1));
}

// LEVELS=info,warn and RATE_LIMITS=true,false pick configurations.
for (const level of (process.env.LEVELS ?? 'info,warn').split(',')) {
  for (const rateLimit of (process.env.RATE_LIMITS ?? 'true,false').split(',').map((x) => x === 'true')) {
    const us = await measure(level, rateLimit);
    console.log(`access log ${level.padEnd(4)}, burst limits ${rateLimit ? 'on ' : 'off'}: ${us.toFixed(2)} µs CPU per cached quote (best of 4 rounds of ${N})`);
  }
}
