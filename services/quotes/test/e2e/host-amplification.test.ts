import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent } from 'node:http';
import { connect } from 'node:net';
import { tempDir } from '@rls/testkit';
import { createTokens, percentile, rawGet, startQuotesProcess, type QuotesProcess } from './quotes-process.js';

// Issue 23, findings 8 and 9, against the real process: the Host header is the attacker's, so no
// server state may grow with the number of distinct Host values. One pro token opens a thousand
// short live-price streams of 20 coins, each with its own Host (~20,000 stream pairs before the
// fix, all re-quoted at every market refresh: an event-loop stall per refresh), then sends
// /api/v2/crypto and /api/v3 requests with thousands of distinct and over-long Host values
// (each embedded once per coin in a cached body before the fix: hundreds of MB). A well-behaved
// client's latency across several refreshes and the process RSS are the bounds.

const STREAMS = 1000;
const PROBE_MS = 6000;
const PROBE_EVERY_MS = 25;
/** A well-behaved client's worst latency across several refreshes after the attack. */
const PROBE_MAX_MS = 300;
const RSS_GROWTH_MB = 120;

/** Opens a stream with `host`, waits for its first quote event, and hangs up. */
function shortStream(port: number, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let text = '';
    s.setEncoding('latin1');
    s.on('connect', () => s.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAccept: text/event-stream\r\n\r\n`));
    s.on('data', (d: string) => {
      text += d;
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0);
      if (status !== 0 && (status !== 200 || text.includes('event: quote'))) {
        s.destroy();
        resolve(status);
      }
    });
    s.on('error', reject);
    s.setTimeout(30_000, () => s.destroy(new Error('stream did not answer')));
  });
}

describe('attacker-chosen Host values cost no memory or work per refresh (real process)', () => {
  const dir = tempDir('quotes-host-');
  let q: QuotesProcess;
  let tokens: Record<string, string>;
  let coins: string[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });

  before(async () => {
    tokens = await createTokens(dir.path, { attacker: 'pro', victim: 'startup' });
    // Burst limits off: the attack stays within the pro plan's anyway, only slower.
    q = await startQuotesProcess({ QUOTES_REFRESH_SECONDS: '1', RATELIMIT_ENABLED: 'false' }, dir.path);
    const available = await rawGet(q.port, '/api/v2/crypto/available', { host: '127.0.0.1', authorization: `Bearer ${tokens.victim}` });
    coins = (JSON.parse(available.body) as { coins: string[] }).coins.filter((c) => c !== 'USDT').slice(0, 20);
    assert.equal(coins.length, 20);
  });
  after(async () => {
    agent.destroy();
    await q?.stop();
    dir.cleanup();
  });

  /** A well-behaved client's cached quote every PROBE_EVERY_MS for PROBE_MS: latencies (ms). */
  async function probe(): Promise<number[]> {
    const out: number[] = [];
    const end = performance.now() + PROBE_MS;
    while (performance.now() < end) {
      const r = await rawGet(q.port, '/api/v2/crypto?coin=BTC,ETH&currency=USD', { host: '127.0.0.1', authorization: `Bearer ${tokens.victim}` }, agent);
      assert.equal(r.status, 200, r.body);
      out.push(r.ms);
      await new Promise((res) => setTimeout(res, PROBE_EVERY_MS));
    }
    return out;
  }

  test(`${STREAMS} short streams with distinct Hosts: no stall at the refreshes after, RSS bounded`, async () => {
    const rss0 = q.rssMb();
    const path = `/api/v2/crypto/stream?coin=${coins.join(',')}&currency=BRL&token=${tokens.attacker}`;
    let opened = 0;
    let next = 0;
    // Four at a time: the token's stream cap is five, and a hang-up frees its slot only once the
    // server has seen it (a 429 is retried).
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < STREAMS) {
          const i = next++;
          let status = 0;
          for (let tries = 0; tries < 50 && status !== 200; tries++) {
            status = await shortStream(q.port, path, `h${i}.attacker.example`);
            if (status === 429) await new Promise((res) => setTimeout(res, 20));
          }
          assert.equal(status, 200, `stream ${i} opened`);
          opened++;
        }
      }),
    );
    assert.equal(opened, STREAMS);
    const lat = await probe();
    const rss = q.rssMb() - rss0;
    const worst = Math.max(...lat);
    console.log(`# streams: ${lat.length} probes, p50 ${percentile(lat, 50).toFixed(1)} ms, p99 ${percentile(lat, 99).toFixed(1)} ms, max ${worst.toFixed(1)} ms; RSS +${rss.toFixed(0)} MB`);
    assert.ok(worst < PROBE_MAX_MS, `a well-behaved client's worst latency across ${PROBE_MS / 1000} refreshes was ${worst.toFixed(0)} ms (bound ${PROBE_MAX_MS} ms)`);
    assert.ok(rss < RSS_GROWTH_MB, `RSS grew ${rss.toFixed(0)} MB (bound ${RSS_GROWTH_MB} MB)`);
  });

  test('/api/v2/crypto and /api/v3 with thousands of distinct Hosts: one cached body each, RSS bounded; over-long and malformed Hosts refused', async () => {
    const rss0 = q.rssMb();
    const auth = { authorization: `Bearer ${tokens.attacker}` };
    const quote = `/api/v2/crypto?coin=${coins.join(',')}&currency=USD`;
    // Over-long Host values (8 KB, under the header limit): refused before anything is built.
    const long = await rawGet(q.port, quote, { ...auth, host: `${'a'.repeat(8000)}.example` });
    assert.equal(long.status, 400, long.body.slice(0, 200));
    assert.match((JSON.parse(long.body) as { message: string }).message, /Host/);
    for (const host of ['bad host.example', 'a"b.example', 'x.example:99999', 'x.example:80:80', '[::1', 'a..b']) {
      const r = await rawGet(q.port, quote, { ...auth, host });
      assert.equal(r.status, 400, `Host ${JSON.stringify(host)}: ${r.body.slice(0, 200)}`);
    }
    // A valid Host is reflected in the icon URLs as before.
    const ok = await rawGet(q.port, quote, { ...auth, host: 'Quotes.Example.com:8443' });
    assert.equal(ok.status, 200, ok.body.slice(0, 200));
    assert.equal((JSON.parse(ok.body) as { coins: { coinImageUrl: string }[] }).coins[0]!.coinImageUrl, `http://Quotes.Example.com:8443/icons/${coins[0]!.toLowerCase()}.svg`);

    const agent2 = new Agent({ keepAlive: true, maxSockets: 8 });
    try {
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < 2000) {
            const i = next++;
            const label = `${String(i).padStart(4, '0')}${'x'.repeat(55)}`;
            // Distinct valid Hosts of ~250 characters, then 8 KB ones.
            const host = `${label}.${label}.${label}.${label}.example`;
            const r = await rawGet(q.port, quote, { ...auth, host }, agent2);
            assert.equal(r.status, 200, r.body.slice(0, 200));
            const body = JSON.parse(r.body) as { coins: { coinImageUrl: string }[] };
            assert.ok(body.coins.every((c) => c.coinImageUrl.startsWith(`http://${host}/icons/`)), 'each answer carries its own origin');
            const big = await rawGet(q.port, quote, { ...auth, host: `${label}${'y'.repeat(8000)}.example` }, agent2);
            assert.equal(big.status, 400);
            const cg = await rawGet(q.port, `/api/v3/coins/markets?vs_currency=usd&per_page=100`, { 'x-cg-pro-api-key': tokens.attacker!, host }, agent2);
            assert.equal(cg.status, 200, cg.body.slice(0, 200));
            assert.ok(cg.body.includes(`"http://${host}/icons/`), 'CoinGecko images carry the origin too');
          }
        }),
      );
    } finally {
      agent2.destroy();
    }
    const rss = q.rssMb() - rss0;
    console.log(`# caches: RSS +${rss.toFixed(0)} MB after 2,000 distinct valid Hosts (quotes and CoinGecko markets) and 2,000 8 KB ones`);
    assert.ok(rss < RSS_GROWTH_MB, `RSS grew ${rss.toFixed(0)} MB (bound ${RSS_GROWTH_MB} MB)`);
  });
});
