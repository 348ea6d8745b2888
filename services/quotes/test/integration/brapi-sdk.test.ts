import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Brapi, { AuthenticationError, BadRequestError, NotFoundError, PermissionDeniedError } from 'brapi';
import { makeTestApp, type TestApp } from '../support/helpers.js';

describe('the official brapi SDK against a listening server', () => {
  let t: TestApp;
  let baseURL: string;
  before(async () => {
    t = await makeTestApp({ logLevel: 'warn' });
    const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
    baseURL = address;
  });
  after(async () => {
    await t.close();
  });

  test('crypto.retrieve with history', async () => {
    const client = new Brapi({ apiKey: t.tokens.pro!, baseURL, maxRetries: 0 });
    const { data, response } = await client.v2.crypto.retrieve({ coin: 'BTC', range: '5d', interval: '1d' }).withResponse();
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('x-data-source'), 'simulated');
    const coin = data.coins?.[0];
    assert.ok(coin !== undefined);
    assert.equal(coin.coin, 'BTC');
    assert.equal(coin.currency, 'BRL');
    assert.equal(coin.usedRange, '5d');
    assert.equal(coin.usedInterval, '1d');
    assert.equal(coin.historicalDataPrice?.length, 6, "five closed days and today's candle in progress");
    assert.ok(typeof coin.regularMarketPrice === 'number' && coin.regularMarketPrice > 0);
    assert.ok(coin.coinImageUrl?.startsWith(`${baseURL}/icons/`));
    const icon = await fetch(coin.coinImageUrl!);
    assert.equal(icon.status, 200, 'the icon URL resolves on the same server');
  });

  test('crypto.retrieve for several coins in USD', async () => {
    const client = new Brapi({ apiKey: t.tokens.startup!, baseURL, maxRetries: 0 });
    const data = await client.v2.crypto.retrieve({ coin: 'BTC,ETH,SOL', currency: 'USD' });
    assert.deepEqual(data.coins?.map((c) => c.coin), ['BTC', 'ETH', 'SOL']);
    assert.ok(data.coins?.every((c) => c.currencyRateFromUSD === 1));
  });

  test('crypto.listAvailable with and without search', async () => {
    const client = new Brapi({ apiKey: t.tokens.pro!, baseURL, maxRetries: 0 });
    const all = await client.v2.crypto.listAvailable();
    assert.ok((all.coins?.length ?? 0) >= 50);
    const some = await client.v2.crypto.listAvailable({ search: 'doge' });
    assert.deepEqual(some.coins, ['DOGE']);
    await assert.rejects(client.v2.crypto.listAvailable({ search: 'nothing-like-this' }), NotFoundError);
  });

  test('SDK error classes map from our status codes', async () => {
    const bad = new Brapi({ apiKey: 'qt_invalid', baseURL, maxRetries: 0 });
    await assert.rejects(bad.v2.crypto.retrieve({ coin: 'BTC' }), (err: unknown) => err instanceof AuthenticationError && err.status === 401);
    const free = new Brapi({ apiKey: t.tokens.free!, baseURL, maxRetries: 0 });
    await assert.rejects(free.v2.crypto.retrieve({ coin: 'BTC' }), PermissionDeniedError);
    const pro = new Brapi({ apiKey: t.tokens.pro!, baseURL, maxRetries: 0 });
    await assert.rejects(pro.v2.crypto.retrieve({ coin: 'NOPECOIN' }), (err: unknown) => err instanceof BadRequestError && /NOPECOIN/.test(err.message));
  });
});
