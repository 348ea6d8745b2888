import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as turn } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { waitFor } from '@rls/testkit';
import type { MarketSource, Ticker } from '../../src/domain/market.js';
import { QUOTE_CURRENCIES } from '../../src/market/currencies.js';
import { makeTestApp, plansWith, type CryptoJson, type TestApp } from '../support/helpers.js';
import { portOf, SseClient } from '../support/sse-client.js';

/**
 * The simulated market with per-coin price factors the tests turn (a change only where they say):
 * each coin's first ticker is kept, since the simulated market itself moves at every refresh.
 */
function adjustable(factor: Map<string, number>, everything: { by: number }) {
  const first = new Map<string, Ticker>();
  return (m: MarketSource): MarketSource => ({
    kind: m.kind,
    listSymbols: () => m.listSymbols(),
    candles: (r) => m.candles(r),
    tickers: async (symbols) => {
      const t = await m.tickers(symbols);
      const coins = t.coins.map((x) => {
        const base = first.get(x.symbol) ?? x;
        first.set(x.symbol, base);
        // Its time advances by whole minutes only, so a record changes only where a test says.
        return { ...base, closeTime: Math.floor(x.closeTime / 60_000) * 60_000, lastPrice: base.lastPrice * (factor.get(x.symbol) ?? 1) * everything.by };
      });
      return { ...t, coins };
    },
  });
}

const BOUND = { timeoutMs: 10_000 };

/** Live heap after a full collection (garbage would hide or fake growth). */
function liveHeap(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed;
}

