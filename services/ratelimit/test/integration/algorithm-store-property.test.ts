// Property test (fast-check, fixed seed): the Redis store (INCRBY/EXPIRE/GET and the GCRA Lua
// script) and the engine's memory store give identical results on random streams of mixed
// fixed-window, sliding-window and token-bucket batches under one controlled clock.
//
// The two stores expire keys on different clocks (Redis on its own, the memory store on the fake
// clock), so the streams are built where expiry cannot tell them apart: counter TTLs outlast the
// whole stream in both; every bucket of a stream shares one emission interval E of at least a
// minute and the clock moves in whole multiples of E, so a stored TAT is either "now" (TTL 1 ms,
// equivalent to a missing key because time never goes back) or at least E ahead (a TTL of a
// minute or more, longer than a run lasts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FakeClock, fcOptions, startRedis, type RedisServer } from '@rls/testkit';
import { MemoryStore, type CounterOp } from '@rls/engine';
import { RedisStore } from '../../src/backends/redis-store.js';

let redis: RedisServer;
let store: RedisStore;
before(async () => {
  redis = await startRedis();
  store = new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 2, timeoutMs: 5_000 });
  await store.waitUntilConnected(5_000);
});
after(async () => {
  await store.close();
  await redis.stop();
});

const KEYS = ['a', 'b', 'c'];
/** Counter TTL: far beyond any stream (the clock moves at most 40 × 8 × 2 h). */
const COUNTER_TTL_SECONDS = 100_000_000;

type OpSpec =
  | { kind: 'fixed'; key: number; addend: number }
  | { kind: 'sliding'; key: number; previous: number; addend: number }
  | { kind: 'bucket'; key: number; addend: number; burst: number };

const addendArb = fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 0, max: 3 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 20 }) });
const keyArb = fc.integer({ min: 0, max: KEYS.length - 1 });
const opArb: fc.Arbitrary<OpSpec> = fc.oneof(
  fc.record({ kind: fc.constant('fixed' as const), key: keyArb, addend: addendArb }),
  fc.record({ kind: fc.constant('sliding' as const), key: keyArb, previous: keyArb, addend: addendArb }),
  // A key's burst may change between batches (a reloaded rule): the stores must still agree.
  fc.record({ kind: fc.constant('bucket' as const), key: keyArb, addend: addendArb, burst: fc.integer({ min: 0, max: 8 }) }),
);
const stepArb = fc.record({ advanceE: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 8 })), batch: fc.array(opArb, { minLength: 1, maxLength: 6 }) });
const streamArb = fc.record({
  // At least a minute, not a round number, so µs arithmetic is exercised.
  emissionUs: fc.integer({ min: 60_000_000, max: 7_200_000_000 }),
  // A 16-digit start, anywhere from 2020 to 2033.
  startUs: fc.integer({ min: 1_577_836_800_000_000, max: 2_000_000_000_000_000 }),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 40 }),
});

describe('redis script store vs memory store', () => {
  test('identical results on random mixed streams with a controlled clock', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(streamArb, async ({ emissionUs, startUs, steps }) => {
        run++;
        // Fresh key names per run instead of FLUSHALL between runs.
        const ns = `r${run}:`;
        const clock = new FakeClock(0);
        let nowUs = startUs;
        clock.set(Math.floor(nowUs / 1000));
        const memory = new MemoryStore({ clock });
        const toOp = (o: OpSpec): CounterOp => {
          const key = KEYS[o.key] as string;
          switch (o.kind) {
            case 'fixed':
              return { key: `${ns}f:${key}`, addend: o.addend, expireSeconds: COUNTER_TTL_SECONDS, windowSeconds: 60 };
            case 'sliding':
              return { key: `${ns}s:${key}`, previousKey: `${ns}f:${KEYS[o.previous] as string}`, addend: o.addend, expireSeconds: COUNTER_TTL_SECONDS, windowSeconds: 60 };
            case 'bucket':
              return { key: `${ns}b:${key}`, addend: o.addend, expireSeconds: 0, windowSeconds: 60, bucket: { nowUs, emissionUs, toleranceUs: o.burst * emissionUs } };
          }
        };
        try {
          for (const [i, step] of steps.entries()) {
            nowUs += step.advanceE * emissionUs;
            // The memory store's clock follows the caller's, so its TTLs end where the TATs do.
            clock.set(Math.floor(nowUs / 1000));
            const ops = step.batch.map(toOp);
            const r = await store.execute(ops);
            const m = memory.execute(ops); // the memory store answers at once
            assert.deepEqual(r, m, `step ${i}: ${JSON.stringify(ops)}`);
          }
          const counters = KEYS.flatMap((k) => [`${ns}f:${k}`, `${ns}s:${k}`]);
          assert.deepEqual(await store.get(counters), memory.get(counters));
        } finally {
          await memory.close();
        }
      }),
      fcOptions(60),
    );
  });
});
