import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startPostgres, tempDir, type PostgresServer } from '@rls/testkit';
import type { Candle } from '../../src/domain/market.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { openPostgresStore } from '../../src/store/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import { TOKEN_BATCH, type Store, type TokenRecord } from '../../src/domain/repositories.js';

type OpenStore = () => Promise<{ store: Store; cleanup: () => Promise<void> }>;

const token = (id: string, hash: string, createdAt: number): TokenRecord => ({
  id,
  name: `name-${id}`,
  planId: 'pro',
  tokenHash: hash,
  prefix: 'qt_abc',
  createdAt,
  revokedAt: null,
});

function candles(n: number, start: number, step: number, seed = 1): Candle[] {
  const out: Candle[] = [];
  for (let i = 0; i < n; i++) {
    const p = 100 + Math.sin(i * seed) * 10 + i / 7;
    out.push({ time: start + i * step, open: p, high: p * 1.01, low: p * 0.99, close: p + 0.123456789, volume: 1000.5 + i });
  }
  return out;
}

/** The behaviour every Store must have, whatever holds the data. */
function storeContract(kind: string, open: OpenStore): void {
  describe(`store contract: ${kind}`, () => {
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

    test('migrations are idempotent', async () => {
      assert.deepEqual(await store.migrate(), []);
    });

    test('tokens: insert, find by hash and id, list in creation order, revoke once', async () => {
      await store.tokens.insert(token('t2', 'bb'.repeat(32), 2000));
      await store.tokens.insert(token('t1', 'aa'.repeat(32), 1000));
      assert.deepEqual(await store.tokens.findByHash('aa'.repeat(32)), token('t1', 'aa'.repeat(32), 1000));
      assert.equal((await store.tokens.findById('t2'))?.tokenHash, 'bb'.repeat(32));
      assert.equal(await store.tokens.findByHash('cc'.repeat(32)), undefined);
      assert.deepEqual((await store.tokens.list()).map((t) => t.id), ['t1', 't2']);
      await assert.rejects(store.tokens.insert(token('t3', 'aa'.repeat(32), 3000)), 'a hash is unique');
      assert.equal(await store.tokens.revoke('t1', 5000), true);
      assert.equal(await store.tokens.revoke('t1', 6000), false, 'already revoked');
      assert.equal(await store.tokens.revoke('nope', 6000), false);
      assert.equal((await store.tokens.findById('t1'))?.revokedAt, 5000);
    });

    test('tokens: find by ids in one call (revoked ones included, unknown ones left out), up to TOKEN_BATCH ids', async () => {
      for (let i = 0; i < 5; i++) await store.tokens.insert(token(`b${i}`, `${i}f`.repeat(32), 10_000 + i));
      await store.tokens.revoke('b1', 20_000);
      assert.deepEqual(await store.tokens.findByIds([]), []);
      const found = await store.tokens.findByIds(['b3', 'nope', 'b1', 'b0']);
      assert.deepEqual(found.map((r) => [r.id, r.revokedAt]).sort(), [['b0', null], ['b1', 20_000], ['b3', null]]);
      assert.deepEqual(found.find((r) => r.id === 'b3'), token('b3', '3f'.repeat(32), 10_003));
      const many = [...Array.from({ length: TOKEN_BATCH - 2 }, (_, i) => `missing-${i}`), 'b2', 'b4'];
      assert.deepEqual((await store.tokens.findByIds(many)).map((r) => r.id).sort(), ['b2', 'b4']);
    });

    test('usage: counts up to the limit per token and month, atomically', async () => {
      assert.equal(await store.usage.incrementIfBelow('u1', '2026-01', 0), undefined, 'a zero quota admits nothing');
      assert.equal(await store.usage.incrementIfBelow('u1', '2026-01', 2), 1);
      assert.equal(await store.usage.incrementIfBelow('u1', '2026-01', 2), 2);
      assert.equal(await store.usage.incrementIfBelow('u1', '2026-01', 2), undefined);
      assert.equal(await store.usage.get('u1', '2026-01'), 2);
      assert.equal(await store.usage.incrementIfBelow('u1', '2026-02', 2), 1, 'a new month starts from zero');
      assert.equal(await store.usage.get('u2', '2026-01'), 0);
      const results = await Promise.all(Array.from({ length: 50 }, () => store.usage.incrementIfBelow('u3', '2026-01', 30)));
      assert.equal(results.filter((r) => r !== undefined).length, 30);
      assert.equal(await store.usage.get('u3', '2026-01'), 30);
      assert.equal(await store.usage.add('u4', '2026-01', 5), 5);
      assert.equal(await store.usage.add('u4', '2026-01', 3), 8);
      assert.equal(await store.usage.incrementIfBelow('u4', '2026-01', 8), undefined);
      assert.deepEqual(await store.usage.listMonth('2026-01'), [
        { tokenId: 'u1', month: '2026-01', count: 2 },
        { tokenId: 'u3', month: '2026-01', count: 30 },
        { tokenId: 'u4', month: '2026-01', count: 8 },
      ]);
    });

    test('candles: bulk upsert, half-open range reads in order, replace on conflict', async () => {
      const rows = candles(20_000, 1_700_000_000, 60);
      assert.equal(await store.candles.upsert('BTC', '1m', rows.slice().reverse()), rows.length);
      const all = await store.candles.range('BTC', '1m', 0, 2e9);
      assert.equal(all.length, rows.length);
      assert.deepEqual(all, rows, 'floats come back exactly, sorted by time');
      const part = await store.candles.range('BTC', '1m', rows[10]!.time, rows[20]!.time);
      assert.deepEqual(part, rows.slice(10, 20));
      const changed = { ...rows[15]!, close: 42.5 };
      await store.candles.upsert('BTC', '1m', [changed]);
      assert.deepEqual((await store.candles.range('BTC', '1m', changed.time, changed.time + 1))[0], changed);
      assert.deepEqual(await store.candles.range('BTC', '1d', 0, 2e9), [], 'bases are separate series');
      assert.deepEqual(await store.candles.range('ETH', '1m', 0, 2e9), [], 'coins are separate series');
      assert.equal(await store.candles.upsert('ETH', '1m', []), 0);
    });

    test('candles: coverage per series', async () => {
      assert.equal(await store.candles.coverage('SOL', '1h'), undefined);
      await store.candles.setCoverage('SOL', '1h', { from: 3600, to: 7200 });
      assert.deepEqual(await store.candles.coverage('SOL', '1h'), { from: 3600, to: 7200 });
      await store.candles.setCoverage('SOL', '1h', { from: 0, to: 1_800_000_000 });
      assert.deepEqual(await store.candles.coverage('SOL', '1h'), { from: 0, to: 1_800_000_000 });
      assert.equal(await store.candles.coverage('SOL', '1d'), undefined);
    });
  });
}

storeContract('memory', () => Promise.resolve({ store: new MemoryStore(), cleanup: () => Promise.resolve() }));

storeContract('sqlite', () => {
  const dir = tempDir('quotes-store-');
  return Promise.resolve({ store: openSqliteStore(join(dir.path, 'db', 'q.sqlite')), cleanup: () => Promise.resolve(dir.cleanup()) });
});

storeContract('postgres', async () => {
  const pg: PostgresServer = await startPostgres();
  await pg.createDatabase('contract');
  // The server stops only after the store (and its pool) closed.
  return { store: openPostgresStore(pg.urlFor('contract')), cleanup: () => pg.stop() };
});