describe('GET /api/v2/crypto/stream (Server-Sent Events)', () => {
  let t: TestApp;
  let port: number;
  const factor = new Map<string, number>();
  const clients: SseClient[] = [];
  const open = async (path: string, headers: Record<string, string> = {}): Promise<SseClient> => {
    const c = await SseClient.open(port, path, headers);
    clients.push(c);
    return c;
  };
  const streamOf = (token: string, coins: string, extra = ''): string => `/api/v2/crypto/stream?coin=${coins}&currency=BRL&token=${token}${extra}`;
  const rest = async (token: string, coins: string): Promise<CryptoJson> =>
    (await t.app.inject({ url: `/api/v2/crypto?coin=${coins}&currency=BRL`, headers: { host: '127.0.0.1', authorization: `Bearer ${token}` } })).json<CryptoJson>();
  const closeAll = async (): Promise<void> => {
    for (const c of clients.splice(0)) c.close();
    await waitFor(() => t.services.streams.stats().open === 0, { what: 'streams closed', ...BOUND });
  };
  const usageOf = async (tokenId: string): Promise<number> => {
    await t.services.flushUsage();
    return (await t.services.accounts.usage()).find((r) => r.tokenId === tokenId)?.count ?? 0;
  };

  before(async () => {
    t = await makeTestApp({
      plans: plansWith({ startup: { monthlyRequests: 3 } }),
      settings: { QUOTES_STREAM_MAX_PER_TOKEN: '2', QUOTES_STREAM_HEARTBEAT: '5' },
      wrapMarket: adjustable(factor, { by: 1 }),
    });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = portOf(t.app.server.address());
  });
  after(async () => {
    for (const c of clients) c.close();
    await t.close();
  });

  test('auth and parameter failures answer in brapi\'s error shape before any stream opens', async () => {
    const get = async (path: string) => {
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      const body: unknown = await res.json();
      return { status: res.status, body };
    };
    assert.deepEqual(await get('/api/v2/crypto/stream?coin=BTC'), { status: 401, body: { error: true, message: 'Your token is invalid, please check your token' } });
    assert.deepEqual(await get('/api/v2/crypto/stream?coin=BTC&token=qt_nope'), { status: 401, body: { error: true, message: 'Your token is invalid, please check your token' } });
    assert.equal((await get(streamOf(t.tokens.free!, 'BTC'))).status, 403);
    assert.deepEqual(await get(`/api/v2/crypto/stream?token=${t.tokens.pro}`), { status: 417, body: { error: true, message: 'Missing required parameter: `coin`' } });
    assert.deepEqual(await get(streamOf(t.tokens.pro!, 'BTC,NOPE')), { status: 400, body: { error: true, message: 'Coin not found: NOPE' } });
    const bearer = await SseClient.open(port, '/api/v2/crypto/stream?coin=BTC', { authorization: `Bearer ${t.tokens.pro}` });
    clients.push(bearer);
    assert.equal(bearer.status, 200, 'Authorization: Bearer works as well as ?token=');
    assert.equal(t.services.streams.stats().open, 1, 'refused requests hold no stream');
    await closeAll();
  });

  test('the first event is the current state: the same records as /api/v2/crypto', async () => {
    const c = await open(streamOf(t.tokens.pro!, 'BTC,ETH'));
    assert.equal(c.status, 200);
    assert.match(c.headers['content-type'] ?? '', /^text\/event-stream/);
    assert.equal(c.headers['cache-control'], 'no-store');
    assert.equal(c.headers['x-data-source'], 'simulated');
    assert.ok(c.headers['x-quota-remaining'] !== undefined, 'the opening request shows the quota');
    await waitFor(() => c.quoteEvents().length >= 1, { what: 'first event', ...BOUND });
    assert.equal(c.retry, 3000);
    const first = c.quoteEvents()[0]!;
    assert.match(first.id ?? '', /^[\w-]+\.\d+$/);
    assert.deepEqual(first.coins, (await rest(t.tokens.pro!, 'BTC,ETH')).coins);
    await closeAll();
  });

  test('a change reaches the stream at the next refresh; only the coins that changed are sent', async () => {
    const c = await open(streamOf(t.tokens.pro!, 'BTC,ETH,SOL'));
    await waitFor(() => c.quoteEvents().length >= 1, { what: 'first event', ...BOUND });
    factor.set('BTC', 1.01);
    await t.services.snapshots.refreshNow();
    await waitFor(() => c.quoteEvents().length >= 2, { what: 'update after a refresh', ...BOUND });
    const update = c.quoteEvents()[1]!;
    assert.deepEqual(update.coins.map((x) => x.coin), ['BTC']);
    assert.deepEqual(update.coins[0], (await rest(t.tokens.pro!, 'BTC')).coins[0]);
    assert.ok(Number(update.id?.split('.')[1]) > Number(c.quoteEvents()[0]!.id?.split('.')[1]), 'event ids follow the snapshot version');

    // Without anyone asking: time passing by one refresh interval (15 s) is enough, the stream
    // hub refreshes the on-demand market itself while streams are open.
    factor.set('ETH', 1.02);
    t.clock.advance(15_000);
    await waitFor(() => c.quoteEvents().length >= 3, { what: 'update after one refresh interval', ...BOUND });
    const eth = c.quoteEvents()[2]!.coins.find((x) => x.coin === 'ETH');
    assert.deepEqual(eth, (await rest(t.tokens.pro!, 'ETH')).coins[0]);
    await closeAll();
  });

  test('heartbeat comments every QUOTES_STREAM_HEARTBEAT (5 s here) of clock time', async () => {
    const c = await open(streamOf(t.tokens.pro!, 'BTC'));
    await waitFor(() => c.quoteEvents().length >= 1, { what: 'first event', ...BOUND });
    assert.equal(c.comments.length, 0);
    t.clock.advance(5_000);
    await waitFor(() => c.comments.some((x) => x.startsWith('heartbeat ')), { what: 'heartbeat', ...BOUND });
    await closeAll();
  });

  test('Last-Event-ID resumes: only what changed since, nothing when nothing did, everything for an unknown id', async () => {
    const c1 = await open(streamOf(t.tokens.pro!, 'BTC,ETH,SOL'));
    await waitFor(() => c1.quoteEvents().length >= 1, { what: 'first event', ...BOUND });
    const seen = c1.quoteEvents().at(-1)!.id!;
    await closeAll();
    const hub = t.services.streams;
    const before = hub.stats();
    assert.equal(before.activePairs, 0, 'nobody follows the pairs now');
    assert.ok(before.pairs >= 3, 'they are kept for the resume window');
    factor.set('SOL', 1.05);
    await t.services.snapshots.refreshNow();
    await turn();
    assert.equal(hub.stats().pairQuotes, before.pairQuotes, 'idle pairs cost nothing at a refresh');

    const c2 = await open(streamOf(t.tokens.pro!, 'BTC,ETH,SOL'), { 'Last-Event-ID': seen });
    await waitFor(() => c2.quoteEvents().length >= 1, { what: 'resumed event', ...BOUND });
    assert.deepEqual(c2.quoteEvents()[0]!.coins.map((x) => x.coin), ['SOL'], 'only SOL changed since the id');
    const latest = c2.quoteEvents()[0]!.id!;

    const c3 = await open(streamOf(t.tokens.pro!, 'BTC,ETH,SOL'), { 'Last-Event-ID': latest });
    // A heartbeat is a fence: anything sent on opening arrived before it.
    t.clock.advance(5_000);
    await waitFor(() => c3.comments.length >= 1, { what: 'heartbeat on the resumed stream', ...BOUND });
    assert.equal(c3.quoteEvents().length, 0, 'already current: nothing resent');
    await closeAll();

    const c4 = await open(streamOf(t.tokens.pro!, 'BTC,ETH,SOL'), { 'Last-Event-ID': 'another-run.1' });
    await waitFor(() => c4.quoteEvents().length >= 1, { what: 'full state', ...BOUND });
    assert.deepEqual(c4.quoteEvents()[0]!.coins.map((x) => x.coin).sort(), ['BTC', 'ETH', 'SOL']);
    await closeAll();
  });

  test('QUOTES_STREAM_MAX_PER_TOKEN (2 here): the next one is 429 in brapi\'s shape, other tokens unaffected', async () => {
    const a = await open(streamOf(t.tokens.pro!, 'BTC'));
    await open(streamOf(t.tokens.pro!, 'ETH'));
    assert.equal(a.status, 200);
    const usageBefore = await usageOf(t.tokenIds.pro!);
    const res = await fetch(`http://127.0.0.1:${port}${streamOf(t.tokens.pro!, 'SOL')}`);
    assert.equal(res.status, 429);
    assert.deepEqual(await res.json(), { error: true, message: 'Too many open streams for this token (limit 2); close one first' });
    assert.equal(await usageOf(t.tokenIds.pro!), usageBefore, 'a refused stream is not counted');
    const other = await open(streamOf(t.tokens.startup!, 'BTC'));
    assert.equal(other.status, 200, 'the limit is per token');
    a.close();
    await waitFor(() => t.services.streams.openFor(t.tokenIds.pro!) === 1, { what: 'slot released', ...BOUND });
    const again = await open(streamOf(t.tokens.pro!, 'SOL'));
    assert.equal(again.status, 200);
    await closeAll();
  });

  test('quota: one request at open and one per QUOTES_STREAM_CHARGE_INTERVAL; a refused charge ends the stream with an error event', async () => {
    const id = t.tokenIds.startup!;
    const start = await usageOf(id);
    assert.ok(start <= 1, `startup token used ${start} of its 3 requests so far`);
    const c = await open(streamOf(t.tokens.startup!, 'BTC'));
    await waitFor(() => c.quoteEvents().length >= 1, { what: 'first event', ...BOUND });
    assert.equal(await usageOf(id), start + 1, 'opening counts one request');
    for (let n = start + 2; n <= 3; n++) {
      t.clock.advance(60_000);
      await waitFor(async () => (await usageOf(id)) === n, { what: `charged for minute ${n - start - 1}`, ...BOUND });
    }
    t.clock.advance(60_000);
    await waitFor(() => c.events.some((e) => e.event === 'error') && c.ended, { what: 'stream ended by the quota', ...BOUND });
    const err = JSON.parse(c.events.find((e) => e.event === 'error')!.data) as Record<string, unknown>;
    assert.deepEqual(err, { error: true, message: 'You have reached the request limit of your plan. Please consider upgrading to a better plan', status: 402 });
    assert.equal(await usageOf(id), 3, 'the refused charge is not counted');
    const res = await fetch(`http://127.0.0.1:${port}${streamOf(t.tokens.startup!, 'BTC')}`);
    assert.equal(res.status, 402);
    await closeAll();
  });
});

