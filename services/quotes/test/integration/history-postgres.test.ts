import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startPostgres, type PostgresServer } from '@rls/testkit';
import { openPostgresStore } from '../../src/store/postgres-store.js';
import { makeTestApp, type TestApp } from '../support/helpers.js';

// The same history requests through the whole app on SQLite and on PostgreSQL (both filled by the
// same simulated source) give the same bodies: the database does the aggregation, and both
// dialects aggregate alike. (Not always the same ETags: those digest the unrounded numbers, and the
// two databases may sum volumes in different orders, a difference far below the output's digits.)
describe('history answers: SQLite and PostgreSQL agree', () => {
  let pg: PostgresServer;
  let onPg: TestApp;
  let onSqlite: TestApp;
  before(async () => {
    pg = await startPostgres();
    await pg.createDatabase('history_app');
    onPg = await makeTestApp({ logLevel: 'warn', store: openPostgresStore(pg.urlFor('history_app')) });
    onSqlite = await makeTestApp({ logLevel: 'warn' });
  });
  after(async () => {
    await onPg.close();
    await onSqlite.close();
    await pg.stop();
  });

  test('range and startDate/endDate windows, intervals aggregated in the database', async () => {
    const urls = [
      '/api/v2/crypto?coin=BTC,ETH&range=5d&interval=15m&currency=USD',
      '/api/v2/crypto?coin=SOL&range=1mo&interval=90m&currency=EUR',
      '/api/v2/crypto?coin=BTC&range=1y&interval=1wk',
      '/api/v2/crypto?coin=ETH&startDate=2026-03-01&endDate=2026-03-14&interval=5d',
      '/api/v2/crypto?coin=BTC&startDate=2026-03-14T06:00:00Z&endDate=2026-03-15T06:00:00Z&interval=5m',
    ];
    for (const url of urls) {
      const [a, b] = await Promise.all([onPg, onSqlite].map((t) => t.app.inject({ url, headers: { authorization: `Bearer ${t.tokens.pro!}` } })));
      assert.equal(a!.statusCode, 200, `${url}: ${a!.body.slice(0, 200)}`);
      assert.equal(b!.statusCode, 200, url);
      assert.equal(a!.body.replace(/"took":\d+/, ''), b!.body.replace(/"took":\d+/, ''), url);
    }
  });
});
