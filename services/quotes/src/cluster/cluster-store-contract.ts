import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ClusterStore } from './types.js';

/**
 * The rules every ClusterStore keeps (memory in the unit tier, PostgreSQL in the e2e replicas
 * test). `make` gives a fresh, empty store; `wait(ms)` lets the store's clock move on by ms.
 */
export function clusterStoreContract(label: string, make: () => Promise<ClusterStore>, wait: (ms: number) => Promise<void>): void {
  test(`${label}: one holder at a time; renewals keep the fence; a new holder after expiry gets a higher one`, async () => {
    const s = await make();
    try {
      assert.equal(await s.lease.acquire('ingest', 'a', 300), 1);
      assert.equal(await s.lease.acquire('ingest', 'b', 300), undefined, 'b refused while a holds it');
      assert.equal(await s.lease.acquire('ingest', 'a', 300), 1, 'a renews in the same term');
      assert.equal(await s.lease.acquire('other', 'b', 300), 1, 'leases are per name');
      await wait(400);
      assert.equal(await s.lease.acquire('ingest', 'b', 300), 2, 'expired: b takes it with a new fence');
      assert.equal(await s.lease.acquire('ingest', 'a', 300), undefined, 'a no longer holds it');
      await s.lease.release('ingest', 'a');
      assert.equal(await s.lease.acquire('ingest', 'a', 300), undefined, 'releasing a lease one does not hold changes nothing');
      await s.lease.release('ingest', 'b');
      assert.equal(await s.lease.acquire('ingest', 'a', 300), 3, 'released: taken at once, new fence');
    } finally {
      await s.close();
    }
  });

  test(`${label}: state writes are fenced by the lease; versions increase across terms`, async () => {
    const s = await make();
    try {
      assert.equal(await s.state.version(), undefined);
      assert.equal((await s.versions()).marketState, undefined);
      assert.equal(await s.state.read(), undefined);
      const fa = (await s.lease.acquire('ingest', 'a', 300)) as number;
      assert.equal(await s.state.write({ name: 'ingest', holder: 'a', fence: fa }, 1000, '{"x":1}'), 1);
      assert.equal(await s.state.write({ name: 'ingest', holder: 'a', fence: fa }, 2000, '{"x":2}'), 2);
      assert.equal(await s.state.write({ name: 'ingest', holder: 'b', fence: fa }, 3000, 'no'), undefined, 'not the holder');
      assert.deepEqual(await s.state.read(), { version: 2, fetchedAt: 2000, body: '{"x":2}' });
      await wait(400);
      assert.equal(await s.state.write({ name: 'ingest', holder: 'a', fence: fa }, 4000, 'late'), undefined, 'an expired term cannot write');
      const fb = (await s.lease.acquire('ingest', 'b', 300)) as number;
      assert.equal(await s.state.write({ name: 'ingest', holder: 'a', fence: fa }, 5000, 'old'), undefined, 'an ended term cannot write');
      assert.equal(await s.state.write({ name: 'ingest', holder: 'b', fence: fb }, 6000, '{"x":3}'), 3);
      assert.equal(await s.state.version(), 3);
      assert.equal((await s.versions()).marketState, 3);
      assert.deepEqual(await s.state.read(), { version: 3, fetchedAt: 6000, body: '{"x":3}' });
    } finally {
      await s.close();
    }
  });
}