describe('revocations and plan changes reach open streams (issue 23, finding 10)', () => {
  test('a revoked token\'s streams end within a tick and are no longer charged; a plan change ends them and the reconnection is checked under the new plan', async () => {
    const t = await makeTestApp({ settings: { QUOTES_STREAM_MAX_PER_TOKEN: '3' } });
    const clients: SseClient[] = [];
    try {
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      const port = portOf(t.app.server.address());
      const hub = t.services.streams;
      const accounts = t.services.accounts;
      const usage = async (id: string): Promise<number> => {
        await t.services.flushUsage();
        return (await accounts.usage()).find((r) => r.tokenId === id)?.count ?? 0;
      };
      const open = async (token: string, coins: string): Promise<SseClient> => {
        const c = await SseClient.open(port, `/api/v2/crypto/stream?coin=${coins}&token=${token}`);
        clients.push(c);
        assert.equal(c.status, 200, c.body);
        await waitFor(() => c.quoteEvents().length >= 1, { what: 'first event', ...BOUND });
        return c;
      };

      // Revocation: both streams of the token end; the other token's stream goes on.
      const victim = await accounts.createToken('to-revoke', 'pro');
      const [a, b] = [await open(victim.token, 'BTC'), await open(victim.token, 'ETH,SOL')];
      const bystander = await open(t.tokens.pro!, 'BTC');
      await waitFor(() => hub.stats().accessChecks >= 1, { what: 'the new streams confirmed', ...BOUND });
      const charged = await usage(victim.record.id);
      await accounts.revoke(victim.record.id);
      const revokedAt = performance.now();
      await waitFor(() => a.ended && b.ended, { what: 'the revoked token\'s streams ended', ...BOUND });
      const took = performance.now() - revokedAt;
      assert.ok(took < 2500, `ended ${took.toFixed(0)} ms after the revocation (a tick is 1 s)`);
      assert.equal(hub.stats().closed.revoked, 2);
      assert.ok(a.comments.some((x) => x.includes('revoked')), 'the stream says why it ended');
      assert.equal(bystander.ended, false, 'another token\'s stream is untouched');
      t.clock.advance(5 * 60_000);
      await waitFor(() => hub.stats().open === 1, { what: 'only the bystander open', ...BOUND });
      assert.equal(await usage(victim.record.id), charged, 'a revoked token is charged nothing more');
      const again = await fetch(`http://127.0.0.1:${port}/api/v2/crypto/stream?coin=BTC&token=${victim.token}`);
      assert.equal(again.status, 401, 'its reconnection is refused');

      // Plan change: a pro token streaming 12 coins moves to startup (10 coins a request).
      const mover = await accounts.createToken('to-downgrade', 'pro');
      const coins = ((await t.app.inject({ url: '/api/v2/crypto/available', headers: { authorization: `Bearer ${t.tokens.pro}` } })).json<{ coins: string[] }>()).coins.slice(0, 12).join(',');
      const wide = await open(mover.token, coins);
      await waitFor(() => hub.stats().accessChecks >= 3, { what: 'the new stream confirmed', ...BOUND });
      await accounts.setPlan(mover.record.id, 'startup');
      await waitFor(() => wide.ended, { what: 'the stream ended by the plan change', ...BOUND });
      assert.equal(hub.stats().closed['plan-changed'], 1);
      const narrowed = await fetch(`http://127.0.0.1:${port}/api/v2/crypto/stream?coin=${coins}&token=${mover.token}`);
      assert.equal(narrowed.status, 400, 'the new plan\'s coin limit applies to the reconnection');
      assert.deepEqual(await narrowed.json(), { error: true, message: 'Your plan allows up to 10 coins per request' });
      assert.equal(bystander.ended, false);
    } finally {
      for (const c of clients) c.close();
      await t.close();
    }
  });
});

