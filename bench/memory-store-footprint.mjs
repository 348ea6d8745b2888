// Heap per entry of the embedded counter store (packages/engine/src/store/memory-store.ts): inserts N
// keys of a given length, each with a one-hour TTL, and prints heap growth per key next to what the
// store charges (ENTRY_OVERHEAD_BYTES + key bytes). Used to choose ENTRY_OVERHEAD_BYTES.
//   node --expose-gc --conditions=source --import tsx bench/memory-store-footprint.mjs [--keys 200000] [--lengths 49,512,4096]
import { parseArgs } from 'node:util';
import { MemoryStore, ENTRY_OVERHEAD_BYTES } from '@rls/engine';

const { values } = parseArgs({ options: { keys: { type: 'string', default: '200000' }, lengths: { type: 'string', default: '49,512,4096' } } });
if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
const n = Number(values.keys);
for (const len of values.lengths.split(',').map(Number)) {
  const count = len > 1000 ? Math.min(n, 30_000) : n;
  const clock = { now: () => 1_800_000_000_000 };
  globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  const store = new MemoryStore({ clock, maxBytes: Number.MAX_SAFE_INTEGER });
  for (let i = 0; i < count; i++) {
    const id = String(i);
    // A fresh (flat, one-byte) string per key, as a parsed request would produce.
    const key = ('k'.repeat(len - id.length) + id).split('').join('');
    store.increment([{ key, addend: 1, expireSeconds: 3600 + (i % 600), windowSeconds: 3600 }]);
  }
  globalThis.gc();
  const perKey = (process.memoryUsage().heapUsed - before) / count;
  const charged = store.pressure().bytes / count;
  console.log(`key length ${len}: ${count} keys, heap ${perKey.toFixed(0)} B/key, charged ${charged.toFixed(0)} B/key (overhead ${ENTRY_OVERHEAD_BYTES}), heap - key bytes = ${(perKey - len).toFixed(0)} B`);
  await store.close();
}
