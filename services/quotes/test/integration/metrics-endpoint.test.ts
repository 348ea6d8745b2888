// GET /metrics of the quotes service on its own listener (QUOTES_METRICS_PORT), through the real
// server as main.ts starts it: the families move as requests flow, the label sets stay bounded
// under a flood of distinct paths, methods and Hosts, and the listener holds its connection cap.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { request } from 'node:http';
import { spawnSync } from 'node:child_process';
import { freePort, waitFor } from '@rls/testkit';
import pino from 'pino';
import { startServer, type RunningServer } from '../../src/main.js';
import { loadSettings } from '../../src/settings.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a text exposition (enough of the format for these assertions). */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m !== null, `unparsable line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

const sum = (samples: Sample[], name: string, where: Record<string, string> = {}): number =>
  samples.filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);

function rawGet(port: number, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('quotes /metrics', () => {
  let server: RunningServer;
  let apiPort: number;
  let metricsPort: number;
  let token: string;
  const scrape = async (): Promise<Sample[]> => {
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    return parse(await res.text());
  };

  before(async () => {
    metricsPort = await freePort();
    const settings = loadSettings({}, {
      QUOTES_HOST: '127.0.0.1',
      QUOTES_PORT: '0',
      DATABASE_URL: 'memory:',
      MARKET_SOURCE: 'simulated',
      FX_SOURCE: 'simulated',
      QUOTES_METRICS_PORT: String(metricsPort),
      QUOTES_METRICS_MAX_CONNECTIONS: '4',
      QUOTES_LOG_LEVEL: 'warn',
      RATELIMIT_ENABLED: 'true',
    });
    server = await startServer(settings, { logger: pino({ level: 'silent' }), access: { write: () => {}, bindings: '' } });
    apiPort = Number(new URL(server.url).port);
    token = (await server.services.accounts.createToken('metrics', 'pro')).token;
  });
  after(async () => {
    await server?.stop();
  });

  test('is on its own port, not on the API port', async () => {
    assert.equal(server.metricsUrl, `http://127.0.0.1:${metricsPort}/metrics`);
    assert.equal(await rawGet(apiPort, '/metrics'), 404);
    assert.equal(await rawGet(metricsPort, '/'), 404);
    assert.equal(await rawGet(metricsPort, '/metrics', {}, 'POST'), 405);
  });

  test('the families move as requests flow', async () => {
    const before = await scrape();
    for (const name of ['process_cpu_seconds_total', 'nodejs_eventloop_lag_seconds', 'quotes_ingest_leader', 'quotes_market_snapshot_version', 'quotes_streams_open', 'quotes_history_queued', 'quotes_cache_bytes']) {
      assert.ok(before.some((s) => s.name === name), `${name} missing`);
    }
    assert.equal(sum(before, 'quotes_store_info', { kind: 'memory' }), 1);
    assert.equal(sum(before, 'quotes_ingest_leader'), 1);
    assert.equal(sum(before, 'quotes_ratelimit_enabled', { decider: 'embedded' }), 1);

    const auth = { authorization: `Bearer ${token}` };
    // The first request goes through fastify's route; the next ones through the cached-quote path.
    for (let i = 0; i < 5; i++) assert.equal(await rawGet(apiPort, '/api/v2/crypto?coin=BTC', auth), 200);
    assert.equal(await rawGet(apiPort, '/api/v2/crypto?coin=BTC'), 401);
    assert.equal(await rawGet(apiPort, '/api/v3/coins/bitcoin', auth), 200);
    assert.equal(await rawGet(apiPort, '/health'), 200);

    const now = await scrape();
    const delta = (name: string, where: Record<string, string> = {}): number => sum(now, name, where) - sum(before, name, where);
    assert.equal(delta('quotes_http_requests_total', { route: '/api/v2/crypto', method: 'GET', status_class: '2xx' }), 5);
    assert.equal(delta('quotes_http_requests_total', { route: '/api/v2/crypto', status_class: '4xx' }), 1);
    assert.equal(delta('quotes_http_requests_total', { route: '/api/v3/coins/:id', status_class: '2xx' }), 1);
    assert.equal(delta('quotes_http_requests_total', { route: '/health' }), 1);
    assert.ok(delta('quotes_http_request_duration_seconds_count', { route: '/api/v3/coins/:id' }) === 1);
    assert.ok(delta('quotes_limiter_decisions_total', { limiter: 'burst', decision: 'admitted' }) >= 6);
    assert.ok(delta('quotes_cache_hits_total', { cache: 'quotes' }) >= 4, 'quote cache hits');
    assert.ok(delta('quotes_cache_misses_total', { cache: 'quotes' }) >= 1, 'quote cache misses');
    assert.ok(sum(now, 'quotes_cache_bytes', { cache: 'quotes' }) > 0);
    assert.ok(sum(now, 'quotes_market_snapshot_version') >= 1);
    assert.ok(now.some((s) => s.name === 'quotes_market_refresh_age_seconds' && s.labels.source === 'tickers'));
  });

  test('promtool check metrics accepts the exposition', async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
    if (r.error) assert.fail(`promtool could not run (${r.error.message}); install Debian's prometheus package (.ci/run does)`);
    // prom-client's default collectors name three gauges `nodejs_active_*_total` (a lint finding,
    // not an error: Prometheus scrapes them); every metric of the service's own passes.
    const findings = `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.trim() !== '');
    const foreign = /^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/;
    assert.deepEqual(findings.filter((l) => !foreign.test(l)), [], 'promtool check metrics findings');
  });

  test('an open stream shows in the stream families', async () => {
    const before = await scrape();
    const ac = new AbortController();
    const res = await fetch(`http://127.0.0.1:${apiPort}/api/v2/crypto/stream?coin=BTC`, { headers: { authorization: `Bearer ${token}` }, signal: ac.signal });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    try {
      // The first event: the current quote.
      let text = '';
      while (!text.includes('event: quote')) text += Buffer.from((await reader.read()).value ?? []).toString();
      const open = await scrape();
      assert.equal(sum(open, 'quotes_streams_open'), 1);
      assert.ok(sum(open, 'quotes_stream_events_sent_total') > sum(before, 'quotes_stream_events_sent_total'), 'events counted');
    } finally {
      ac.abort();
    }
    await waitFor(async () => sum(await scrape(), 'quotes_streams_closed_total', { reason: 'client' }) === sum(before, 'quotes_streams_closed_total', { reason: 'client' }) + 1, { what: 'the stream counted as closed', timeoutMs: 5000, intervalMs: 20 });
    assert.equal(sum(await scrape(), 'quotes_streams_open'), 0);
  });

  test('1,000 distinct paths, methods and Hosts add no label values', async () => {
    const labelSets = (samples: Sample[]): Set<string> => new Set(samples.filter((s) => s.name.startsWith('quotes_http_')).map((s) => `${s.name}${JSON.stringify(s.labels)}`));
    // One of each kind first, so the label values the flood can reach exist already.
    await rawGet(apiPort, '/warm-up', { host: 'warm.example' });
    await rawGet(apiPort, '/warm-up', {}, 'PROPFIND');
    await rawGet(apiPort, '/api/v3/coins/no-such-coin');
    const before = labelSets(await scrape());
    for (let i = 0; i < 1000; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, j) => {
          const n = i + j;
          const r = Math.random().toString(36).slice(2);
          return rawGet(apiPort, n % 3 === 0 ? `/api/v3/coins/${r}?token=${r}` : `/${r}/${n}`, { host: `${r}.example` }, n % 7 === 0 ? 'PROPFIND' : 'GET');
        }),
      );
    }
    const now = await scrape();
    assert.deepEqual([...labelSets(now)].sort(), [...before].sort());
    assert.ok(sum(now, 'quotes_http_requests_total', { route: 'unmatched' }) >= 600);
    const text = JSON.stringify(now.filter((s) => s.name.startsWith('quotes_http_')).map((s) => s.labels));
    assert.doesNotMatch(text, /\.example|token|[0-9a-z]{10,}/);
  });

  test('a client that sends nothing is cut off by the header timeout', async () => {
    const s = connect(metricsPort, '127.0.0.1');
    s.on('error', () => undefined);
    s.write('GET /metrics HTTP/1.1\r\nHost: x\r\n');
    const t0 = performance.now();
    let answer = '';
    s.on('data', (d: Buffer) => (answer += d.toString()));
    await new Promise<void>((resolve) => s.on('close', () => resolve()));
    const ms = performance.now() - t0;
    // Node answers 408 at the header timeout (5 s, checked every second).
    assert.match(answer, /^HTTP\/1\.1 408/);
    assert.ok(ms >= 4000 && ms < 8000, `closed after ${Math.round(ms)} ms`);
  });

  test('connections beyond QUOTES_METRICS_MAX_CONNECTIONS are closed, and scrapes work again once they go', async () => {
    const sockets: Socket[] = [];
    const closed = new Set<Socket>();
    for (let i = 0; i < 40; i++) {
      const s = connect(metricsPort, '127.0.0.1');
      s.on('error', () => undefined);
      s.on('close', () => closed.add(s));
      sockets.push(s);
    }
    try {
      // The cap (4) holds: every other connection is closed by the server at once.
      await waitFor(() => closed.size >= 36, { what: 'connections past the cap closed', timeoutMs: 5000, intervalMs: 10 });
      assert.ok(sockets.length - closed.size <= 4, `at most the cap stays open (${sockets.length - closed.size})`);
    } finally {
      for (const s of sockets) s.destroy();
    }
    await waitFor(async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.status).catch(() => 0)) === 200, { what: 'scrapes again', timeoutMs: 5000, intervalMs: 20 });
  });

});