describe('stream bounds', () => {
  test('a client that stops reading holds at most QUOTES_STREAM_BUFFER_BYTES plus one event; stalled, it is closed', async () => {
    const everything = { by: 1 };
    const t = await makeTestApp({ settings: { QUOTES_STREAM_BUFFER_BYTES: '4096', QUOTES_STREAM_STALL_TIMEOUT: '30' }, wrapMarket: adjustable(new Map(), everything) });
    try {
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      const port = portOf(t.app.server.address());
      const coins = ((await t.app.inject({ url: '/api/v2/crypto/available', headers: { authorization: `Bearer ${t.tokens.pro}` } })).json<{ coins: string[] }>()).coins.slice(0, 20);
      const c = await SseClient.open(port, `/api/v2/crypto/stream?coin=${coins.join(',')}&token=${t.tokens.pro}`);
      try {
        await waitFor(() => c.quoteEvents().length >= 1, { what: 'first event', ...BOUND });
        const eventBytes = Buffer.byteLength(c.events[0]!.data) + 64;
        c.pause();
        const hub = t.services.streams;
        const heapBefore = liveHeap();
        // Every refresh changes all 20 coins: each would be one ~eventBytes event for this client,
        // ~25 MB in all, far more than the kernel's socket buffers take.
        let rounds = 0;
        while (rounds < 2500) {
          everything.by = 1 + ++rounds * 1e-7;
          await t.services.snapshots.refreshNow();
          await turn();
        }
        await waitFor(() => hub.stats().coalesced > 200, { what: 'updates coalesced once the client fell behind', ...BOUND });
        const produced = rounds * eventBytes;
        const buffered = hub.bufferedBytes()[0] ?? 0;
        const heapGrowth = liveHeap() - heapBefore;
        console.log(`# slow consumer: ${rounds} refreshes, ~${(produced / 1e6).toFixed(1)} MB of events produced, ${buffered} B held for the client, ${hub.stats().coalesced} updates coalesced, heap ${(heapGrowth / 1e6).toFixed(1)} MB`);
        assert.ok(buffered <= 4096 + eventBytes, `held ${buffered} B for a paused client (bound 4096 + one ${eventBytes} B event)`);
        assert.ok(heapGrowth < produced / 10, `heap grew ${heapGrowth} B while ${produced} B of events were produced`);
        assert.equal(hub.stats().open, 1, 'behind is not yet stalled');
        t.clock.advance(30_000);
        await waitFor(() => hub.stats().closed.stalled === 1 && hub.stats().open === 0, { what: 'stalled stream closed', ...BOUND });
      } finally {
        c.close();
      }
    } finally {
      await t.close();
    }
  });

  test('every coin in every currency followed: the refresh quotes each pair once, spread over event-loop turns', async () => {
    const t = await makeTestApp({ settings: { QUOTES_STREAM_MAX_PER_TOKEN: '1000', QUOTES_STREAM_MAX_TOTAL: '1000' } });
    const clients: SseClient[] = [];
    try {
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      const port = portOf(t.app.server.address());
      const coins = ((await t.app.inject({ url: '/api/v2/crypto/available', headers: { authorization: `Bearer ${t.tokens.pro}` } })).json<{ coins: string[] }>()).coins.filter((c) => c !== 'USDT');
      const hub = t.services.streams;
      for (const currency of QUOTE_CURRENCIES) {
        for (let i = 0; i < coins.length; i += 20) {
          const c = await SseClient.open(port, `/api/v2/crypto/stream?coin=${coins.slice(i, i + 20).join(',')}&currency=${currency}&token=${t.tokens.pro}`);
          clients.push(c);
          assert.equal(c.status, 200, `${currency}: ${c.body}`);
        }
      }
      const pairs = hub.stats().activePairs;
      assert.equal(pairs, coins.length * QUOTE_CURRENCIES.length, 'one pair per coin and currency, shared by the streams');
      const before = hub.stats();
      // Runs right after the hub's own listener started the fan-out: a request arriving then.
      let ranDuringFanOut: boolean | undefined;
      const off = t.services.snapshots.onSnapshot(() => setImmediate(() => (ranDuringFanOut = hub.stats().fanOuts === before.fanOuts)));
      try {
        await t.services.snapshots.refreshNow();
        await waitFor(() => hub.stats().fanOuts > before.fanOuts, { what: 'the fan-out', ...BOUND });
      } finally {
        off();
      }
      const after = hub.stats();
      assert.equal(after.pairQuotes - before.pairQuotes, pairs, 'each followed pair quoted once');
      assert.equal(ranDuringFanOut, true, 'other work got a turn before the fan-out ended');
      assert.ok(after.lastFanOutTurns >= Math.ceil(pairs / 100), `${after.lastFanOutTurns} turns for ${pairs} pairs and ${clients.length} streams`);
      console.log(`# fan-out of ${pairs} pairs to ${clients.length} streams: ${after.lastFanOutMs.toFixed(0)} ms over ${after.lastFanOutTurns} turns`);
    } finally {
      for (const c of clients) c.close();
      await t.close();
    }
  });

  test('QUOTES_STREAM_MAX_TOTAL: 503 with Retry-After past the server cap; lifetime bound; shutdown ends open streams', async () => {
    const t = await makeTestApp({ settings: { QUOTES_STREAM_MAX_TOTAL: '2', QUOTES_STREAM_MAX_LIFETIME: '60' } });
    let closed = false;
    const clients: SseClient[] = [];
    try {
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      const port = portOf(t.app.server.address());
      for (const coin of ['BTC', 'ETH']) clients.push(await SseClient.open(port, `/api/v2/crypto/stream?coin=${coin}&token=${t.tokens.pro}`));
      const res = await fetch(`http://127.0.0.1:${port}/api/v2/crypto/stream?coin=SOL&token=${t.tokens.startup}`);
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('retry-after'), '5');
      assert.deepEqual(await res.json(), { error: true, message: 'The server has too many open streams, please retry shortly' });
      t.clock.advance(60_000);
      await waitFor(() => t.services.streams.stats().closed.lifetime === 2, { what: 'lifetime bound', ...BOUND });
      await waitFor(() => clients.every((c) => c.ended), { what: 'clients see the end', ...BOUND });
      const last = await SseClient.open(port, `/api/v2/crypto/stream?coin=BTC&token=${t.tokens.pro}`);
      clients.push(last);
      await waitFor(() => last.quoteEvents().length >= 1, { what: 'first event', ...BOUND });
      const started = Date.now();
      await t.close();
      closed = true;
      assert.ok(Date.now() - started < 5000, 'an open stream does not hold the shutdown');
      await waitFor(() => last.ended, { what: 'stream ended by the shutdown', ...BOUND });
    } finally {
      for (const c of clients) c.close();
      if (!closed) await t.close();
    }
  });
});
