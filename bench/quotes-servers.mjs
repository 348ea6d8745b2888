// Starts, in this process, either the quotes service (SQLite in a temp dir, simulated market,
// a pro token with a huge quota) or a plain fastify server that answers every GET with fixed
// bytes from memory: `plain BODY_FILE` the body alone, `plain BODY_FILE HEADERS_FILE` also the
// service's header lines (one `name: value` a line), so the response bytes are the same.
// Prints one JSON line {port, token?} when ready. Used by bench/quotes.sh.
// The quotes server runs at the defaults a user runs: access logging at QUOTES_LOG_LEVEL (default
// info) into BENCH_LOG_FILE (the service's default destination, synchronous), burst limits on
// (the embedded engine, RATELIMIT_ENABLED) with the shipped rules lifted so it measures serving, not
// refusing. QUOTES_METRICS_PORT=<port> adds the Prometheus request hook (off by default here).
// Run from source: node --conditions=source --import tsx bench/quotes-servers.mjs ...
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import pino from 'pino';
import { composeApp, createDeps } from '../services/quotes/src/compose.ts';
import { createLogging, defaultLogDestination } from '../services/quotes/src/logger.ts';
import { loadSettings } from '../services/quotes/src/settings.ts';

const mode = process.argv[2];
if (mode === 'plain') {
  const body = readFileSync(process.argv[3] ?? '', 'utf8');
  const skip = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive']);
  const headers = process.argv[4] === undefined ? [] : readFileSync(process.argv[4], 'utf8').split(/\r?\n/).map((l) => l.match(/^([^:\s]+):\s*(.*)$/)).filter((m) => m !== null && !skip.has(m[1].toLowerCase())).map((m) => [m[1].toLowerCase(), m[2]]);
  const app = Fastify({ logger: false });
  app.get('/*', (_req, reply) => {
    for (const [k, v] of headers) reply.header(k, v);
    void reply.type('application/json; charset=utf-8').send(body);
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  console.log(JSON.stringify({ port: typeof addr === 'object' && addr !== null ? addr.port : 0 }));
} else {
  const dir = mkdtempSync(join(tmpdir(), 'quotes-bench-'));
  const plans = JSON.parse(readFileSync(new URL('../services/quotes/plans.json', import.meta.url), 'utf8'));
  for (const p of plans.plans) p.monthlyRequests = 1_000_000_000;
  writeFileSync(join(dir, 'plans.json'), JSON.stringify(plans));
  // The shipped rules with every requests_per_unit lifted: the limiter runs, nothing is refused.
  const rules = join(dir, 'rules');
  mkdirSync(rules);
  const shipped = readFileSync(new URL('../services/quotes/ratelimit/quotes.yaml', import.meta.url), 'utf8');
  writeFileSync(join(rules, 'quotes.yaml'), shipped.replace(/requests_per_unit: \d+/g, 'requests_per_unit: 1000000000'));
  const level = process.env.QUOTES_LOG_LEVEL ?? 'info';
  const settings = loadSettings({ MARKET_SOURCE: 'simulated', QUOTES_DATA_DIR: dir, QUOTES_PLANS_FILE: join(dir, 'plans.json'), QUOTES_LOG_LEVEL: level, QUOTES_HOST: '127.0.0.1', QUOTES_METRICS_PORT: process.env.QUOTES_METRICS_PORT ?? '0', QUOTES_PORT: '0', RATELIMIT_ENABLED: process.env.RATELIMIT_ENABLED ?? 'true', RATELIMIT_RULES_DIR: rules, QUOTES_FAST_PATH: process.env.QUOTES_FAST_PATH ?? 'true', QUOTES_COMPRESSION_MIN_BYTES: process.env.QUOTES_COMPRESSION_MIN_BYTES ?? '4096' });
  // The service's own default destination (synchronous, as on stdout), to a file instead;
  // BENCH_LOG_SYNC=false: pino's asynchronous sonic-boom (BENCH_LOG_MINLEN bytes buffered).
  const logFile = process.env.BENCH_LOG_FILE ?? '/dev/null';
  const logging = createLogging(level, process.env.BENCH_LOG_SYNC === 'false' ? pino.destination({ dest: logFile, sync: false, minLength: Number(process.env.BENCH_LOG_MINLEN ?? 0) }) : defaultLogDestination(logFile));
  const deps = createDeps(settings, logging);
  await deps.store.migrate();
  const { app, services, fastPath } = await composeApp(settings, deps);
  // QUOTES_METRICS_PORT set: the request hook of the metrics as main.ts installs it (the listener itself is not started).
  deps.metrics?.instrument(app, { services: { ...services, fastPath }, clock: deps.clock, ingesting: () => true });
  const { token } = await services.accounts.createToken('bench', 'pro');
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  console.log(JSON.stringify({ port: typeof addr === 'object' && addr !== null ? addr.port : 0, token }));
}
process.once('SIGINT', () => process.exit(0));
