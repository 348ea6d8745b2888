// The primary process of worker mode (WORKERS > 1). It forks the workers — they share the gRPC,
// HTTP and debug listeners through node:cluster's shared handles (the primary accepts and hands
// connections out round robin; Node 20 has no SO_REUSEPORT option) — owns the statistics sinks
// fed by the workers' batches, replaces a worker that dies — and a replacement that cannot start,
// with backoff, while the others serve (worker-supervisor.ts) — and on SIGTERM,
// SIGINT or SIGHUP forwards SIGTERM to every worker (each drains like a single process does),
// waits for them, pushes the last statistics and exits 0 (1 if a worker failed or the bound hit).
// It serves no requests itself; each worker answers health for itself, truthfully.
//
// The primary also owns what must exist once for the service: the rule source (primary-rules.ts:
// one file watcher or one xDS stream; each good load goes to every worker as a snapshot, and a
// worker started later asks for the current one before it listens), the statistics totals (a
// worker's debug /stats asks for them), and GRPC_UDS's socket file (a stale one is cleared here
// before any worker listens; node:cluster then binds the path once, in this process, and the
// workers share that handle — a worker probing the path itself would find its sibling listening).
import cluster, { type Worker } from 'node:cluster';
import { lstatSync, unlinkSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../logger.js';
import { removeStaleSocket } from '../server/listen-support.js';
import type { Settings } from '../settings.js';
import { startStatsSinks, type StatsSinksOptions } from '../stats/stats-sinks.js';
import { StatsStore } from '@rls/engine';
import { PRIMARY_OWNED_STATS, startPrimaryRuleSource } from './primary-rules.js';
import { isRulesRequest, type RulesErrorMessage, type RulesMessage } from './rules-channel.js';
import { isStatsBatch, isStatsTotalsQuery, StatsAggregator, statsTotalsOf } from './stats-relay.js';
import { isStartFailedMessage, type WorkersStatus } from './worker-status.js';
import { WorkerSupervisor } from './worker-supervisor.js';

export interface PrimaryOptions {
  workers: number;
  /** The rule source and GRPC_UDS settings (the primary owns both). */
  settings: Settings;
  logger: Logger;
  statsSinks: StatsSinksOptions;
  /** How long workers get to stop after the signal before they are killed. */
  stopBoundMs: number;
}

/** node's own flags without an inline script, so a worker runs the entry module with the same loaders. */
export function workerExecArgv(execArgv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const a = execArgv[i] as string;
    if (a === '-e' || a === '--eval' || a === '-p' || a === '--print') {
      i++;
      continue;
    }
    if (a.startsWith('--eval=') || a.startsWith('--print=')) continue;
    out.push(a);
  }
  return out;
}

