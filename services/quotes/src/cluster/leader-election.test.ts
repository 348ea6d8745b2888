import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pino from 'pino';
import { FakeClock } from '@rls/testkit';
import { clusterStoreContract } from './cluster-store-contract.js';
import { LeaderElection } from './leader-election.js';
import { MemoryClusterStore } from './memory-cluster.js';
import type { LeaseStore, LeaseTerm } from './types.js';

const log = pino({ level: 'silent' });

/** Timers the test fires by hand: only the election's deadline matters (ticks are called directly). */
function manualTimers() {
  const timeouts = new Map<number, { at: number; fn: () => void }>();
  let id = 0;
  let now = (): number => 0;
  const timers = {
    setInterval: (() => ({ unref: () => undefined })) as unknown as typeof setInterval,
    clearInterval: (() => undefined) as typeof clearInterval,
    setTimeout: ((fn: () => void, ms: number) => {
      const key = ++id;
      timeouts.set(key, { at: now() + ms, fn });
      return { unref: () => undefined, [Symbol.toPrimitive]: () => key } as unknown as NodeJS.Timeout;
    }) as unknown as typeof setTimeout,
    clearTimeout: ((t: unknown) => void timeouts.delete(Number(t))) as typeof clearTimeout,
  };
  return {
    timers,
    bind: (f: () => number) => (now = f),
    /** Fires every timeout due by now. */
    fire: () => {
      for (const [k, t] of [...timeouts]) {
        if (t.at <= now()) {
          timeouts.delete(k);
          t.fn();
        }
      }
    },
  };
}

interface Replica {
  election: LeaderElection;
  events: string[];
  timers: ReturnType<typeof manualTimers>;
}

function replica(name: string, lease: LeaseStore, clock: FakeClock, ttlMs = 5000): Replica {
  const events: string[] = [];
  const timers = manualTimers();
  timers.bind(() => clock.now());
  const election = new LeaderElection({
    lease,
    name: 'ingest',
    holder: name,
    ttlMs,
    now: () => clock.now(),
    log,
    timers: timers.timers,
    onElected: (t: LeaseTerm) => events.push(`elected ${t.fence} @${clock.now()}`),
    onLost: (reason) => events.push(`lost @${clock.now()}: ${reason}`),
  });
  return { election, events, timers };
}

/** A lease store whose calls fail while `down` (a database this replica cannot reach). */
function flaky(inner: LeaseStore): LeaseStore & { down: boolean } {
  const f = {
    down: false,
    acquire: (n: string, h: string, ttl: number) => (f.down ? Promise.reject(new Error('connection lost')) : inner.acquire(n, h, ttl)),
    release: (n: string, h: string) => (f.down ? Promise.reject(new Error('connection lost')) : inner.release(n, h)),
  };
  return f;
}

describe('leader election on the ingest lease', () => {
  test('one leader; a leader cut off from the database stops ingesting before anyone else may start', async () => {
    const clock = new FakeClock(1_000_000);
    const store = new MemoryClusterStore(() => clock.now());
    const aLease = flaky(store);
    const a = replica('a', aLease, clock);
    const b = replica('b', store, clock);
    await a.election.tick();
    await b.election.tick();
    assert.deepEqual(a.events, ['elected 1 @1000000']);
    assert.deepEqual(b.events, []);
    assert.equal(a.election.isLeader(), true);
    assert.equal(a.election.periodMs, 1000);

    // Renewals every second; the last one that succeeds is sent at +1 s.
    clock.advance(1000);
    await a.election.tick();
    aLease.down = true;
    const lostAt = 1_001_000 + 4000; // sent + 80 % of the lease
    const takenAt = 1_001_000 + 5000; // the store's lease ends a whole lease after that
    for (let t = 1_002_000; t <= takenAt + 1000; t += 250) {
      clock.set(t);
      a.timers.fire();
      if (t % 1000 === 0) {
        await a.election.tick();
        await b.election.tick();
      }
      // At every instant, at most one replica may ingest.
      assert.ok(!(a.election.isLeader() && b.election.isLeader()), `two leaders at ${t}`);
      if (t < lostAt) assert.equal(a.election.isLeader(), true, `a still leads at ${t}`);
      if (t >= lostAt) assert.equal(a.election.isLeader(), false, `a stopped at ${t}`);
    }
    assert.deepEqual(a.events, ['elected 1 @1000000', `lost @${lostAt}: the ingest lease was not renewed in time`]);
    assert.deepEqual(b.events, [`elected 2 @${takenAt}`], 'b takes over when the lease expired, with a higher fence');

    // The old term's writes are refused by the store.
    assert.equal(await store.write({ name: 'ingest', holder: 'a', fence: 1 }, 0, '{}'), undefined);
    assert.equal(await store.write({ name: 'ingest', holder: 'b', fence: 2 }, 0, '{}'), 1);
    // Back online, a only competes (b holds the lease).
    aLease.down = false;
    await a.election.tick();
    assert.equal(a.election.isLeader(), false);
  });

  test('a slow renewal counts from when it was sent, not from when it returned', async () => {
    const clock = new FakeClock(0);
    const store = new MemoryClusterStore(() => clock.now());
    let delay = 0;
    const slow: LeaseStore = {
      acquire: async (n, h, ttl) => {
        const fence = await store.acquire(n, h, ttl);
        clock.advance(delay); // the answer arrives late
        return fence;
      },
      release: (n, h) => store.release(n, h),
    };
    const a = replica('a', slow, clock);
    await a.election.tick();
    delay = 3500;
    clock.set(1000);
    await a.election.tick(); // sent at 1000, returns at 4500: trusted until 1000 + 4000
    assert.equal(clock.now(), 4500);
    assert.equal(a.election.isLeader(), true);
    clock.set(4999);
    assert.equal(a.election.isLeader(), true);
    clock.set(5000);
    assert.equal(a.election.isLeader(), false, 'not trusted past sent + 80 % of the lease');
    a.timers.fire();
    assert.match(a.events.at(-1) ?? '', /^lost @5000/);
  });

  test('a stopping leader releases the lease: another replica takes it on its next attempt', async () => {
    const clock = new FakeClock(0);
    const store = new MemoryClusterStore(() => clock.now());
    const a = replica('a', store, clock);
    const b = replica('b', store, clock);
    await a.election.tick();
    await b.election.tick();
    assert.equal(b.election.isLeader(), false);
    await a.election.stop();
    assert.equal(a.election.isLeader(), false);
    await b.election.tick();
    assert.deepEqual(b.events, ['elected 2 @0']);
  });
});

describe('ClusterStore contract (memory)', () => {
  const clock = new FakeClock(0);
  clusterStoreContract(
    'memory',
    () => Promise.resolve(new MemoryClusterStore(() => clock.now())),
    (ms) => {
      clock.advance(ms);
      return Promise.resolve();
    },
  );
});
