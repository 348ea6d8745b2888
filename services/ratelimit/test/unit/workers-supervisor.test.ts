// Worker mode's supervision (src/cluster/worker-supervisor.ts, issue 23 finding 6) on an injected
// clock: a replacement worker that cannot start no longer stops the service while another worker
// serves; the primary retries with the backoff formula (0.5 s doubling to 10 s, reset once a
// worker listens), logs and counts every failure with the worker's own reason, and publishes its
// state for the operator page. Only a worker that fails before any ever listened stops the service.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { StatsStore } from '@rls/engine';
import { FakeClock } from '@rls/testkit';
import { createLogger } from '../../src/logger.js';
import { WORKERS_SERVING, WORKERS_START_FAILURES, WORKERS_UNEXPECTED_EXITS, WorkerSupervisor } from '../../src/cluster/worker-supervisor.js';
import type { WorkersStatus } from '../../src/cluster/worker-status.js';

interface Rig {
  sup: WorkerSupervisor;
  clock: FakeClock;
  stats: StatsStore;
  forks: number[];
  timers: { at: number; fn: () => void }[];
  published: WorkersStatus[];
  gaveUp: string[];
  logs: Record<string, unknown>[];
  /** Runs the timers due by now. */
  runDue(): void;
}

function rig(wanted = 2): Rig {
  const clock = new FakeClock(1_000_000);
  const stats = new StatsStore();
  const forks: number[] = [];
  const timers: { at: number; fn: () => void }[] = [];
  const published: WorkersStatus[] = [];
  const gaveUp: string[] = [];
  const logs: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'info', format: 'json', destination: { write: (l: string) => logs.push(JSON.parse(l) as Record<string, unknown>) } });
  const sup = new WorkerSupervisor({
    wanted,
    stats,
    logger,
    fork: () => forks.push(clock.now()),
    giveUp: (r) => gaveUp.push(r),
    publish: (s) => published.push(s),
    now: () => clock.now(),
    delay: (fn, ms) => timers.push({ at: clock.now() + ms, fn }),
  });
  const runDue = (): void => {
    for (;;) {
      const i = timers.findIndex((t) => t.at <= clock.now());
      if (i < 0) return;
      const [t] = timers.splice(i, 1);
      t?.fn();
    }
  };
  return { sup, clock, stats, forks, timers, published, gaveUp, logs, runDue };
}

const msg = (l: Record<string, unknown>): unknown => l['@message'];

describe('WorkerSupervisor', () => {
  test('a worker that fails before any worker ever listened stops the service (a broken deployment)', () => {
    const r = rig();
    r.sup.startFailed(1, 'GRPC_SERVER_TLS_CERT/GRPC_SERVER_TLS_KEY: cannot load the key pair: no start line');
    r.sup.exited(1, 1, null);
    assert.deepEqual(r.gaveUp, ['worker start failure']);
    assert.equal(r.timers.length, 0, 'no retry');
    const fatal = r.logs.find((l) => msg(l) === 'worker failed to start; stopping the service');
    assert.equal(fatal?.reason, 'GRPC_SERVER_TLS_CERT/GRPC_SERVER_TLS_KEY: cannot load the key pair: no start line');
  });

  test('a replacement that cannot start is retried with backoff while another worker serves; counted, logged, published', () => {
    const r = rig();
    r.sup.ready(1, 101);
    r.sup.ready(2, 102);
    assert.deepEqual(r.logs.find((l) => msg(l) === 'all workers listening')?.pids, [101, 102]);
    assert.equal(r.stats.gauge(WORKERS_SERVING).value(), 2);

    // Worker 2 dies (a crash): replaced after 0.5 s.
    r.sup.exited(2, null, 'SIGKILL');
    assert.equal(r.stats.counter(WORKERS_UNEXPECTED_EXITS).value(), 1);
    assert.equal(r.stats.gauge(WORKERS_SERVING).value(), 1);
    assert.deepEqual(
      r.timers.map((t) => t.at - r.clock.now()),
      [500],
    );
    r.clock.advance(500);
    r.runDue();
    assert.equal(r.forks.length, 1);

    // Every replacement fails (the certificate on disk is broken): 1, 2, 4, 8, 10, 10 s.
    const waits: number[] = [];
    for (let id = 3; id <= 8; id++) {
      r.sup.startFailed(id, 'cannot load the key pair: no start line');
      r.sup.exited(id, 1, null);
      assert.equal(r.gaveUp.length, 0, 'the service keeps running');
      const t = r.timers.at(-1)!;
      waits.push(t.at - r.clock.now());
      r.clock.advance(t.at - r.clock.now());
      r.runDue();
    }
    assert.deepEqual(waits, [1000, 2000, 4000, 8000, 10_000, 10_000]);
    assert.equal(r.forks.length, 7);
    assert.equal(r.stats.counter(WORKERS_START_FAILURES).value(), 6);
    const lines = r.logs.filter((l) => msg(l) === 'replacement worker failed to start; the other workers keep serving; retrying');
    assert.equal(lines.length, 6);
    assert.deepEqual(lines.map((l) => l.retryInMs), waits);
    assert.equal(lines[0]?.reason, 'cannot load the key pair: no start line');
    assert.equal(lines[5]?.failuresInRow, 6);
    assert.equal(lines[5]?.serving, 1);

    // What the workers are told (the operator page): 1 of 2 serving, 6 failures since the first.
    const s = r.published.at(-1)!;
    assert.equal(s.t, 'rls-workers');
    assert.equal(s.wanted, 2);
    assert.equal(s.serving, 1);
    assert.equal(s.startFailures, 6);
    assert.equal(s.lastFailure?.reason, 'cannot load the key pair: no start line');
    assert.ok(s.failingSince !== undefined && s.failingSince < r.clock.now());
    assert.equal(s.nextStartAt, undefined, 'the last retry was forked');

    // The certificate is fixed: the next replacement listens; the backoff starts over.
    r.sup.ready(9, 109);
    assert.equal(r.logs.at(-1)?.failedStarts, 6);
    assert.equal(msg(r.logs.at(-1)!), 'replacement worker listening');
    assert.equal(r.sup.status().startFailures, 0);
    assert.equal(r.sup.status().serving, 2);
    assert.equal(r.stats.gauge(WORKERS_SERVING).value(), 2);
    r.sup.exited(9, null, 'SIGSEGV');
    assert.equal(r.timers.at(-1)!.at - r.clock.now(), 500);
  });

  test('the exit code stands in for a reason the worker could not send; zero workers serving is said so', () => {
    const r = rig(1);
    r.sup.ready(1, 101);
    r.sup.exited(1, 1, null);
    r.clock.advance(500);
    r.runDue();
    r.sup.exited(2, 7, null);
    const line = r.logs.find((l) => msg(l) === 'replacement worker failed to start; no worker is serving; retrying');
    assert.equal(line?.reason, 'exited with code 7');
    assert.equal(r.sup.status().serving, 0);
    assert.equal(r.sup.status().nextStartAt, r.clock.now() + 1000);
    assert.equal(r.gaveUp.length, 0, 'keeps retrying: the file may be fixed');
  });

  test('after stop(), exits are not replaced and waiting forks do not happen', () => {
    const r = rig();
    r.sup.ready(1, 101);
    r.sup.ready(2, 102);
    r.sup.exited(2, null, 'SIGKILL');
    r.sup.stop();
    r.sup.exited(1, 0, null);
    r.clock.advance(60_000);
    r.runDue();
    assert.equal(r.forks.length, 0);
    assert.equal(r.timers.length, 0);
  });
});
