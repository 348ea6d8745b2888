import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { freePort, spawnManaged, tempDir, waitFor, type Managed } from '@rls/testkit';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
/** What `npm run quotes` runs (checked below against the root package.json). */
const BIN = fileURLToPath(new URL('../../bin/quotes.js', import.meta.url));
const BOUND = { timeoutMs: 60_000 };

/** Status, headers and the first bytes of a GET, without waiting for an endless body (the stream). */
function peek(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      let body = '';
      const done = (): void => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      };
      res.on('data', (d: Buffer) => {
        body += d.toString();
        if (body.length > 0 && String(res.headers['content-type']).startsWith('text/event-stream') && body.includes('event: quote')) done();
      });
      res.on('end', done);
    });
    req.setTimeout(20_000, () => req.destroy(new Error(`${url}: no answer in 20 s`)));
    req.on('error', reject);
    req.end();
  });
}

describe('the quick start, as a newcomer runs it (npm run quotes)', () => {
  const dir = tempDir('endpoints-quickstart-');
  const running: Managed[] = [];
  after(async () => {
    for (const p of running) await p.stop();
    dir.cleanup();
  });

  /** Starts `quotes quickstart` on a free port and a fresh data directory; resolves with its banner. */
  const start = async (): Promise<{ proc: Managed; banner: string }> => {
    const port = await freePort();
    // Nothing but the port and the data directory set: every other setting is the quick start's default.
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, QUOTES_PORT: String(port), QUOTES_DATA_DIR: dir.path, QUOTES_METRICS_PORT: String(await freePort()) };
    const proc = spawnManaged(process.execPath, [BIN, 'quickstart'], { cwd: ROOT, env });
    running.push(proc);
    await waitFor(() => proc.output().includes('Stop: Ctrl+C'), { what: `quick start banner; output so far:\n${proc.output()}`, ...BOUND });
    return { proc, banner: proc.output() };
  };

  test('npm run quotes is this command', () => {
    const pkg = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { scripts: Record<string, string> };
    assert.equal(pkg.scripts.quotes, 'node services/quotes/bin/quotes.js quickstart');
  });

  test('the banner names every page and API, each answers; it binds loopback; GET / leads to the market page', async () => {
    const { banner } = await start();
    const lines = banner.split('\n');
    const urlOf = (label: string): string => {
      const line = lines.find((l) => l.trimStart().startsWith(label));
      const url = line === undefined ? undefined : /(http:\/\/\S+)/.exec(line)?.[1];
      assert.ok(url !== undefined, `the banner has a ${label} URL:\n${banner}`);
      return url;
    };
    const listening = /listening on (http:\/\/\S+)/.exec(banner)?.[1];
    assert.ok(listening !== undefined);
    assert.match(listening, /^http:\/\/127\.0\.0\.1:\d+$/, 'the quick start listens on loopback only (it prints a pro token)');
    assert.match(banner, /SIMULATED market data/);
    const token = /shown once: (qt_\S+)/.exec(banner)?.[1];
    assert.ok(token !== undefined);
    const urls = ['Market page', 'Dashboard', 'API docs', 'brapi API', 'brapi currencies', 'CoinGecko API', 'Live stream', 'Health', 'Metrics'].map(urlOf);
    // Every URL the banner prints, wherever it is, answers.
    const all = [...new Set([...banner.matchAll(/http:\/\/127\.0\.0\.1:\d+[^\s)"]*/g)].map((m) => m[0]))];
    assert.ok(all.length >= urls.length, `${all.length} URLs in the banner`);
    for (const url of all) {
      // The curl line sends the token as a header; the other URLs carry it or need none.
      const res = await peek(url.replace(/#.*$/, ''), { authorization: `Bearer ${token}` });
      if (url === urlOf('Metrics')) {
        assert.equal(res.status, 200, `${url}: the metrics answer`);
        assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
        assert.match(res.body, /^# HELP /m);
        continue;
      }
      if (url === listening) {
        assert.equal(res.status, 302, `${url}: GET / redirects`);
        assert.equal(res.headers.location, '/dashboard/#/market', 'to the market page (public in the quick start)');
        continue;
      }
      assert.equal(res.status, 200, `${url} answers 200 (got ${res.status}: ${res.body.slice(0, 200)})`);
      assert.equal(res.headers['x-data-source'], 'simulated', url);
    }
    const stream = await peek(urlOf('Live stream'));
    assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
    assert.match(stream.body, /event: quote/);
    const docs = await peek(urlOf('API docs'));
    assert.match(String(docs.headers['content-type']), /^text\/html/);
    const cg = await peek(`${urlOf('CoinGecko API')}/ping`);
    assert.equal(cg.status, 200);
    // The market page's data is public in the quick start: no sign-in, no token.
    const board = await peek(`${listening}/dashboard/api/public/market?currency=USD`);
    assert.equal(board.status, 200);
    const parsed = JSON.parse(board.body) as { global: { totalMarketCap: number; btcDominance: number }; coins: unknown[] };
    assert.ok(parsed.global.totalMarketCap > 0 && parsed.global.btcDominance > 0 && parsed.coins.length > 50);
    assert.equal((await peek(`${listening}/favicon.svg`)).status, 200);
    // Piped (not a terminal), the log lines stay JSON.
    assert.match(banner, /^\{"level":\d+,"time":\d+/m);
  });

  test('a visitor address is bounded by the public_ip rule: past 120 requests a minute, 429', async () => {
    const proc = running.at(-1)!;
    const url = /listening on (http:\/\/\S+)/.exec(proc.output())?.[1];
    assert.ok(url !== undefined);
    const statuses: number[] = [];
    for (let i = 0; i < 130; i++) statuses.push((await peek(`${url}/dashboard/api/public/market?currency=USD`)).status);
    const refused = statuses.filter((s) => s === 429).length;
    assert.ok(statuses.slice(0, 100).every((s) => s === 200), 'well within the limit: answered');
    assert.ok(refused >= 10, `${refused} of 130 refused: the rule holds one address to 120 a minute (the page's own polling is 12)`);
    const r = await peek(`${url}/dashboard/api/public/market?currency=USD`);
    assert.equal(r.status, 429);
    assert.ok(Number(r.headers['retry-after']) > 0);
  });

  test('restarting does not pile up live pro tokens: the previous quick-start token is revoked', async () => {
    const first = running.at(-1) ?? (await start()).proc;
    const firstToken = /shown once: (qt_\S+)/.exec(first.output())?.[1];
    const firstUrl = /listening on (http:\/\/\S+)/.exec(first.output())?.[1];
    assert.ok(firstToken !== undefined && firstUrl !== undefined);
    assert.equal((await peek(`${firstUrl}/api/v2/crypto?coin=BTC&token=${firstToken}`)).status, 200);
    await first.stop();
    const { banner } = await start();
    assert.match(banner, /the previous quick-start token was revoked/);
    const url = /listening on (http:\/\/\S+)/.exec(banner)?.[1];
    const token = /shown once: (qt_\S+)/.exec(banner)?.[1];
    assert.notEqual(token, firstToken);
    assert.equal((await peek(`${url}/api/v2/crypto?coin=BTC&token=${firstToken}`)).status, 401, 'the previous token no longer works');
    assert.equal((await peek(`${url}/api/v2/crypto?coin=BTC&token=${token}`)).status, 200);
  });
});
