// Bounded inflation of compressed gRPC messages (src/server/grpc-inflate.ts): small messages
// inflate synchronously, larger ones stream through zlib with every output chunk counted before
// it is kept, and stop as soon as the message limit or a budget is passed — never inflated whole
// and checked after. The process runs streaming inflations one at a time, connections in turn,
// paced to a rate of output bytes.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { FakeClock } from '@rls/testkit';
import {
  INFLATE_CANCELLED,
  INFLATE_CHUNK_BYTES,
  INFLATE_CORRUPT,
  INFLATE_OK,
  INFLATE_OVER_BUDGET,
  INFLATE_TOO_LARGE,
  InflateScheduler,
  inflateSmall,
  inflateStreaming,
  SMALL_INFLATE_BYTES,
  type InflateResult,
} from '../../src/server/grpc-inflate.js';

const MIB = 1024 * 1024;

function stream(payload: Buffer, maxOutput: number, budget = Infinity): Promise<{ r: InflateResult; held: number[]; calls: number }> {
  return new Promise((resolve) => {
    const held: number[] = [];
    let left = budget;
    let calls = 0;
    inflateStreaming(
      payload,
      maxOutput,
      (n) => {
        if (n > left) return 'over the test budget';
        left -= n;
        held.push(n);
        return undefined;
      },
      (r) => {
        calls++;
        // A second call would show up as calls > 1 on the next turn.
        setImmediate(() => resolve({ r, held, calls }));
      },
    );
  });
}

describe('inflateSmall', () => {
  test('a small message inflates synchronously', () => {
    const msg = Buffer.from('a rate limit request, more or less');
    const r = inflateSmall(gzipSync(msg), 4 * MIB);
    assert.equal(r?.code, INFLATE_OK);
    assert.deepEqual(r?.out, msg);
  });

  test('exactly SMALL_INFLATE_BYTES still counts as small; one byte more goes to the streaming path', () => {
    assert.equal(inflateSmall(gzipSync(Buffer.alloc(SMALL_INFLATE_BYTES, 7)), 4 * MIB)?.out?.length, SMALL_INFLATE_BYTES);
    assert.equal(inflateSmall(gzipSync(Buffer.alloc(SMALL_INFLATE_BYTES + 1, 7)), 4 * MIB), undefined);
  });

  test('a gzip trailer announcing more than a small message skips the attempt; a lie only picks the path', async () => {
    // The trailer's ISIZE says 1,000,000 bytes: straight to the streaming path, which checks it.
    const liar = Buffer.from(gzipSync(Buffer.from('small')));
    liar.writeUInt32LE(1_000_000, liar.length - 4);
    assert.equal(inflateSmall(liar, 4 * MIB), undefined);
    const { r } = await stream(liar, 4 * MIB);
    assert.equal(r.code, INFLATE_CORRUPT);
    // A bomb that claims to be small gets one attempt, bounded by the small size.
    const bomb = Buffer.from(gzipSync(Buffer.alloc(4_000_000)));
    bomb.writeUInt32LE(100, bomb.length - 4);
    assert.equal(inflateSmall(bomb, 4 * MIB), undefined);
  });

  test('over a message limit below the small size: TOO_LARGE at once', () => {
    assert.equal(inflateSmall(gzipSync(Buffer.alloc(2000)), 1000)?.code, INFLATE_TOO_LARGE);
  });

  test('not gzip: CORRUPT with zlib\'s reason', () => {
    const r = inflateSmall(Buffer.from('not gzip at all'), 4 * MIB);
    assert.equal(r?.code, INFLATE_CORRUPT);
    assert.match(r?.reason ?? '', /header/);
  });
});

describe('inflateStreaming', () => {
  test('inflates a large message, counting every byte once before keeping it', async () => {
    const msg = Buffer.alloc(1_000_000);
    for (let i = 0; i < msg.length; i++) msg[i] = (i * 7) & 0xff;
    const { r, held, calls } = await stream(gzipSync(msg), 4 * MIB);
    assert.equal(calls, 1);
    assert.equal(r.code, INFLATE_OK);
    assert.deepEqual(r.out, msg);
    assert.equal(held.reduce((a, b) => a + b, 0), msg.length);
    assert.ok(held.every((n) => n <= INFLATE_CHUNK_BYTES));
  });

  test('a bomb stops one chunk past the message limit: TOO_LARGE, never inflated whole', async () => {
    const bomb = gzipSync(Buffer.alloc(64 * MIB), { level: 9 });
    assert.ok(bomb.length < 100_000, `bomb of ${bomb.length} bytes`);
    const t0 = process.hrtime.bigint();
    const { r, held, calls } = await stream(bomb, 4 * MIB);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    assert.equal(calls, 1);
    assert.equal(r.code, INFLATE_TOO_LARGE);
    // Held: at most the limit (the chunk that passed it is refused before it is counted).
    assert.ok(held.reduce((a, b) => a + b, 0) <= 4 * MIB);
    // Inflating all 64 MiB takes ~30 ms+; stopping at 4 MiB a few.
    assert.ok(ms < 2000, `${ms} ms`);
  });

  test('a budget refusal stops it at once with the refusal as the reason', async () => {
    const { r, held, calls } = await stream(gzipSync(Buffer.alloc(2 * MIB)), 4 * MIB, 300_000);
    assert.equal(calls, 1);
    assert.equal(r.code, INFLATE_OVER_BUDGET);
    assert.equal(r.reason, 'over the test budget');
    assert.ok(held.reduce((a, b) => a + b, 0) <= 300_000);
  });

  test('corrupt data: CORRUPT', async () => {
    const good = gzipSync(Buffer.alloc(100_000, 1));
    const bad = Buffer.from(good);
    bad.fill(0x55, 20, 60);
    const { r, calls } = await stream(bad, 4 * MIB);
    assert.equal(calls, 1);
    assert.equal(r.code, INFLATE_CORRUPT);
  });

  test('cancel: CANCELLED, done called once, nothing more counted', async () => {
    const held: number[] = [];
    const results: InflateResult[] = [];
    const inflation = inflateStreaming(
      gzipSync(Buffer.alloc(32 * MIB)),
      64 * MIB,
      (n) => {
        held.push(n);
        if (held.length === 3) inflation.cancel();
        return undefined;
      },
      (r) => results.push(r),
    );
    await new Promise((r) => setTimeout(r, 200));
    inflation.cancel();
    assert.deepEqual(
      results.map((r) => r.code),
      [INFLATE_CANCELLED],
    );
    assert.equal(held.length, 3);
  });
});