export async function runPrimary(o: PrimaryOptions): Promise<void> {
  const { logger } = o;
  const here = fileURLToPath(import.meta.url);
  cluster.setupPrimary({ exec: join(dirname(here), `worker-entry${extname(here)}`), execArgv: workerExecArgv(process.execArgv) });
  // Round robin everywhere (Windows defaults to letting the OS pick).
  cluster.schedulingPolicy = cluster.SCHED_RR;

  const stats = new StatsStore();
  const aggregator = new StatsAggregator(stats, PRIMARY_OWNED_STATS);
  const udsPath = o.settings.grpcUds;
  if (udsPath !== '') {
    try {
      await removeStaleSocket(udsPath);
    } catch (err) {
      logger.fatal({ err: err instanceof Error ? err.message : String(err) }, 'cannot start listeners');
      process.exit(1);
    }
  }
  const sinks = await startStatsSinks(o.statsSinks, { store: stats, logger });
  const rules = startPrimaryRuleSource(o.settings, { stats, logger });
  const rulesMessage = (): RulesMessage => {
    const { seq, snapshot } = rules.current();
    return { t: 'rls-rules', seq, snapshot: snapshot ?? null };
  };
  const broadcast = (msg: object): void => {
    for (const w of Object.values(cluster.workers ?? {})) {
      if (w !== undefined) sendTo(w, msg);
    }
  };
  // A worker still starting may miss this; it asks for the current rules itself.
  rules.onChange(() => broadcast(rulesMessage()));

  rules.onFailure((f) => {
    // Cut here: the message crosses the IPC channel once per worker (the operator page shows it).
    const msg: RulesErrorMessage = { t: 'rls-rules-error', at: Date.now(), source: f.source, error: f.error.slice(0, 1000), ...(f.file !== undefined ? { file: f.file.slice(0, 256) } : {}) };
    broadcast(msg);
  });

  let stopping = false;
  let failed = false;
  const supervisor = new WorkerSupervisor({
    wanted: o.workers,
    stats,
    logger,
    fork: () => void cluster.fork(),
    giveUp: (reason) => {
      failed = true;
      stop(reason);
    },
    publish: (status: WorkersStatus) => broadcast(status),
    now: Date.now,
    delay: (fn, ms) => void setTimeout(fn, ms).unref(),
  });

  cluster.on('message', (worker, msg: unknown) => {
    if (isStatsBatch(msg)) {
      aggregator.apply(worker.id, msg);
      return;
    }
    if (isStatsTotalsQuery(msg)) {
      sendTo(worker, statsTotalsOf(stats, msg.id));
      return;
    }
    if (isRulesRequest(msg)) {
      sendTo(worker, rulesMessage());
      sendTo(worker, supervisor.status());
      return;
    }
    if (isStartFailedMessage(msg)) {
      supervisor.startFailed(worker.id, msg.reason);
      return;
    }
    if (typeof msg === 'object' && msg !== null && (msg as { t?: unknown }).t === 'rls-ready') supervisor.ready(worker.id, worker.process.pid);
  });

  let exited: (() => void) | undefined;
  cluster.on('exit', (worker, code, signal) => {
    aggregator.forget(worker.id);
    if (stopping) {
      if (code !== 0) failed = true;
      if (Object.keys(cluster.workers ?? {}).length === 0) exited?.();
      return;
    }
    supervisor.exited(worker.id, code, signal);
  });

  const stop = (reason: string): void => {
    if (stopping) return;
    stopping = true;
    supervisor.stop();
    rules.stop();
    logger.warn({ signal: reason, workers: Object.keys(cluster.workers ?? {}).length }, 'shutting down workers');
    const allGone = new Promise<void>((resolve) => {
      exited = resolve;
      if (Object.keys(cluster.workers ?? {}).length === 0) resolve();
    });
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    const bound = setTimeout(() => {
      logger.error({ boundMs: o.stopBoundMs }, 'workers did not stop in time; killing them');
      failed = true;
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
    }, o.stopBoundMs);
    void allGone
      .then(async () => {
        clearTimeout(bound);
        if (udsPath !== '') removeOwnSocket(udsPath);
        await sinks.stop();
      })
      .finally(() => process.exit(failed ? 1 : 0));
  };
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => stop(sig));

  // xDS without FORCE_START_WITHOUT_INITIAL_CONFIG: no worker (so no listener) before the first configuration.
  await rules.startable;
  if (stopping) return;
  logger.info({ workers: o.workers }, 'starting worker processes');
  for (let i = 0; i < o.workers; i++) cluster.fork();
}

/**
 * A message to one worker. One that is exiting may not get it: the callback takes the error (an
 * unhandled 'error' event would end the primary), and a replacement asks for the rules itself.
 */
function sendTo(worker: Worker, msg: object): void {
  if (!worker.isConnected()) return;
  worker.send(msg, undefined, {}, () => undefined);
}

/** After the last worker stopped nothing listens on the path any more: a socket left there is ours. */
function removeOwnSocket(path: string): void {
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path);
  } catch {
    // already gone (libuv unlinks a pipe it bound when the handle closes)
  }
}
