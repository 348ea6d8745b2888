import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { tempDir, waitFor } from '@rls/testkit';
import { createTokens, startQuotesProcess, type QuotesProcess } from './quotes-process.js';

// Issue 23, finding 11, against the real process at the default log level (info: fastify's access
// lines and the fast path's): a request authenticated by any form the service accepts, refused or
// not, leaves no token in the output. Each form is sent twice (the second time the token is in the
// account cache and the cached-quote path answers and logs it), and each status shows the form was
// accepted as a token (or which refusal it got).

/** One raw HTTP/1.1 request (the target exactly as given, `#` included); resolves with the status. */
function send(port: number, target: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let text = '';
    s.setEncoding('latin1');
    const head = [`GET ${target} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''];
    s.on('connect', () => s.write(head.join('\r\n')));
    s.on('data', (d: string) => {
      text += d;
      const m = /^HTTP\/1\.1 (\d+)/.exec(text);
      // A stream's head is enough; anything else is read to its end.
      if (m !== null && target.includes('/stream')) {
        s.destroy();
        resolve(Number(m[1]));
      }
    });
    s.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0)));
    s.on('error', reject);
    s.setTimeout(15_000, () => s.destroy(new Error(`no answer: ${target}`)));
  });
}

describe('no token form reaches the access log (real process, QUOTES_LOG_LEVEL=info)', () => {
  const dir = tempDir('quotes-log-');
  let q: QuotesProcess;
  let token = '';

  before(async () => {
    ({ token } = (await createTokens(dir.path, { token: 'pro' })) as { token: string });
    q = await startQuotesProcess({ QUOTES_LOG_LEVEL: 'info', RATELIMIT_ENABLED: 'false' }, dir.path);
  });
  after(async () => {
    await q?.stop();
    dir.cleanup();
  });

  test('every accepted form, in the URL or a header, on every route kind: the token never appears in the output', async () => {
    const T = token;
    const wrong = `qt_${'W'.repeat(43)}`;
    const price = '/api/v3/simple/price?ids=bitcoin&vs_currencies=usd';
    const cases: { target: string; headers?: Record<string, string>; status: number }[] = [
      { target: `/api/v2/crypto?coin=BTC&token=${T}`, status: 200 },
      { target: `/api/v2/crypto?coin=BTC&%74oken=${T}`, status: 200 },
      { target: `/api/v2/crypto?coin=BTC&tok%65n=${T}`, status: 200 },
      { target: `/api/v2/crypto#token=${T}&coin=BTC`, status: 200 },
      // The router reads the query from the first '#': coin is "BTC#" (400 after authenticating).
      { target: `/api/v2/crypto?coin=BTC#&token=${T}`, status: 400 },
      { target: `/api/v2/crypto?coin=BTC`, headers: { authorization: `Bearer ${T}` }, status: 200 },
      { target: `/api/v2/crypto?coin=BTC&range=5d&interval=1d&token=${T}`, status: 200 },
      { target: `/api/v2/crypto/available?token=${T}`, status: 200 },
      { target: `/api/v2/crypto/stream?coin=BTC&token=${T}`, status: 200 },
      { target: `/api/v2/crypto/stream?coin=BTC&%74oken=${T}`, status: 200 },
      { target: `${price}&x_cg_pro_api_key=${T}`, status: 200 },
      { target: `${price}&x_cg_demo_api_key=${T}`, status: 200 },
      { target: `${price}&%78_cg_pro_api_key=${T}`, status: 200 },
      { target: `${price}&token=${T}`, status: 200 },
      { target: price, headers: { 'x-cg-pro-api-key': T }, status: 200 },
      { target: price, headers: { 'x-cg-demo-api-key': T }, status: 200 },
      // Refused, still secret: a repeated token, an unknown one, and near-miss names.
      { target: `/api/v2/crypto?coin=BTC&token=${T}&token=${T}`, status: 401 },
      { target: `/api/v2/crypto?coin=BTC&token=${wrong}`, status: 401 },
      { target: `/api/v2/crypto?coin=BTC&TOKEN=${T}`, status: 401 },
      { target: `${price}&x_cg_pro_api_key=${wrong}`, status: 401 },
      { target: `/nope?token=${T}`, status: 404 },
    ];
    for (const c of cases) {
      for (let round = 0; round < 2; round++) {
        const status = await send(q.port, c.target, c.headers);
        assert.equal(status, c.status, `${c.target} ${JSON.stringify(c.headers ?? {})} (round ${round + 1})`);
      }
    }
    const lines = (): string[] => q.proc.output().split('\n');
    // Every request was logged (twice each form), so the check below looked at their lines.
    await waitFor(() => lines().filter((l) => l.includes('"msg":"request completed"')).length >= cases.length * 2 - 4, { what: 'access lines written', timeoutMs: 10_000 });
    const out = q.proc.output();
    assert.ok(out.includes('"msg":"incoming request"'), 'access logging is on');
    assert.ok(out.includes('[REDACTED]'), 'masked URLs are logged');
    for (const secret of [T, T.slice(3), wrong]) {
      const at = out.indexOf(secret);
      assert.equal(at, -1, `a token reached the log: …${out.slice(Math.max(0, at - 200), at + 60)}…`);
    }
    const fast = lines().filter((l) => l.includes('"msg":"incoming request"') && l.includes('token=[REDACTED]'));
    assert.ok(fast.length >= 6, `${fast.length} masked token= lines`);
  });
});
