// Starts, in this process, either the quotes service (SQLite in a temp dir, simulated market,
// a pro token with a huge quota) or a plain fastify server that answers every GET with fixed
// bytes from memory: `plain BODY_FILE` the body alone, `plain BODY_FILE HEADERS_FILE` also the
// service's header lines (one `name: value` a line), so the response bytes are the same.
// Prints one JSON line {port, token?} when ready. Used by bench/quotes.sh.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { buildApp } from '../services/quotes/dist/src/app.js';
import { createDeps } from '../services/quotes/dist/src/compose.js';
import { createLogger } from '../services/quotes/dist/src/logger.js';
import { loadSettings } from '../services/quotes/dist/src/settings.js';

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
  const settings = loadSettings({ MARKET_SOURCE: 'simulated', QUOTES_DATA_DIR: dir, QUOTES_PLANS_FILE: join(dir, 'plans.json'), QUOTES_LOG_LEVEL: 'warn', QUOTES_HOST: '127.0.0.1', QUOTES_PORT: '0', RATELIMIT_ENABLED: process.env.RATELIMIT_ENABLED ?? 'false' });
  const logger = createLogger('warn');
  const deps = createDeps(settings, logger);
  await deps.store.migrate();
  const app = await buildApp(settings, deps);
  const { token } = await app.quotes.accounts.createToken('bench', 'pro');
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  console.log(JSON.stringify({ port: typeof addr === 'object' && addr !== null ? addr.port : 0, token }));
}
process.once('SIGINT', () => process.exit(0));
