// `ratelimit`: settings → app (composed in app.ts) → first rules → listen; SIGTERM/SIGINT/SIGHUP
// drain and exit 0. Worker mode (WORKERS) decides here which role this process plays.
import cluster from 'node:cluster';
import { availableParallelism } from 'node:os';
import { composeRateLimitApp } from './app.js';
import { runPrimary } from './cluster/primary.js';
import { reportStartFailure, startWorkerRole } from './cluster/worker-role.js';
import { resolveWorkerCount } from './cluster/worker-settings.js';
import { isRateLimitError } from '@rls/engine';
import { createLogger } from './logger.js';
import { loadSettings, type LoadedSettings } from './settings.js';
import { systemProbe, upstreamDefaultsMisfit } from './upstream-defaults.js';

export async function run(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  let loaded: LoadedSettings;
  try {
    loaded = loadSettings(env);
  } catch (err) {
    const reason = isRateLimitError(err) ? err.message : String(err);
    process.stderr.write(`ratelimit: ${reason}\n`);
    return cannotStart(reason);
  }
  const { settings, warnings } = loaded;
  if (cluster.isPrimary) {
    // Bare `npx ratelimit` on a machine without upstream's layout: one line instead of a flood.
    const misfit = await upstreamDefaultsMisfit(settings, env, systemProbe);
    if (misfit !== undefined) {
      process.stderr.write(`${misfit}\n`);
      process.exit(1);
    }
  }
  const rootLogger = createLogger({ level: settings.logLevel, format: settings.logFormat });
  const logger = cluster.isWorker ? rootLogger.child({ worker: cluster.worker?.id }) : rootLogger;
  // Worker mode (WORKERS): the primary forks the workers and owns the stats sinks, the rule source
  // and the GRPC_UDS socket file; each worker runs the rest of run() with rules sent by the primary.
  const plan = resolveWorkerCount(settings, availableParallelism());
  if (cluster.isPrimary) {
    for (const w of warnings) logger.warn(w);
    if (plan.note !== undefined) logger.info(plan.note);
    if (plan.count > 1) {
      await runPrimary({ workers: plan.count, settings, logger, statsSinks: loaded.stats, stopBoundMs: settings.shutdownDrainDelayMs + settings.shutdownTimeoutMs + 5_000 });
      return;
    }
  }
  const workerRole = cluster.isWorker ? startWorkerRole(logger) : undefined;

  let composed: Awaited<ReturnType<typeof composeRateLimitApp>>;
  try {
    composed = await composeRateLimitApp(loaded, { logger, workerRole, workerCount: plan.count });
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    logger.fatal({ err: reason }, 'cannot build the service');
    return cannotStart(reason);
  }
  const { app, firstRules, abandonFirstRules } = composed;
  // Nothing listens yet, so a signal now (the primary stopping, an operator) has nothing to drain.
  const early = (): void => {
    abandonFirstRules();
    process.exit(0);
  };
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.once(sig, early);
  try {
    await firstRules();
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    logger.fatal({ err: reason }, workerRole !== undefined ? 'no rules from the primary process' : 'no rules');
    return cannotStart(reason);
  }
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.off(sig, early);
  try {
    await app.start();
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    logger.fatal({ err: reason }, 'cannot start listeners');
    await app.stop().catch(() => undefined);
    return cannotStart(`cannot start listeners: ${reason}`);
  }
  workerRole?.ready();

  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.warn({ signal, drainDelayMs: settings.shutdownDrainDelayMs, timeoutMs: settings.shutdownTimeoutMs }, 'shutting down');
    // The hard bound: whatever still hangs after the drain delay plus SHUTDOWN_TIMEOUT is abandoned.
    const bound = setTimeout(() => {
      logger.error({ timeoutMs: settings.shutdownTimeoutMs }, 'shutdown did not finish within SHUTDOWN_TIMEOUT; exiting');
      process.exit(1);
    }, settings.shutdownDrainDelayMs + settings.shutdownTimeoutMs);
    bound.unref();
    app
      .stop()
      .then(() => workerRole?.stop())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err: err instanceof Error ? err.message : String(err) }, 'error during shutdown');
          process.exit(1);
        },
      );
  };
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => shutdown(sig));
  workerRole?.onPrimaryGone(() => shutdown('primary gone'));
}

/** Exit 1 before serving; a worker first tells the primary why (it retries with backoff). */
async function cannotStart(reason: string): Promise<never> {
  await reportStartFailure(reason);
  process.exit(1);
}
