// The worker side of worker mode: statistics go to the primary through the relay, the rules come
// from the primary (it owns the rule source and sends every good load as a snapshot), the debug
// server's /stats asks the primary for the service totals, the primary learns when this worker
// listens (or why it cannot start), the primary's state of the workers reaches the operator page,
// and a worker whose primary is gone stops itself.
import cluster from 'node:cluster';
import type { Logger } from '../logger.js';
import { isRuleSnapshot, type RuleSnapshot } from '../provider/rule-snapshot.js';
import { StatsStore } from '@rls/engine';
import { isRulesErrorMessage, isRulesMessage, RULES_GET, type RulesErrorMessage, type RulesMessage } from './rules-channel.js';
import { isStatsTotals, storeOfTotals, WorkerStatsRelay, type StatsBatch, type StatsTotals, type StatsTotalsQuery } from './stats-relay.js';
import { isWorkersStatus, START_FAILURE_REASON_MAX, type StartFailedMessage, type WorkersStatus } from './worker-status.js';

/** How long /stats waits for the primary's totals before answering with an error. */
export const STATS_TOTALS_TIMEOUT_MS = 5_000;
/** How long a worker that cannot start waits for its reason to reach the primary before it exits. */
const START_FAILURE_SEND_MS = 1_000;

/**
 * Tells the primary why this worker cannot start (it logs and counts it, and retries with
 * backoff); resolves once sent, or after a second. Nothing to do outside worker mode.
 */
export function reportStartFailure(reason: string): Promise<void> {
  if (!cluster.isWorker || process.send === undefined || !process.connected) return Promise.resolve();
  const msg: StartFailedMessage = { t: 'rls-start-failed', reason: reason.slice(0, START_FAILURE_REASON_MAX) };
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, START_FAILURE_SEND_MS);
    process.send?.(msg, undefined, {}, () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export interface WorkerRole {
  readonly id: number;
  /** The worker's own registry (the app counts into it; the relay forwards it). */
  readonly stats: StatsStore;
  /**
   * Resolves with the primary's current rules (undefined: no load has succeeded yet) once they
   * arrived; rejects when the primary is gone first. The worker opens no listener before.
   */
  readonly firstRules: Promise<void>;
  /** Calls `fn` with the current snapshot at once (when one arrived) and with every newer one. */
  onRules(fn: (snapshot: RuleSnapshot | undefined) => void): void;
  /** Calls `fn` for every load the primary rejects from now on (the operator page's reload history). */
  onRulesError(fn: (failure: RulesErrorMessage) => void): void;
  /** The primary's last word on its workers: how many serve, replacements failing to start (the operator page). */
  workersStatus(): WorkersStatus | undefined;
  /** The service-wide statistics: this worker's changes are sent first, then the primary's totals are read. */
  statsTotals(): Promise<StatsStore>;
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

  // Rules: the latest snapshot by sequence number (a broadcast and the answer to our request may
  // both arrive; an older one never replaces a newer one).
  let rulesSeq = -1;
  let rules: RuleSnapshot | undefined;
  const rulesListeners: ((snapshot: RuleSnapshot | undefined) => void)[] = [];
  const rulesErrorListeners: ((failure: RulesErrorMessage) => void)[] = [];
  let gotRules: () => void = () => undefined;
  let noPrimary: (err: Error) => void = () => undefined;
  const firstRules = new Promise<void>((resolve, reject) => {
    gotRules = resolve;
    noPrimary = reject;
  });
  // Nobody may be awaiting yet; the rejection is still observed by whoever awaits later.
  firstRules.catch(() => undefined);

  let workers: WorkersStatus | undefined;
  const totalsWaiting = new Map<number, { resolve: (t: StatsTotals) => void; timer: NodeJS.Timeout }>();
  let totalsSeq = 0;

  process.on('message', (msg: unknown) => {
    if (isRulesMessage(msg)) {
      onRulesMessage(msg);
      return;
    }
    if (isRulesErrorMessage(msg)) {
      for (const l of rulesErrorListeners) l(msg);
      return;
    }
    if (isWorkersStatus(msg)) {
      workers = msg;
      return;
    }
    if (isStatsTotals(msg)) {
      const w = totalsWaiting.get(msg.id);
      if (w === undefined) return;
      totalsWaiting.delete(msg.id);
      clearTimeout(w.timer);
      w.resolve(msg);
    }
  });
  const onRulesMessage = (msg: RulesMessage): void => {
    if (msg.seq <= rulesSeq) return;
    if (msg.snapshot !== null && !isRuleSnapshot(msg.snapshot)) {
      logger.error({ seq: msg.seq }, 'malformed rule snapshot from the primary; previous rules kept');
      return;
    }
    rulesSeq = msg.seq;
    rules = msg.snapshot ?? undefined;
    for (const l of rulesListeners) l(rules);
    gotRules();
  };
  process.once('disconnect', () => noPrimary(new Error('the primary process is gone')));
  send({ t: RULES_GET }, () => undefined);

  return {
    id,
    stats,
    firstRules,
    onRules: (fn) => {
      rulesListeners.push(fn);
      if (rulesSeq >= 0) fn(rules);
    },
    onRulesError: (fn) => void rulesErrorListeners.push(fn),
    workersStatus: () => workers,
    statsTotals: async () => {
      await relay.flush();
      const queryId = ++totalsSeq;
      const totals = await new Promise<StatsTotals>((resolve, reject) => {
        const timer = setTimeout(() => {
          totalsWaiting.delete(queryId);
          reject(new Error(`no statistics totals from the primary process within ${STATS_TOTALS_TIMEOUT_MS} ms`));
        }, STATS_TOTALS_TIMEOUT_MS);
        timer.unref();
        totalsWaiting.set(queryId, { resolve, timer });
        const query: StatsTotalsQuery = { t: 'rls-stats-get', id: queryId };
        send(query, () => undefined);
      });
      return storeOfTotals(totals, new StatsStore());
    },
    ready: () => send({ t: 'rls-ready' }, () => undefined),
    onPrimaryGone: (fn) =>
      process.once('disconnect', () => {
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
