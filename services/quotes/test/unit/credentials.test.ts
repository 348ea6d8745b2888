// Issue 23, finding 11: every form of a token the service accepts is masked in logged URLs, and
// what is masked is decided by the parser that authenticates (the query parser the routes and the
// fast path read the token with).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { maskCredentials } from '../../src/http/credentials.js';
import { tokenOf } from '../../src/api/authenticator.js';
import { parseQueryString } from '../../src/http/query-string.js';
import { coingeckoToken } from '../../src/coingecko/cg-routes.js';

const T = 'qt_SECRETsecretSECRETsecret0123456789abcdefgh';

/** The query as the router finds it (after the first `?` or `#` past the first character). */
function routerQuery(url: string): string {
  for (let i = 1; i < url.length; i++) if (url[i] === '?' || url[i] === '#') return url.slice(i + 1);
  return '';
}

/** The token the CoinGecko routes (a superset of the brapi routes' forms) would authenticate with. */
const authenticatesWith = (url: string): string | undefined => coingeckoToken({}, parseQueryString(routerQuery(url)));

describe('maskCredentials', () => {
  const accepted = [
    `/api/v2/crypto?coin=BTC&token=${T}`,
    `/api/v2/crypto?token=${T}&coin=BTC`,
    `/api/v2/crypto?coin=BTC&%74oken=${T}`,
    `/api/v2/crypto?coin=BTC&tok%65n=${T}`,
    `/api/v2/crypto?coin=BTC&%74%6F%6B%65%6E=${T}`,
    `/api/v2/crypto#token=${T}&coin=BTC`,
    `/api/v2/crypto?coin=BTC#&token=${T}`,
    `/api/v2/crypto/stream?coin=BTC&token=${T}`,
    `/api/v3/simple/price?ids=bitcoin&vs_currencies=usd&x_cg_pro_api_key=${T}`,
    `/api/v3/simple/price?ids=bitcoin&vs_currencies=usd&x_cg_demo_api_key=${T}`,
    `/api/v3/simple/price?%78_cg_pro_api_key=${T}&ids=bitcoin`,
    `/api/v3/simple/price?x_cg_demo_api_key=${encodeURIComponent(T)}`,
    `/api/v2/crypto?coin=BTC&token=${T.slice(0, 10)}%5F${T.slice(11)}`,
  ];

  test('every URL form that authenticates is masked', () => {
    for (const url of accepted) {
      const token = authenticatesWith(url);
      assert.ok(token !== undefined && token.length > 20, `${url} authenticates (${token})`);
      const masked = maskCredentials(url);
      assert.ok(!masked.includes(T) && !masked.includes(token) && !masked.includes(encodeURIComponent(token)), `${url} -> ${masked}`);
      assert.equal(authenticatesWith(masked), '[REDACTED]', `the masked URL carries the mask where the token was: ${masked}`);
    }
    assert.equal(tokenOf({}, parseQueryString(routerQuery(accepted[2]!))), T, 'the brapi routes read %74oken as token');
  });

  test('repeated and near-miss names are masked too; other parameters and paths are untouched', () => {
    assert.equal(maskCredentials(`/x?token=${T}&token=${T}`), '/x?token=[REDACTED]&token=[REDACTED]');
    assert.equal(maskCredentials(`/x?TOKEN=${T}&token+=${T}&X_CG_PRO_API_KEY=${T}`), '/x?TOKEN=[REDACTED]&token+=[REDACTED]&X_CG_PRO_API_KEY=[REDACTED]');
    assert.equal(maskCredentials(`/x?token=${T}=more`), '/x?token=[REDACTED]');
    assert.equal(maskCredentials('/api/v2/crypto?coin=BTC&currency=BRL'), '/api/v2/crypto?coin=BTC&currency=BRL');
    assert.equal(maskCredentials('/api/v2/crypto?coin=BTC&tokens=1&mytoken=2&=x&&'), '/api/v2/crypto?coin=BTC&tokens=1&mytoken=2&=x&&');
    assert.equal(maskCredentials('/health'), '/health');
    assert.equal(maskCredentials('?token=x'), '?token=x', 'a leading ? is not a query delimiter for the router either');
    assert.equal(maskCredentials(`/x?%zz=1&token=${T}`), '/x?%zz=1&token=[REDACTED]', 'a malformed escape elsewhere does not stop it');
  });
});
