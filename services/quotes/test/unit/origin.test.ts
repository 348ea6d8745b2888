// What an origin may be (the Host header is the client's to choose) and text built once for
// every origin (issue 23, findings 8 and 9).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isQuotesError } from '../../src/errors.js';
import { MAX_HOST_CHARS, ORIGIN_MARK, OriginJson, originOf, parsePublicOrigin, requestOrigin } from '../../src/origin.js';

describe('originOf: scheme and Host as an origin', () => {
  test('host names, IP addresses and ports are accepted as sent', () => {
    for (const host of ['localhost', 'localhost:3000', 'Quotes.Example.COM', 'quotes.example.com.', '127.0.0.1:8080', '[::1]:3000', '[2001:db8::1]', 'quotes_api:3000', 'a-b.c-d.example']) {
      assert.equal(originOf('http', host), `http://${host}`, host);
    }
    assert.equal(originOf('https', 'x.example'), 'https://x.example');
  });

  test('anything else is refused: other schemes, empty, characters outside the grammar, bad ports, too long', () => {
    const label = 'a'.repeat(63);
    const longest = `${label}.${label}.${label}.${'a'.repeat(61)}`; // 253 characters
    assert.equal(longest.length, 253);
    assert.equal(originOf('http', `${longest}:65535`), `http://${longest}:65535`);
    for (const host of [undefined, '', 'a b', 'a"b', 'a\\b', 'a/b', 'a<b>', 'a..b', '.a', '-a.example', 'a-.example', 'x:99999', 'x:80:80', 'x:', '[::1', '[zz::1]', `${'a'.repeat(64)}.example`, `${longest}a`, 'a'.repeat(MAX_HOST_CHARS + 1), 'é.example', 'a\u0000b']) {
      assert.equal(originOf('http', host), undefined, JSON.stringify(host));
    }
    assert.equal(originOf('javascript', 'x.example'), undefined);
    assert.equal(originOf('', ''), undefined);
    // The last origin made is remembered; a refusal in between changes nothing.
    assert.equal(originOf('http', 'again.example'), 'http://again.example');
    assert.equal(originOf('https', 'again.example'), 'https://again.example');
    assert.equal(originOf('http', 'again.example'), 'http://again.example');
    assert.equal(originOf('ftp', 'x.example'), undefined);
  });

  test('requestOrigin: PUBLIC_BASE_URL wins; otherwise a bad Host is 400 HOST_INVALID naming the limit', () => {
    const configured = parsePublicOrigin('https://quotes.example.com');
    assert.equal(requestOrigin(configured, 'http', 'a"b'), 'https://quotes.example.com');
    assert.equal(requestOrigin(undefined, 'http', 'ok.example'), 'http://ok.example');
    assert.throws(
      () => requestOrigin(undefined, 'http', 'x'.repeat(5000)),
      (err: unknown) => isQuotesError(err) && err.code === 'HOST_INVALID' && err.details.limit === MAX_HOST_CHARS,
    );
  });

  test('PUBLIC_BASE_URL: scheme, host, port and path; trailing slashes dropped; nothing that would need escaping', () => {
    assert.equal(parsePublicOrigin('https://quotes.example.com/'), 'https://quotes.example.com');
    assert.equal(parsePublicOrigin('http://10.0.0.1:8080/api/quotes//'), 'http://10.0.0.1:8080/api/quotes');
    for (const bad of ['quotes.example.com', 'ftp://x.example', 'https://', 'https://a"b.example', 'https://x.example/a"b', 'https://x.example/a\\b', 'https://x.example/a b', 'https://x.example/<script>']) {
      assert.throws(() => parsePublicOrigin(bad), /must be an http\(s\) URL/, bad);
    }
  });
});

describe('OriginJson: text built once for every origin', () => {
  test('the origin goes where ORIGIN_MARK was; the text for the last origin is kept', () => {
    const json = JSON.stringify([{ coin: 'BTC', coinImageUrl: `${ORIGIN_MARK}/icons/btc.svg` }, { coin: 'ETH', coinImageUrl: `${ORIGIN_MARK}/icons/eth.svg` }]);
    const body = new OriginJson(json);
    assert.equal(body.origins, 2);
    const a = parsePublicOrigin('https://a.example');
    const b = parsePublicOrigin('http://b.example:3000');
    const ra = body.render(a);
    assert.deepEqual(JSON.parse(ra.json), [
      { coin: 'BTC', coinImageUrl: 'https://a.example/icons/btc.svg' },
      { coin: 'ETH', coinImageUrl: 'https://a.example/icons/eth.svg' },
    ]);
    assert.equal(ra.bytes, Buffer.byteLength(ra.json));
    assert.equal(body.render(a), ra, 'the same origin again: the kept text');
    assert.equal(body.textFor(b), body.render(b).json);
    assert.ok(!body.render(b).json.includes('\\u0000'), 'no mark left');
    assert.ok(body.maxChars >= body.text.length + body.render(b).json.length, 'the size a cache counts covers the text and one origin\'s');
  });

  test('text without the mark is its own rendering', () => {
    const body = new OriginJson('{"a":1}');
    assert.equal(body.origins, 0);
    assert.equal(body.render(parsePublicOrigin('https://x.example')).json, '{"a":1}');
  });
});