/** An InflateScheduler on a fake clock whose delays run when the test says so. */
function paced(bytesPerSecond: number): { scheduler: InflateScheduler; clock: FakeClock; delays: { fn: () => void; ms: number }[] } {
  const clock = new FakeClock(0);
  const delays: { fn: () => void; ms: number }[] = [];
  const scheduler = new InflateScheduler({ bytesPerSecond, now: () => clock.now(), delay: (fn, ms) => delays.push({ fn, ms }) });
  return { scheduler, clock, delays };
}

describe('InflateScheduler', () => {
  test('one job at a time, in arrival order within a connection\'s lane', () => {
    const { scheduler } = paced(1e9);
    const lane = scheduler.lane();
    const log: string[] = [];
    const done: ((n: number) => void)[] = [];
    const job = (name: string) => (next: (n: number) => void) => {
      log.push(name);
      done.push(next);
    };
    lane.enter(job('a'));
    lane.enter(job('b'));
    lane.enter(job('c'));
    assert.deepEqual(log, ['a']);
    assert.equal(lane.queued, 2);
    done.shift()?.(10);
    assert.deepEqual(log, ['a', 'b']);
    done.shift()?.(10);
    done.shift()?.(10);
    assert.deepEqual(log, ['a', 'b', 'c']);
    assert.equal(lane.queued, 0);
  });

  test('connections take turns: one message from each lane with work, round robin', () => {
    const { scheduler } = paced(1e9);
    const [a, b, c] = [scheduler.lane(), scheduler.lane(), scheduler.lane()];
    const log: string[] = [];
    const done: ((n: number) => void)[] = [];
    const job = (name: string) => (next: (n: number) => void) => {
      log.push(name);
      done.push(next);
    };
    a.enter(job('a1')); // runs at once
    a.enter(job('a2'));
    a.enter(job('a3'));
    b.enter(job('b1'));
    c.enter(job('c1'));
    b.enter(job('b2'));
    while (done.length > 0) done.shift()?.(1);
    assert.deepEqual(log, ['a1', 'a2', 'b1', 'c1', 'a3', 'b2']);
    assert.equal(scheduler.waitingLanes, 0);
  });

  test('paced: after a job inflated beyond the bucket, the next waits until it refills', () => {
    const { scheduler, clock, delays } = paced(1000); // 1000 bytes/s, one second of burst
    const lane = scheduler.lane();
    const started: number[] = [];
    lane.enter((next) => {
      started.push(clock.now());
      next(3000); // 2000 beyond the bucket: two seconds to pay back
    });
    lane.enter((next) => {
      started.push(clock.now());
      next(500);
    });
    assert.deepEqual(started, [0]);
    assert.deepEqual(
      delays.map((d) => d.ms),
      [2000],
    );
    clock.advance(1999);
    delays.shift()?.fn(); // early (a timer may fire early on a busy machine): waits the rest
    assert.deepEqual(started, [0]);
    assert.deepEqual(
      delays.map((d) => d.ms),
      [1],
    );
    clock.advance(1);
    delays.shift()?.fn();
    assert.deepEqual(started, [0, 2000]);
    // 500 out of a bucket at 0: the next job waits half a second.
    lane.enter((next) => {
      started.push(clock.now());
      next(0);
    });
    assert.deepEqual(
      delays.map((d) => d.ms),
      [500],
    );
  });

  test('the bucket holds at most one second of output: a long idle spell buys no larger burst', () => {
    const { scheduler, clock, delays } = paced(1000);
    const lane = scheduler.lane();
    clock.advance(60_000);
    // The first spends the bucket, the second may still start (the bucket is not negative) and
    // takes it to -1000, the third waits: uncapped, 60 s of idle would have let all three run.
    lane.enter((next) => next(1000));
    lane.enter((next) => next(1000));
    lane.enter((next) => next(1000));
    assert.deepEqual(
      delays.map((d) => d.ms),
      [1000],
    );
  });

  test('100,000 jobs that finish at once run without deepening the stack', () => {
    const { scheduler } = paced(1e12);
    const lanes = [scheduler.lane(), scheduler.lane()];
    let ran = 0;
    let release: ((n: number) => void) | undefined;
    lanes[0]!.enter((next) => {
      release = next;
    });
    for (let i = 0; i < 100_000; i++) {
      lanes[i % 2]!.enter((next) => {
        ran++;
        next(0);
      });
    }
    release?.(0);
    assert.equal(ran, 100_000);
    assert.equal(scheduler.waitingLanes, 0);
  });
});
