// Rules pushed over xDS (CONFIG_TYPE=GRPC_XDS_SOTW): each ADS update's RateLimitConfig resources
// are decoded and compiled into one rule set. A resource that is not a RateLimitConfig is NACKed
// without touching the service (as upstream: no config event, no stat); a rule set that fails
// validation is counted as config_load_error, keeps the previous rules and is NACKed with the
// validation text; a good one is swapped in (config_load_success) and ACKed.
import { decodeRateLimitConfig, RATE_LIMIT_CONFIG_TYPE_URL, type RateLimitConfigMsg } from '@rls/rls-proto';
import { loadXdsRuleSet, type RandomSource, type RuleSet, type StatsStore } from '@rls/engine';
import type { Logger } from '../logger.js';
import type { BackoffPolicy, Scheduler } from './xds-backoff.js';
import type { RuleSnapshot } from './rule-snapshot.js';
import { AdsClient, type XdsTlsOptions, type XdsUpdate } from './xds-client.js';

/** The part of RateLimitService the provider drives. */
export interface RuleSink {
  setRuleSet(rules: RuleSet): void;
  recordConfigError(err: unknown): void;
}

export interface XdsRuleProviderOptions {
  serverUrl: string;
  nodeId: string;
  nodeMetadata: Readonly<Record<string, string>>;
  headers: Readonly<Record<string, string>>;
  tls?: XdsTlsOptions | undefined;
  maxReceiveBytes: number;
  connectTimeoutMs: number;
  backoff: BackoffPolicy;
  mergeDomainConfig: boolean;
  sink: RuleSink;
  stats: StatsStore;
  logger: Logger;
  scheduler?: Scheduler | undefined;
  random?: RandomSource | undefined;
}

export interface XdsRuleProvider {
  readonly client: AdsClient;
  start(): void;
  stop(): void;
  /** Resolves at the first configuration event (a load that succeeded or failed validation). */
  readonly firstConfigEvent: Promise<void>;
  /** Called after each update that was swapped in, with its resources as a snapshot (worker mode ships it). */
  onSnapshot(listener: (snapshot: RuleSnapshot) => void): void;
}

export function createXdsRuleProvider(opts: XdsRuleProviderOptions): XdsRuleProvider {
  const logger = opts.logger;
  let markFirst: () => void = () => undefined;
  const firstConfigEvent = new Promise<void>((resolve) => (markFirst = resolve));
  const snapshotListeners: ((snapshot: RuleSnapshot) => void)[] = [];

  const onUpdate = (update: XdsUpdate): string | undefined => {
    const resources: RateLimitConfigMsg[] = [];
    for (const any of update.resources) {
      if (any.typeUrl !== RATE_LIMIT_CONFIG_TYPE_URL) {
        return `mismatched message type: got ${JSON.stringify(any.typeUrl)} want ${JSON.stringify(RATE_LIMIT_CONFIG_TYPE_URL)}`;
      }
      try {
        resources.push(decodeRateLimitConfig(any.value));
      } catch (err) {
        return `error unmarshalling RateLimitConfig: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
    try {
      const rules = loadXdsRuleSet(resources, { mergeDomainConfig: opts.mergeDomainConfig, stats: opts.stats });
      opts.sink.setRuleSet(rules);
      for (const d of rules.summary()) {
        for (const r of d.descriptors) {
          if (r.limit !== undefined) logger.info({ domain: d.domain, descriptor: r.key, limit: r.limit, name: r.name || undefined }, 'loaded rate limit rule');
        }
      }
      logger.info({ version: update.versionInfo, resources: resources.length, domains: rules.domainCount }, 'rate limit configuration loaded from xDS');
      if (snapshotListeners.length > 0) {
        const snapshot: RuleSnapshot = { kind: 'xds', version: update.versionInfo, resources: update.resources.map((r) => Buffer.from(r.value).toString('base64')) };
        for (const l of snapshotListeners) l(snapshot);
      }
      return undefined;
    } catch (err) {
      opts.sink.recordConfigError(err);
      const message = err instanceof Error ? err.message : String(err);
      logger.error({ version: update.versionInfo, err: message }, 'error loading rate limit configuration from xDS; previous rules kept');
      return message;
    } finally {
      markFirst();
    }
  };

  const client = new AdsClient({
    serverUrl: opts.serverUrl,
    typeUrl: RATE_LIMIT_CONFIG_TYPE_URL,
    nodeId: opts.nodeId,
    nodeMetadata: opts.nodeMetadata,
    headers: opts.headers,
    tls: opts.tls,
    maxReceiveBytes: opts.maxReceiveBytes,
    connectTimeoutMs: opts.connectTimeoutMs,
    backoff: opts.backoff,
    onUpdate,
    logger,
    scheduler: opts.scheduler,
    random: opts.random,
  });
  return { client, start: () => client.start(), stop: () => client.stop(), firstConfigEvent, onSnapshot: (l) => void snapshotListeners.push(l) };
}
