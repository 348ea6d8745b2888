// The one pipeline of GET /api/v2/crypto (api/crypto-pipeline.ts), driven directly on a composed
// app (SQLite store, simulated market, the shipped plans): the steps' order decides what is
// counted, a request whose every step is satisfied is answered without a promise, a step that
// must wait makes the answer wait (and still counts once), and the query memo stays bounded
// whatever a client sends.
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { describe, test } from 'node:test';
import { monthKey } from '../../src/accounts/usage-month.js';
import type { CryptoCall } from '../../src/api/crypto-pipeline.js';
import { isPromise } from '../../src/maybe-promise.js';
import { makeTestApp, T0, type TestApp } from '../support/helpers.js';

interface Written {
  status?: number;
  headers?: string[];
  body?: string | undefined;
}

/** A ServerResponse that records what the writer writes. */
function recording(): { res: ServerResponse; written: Written } {
  const written: Written = {};
  const res = {
    headersSent: false,
    writeHead(this: { headersSent: boolean }, status: number, headers: string[]) {
      written.status = status;
      written.headers = [...headers];
      this.headersSent = true;
      return this;
    },
    end(body?: string) {
      written.body = body;
      return this;
    },
  } as unknown as ServerResponse;
  return { res, written };
}

function call(query: string, headers: IncomingHttpHeaders, host = 'quotes.test'): CryptoCall {
  return { query, headers, scheme: 'http', host, head: false, startedAt: performance.now() };
}

async function serve(t: TestApp, c: CryptoCall): Promise<{ written: Written; atOnce: boolean }> {
  const { res, written } = recording();
  const done = t.services.cryptoPipeline.serve(c, res);
  const atOnce = !isPromise(done);
  await done;
  return { written, atOnce };
}

async function counted(t: TestApp, plan: string): Promise<number> {
  await t.services.flushUsage();
  return (await t.store.usage.get(t.tokenIds[plan]!, monthKey(T0))) ?? 0;
}

describe('the crypto pipeline', () => {
  test('the steps in order: origin and account refusals are not counted, parameter errors are, answers are', async () => {
    const t = await makeTestApp({ logLevel: 'warn' });
    try {
      const auth = { authorization: `Bearer ${t.tokens.pro!}` };
      assert.equal((await serve(t, call('coin=BTC', auth, 'bad host!'))).written.status, 400, 'origin');
      assert.equal((await serve(t, call('coin=BTC', { authorization: 'Bearer qt_unknown' }))).written.status, 401);
      assert.equal((await serve(t, call('coin=BTC', { authorization: `Bearer ${t.tokens.free!}` }))).written.status, 403);
      assert.equal(await counted(t, 'pro'), 0, 'nothing counted before the limiters');
      assert.equal((await serve(t, call('coin=NOPE', auth))).written.status, 400);
      assert.equal((await serve(t, call('', auth))).written.status, 417);
      assert.equal(await counted(t, 'pro'), 2, 'invalid parameters are counted, as brapi counts them');
      const ok = await serve(t, call('coin=BTC,ETH', auth));
      assert.equal(ok.written.status, 200);
      assert.equal(JSON.parse(ok.written.body!).coins.length, 2);
      assert.equal(await counted(t, 'pro'), 3);
    } finally {
      await t.close();
    }
  });

  test('every step satisfied: answered without a promise; a step that must wait (a new token, a due refresh) makes it wait', async () => {
    const t = await makeTestApp({ logLevel: 'warn' });
    try {
      const auth = { authorization: `Bearer ${t.tokens.pro!}` };
      const first = await serve(t, call('coin=SOL', auth));
      assert.equal(first.written.status, 200);
      const again = await serve(t, call('coin=SOL', auth));
      assert.equal(again.atOnce, true, 'token, quota count and quote all in memory');
      assert.equal(again.written.status, 200);
      const { token } = await t.services.accounts.createToken('new', 'pro');
      const fresh = await serve(t, call('coin=SOL', { authorization: `Bearer ${token}` }));
      assert.equal(fresh.atOnce, false, 'an unseen token asks the token store');
      assert.equal(fresh.written.status, 200);
      t.clock.advance(60_000);
      const refreshed = await serve(t, call('coin=SOL', auth));
      assert.equal(refreshed.atOnce, false, 'a due market refresh is waited for');
      assert.equal(refreshed.written.status, 200);
      assert.notEqual(JSON.parse(refreshed.written.body!).requestedAt, JSON.parse(again.written.body!).requestedAt);
      assert.equal((await serve(t, call('coin=SOL', auth))).atOnce, true);
    } finally {
      await t.close();
    }
  });

  test('the query memo holds at most 256 texts of at most 512 characters, whatever a client sends', async () => {
    const t = await makeTestApp({ logLevel: 'warn' });
    try {
      const auth = { authorization: `Bearer ${t.tokens.pro!}` };
      const pipeline = t.services.cryptoPipeline;
      for (let i = 0; i < 2_000; i++) {
        const { written } = await serve(t, call(`coin=BTC&x=${i}`, auth));
        assert.equal(written.status, 200);
        assert.ok(pipeline.rememberedQueries <= 256, `${pipeline.rememberedQueries} remembered`);
      }
      const before = pipeline.rememberedQueries;
      await serve(t, call(`coin=BTC&x=${'y'.repeat(600)}`, auth));
      assert.equal(pipeline.rememberedQueries, before, 'a long query is parsed, never remembered');
    } finally {
      await t.close();
    }
  });
});
