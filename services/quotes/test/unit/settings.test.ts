// The quotes settings on @rls/settings: the docs table is generated from the declarations, and the
// variables that combine (overrides, `auto`, TLS files, per-exchange families) fold as documented.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { renderDoc } from '@rls/settings';
import { loadSettings, SETTING_DEFS, SettingsError } from '../../src/settings.js';

test('docs/quotes.md lists exactly the declared settings', () => {
  const doc = readFileSync(new URL('../../../../docs/quotes.md', import.meta.url), 'utf8');
  assert.equal(doc, renderDoc(doc, SETTING_DEFS), 'run: npx tsx --conditions=source services/quotes/src/settings-doc.ts');
});

test('every declared variable has a meaning, and names are unique', () => {
  const names = Object.values(SETTING_DEFS).map((d) => d.name);
  assert.equal(new Set(names).size, names.length);
  for (const d of Object.values(SETTING_DEFS)) assert.ok(d.meaning.length > 10, d.name);
});

test('empty means unset; overrides win; MARKET_* intervals override the QUOTES_* ones', () => {
  const s = loadSettings({ QUOTES_PORT: '', QUOTES_REFRESH_SECONDS: '20', MARKET_STALE_AFTER: '5m' }, { QUOTES_HOST: '127.0.0.1' });
  assert.equal(s.port, 3000);
  assert.equal(s.host, '127.0.0.1');
  assert.equal(s.refreshSeconds, 20);
  assert.equal(s.staleSeconds, 300);
  assert.equal(loadSettings({ MARKET_REFRESH_INTERVAL: '1m', QUOTES_REFRESH_SECONDS: '20' }).refreshSeconds, 60);
});

test('FX_SOURCE=auto follows the market source', () => {
  assert.deepEqual(loadSettings({}).fxSources, ['ptax', 'ecb']);
  assert.deepEqual(loadSettings({ MARKET_SOURCE: 'simulated' }).fxSources, ['simulated']);
  assert.deepEqual(loadSettings({ FX_SOURCE: 'ecb,exchange' }).fxSources, ['ecb', 'exchange']);
});

test('per-exchange URLs are read by prefix, keyed by the lower-case id', () => {
  const s = loadSettings({ MARKET_EXCHANGE_URL_BINANCE: 'http://127.0.0.1:9/', MARKET_EXCHANGE_WS_URL_KRAKEN: 'ws://127.0.0.1:8', MARKET_EXCHANGE_URL_OKX: '' });
  assert.deepEqual(s.exchangeUrls, { binance: 'http://127.0.0.1:9' });
  assert.deepEqual(s.exchangeWsUrls, { kraken: 'ws://127.0.0.1:8' });
  assert.throws(
    () => loadSettings({ MARKET_EXCHANGE_URL_BINANCE: 'ws://x', MARKET_EXCHANGE_WS_URL_BINANCE: 'http://x' }),
    (e: unknown) => e instanceof SettingsError && e.problems.length === 2 && /MARKET_EXCHANGE_URL_BINANCE/.test(e.message),
  );
});

test('ratelimit TLS: the flag, the files, and cert and key together', () => {
  assert.equal(loadSettings({}).rateLimitTls, undefined);
  assert.deepEqual(loadSettings({ RATELIMIT_GRPC_TLS: 'true' }).rateLimitTls, { ca: undefined, cert: undefined, key: undefined, serverName: undefined });
  assert.deepEqual(loadSettings({ RATELIMIT_GRPC_TLS_CA: '/ca.pem' }).rateLimitTls, { ca: '/ca.pem', cert: undefined, key: undefined, serverName: undefined });
  assert.throws(() => loadSettings({ RATELIMIT_GRPC_TLS_CERT: '/c.pem' }), /must be set together/);
});

test('fallbacks apply only to variables left unset (the quick start picks the simulated market)', () => {
  assert.equal(loadSettings({}, {}, { MARKET_SOURCE: 'simulated' }).marketSource, 'simulated');
  assert.equal(loadSettings({ MARKET_SOURCE: '' }, {}, { MARKET_SOURCE: 'simulated' }).marketSource, 'simulated');
  assert.equal(loadSettings({ MARKET_SOURCE: 'exchange' }, {}, { MARKET_SOURCE: 'simulated' }).marketSource, 'exchange');
});
