// Simulated Envoy instances (testkit) with skewed and shifting demand against two RLQS replicas
// (two balancers, each behind its own grpc-js server: the phase-1 stand-in for the lean
// transport) sharing a real Redis: the admitted total stays within the global quota (the bound
// is the quota per second plus, for each assignment that changed, the token bucket capacity it
// starts with), each instance's share reaches max-min fairness within the documented time,
// an idle bucket is abandoned and dropped, and after a replica restarts its instances reconnect
// and get assignments while the grants stay within the quota.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_BALANCER_TUNING, QuotaBalancer, StatsStore, quotaShareKey, type QuotaBalancerOptions } from '@rls/engine';
import { bucketKey } from '@rls/rls-proto';
import { FakeClock, startRedis, waitFor, type RedisServer } from '@rls/testkit';
import { RedisStore } from '../../src/backends/redis-store.js';
import { RedisQuotaShareStore } from '../../src/backends/redis-quota-share.js';
import { hostRlqs } from '../support/rlqs-grpc-js-host.js';
import { API, BURST, QUOTA, RULES, RlqsFleet, rateOf, type FleetReplica } from '../support/rlqs-fleet.js';


let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});


async function setup(clock: FakeClock, tuning: Partial<QuotaBalancerOptions> = {}) {
  await redis.call('FLUSHALL');
  const pools: RedisStore[] = [];
  const makeReplica = async (id: string, tickOffsetMs: number, port = 0): Promise<FleetReplica> => {
    const counters = new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 2, timeoutMs: 2_000 });
    await counters.waitUntilConnected(5_000);
    pools.push(counters);
    const balancer = new QuotaBalancer({
      ...DEFAULT_BALANCER_TUNING,
      replicaId: id,
      clock,
      store: new RedisQuotaShareStore({ sender: counters }),
      rules: () => RULES,
      stats: new StatsStore(),
      keyPrefix: 't:',
      holdMs: 500,
      abandonAfterMs: 5_000,
      idleAbandonMs: 0,
      ...tuning,
    });
    return { balancer, host: await hostRlqs(balancer, port), tickOffsetMs };
  };
  const replicas = [await makeReplica('r0', 0), await makeReplica('r1', 500)];
  const fleet = new RlqsFleet(clock, replicas, API);
  const shareStore = new RedisQuotaShareStore({ sender: pools[0]! });
  const grantsTotal = async (): Promise<number> => {
    const [live] = await shareStore.exchange([{ bucket: quotaShareKey('t:', 'edge', bucketKey(API)), updates: [] }], { nowMs: clock.now(), entryTtlMs: 60_000 });
    return live!.reduce((n, e) => n + e.grant, 0) / 1_000_000;
  };
  return {
    fleet,
    replicas,
    makeReplica,
    grantsTotal,
    cleanup: async () => {
      fleet.close();
      await Promise.all(fleet.replicas.map((r) => r.host.stop()));
      await Promise.all(pools.map((p) => p.close()));
    },
  };
}

/** Assignments an instance received that started a new token bucket (the first one or a replacement). */
const changes = (fleet: RlqsFleet): number => fleet.envoys.reduce((n, e) => n + e.sim.counters.replaced + (e.sim.counters.assignments > 0 ? 1 : 0), 0);

