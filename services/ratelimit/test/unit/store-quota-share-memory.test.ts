// The QuotaShareStore contract on the single-process memory store, and its sweep of buckets whose
// entries have all expired (so abandoned buckets do not accumulate).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryShareStore } from '@rls/engine';
import { runQuotaShareContract } from '../support/quota-share-contract.js';

runQuotaShareContract(
  'memory',
  () => {
    const store = new MemoryShareStore();
    return Promise.resolve({ replicas: [store, store] as const, cleanup: () => store.close() });
  },
  { propertyRuns: 300 },
);

test('memory share store: records whose entries all expired are swept once per entry lifetime', async () => {
  const store = new MemoryShareStore();
  const t0 = Date.UTC(2026, 10, 25);
  for (let i = 0; i < 1000; i++) await store.exchange([{ bucket: `b${i}`, updates: [{ instance: 'x', demand: 1 }] }], { nowMs: t0, entryTtlMs: 1000 });
  assert.equal(store.bucketCount, 1000);
  await store.exchange([{ bucket: 'live', updates: [{ instance: 'x', demand: 1 }] }], { nowMs: t0 + 1000, entryTtlMs: 1000 });
  assert.equal(store.bucketCount, 1);
});
