// The behaviour every QuotaShareStore must show (packages/engine/src/quota/share-store.ts), run
// against the memory store and Redis. Time is the caller's (`nowMs`), so expiry is exact on every
// store. The property case replays random operations from two replicas against the store and
// against the ledger functions run in TypeScript: the Redis scripts must agree with them step
// by step, and the bucket's reserved total must never pass its capacity.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fcOptions } from '@rls/testkit';
import { exchangeEntries, reserveEntries, reservedOf, releaseEntries, type QuotaShareStore, type ShareEntry } from '@rls/engine';

export interface ShareHarness {
  /** Two handles on the same shared state (two replicas); the memory store passes one object twice. */
  readonly replicas: readonly [QuotaShareStore, QuotaShareStore];
  cleanup(): Promise<void>;
}

const T0 = Date.UTC(2026, 10, 25);
const TTL = 10_000;
const timing = (nowMs: number, holdMs = 0) => ({ nowMs, entryTtlMs: TTL, holdMs });

export function runQuotaShareContract(name: string, make: () => Promise<ShareHarness>, opts: { propertyRuns?: number } = {}): void {
  describe(`QuotaShareStore contract: ${name}`, () => {
    const withStores = async (fn: (a: QuotaShareStore, b: QuotaShareStore) => Promise<void>): Promise<void> => {
      const h = await make();
      try {
        await fn(h.replicas[0], h.replicas[1]);
      } finally {
        await h.cleanup();
      }
    };

    test('exchange: each replica writes its instances and reads every live one, sorted by id; a new instance starts at grant 0', () =>
      withStores(async (a, b) => {
        assert.deepEqual(await a.exchange([{ bucket: 'k1', updates: [{ instance: 'r1-b', demand: 7 }] }], timing(T0)), [[{ instance: 'r1-b', demand: 7, grant: 0 }]]);
        const [seen, other] = await b.exchange(
          [
            { bucket: 'k1', updates: [{ instance: 'r2-a', demand: 3 }] },
            { bucket: 'k2', updates: [] },
          ],
          timing(T0 + 1),
        );
        assert.deepEqual(seen, [
          { instance: 'r1-b', demand: 7, grant: 0 },
          { instance: 'r2-a', demand: 3, grant: 0 },
        ]);
        assert.deepEqual(other, []);
      }));

    test('reserve: increases fill the capacity in request order and stop there; a later demand update keeps the grant', () =>
      withStores(async (a, b) => {
        await a.exchange([{ bucket: 'k', updates: [{ instance: 'a1', demand: 80 }, { instance: 'a2', demand: 80 }] }], timing(T0));
        assert.deepEqual(await a.reserve([{ bucket: 'k', capacity: 100, requests: [{ instance: 'a1', want: 60 }, { instance: 'a2', want: 60 }] }], timing(T0)), [[60, 40]]);
        assert.deepEqual(await b.reserve([{ bucket: 'k', capacity: 100, requests: [{ instance: 'b1', want: 50 }] }], timing(T0 + 1)), [[0]]);
        const [live] = await b.exchange([{ bucket: 'k', updates: [{ instance: 'a1', demand: 5 }] }], timing(T0 + 2));
        assert.deepEqual(live, [
          { instance: 'a1', demand: 5, grant: 60 },
          { instance: 'a2', demand: 80, grant: 40 },
          { instance: 'b1', demand: 0, grant: 0 },
        ]);
      }));

    test('a decrease is granted at once, and its capacity is handed out only after the hold', () =>
      withStores(async (a, b) => {
        await a.reserve([{ bucket: 'k', capacity: 100, requests: [{ instance: 'a1', want: 100 }] }], timing(T0, 500));
        assert.deepEqual(await a.reserve([{ bucket: 'k', capacity: 100, requests: [{ instance: 'a1', want: 30 }] }], timing(T0 + 10, 500)), [[30]]);
        // Inside the hold the old 100 is still reserved.
        assert.deepEqual(await b.reserve([{ bucket: 'k', capacity: 100, requests: [{ instance: 'b1', want: 70 }] }], timing(T0 + 509, 500)), [[0]]);
        // The holder itself may grow back into its held capacity.
        assert.deepEqual(await a.reserve([{ bucket: 'k', capacity: 100, requests: [{ instance: 'a1', want: 90 }] }], timing(T0 + 509, 500)), [[90]]);
        assert.deepEqual(await a.reserve([{ bucket: 'k', capacity: 100, requests: [{ instance: 'a1', want: 30 }] }], timing(T0 + 600, 500)), [[30]]);
        assert.deepEqual(await b.reserve([{ bucket: 'k', capacity: 100, requests: [{ instance: 'b1', want: 70 }] }], timing(T0 + 1100, 500)), [[70]]);
      }));

    test('within one batch, decreases are applied before increases', () =>
      withStores(async (a) => {
        await a.reserve([{ bucket: 'k', capacity: 10, requests: [{ instance: 'x', want: 10 }] }], timing(T0));
        assert.deepEqual(await a.reserve([{ bucket: 'k', capacity: 10, requests: [{ instance: 'y', want: 6 }, { instance: 'x', want: 4 }] }], timing(T0 + 1)), [[6, 4]]);
      }));

    test('a lowered capacity blocks increases until the grants fit; nobody is cut without asking', () =>
      withStores(async (a) => {
        await a.reserve([{ bucket: 'k', capacity: 100, requests: [{ instance: 'x', want: 50 }, { instance: 'y', want: 50 }] }], timing(T0));
        assert.deepEqual(await a.reserve([{ bucket: 'k', capacity: 40, requests: [{ instance: 'x', want: 80 }] }], timing(T0 + 1)), [[50]]);
        assert.deepEqual(await a.reserve([{ bucket: 'k', capacity: 40, requests: [{ instance: 'y', want: 20 }, { instance: 'x', want: 20 }] }], timing(T0 + 2)), [[20, 20]]);
      }));

    test('entries expire entryTtlMs after their last write, releasing their grant; release drops entries at once', () =>
      withStores(async (a, b) => {
        await a.exchange([{ bucket: 'k', updates: [{ instance: 'a1', demand: 1 }] }], timing(T0));
        await a.reserve([{ bucket: 'k', capacity: 10, requests: [{ instance: 'a1', want: 10 }] }], timing(T0 + 1000));
        assert.deepEqual(await b.reserve([{ bucket: 'k', capacity: 10, requests: [{ instance: 'b1', want: 10 }] }], timing(T0 + 1000 + TTL - 1)), [[0]]);
        const [live] = await b.exchange([{ bucket: 'k', updates: [] }], timing(T0 + 1000 + TTL));
        assert.deepEqual(live, [{ instance: 'b1', demand: 0, grant: 0 }]);
        assert.deepEqual(await b.reserve([{ bucket: 'k', capacity: 10, requests: [{ instance: 'b1', want: 10 }] }], timing(T0 + 1000 + TTL)), [[10]]);
        await b.release('k', ['b1', 'nobody']);
        assert.deepEqual(await a.exchange([{ bucket: 'k', updates: [] }], timing(T0 + 1000 + TTL + 1)), [[]]);
      }));

    test('empty batches and buckets that were never written', () =>
      withStores(async (a) => {
        assert.deepEqual(await a.exchange([], timing(T0)), []);
        assert.deepEqual(await a.reserve([], timing(T0)), []);
        await a.release('never', ['x']);
        assert.deepEqual(await a.exchange([{ bucket: 'never', updates: [] }], timing(T0)), [[]]);
      }));

    test('random operations from two replicas agree with the ledger model, and the reserved total never passes the capacity', async () => {
      type Op =
        | { kind: 'exchange'; replica: 0 | 1; instance: number; demand: number; dt: number }
        | { kind: 'reserve'; replica: 0 | 1; wants: [number, number][]; dt: number; hold: number }
        | { kind: 'release'; replica: 0 | 1; instance: number; dt: number };
      const inst = fc.integer({ min: 0, max: 5 });
      const dt = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3000 }), fc.integer({ min: TTL - 5, max: TTL + 5 }));
      const opArb: fc.Arbitrary<Op> = fc.oneof(
        fc.record({ kind: fc.constant('exchange' as const), replica: fc.constantFrom(0 as const, 1 as const), instance: inst, demand: fc.nat({ max: 200 }), dt }),
        fc.record({
          kind: fc.constant('reserve' as const),
          replica: fc.constantFrom(0 as const, 1 as const),
          wants: fc.uniqueArray(fc.tuple(inst, fc.nat({ max: 120 })), { maxLength: 4, selector: (w) => w[0] }),
          dt,
          hold: fc.constantFrom(0, 200, 2000),
        }),
        fc.record({ kind: fc.constant('release' as const), replica: fc.constantFrom(0 as const, 1 as const), instance: inst, dt }),
      );
      const CAP = 100;
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), async (ops) => {
          const h = await make();
          try {
            const model = new Map<string, ShareEntry>();
            let now = T0;
            // Each replica owns the instances of its own name space, as streams are per replica.
            const id = (replica: number, i: number): string => `r${replica}-${i}`;
            const bucket = `p${Math.floor(Math.random() * 1e9)}`;
            for (const op of ops) {
              now += op.dt;
              const store = h.replicas[op.replica];
              if (op.kind === 'exchange') {
                const updates = [{ instance: id(op.replica, op.instance), demand: op.demand }];
                const [got] = await store.exchange([{ bucket, updates }], { nowMs: now, entryTtlMs: TTL });
                assert.deepEqual(got, exchangeEntries(model, updates, now, TTL));
              } else if (op.kind === 'reserve') {
                const requests = op.wants.map(([i, want]) => ({ instance: id(op.replica, i), want }));
                const [got] = await store.reserve([{ bucket, capacity: CAP, requests }], { nowMs: now, entryTtlMs: TTL, holdMs: op.hold });
                assert.deepEqual(got, reserveEntries(model, CAP, requests, now, TTL, op.hold));
              } else {
                await store.release(bucket, [id(op.replica, op.instance)]);
                releaseEntries(model, [id(op.replica, op.instance)]);
              }
              let reserved = 0;
              for (const e of model.values()) if (e.expiresAt > now) reserved += reservedOf(e, now);
              assert.ok(reserved <= CAP, `reserved ${reserved} > ${CAP}`);
            }
          } finally {
            await h.cleanup();
          }
        }),
        fcOptions(opts.propertyRuns ?? 150),
      );
    });
  });
}
