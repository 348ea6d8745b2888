// The worker side of worker mode: statistics go to the primary through the relay, the primary
// learns when this worker listens, and a worker whose primary is gone stops itself.
import cluster from 'node:cluster';
import type { Logger } from '../logger.js';
import { StatsStore } from '../stats/stats-store.js';
import { WorkerStatsRelay, type StatsBatch } from './stats-relay.js';

export interface WorkerRole {
  readonly id: number;
  /** The worker's own registry (the app counts into it; the relay forwards it). */
  readonly stats: StatsStore;
  /** Tells the primary the listeners are open. */
  ready(): void;
  /** Calls `fn` once when the IPC channel to the primary closes (the primary died). */
  onPrimaryGone(fn: () => void): void;
  /** Sends the last statistics and logs what this worker served. */
  stop(): Promise<void>;
}

export function startWorkerRole(logger: Logger): WorkerRole {
  const id = cluster.worker?.id ?? 0;
  const stats = new StatsStore();
  const send = (msg: unknown, done: () => void): void => {
    if (process.send === undefined || !process.connected) {
      done();
      return;
    }
    process.send(msg, undefined, {}, () => done());
  };
  const relay = new WorkerStatsRelay(stats, (batch: StatsBatch, done) => send(batch, done));
  relay.start();
  let stopped = false;
  return {
    id,
    stats,
    ready: () => send({ t: 'rls-ready' }, () => undefined),
    onPrimaryGone: (fn) => process.once('disconnect', () => {
      if (!stopped) fn();
    }),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await relay.stop();
      // Process-level evidence of the load spread; the service totals are the primary's.
      logger.info({ worker: id, pid: process.pid, requests: stats.counterValue('ratelimit_server.ShouldRateLimit.total_requests') }, 'worker stopped');
    },
  };
}
