import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startPostgres, tempDir } from '@rls/testkit';
import { MemoryStore } from '../../src/store/memory-store.js';
import { openPostgresStore } from '../../src/store/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import type { Store } from '../../src/domain/repositories.js';

type OpenStore = () => Promise<{ store: Store; cleanup: () => Promise<void> }>;

/** The repositories added for real market data (migration 002), the same on every store. */
function contract(kind: string, open: OpenStore): void {
  describe(`market-data store contract: ${kind}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    before(async () => {
      ({ store, cleanup } = await open());
      await store.migrate();
    });
    after(async () => {
      await store.close();
      await cleanup();
    });

    test('fx_daily: upsert replaces by (currency, date); inclusive date ranges; last date', async () => {
      assert.equal(await store.fxRates.lastDate('BRL'), undefined);
      await store.fxRates.upsert('BRL', 'ptax', [
        { date: '2026-03-13', rate: 5.5 },
        { date: '2026-03-12', rate: 5.25 },
      ]);
      await store.fxRates.upsert('BRL', 'ptax', [{ date: '2026-03-13', rate: 5.4321 }]);
      await store.fxRates.upsert('EUR', 'ecb', [{ date: '2026-03-16', rate: 0.9 }]);
      assert.deepEqual(await store.fxRates.range('BRL', '2026-03-12', '2026-03-13'), [
        { date: '2026-03-12', rate: 5.25 },
        { date: '2026-03-13', rate: 5.4321 },
      ]);
      assert.equal(await store.fxRates.lastDate('BRL'), '2026-03-13');
      assert.deepEqual(await store.fxRates.range('BRL', '2026-03-13', '2026-03-20'), [{ date: '2026-03-13', rate: 5.4321 }]);
    });

    test('backfill_state: put replaces; get and list', async () => {
      const st = { symbol: 'BTC', base: '1h' as const, from: 0, cursor: 1_700_000_000, done: false, updatedAt: 1, lastError: 'network' };
      await store.backfill.put(st);
      await store.backfill.put({ ...st, base: '1d', cursor: 5 });
      await store.backfill.put({ ...st, cursor: 1_800_000_000, done: true, lastError: null, updatedAt: 2 });
      assert.deepEqual(await store.backfill.get('BTC', '1h'), { ...st, cursor: 1_800_000_000, done: true, lastError: null, updatedAt: 2 });
      assert.equal(await store.backfill.get('ETH', '1h'), undefined);
      assert.deepEqual((await store.backfill.list()).map((s) => `${s.symbol}/${s.base}/${s.cursor}`), ['BTC/1d/5', 'BTC/1h/1800000000']);
    });

    test('candles: count in [from, to)', async () => {
      await store.candles.upsert('ADA', '1m', [0, 60, 120, 180].map((time) => ({ time, open: 1, high: 1, low: 1, close: 1, volume: 1 })));
      assert.equal(await store.candles.count('ADA', '1m', 60, 180), 2);
      assert.equal(await store.candles.count('NOPE', '1m', 0, 999), 0);
    });
  });
}

contract('memory', () => Promise.resolve({ store: new MemoryStore(), cleanup: () => Promise.resolve() }));
contract('sqlite', () => {
  const dir = tempDir('quotes-store2-');
  return Promise.resolve({ store: openSqliteStore(join(dir.path, 'q.sqlite')), cleanup: () => Promise.resolve(dir.cleanup()) });
});
contract('postgres', async () => {
  const pg = await startPostgres();
  await pg.createDatabase('market');
  return { store: openPostgresStore(pg.urlFor('market')), cleanup: () => pg.stop() };
});