describe('RLQS: simulated Envoys against two replicas on Redis', () => {
  test('skewed then shifting demand: within the quota, max-min shares within the documented time', async (t) => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const s = await setup(clock);
    try {
      const { fleet } = s;
      fleet.add(0, 10);
      fleet.add(0, 40);
      fleet.add(1, 150);
      fleet.add(1, 300);
      // Before the first assignment the instances apply no_assignment_behavior (allow all here).
      await fleet.run(6_000);
      for (const e of fleet.envoys) assert.equal(e.sim.stateOf(API), 'active');
      assert.deepEqual(fleet.envoys.flatMap((e) => e.sim.violations), []);

      // Converged: max-min of (10, 40, 150, 300) under 100 is (10, 30, 30, 30).
      const shares = fleet.envoys.map((e) => rateOf(e.sim.strategyOf(API)));
      [10, 30, 30, 30].forEach((want, i) => assert.ok(Math.abs(shares[i]! - want) <= want * 0.05, `instance ${i}: ${shares[i]}/s, max-min ${want}/s`));
      let start = Math.floor(clock.now() / 1000);
      let changesBefore = changes(fleet);
      await fleet.run(10_000);
      let admitted = fleet.admittedBetween(start, start + 10);
      let bound = QUOTA * 10 + (changes(fleet) - changesBefore) * BURST;
      assert.ok(admitted <= bound, `stable: admitted ${admitted} in 10 s, bound ${bound}`);
      assert.ok(admitted >= QUOTA * 10 * 0.9, `stable: only ${admitted} admitted in 10 s of a ${QUOTA}/s quota under excess demand`);
      assert.ok((await s.grantsTotal()) <= QUOTA);
      t.diagnostic(`stable 10 s: admitted ${admitted} (quota ${QUOTA * 10}, bound ${bound}), shares ${shares.map((r) => r.toFixed(2)).join(', ')} req/s`);

      // Shift: the quiet instances become busy and the busy ones quiet.
      [300, 150, 40, 10].forEach((r, i) => (fleet.envoys[i]!.rate = r));
      start = Math.floor(clock.now() / 1000);
      changesBefore = changes(fleet);
      const target = [30, 30, 30, 10];
      const converged = (): boolean => fleet.envoys.every((e, i) => Math.abs(rateOf(e.sim.strategyOf(API)) - target[i]!) <= target[i]! * 0.05 + 0.5);
      let convergedAfter = -1;
      for (let sec = 1; sec <= 12; sec++) {
        await fleet.run(1_000);
        assert.ok((await s.grantsTotal()) <= QUOTA, `second ${sec} of the shift: grants pass the quota`);
        if (convergedAfter < 0 && converged()) convergedAfter = sec;
        if (!converged()) convergedAfter = -1;
      }
      // Documented bound (docs/ratelimit.md, "RLQS"): a fall from 300/s to 10/s against a water level of
      // 30/s with decay 0.5 needs ⌈log2(290 / 20)⌉ = 4 reports of 1 s, then three ticks of 1 s
      // and the 0.5 s hold: 8 s.
      assert.ok(convergedAfter > 0 && convergedAfter <= 8, `converged after ${convergedAfter} s`);
      admitted = fleet.admittedBetween(start, start + 12);
      bound = QUOTA * 12 + (changes(fleet) - changesBefore) * BURST;
      assert.ok(admitted <= bound, `shift: admitted ${admitted} in 12 s, bound ${bound}`);
      t.diagnostic(`shift: converged after ${convergedAfter} s; admitted ${admitted} in 12 s (quota ${QUOTA * 12}, bound ${bound} with ${changes(fleet) - changesBefore} new token buckets)`);
      assert.deepEqual(fleet.envoys.flatMap((e) => e.sim.violations), []);
    } finally {
      await s.cleanup();
    }
  });

  test('an instance with no traffic for idleAbandonMs is sent an abandon and drops the bucket; its next request watches again', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const s = await setup(clock, { idleAbandonMs: 4_000 });
    try {
      const { fleet } = s;
      const busy = fleet.add(0, 50);
      const quiet = fleet.add(1, 20);
      await fleet.run(3_000);
      quiet.rate = 0;
      await fleet.run(6_000);
      assert.equal(quiet.sim.counters.abandonedByServer, 1);
      assert.equal(quiet.sim.stateOf(API), undefined);
      assert.equal(busy.sim.stateOf(API), 'active');
      // Its grant was released: the busy instance grows into the whole quota.
      await fleet.run(3_000);
      assert.equal(rateOf(busy.sim.strategyOf(API)), QUOTA);
      quiet.rate = 5;
      await fleet.run(2_000);
      assert.equal(quiet.sim.stateOf(API), 'active');
    } finally {
      await s.cleanup();
    }
  });

  test('a replica restarts: its instances reconnect and get assignments, the grants stay within the quota', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const s = await setup(clock);
    try {
      const { fleet } = s;
      fleet.add(0, 80);
      const moved = [fleet.add(1, 80), fleet.add(1, 80)];
      await fleet.run(5_000);
      const old = fleet.replicas[1]!;
      const port = Number(old.host.address.split(':')[1]);
      old.host.kill();
      await Promise.all(moved.map((e) => waitFor(() => !e.sim.connected, { what: 'the stream to break' })));
      fleet.replace(1, await s.makeReplica('r1b', 500, port));
      const before = moved.map((e) => e.sim.counters.assignments);
      await fleet.run(3_000);
      moved.forEach((e, i) => {
        assert.ok(e.sim.counters.streamsOpened >= 2, 'reopened its stream');
        assert.ok(e.sim.counters.assignments > before[i]!, 'got an assignment from the new replica');
        assert.equal(e.sim.stateOf(API), 'active');
      });
      for (let sec = 0; sec < 15; sec++) {
        await fleet.run(1_000);
        assert.ok((await s.grantsTotal()) <= QUOTA);
      }
      // Once the dead replica's entries expired (assignment TTL + two ticks), the three share fairly.
      const shares = fleet.envoys.map((e) => rateOf(e.sim.strategyOf(API)));
      shares.forEach((r, i) => assert.ok(Math.abs(r - QUOTA / 3) <= 2, `instance ${i}: ${r}/s after the restart settled`));
    } finally {
      await s.cleanup();
    }
  });
});
