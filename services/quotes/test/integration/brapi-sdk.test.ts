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

describe('brapi fiat currency quotes through the SDK', () => {
  let t: TestApp;
  let baseURL: string;
  before(async () => {
    t = await makeTestApp({ logLevel: 'warn' });
    baseURL = await t.app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => {
    await t.close();
  });

  test('currency.retrieve: PTAX-style bid/ask for official pairs, inverted for BRL-X, the FX layer for crosses; same rates as /api/v2/crypto', async () => {
    const client = new Brapi({ apiKey: t.tokens.pro!, baseURL, maxRetries: 0 });
    const { data, response } = await client.v2.currency.retrieve({ currency: 'USD-BRL,BRL-USD,EUR-USD,EUR-BRL' }).withResponse();
    assert.equal(response.status, 200);
    assert.ok(response.headers.get('etag')?.startsWith('W/'));
    const [usdBrl, brlUsd, eurUsd, eurBrl] = data.currency;
    assert.deepEqual(data.currency.map((c) => `${c.fromCurrency}-${c.toCurrency}`), ['USD-BRL', 'BRL-USD', 'EUR-USD', 'EUR-BRL']);
    assert.equal(usdBrl!.name, 'Dólar Americano/Real Brasileiro');
    assert.equal(eurBrl!.name, 'Euro/Real Brasileiro');
    for (const c of data.currency) {
      for (const k of ['high', 'low', 'bidVariation', 'percentageChange', 'bidPrice', 'askPrice', 'updatedAtTimestamp', 'updatedAtDate'] as const) assert.equal(typeof c[k], 'string', k);
      assert.ok(Number(c.bidPrice) <= Number(c.askPrice), 'bid <= ask');
      assert.ok(Number(c.low) <= Number(c.bidPrice) && Number(c.askPrice) <= Number(c.high), 'low <= bid, ask <= high');
      assert.equal(Math.sign(Number(c.bidVariation)), Math.sign(Number(c.percentageChange)));
      const ts = Number(c.updatedAtTimestamp);
      assert.equal(c.updatedAtDate, new Date((ts - 3 * 3600) * 1000).toISOString().slice(0, 19).replace('T', ' '), 'Brasília time');
      assert.equal((c as unknown as { source: string }).source, 'simulated');
    }
    assert.ok(Number(usdBrl!.bidPrice) < Number(usdBrl!.askPrice), 'the official pair has a spread');
    assert.ok(Math.abs(Number(brlUsd!.bidPrice) - 1 / Number(usdBrl!.askPrice)) < 1e-6, 'BRL-USD bid = 1 / USD-BRL ask');
    assert.ok(Math.abs(Number(brlUsd!.askPrice) - 1 / Number(usdBrl!.bidPrice)) < 1e-6, 'BRL-USD ask = 1 / USD-BRL bid');
    assert.equal(eurUsd!.bidPrice, eurUsd!.askPrice, 'a cross pair has the FX layer rate on both sides');
    const brl = (await (await fetch(`${baseURL}/api/v2/crypto?coin=BTC&currency=BRL&token=${t.tokens.pro}`)).json()) as { coins: Array<{ currencyRateFromUSD: number }> };
    const eur = (await (await fetch(`${baseURL}/api/v2/crypto?coin=BTC&currency=EUR&token=${t.tokens.pro}`)).json()) as { coins: Array<{ currencyRateFromUSD: number }> };
    const usdToBrl = brl.coins[0]!.currencyRateFromUSD;
    assert.ok(Number(usdBrl!.bidPrice) <= usdToBrl && usdToBrl <= Number(usdBrl!.askPrice), `the crypto quotes' USD->BRL rate ${usdToBrl} lies inside the bid/ask`);
    assert.ok(Math.abs(Number(eurUsd!.bidPrice) - 1 / eur.coins[0]!.currencyRateFromUSD) <= 1e-5 * Number(eurUsd!.bidPrice), 'EUR-USD = 1 / the USD->EUR rate of /api/v2/crypto');
  });

  test('currency.retrieve: errors in brapi shape, plan limits and counting as /api/v2/crypto', async () => {
    const pro = new Brapi({ apiKey: t.tokens.pro!, baseURL, maxRetries: 0 });
    await assert.rejects(pro.v2.currency.retrieve({ currency: 'USD-XYZ,FOO,USD-USD' }), (err: unknown) => {
      assert.ok(err instanceof BadRequestError);
      assert.match(err.message, /USD-XYZ, FOO, USD-USD/);
      return true;
    });
    const missing = await fetch(`${baseURL}/api/v2/currency?token=${t.tokens.pro}`);
    assert.equal(missing.status, 417);
    assert.deepEqual(Object.keys((await missing.json()) as object), ['error', 'message']);
    const pt = await fetch(`${baseURL}/api/v2/currency?token=${t.tokens.pro}`, { headers: { 'accept-language': 'pt-BR' } });
    assert.match(((await pt.json()) as { message: string }).message, /Não foi possível encontrar o parâmetro obrigatório: 'currency'/);
    const startup = new Brapi({ apiKey: t.tokens.startup!, baseURL, maxRetries: 0 });
    const eleven = ['EUR', 'GBP', 'JPY', 'CHF', 'CAD', 'AUD', 'DKK', 'NOK', 'SEK', 'BRL', 'MXN'].map((c) => `USD-${c}`).join(',');
    await assert.rejects(startup.v2.currency.retrieve({ currency: eleven }), (err: unknown) => err instanceof BadRequestError && /10 currency pairs/.test(err.message));
    await assert.rejects(new Brapi({ apiKey: t.tokens.free!, baseURL, maxRetries: 0 }).v2.currency.retrieve({ currency: 'USD-BRL' }), PermissionDeniedError);
    await assert.rejects(new Brapi({ apiKey: 'qt_nope', baseURL, maxRetries: 0 }).v2.currency.retrieve({ currency: 'USD-BRL' }), AuthenticationError);
    const a = await startup.v2.currency.retrieve({ currency: 'USD-BRL' }).withResponse();
    const b = await startup.v2.currency.retrieve({ currency: 'USD-BRL' }).withResponse();
    assert.equal(Number(a.response.headers.get('x-quota-remaining')) - Number(b.response.headers.get('x-quota-remaining')), 1, 'each call counts once');
    const post = await fetch(`${baseURL}/api/v2/currency`, { method: 'POST' });
    assert.equal(post.status, 405);
  });

  test('currency.listAvailable: every pair of two currencies with a rate, search by name or code, 404 without a match', async () => {
    const client = new Brapi({ apiKey: t.tokens.pro!, baseURL, maxRetries: 0 });
    const all = await client.v2.currency.listAvailable();
    const list = all.currencies ?? [];
    assert.ok(list.some((c) => c.currency === 'Dólar Americano/Real Brasileiro' && (c as { name?: string }).name === 'USD-BRL'));
    assert.ok(list.length >= 110, `${list.length} pairs: at least brapi's 11 currencies both ways`);
    const euro = await client.v2.currency.listAvailable({ search: 'euro' });
    assert.ok((euro.currencies ?? []).length > 0);
    assert.ok((euro.currencies ?? []).every((c) => /euro/i.test(c.currency ?? '')));
    const code = await client.v2.currency.listAvailable({ search: 'usd-brl' });
    assert.deepEqual(code.currencies, [{ currency: 'Dólar Americano/Real Brasileiro', name: 'USD-BRL' }]);
    await assert.rejects(client.v2.currency.listAvailable({ search: 'no-such-money' }), (err: unknown) => {
      assert.ok(err instanceof NotFoundError);
      assert.deepEqual(err.error, { message: 'Currency not found' });
      return true;
    });
  });
});
