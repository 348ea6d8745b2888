// Starts the statistics sinks the options ask for. Selection:
//   disabled                  → none;
//   push.mode 'tagged'        → DogStatsD push (takes the place of plain push, as upstream);
//   push.mode 'statsd'        → plain statsd push;
//   pull.enabled              → Prometheus endpoint — alongside push if both are on. Upstream
//                               refuses that combination ("unable to use more than one stats
//                               sink"); since USE_STATS_PUSH defaults to true, it forced users
//                               to turn statsd off first. Both read the same registry, so we allow it;
//   neither push nor pull     → statsd lines written to the log at debug level (upstream's
//                               stdout sink).
import type { AddressInfo } from 'node:net';
import type { Logger } from '../logger.js';
import { LogStatsTransport } from './log-transport.js';
import { startMetricsServer, type ListenAddress, type MetricsServer } from './metrics-server.js';
import type { Mogrifier } from './mogrifiers.js';
import type { StatsMapping } from './prom-mapping.js';
import { PrometheusSink } from './prometheus-sink.js';
import { StatsPushSink, type IntervalScheduler } from './push-sink.js';
import { PlainStatsdFormatter, TaggedStatsdFormatter } from './statsd-line.js';
import { createStatsdTransport, type StatsdTransport } from './statsd-transport.js';
import type { StatsStore, StatTags } from '@rls/engine';

export interface StatsSinksOptions {
  disabled: boolean;
  extraTags: StatTags;
  flushIntervalMs: number;
  push: {
    mode: 'off' | 'statsd' | 'tagged';
    host: string;
    port: number;
    protocol: 'tcp' | 'udp';
    mogrifiers: readonly Mogrifier[];
  };
  pull: { enabled: false } | { enabled: true; address: ListenAddress; path: string; mapping: StatsMapping; maxConnections?: number | undefined };
}

export interface StatsSinksDeps {
  store: StatsStore;
  logger: Logger;
  scheduler?: IntervalScheduler;
  /** Replaces the network transport of the push sink (tests, embedding). */
  transport?: StatsdTransport;
}

export interface StatsSinks {
  /** Push now (counters deltas, gauges); a no-op without a push or log sink. */
  flush(): void;
  /** Final push, closes sockets and the metrics listener. */
  stop(): Promise<void>;
  /** The metrics listener's address when pull is on (port 0 ⇒ the one picked). */
  readonly metricsAddress: AddressInfo | undefined;
  readonly prometheus: PrometheusSink | undefined;
}

export async function startStatsSinks(opts: StatsSinksOptions, deps: StatsSinksDeps): Promise<StatsSinks> {
  const { store, logger } = deps;
  if (opts.disabled) {
    return { flush: () => {}, stop: () => Promise.resolve(), metricsAddress: undefined, prometheus: undefined };
  }
  let push: StatsPushSink | undefined;
  const scheduler = deps.scheduler;
  const pushDeps = (formatter: PlainStatsdFormatter | TaggedStatsdFormatter, transport: StatsdTransport) =>
    scheduler === undefined ? { store, formatter, transport, logger } : { store, formatter, transport, logger, scheduler };
  if (opts.push.mode !== 'off') {
    const formatter = opts.push.mode === 'tagged' ? new TaggedStatsdFormatter(opts.extraTags, opts.push.mogrifiers) : new PlainStatsdFormatter(opts.extraTags);
    const transport = deps.transport ?? createStatsdTransport({ host: opts.push.host, port: opts.push.port, protocol: opts.push.protocol, logger: logger.child({ component: 'statsd' }) });
    push = new StatsPushSink({ flushIntervalMs: opts.flushIntervalMs }, pushDeps(formatter, transport));
  } else if (!opts.pull.enabled && logger.isLevelEnabled('debug')) {
    // Upstream logs stats when no sink is configured; we do so only when the log level shows
    // them, so the per-request timer observations cost nothing otherwise.
    push = new StatsPushSink({ flushIntervalMs: opts.flushIntervalMs }, pushDeps(new PlainStatsdFormatter(opts.extraTags), new LogStatsTransport(logger.child({ component: 'stats' }))));
  }

  let prometheus: PrometheusSink | undefined;
  let server: MetricsServer | undefined;
  if (opts.pull.enabled) {
    prometheus = new PrometheusSink(store, { mapping: opts.pull.mapping, extraTags: opts.extraTags }, logger.child({ component: 'metrics' }));
    prometheus.start();
    try {
      server = await startMetricsServer({ address: opts.pull.address, path: opts.pull.path, maxConnections: opts.pull.maxConnections }, prometheus, logger);
    } catch (err) {
      prometheus.stop();
      throw err;
    }
    logger.info({ address: `${server.address.address}:${server.address.port}`, path: opts.pull.path }, 'metrics endpoint listening');
  }
  push?.start();

  return {
    flush: () => push?.flush(),
    stop: async () => {
      prometheus?.stop();
      await Promise.all([push?.stop(), server?.close()]);
    },
    metricsAddress: server?.address,
    prometheus,
  };
}
