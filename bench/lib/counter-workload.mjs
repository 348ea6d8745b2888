// The counter-store work of a ShouldRateLimit request, for the store benches: each request
// increments `descriptors` keys (addend 1, TTL 60 s) drawn from `keys` distinct keys, in one call,
// `concurrency` requests in flight. Afterwards every key is read back through the same client and
// the sum compared with the increments made, so a candidate that dropped or doubled work shows it.
import { closedLoop } from './alternate.mjs';

export async function counterWorkload(store, { prefix, descriptors, keys, seconds, concurrency, settle }) {
  const keyNames = Array.from({ length: keys }, (_v, k) => `${prefix}:domain_key_value_${k}`);
  const r = await closedLoop({
    seconds,
    concurrency,
    op: (i) => {
      const ops = new Array(descriptors);
      // Spread over the key space with a large prime step so consecutive requests hit different nodes.
      for (let d = 0; d < descriptors; d++) ops[d] = { key: keyNames[(i * 7919 + d * 104_729) % keys], addend: 1, expireSeconds: 60, windowSeconds: 60 };
      return store.increment(ops);
    },
  });
  await settle?.();
  const values = await store.get(keyNames);
  const counted = values.reduce((a, b) => a + b, 0);
  return { ...r, expected: r.totalOps * descriptors, counted };
}
