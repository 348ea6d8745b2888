// Response compression over real HTTP (@fastify/compress, api/compression.ts): brotli and gzip by
// Accept-Encoding, bodies that decompress to the identity bytes, Vary and weak ETags so a cache
// never serves one encoding for another and If-None-Match still gives 304, the fast path leaving
// compressible answers to fastify, and the dashboard script.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { describe, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { makeTestApp, type TestApp } from '../support/helpers.js';

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

async function get(port: number, path: string, headers: Record<string, string> = {}): Promise<Raw> {
  return await new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function decoded(r: Raw): string {
  const enc = r.headers['content-encoding'];
  if (enc === 'br') return brotliDecompressSync(r.body).toString('utf8');
  if (enc === 'gzip') return gunzipSync(r.body).toString('utf8');
  assert.equal(enc, undefined, `unexpected content-encoding ${String(enc)}`);
  return r.body.toString('utf8');
}

/** `took` is measured per request: the one field allowed to differ. */
const sameData = (s: string): string => s.replace(/"took":\d+/, '"took":0');

async function listen(t: TestApp): Promise<number> {
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = t.app.server.address();
  assert.ok(addr !== null && typeof addr === 'object');
  return addr.port;
}

describe('compression', () => {
  test('one year of hourly candles: brotli and gzip shrink it, decompress to the identity body, same weak ETag, 304 on revalidation', async () => {
    const t = await makeTestApp({ logLevel: 'warn', settings: { PUBLIC_BASE_URL: 'http://quotes.test' } });
    try {
      const port = await listen(t);
      const auth = { authorization: `Bearer ${t.tokens.pro!}` };
      const path = '/api/v2/crypto?coin=BTC&range=1y&interval=1h';
      const identity = await get(port, path, auth);
      assert.equal(identity.status, 200, identity.body.toString());
      assert.equal(identity.headers['content-encoding'], undefined);
      const candles = (JSON.parse(identity.body.toString()) as { coins: Array<{ historicalDataPrice: unknown[] }> }).coins[0]!.historicalDataPrice.length;
      assert.ok(candles > 8000, `a year of hourly candles (${candles})`);
      const br = await get(port, path, { ...auth, 'accept-encoding': 'gzip, deflate, br' });
      const gz = await get(port, path, { ...auth, 'accept-encoding': 'gzip' });
      assert.equal(br.headers['content-encoding'], 'br', 'brotli preferred when both are accepted');
      assert.equal(gz.headers['content-encoding'], 'gzip');
      for (const r of [br, gz]) {
        assert.equal(r.status, 200);
        assert.ok(r.body.length * 3 < identity.body.length, `${String(r.headers['content-encoding'])}: ${r.body.length} bytes vs ${identity.body.length}`);
        assert.equal(sameData(decoded(r)), sameData(identity.body.toString()));
        assert.equal(r.headers.etag, identity.headers.etag, 'one weak ETag for equivalent representations');
        assert.match(String(r.headers.etag), /^W\//);
        assert.match(String(r.headers.vary), /accept-encoding/i);
        assert.equal(String(r.headers.vary).toLowerCase().split('accept-encoding').length, 2, `Accept-Encoding once in Vary: ${String(r.headers.vary)}`);
      }
      assert.match(String(identity.headers.vary), /accept-encoding/i, 'identity answers vary on it too');
      const etag = String(br.headers.etag);
      for (const ae of ['br', 'gzip', 'identity']) {
        const r = await get(port, path, { ...auth, 'accept-encoding': ae, 'if-none-match': etag });
        assert.equal(r.status, 304, ae);
        assert.equal(r.body.length, 0);
        assert.equal(r.headers['content-encoding'], undefined);
        assert.equal(r.headers.etag, etag);
      }
    } finally {
      await t.close();
    }
  });

  test('identity, br;q=0 and unknown codings are honoured; small bodies are not compressed', async () => {
    const t = await makeTestApp({ logLevel: 'warn', settings: { PUBLIC_BASE_URL: 'http://quotes.test' } });
    try {
      const port = await listen(t);
      const auth = { authorization: `Bearer ${t.tokens.pro!}` };
      const big = '/api/v2/crypto?coin=BTC&range=5d&interval=1h';
      const enc = async (ae: string, path = big) => (await get(port, path, { ...auth, 'accept-encoding': ae })).headers['content-encoding'];
      assert.equal(await enc('identity'), undefined);
      assert.equal(await enc('br;q=0'), undefined);
      assert.equal(await enc('br;q=0, gzip'), 'gzip');
      assert.equal(await enc('gzip;q=0.5, br;q=0.9'), 'br');
      assert.equal(await enc('deflate'), undefined, 'deflate is not offered');
      assert.equal(await enc('*'), 'gzip');
      const small = await get(port, '/api/v2/crypto?coin=BTC', { ...auth, 'accept-encoding': 'br, gzip' });
      assert.ok(small.body.length < 1024);
      assert.equal(small.headers['content-encoding'], undefined, 'below QUOTES_COMPRESSION_MIN_BYTES');
      // Errors and the API document too.
      const openapi = await get(port, '/openapi.json', { 'accept-encoding': 'gzip' });
      assert.equal(openapi.headers['content-encoding'], 'gzip');
      assert.doesNotThrow(() => JSON.parse(decoded(openapi)));
    } finally {
      await t.close();
    }
  });

  test('QUOTES_COMPRESSION=false sends every body as it is', async () => {
    const t = await makeTestApp({ logLevel: 'warn', settings: { PUBLIC_BASE_URL: 'http://quotes.test', QUOTES_COMPRESSION: 'false' } });
    try {
      const port = await listen(t);
      const r = await get(port, '/api/v2/crypto?coin=BTC&range=5d&interval=1h', { authorization: `Bearer ${t.tokens.pro!}`, 'accept-encoding': 'br, gzip' });
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-encoding'], undefined);
    } finally {
      await t.close();
    }
  });

  test('by default a quote of a few coins is below the threshold: the fast path serves it as it is, whatever Accept-Encoding says', async () => {
    const t = await makeTestApp({ logLevel: 'warn', settings: { PUBLIC_BASE_URL: 'http://quotes.test' } });
    try {
      const port = await listen(t);
      const auth = { authorization: `Bearer ${t.tokens.pro!}` };
      const three = '/api/v2/crypto?coin=BTC,ETH,SOL';
      await get(port, three, auth);
      const before = t.fastPath!.counts[2]!;
      const r = await get(port, three, { ...auth, 'accept-encoding': 'gzip, deflate, br' });
      assert.equal(r.headers['content-encoding'], undefined);
      assert.ok(r.body.length < 4096);
      assert.match(String(r.headers.vary), /accept-encoding/);
      assert.equal(t.fastPath!.counts[2], before + 1);
    } finally {
      await t.close();
    }
  });

  test('the pre-router compresses as the plugin would: above the threshold by Accept-Encoding, the same choice through fastify', async () => {
    const settings = { PUBLIC_BASE_URL: 'http://quotes.test', QUOTES_COMPRESSION_MIN_BYTES: '1024' };
    const t = await makeTestApp({ logLevel: 'warn', settings });
    const full = await makeTestApp({ logLevel: 'warn', settings: { ...settings, QUOTES_FAST_PATH: 'false' } });
    try {
      const [port, fullPort] = [await listen(t), await listen(full)];
      const served = () => t.fastPath!.counts[2]!;
      const three = '/api/v2/crypto?coin=BTC,ETH,SOL';
      const first = await get(port, three, { authorization: `Bearer ${t.tokens.pro!}` });
      assert.ok(first.body.length > 1024, `${first.body.length} bytes: above the threshold`);
      assert.equal(first.headers['content-encoding'], undefined, 'no Accept-Encoding');
      const cases: Array<[Record<string, string>, string | undefined]> = [
        [{ 'accept-encoding': 'br' }, 'br'],
        [{ 'accept-encoding': 'gzip, deflate, br' }, 'br'],
        [{ 'accept-encoding': 'gzip' }, 'gzip'],
        [{ 'accept-encoding': 'x-gzip' }, 'gzip'],
        [{ 'accept-encoding': '*' }, 'gzip'],
        [{ 'accept-encoding': 'br;q=0, gzip;q=0.5' }, 'gzip'],
        [{ 'accept-encoding': 'identity' }, undefined],
        [{ 'accept-encoding': 'deflate' }, undefined],
        [{ 'accept-encoding': 'br', 'x-no-compression': '1' }, undefined],
      ];
      for (const [headers, encoding] of cases) {
        const before = served();
        const a = await get(port, three, { authorization: `Bearer ${t.tokens.pro!}`, ...headers });
        const b = await get(fullPort, three, { authorization: `Bearer ${full.tokens.pro!}`, ...headers });
        assert.equal(served(), before + 1, 'taken by the pre-router');
        for (const r of [a, b]) {
          assert.equal(r.status, 200);
          assert.equal(r.headers['content-encoding'], encoding, JSON.stringify(headers));
          assert.equal(Number(r.headers['content-length']), r.body.length, 'Content-Length of the bytes sent');
          assert.equal(String(r.headers.vary).toLowerCase().split('accept-encoding').length, 2, `Accept-Encoding once in Vary: ${String(r.headers.vary)}`);
          assert.equal(sameData(decoded(r)), sameData(first.body.toString()));
        }
        if (encoding !== undefined) assert.ok(a.body.length < first.body.length / 2, `${encoding}: ${a.body.length} of ${first.body.length} bytes`);
      }
      const small = await get(port, '/api/v2/crypto?coin=BTC', { authorization: `Bearer ${t.tokens.pro!}`, 'accept-encoding': 'gzip, br' });
      assert.ok(small.body.length < 1024);
      assert.equal(small.headers['content-encoding'], undefined, 'a small answer is never compressed');
    } finally {
      await t.close();
      await full.close();
    }
  });

  test('the dashboard script and page: compressed, decompress to the served file', async () => {
    const t = await makeTestApp({ logLevel: 'warn' });
    try {
      const port = await listen(t);
      const page = await get(port, '/dashboard/');
      assert.equal(page.status, 200, 'the dashboard is built (npm run build)');
      const src = /<script[^>]+src="([^"]+\.js)"/.exec(decoded(page))?.[1];
      assert.ok(src !== undefined, 'the page loads a script');
      const identity = await get(port, src);
      assert.equal(identity.status, 200);
      assert.ok(identity.body.length > 50_000, `the script is large (${identity.body.length} bytes)`);
      for (const ae of ['br', 'gzip']) {
        const r = await get(port, src, { 'accept-encoding': ae });
        assert.equal(r.headers['content-encoding'], ae);
        assert.ok(r.body.length * 2.5 < identity.body.length, `${ae}: ${r.body.length} of ${identity.body.length} bytes`);
        assert.ok(decoded(r) === identity.body.toString('utf8'), `${ae}: decompresses to the file`);
        assert.match(String(r.headers.vary), /accept-encoding/i);
        assert.equal(r.headers['cache-control'], 'public, max-age=31536000, immutable');
        assert.match(String(r.headers['content-type']), /^text\/javascript/);
      }
    } finally {
      await t.close();
    }
  });
});
