// The ratelimit service's implementation choices, in one module: the limiter options, the operator
// monitor (OPERATOR_PAGE), the local answer memo, the gRPC server's TLS, where the rules' load
// errors go, and the wrappers on the decision path. app.ts (buildRateLimitApp) only assembles what
// these return; the counter store is chosen in compose-counter-store.ts.
//
// The decision path's wrappers are declared in DECISION_PATH, in the order they are applied
// (innermost first), and applied by one function (applyWrappers) from that list; a wrapper whose
// feature is off is skipped. Three layers are wrapped:
//   store     what the service calls: the counter store, then tracing (each round trip a child span
//             of the decision's span), then the operator page's latency timing (one call in 16).
//   decision  the decoded call (gRPC calls the memo did not answer, HTTP /json): the service's
//             shouldRateLimit, then tracing (one span per call), then the operator page's top list.
//   encoded   gRPC bytes in, bytes out, around decoding + decision: the local answer memo (repeats
//             of requests answered from the local over-limit cache; off with tracing, since every
//             call must get its span), then the operator page observing the memo's answers (only
//             with the memo: other answers it already saw as decisions).
// With default settings (OPERATOR_PAGE=loopback, LOCAL_CACHE_SIZE_IN_BYTES=0, TRACING_ENABLED=false)
// the operator wrappers are on and the others off.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { EMPTY_QUOTA_RULES, QuotaBalancer, RateLimitError, type Clock, type CounterStore, type LimiterOptions, type QuotaRuleSet, type QuotaShareStore, type RandomSource, type RateLimitService, type RuleSet, type StatsStore } from '@rls/engine';
import type { Logger } from './logger.js';
import { RlqsService } from './server/rlqs-calls.js';
import { balancerTuningOf, rlqsServiceTuningOf } from './server/rlqs-settings.js';
import { OperatorMonitor } from './operator/operator-monitor.js';
import type { XdsRuleProviderOptions } from './provider/xds-rule-provider.js';
import type { EncodedShouldRateLimitFn, GrpcTlsOptions, ShouldRateLimitFn } from './server/grpc-server-types.js';
import { LocalAnswerMemo } from './server/local-answer-memo.js';
import type { RequestLimits } from '@rls/rls-proto';
import { loadKeyPair } from './server/tls-cert-reloader.js';
import { clientCertificateProblem } from './server/tls-client-verify.js';
import type { Settings } from './settings.js';
import type { Tracing } from './tracing/tracing.js';

/** The wrappers of each layer of the decision path, by name, innermost first (see the header). */
export const DECISION_PATH = {
  store: ['tracing', 'operator'],
  decision: ['tracing', 'operator'],
  encoded: ['memo', 'operator'],
} as const;

/** One wrapper of a layer: `wrap` is undefined when its feature is off. */
export interface Wrapper<F> {
  readonly name: string;
  readonly wrap: ((next: F) => F) | undefined;
}

/** `base` with the wrappers applied in list order (the first is innermost), and the names applied. */
export function applyWrappers<F>(base: F, wrappers: readonly Wrapper<F>[]): { readonly value: F; readonly applied: readonly string[] } {
  let value = base;
  const applied: string[] = [];
  for (const w of wrappers) {
    if (w.wrap === undefined) continue;
    value = w.wrap(value);
    applied.push(w.name);
  }
  return { value, applied };
}

/** The features that wrap the decision path (undefined: off). */
export interface DecisionPathParts {
  readonly tracing: Tracing | undefined;
  readonly operator: OperatorMonitor | undefined;
}

/** The store layer's wrappers, in DECISION_PATH.store's order. */
export function storeWrappers({ tracing, operator }: DecisionPathParts): readonly Wrapper<CounterStore>[] {
  const byName: Record<(typeof DECISION_PATH.store)[number], Wrapper<CounterStore>['wrap']> = {
    tracing: tracing === undefined ? undefined : (s) => tracing.traceStore(s),
    operator: operator === undefined ? undefined : (s) => operator.timeStore(s),
  };
  return DECISION_PATH.store.map((name) => ({ name, wrap: byName[name] }));
}

/** The decision layer's wrappers, in DECISION_PATH.decision's order. */
export function decisionWrappers({ tracing, operator }: DecisionPathParts): readonly Wrapper<ShouldRateLimitFn>[] {
  const byName: Record<(typeof DECISION_PATH.decision)[number], Wrapper<ShouldRateLimitFn>['wrap']> = {
    tracing: tracing === undefined ? undefined : (fn) => tracing.traceShouldRateLimit(fn),
    operator: operator === undefined ? undefined : (fn) => operator.wrapDecision(fn),
  };
  return DECISION_PATH.decision.map((name) => ({ name, wrap: byName[name] }));
}

/** The encoded layer's wrappers, in DECISION_PATH.encoded's order (`memo` undefined: the memo is off). */
export function encodedWrappers({ operator }: DecisionPathParts, memo: LocalAnswerMemo | undefined): readonly Wrapper<EncodedShouldRateLimitFn>[] {
  const byName: Record<(typeof DECISION_PATH.encoded)[number], Wrapper<EncodedShouldRateLimitFn>['wrap']> = {
    memo: memo?.wrap,
    // Observes the memo's answers only; without the memo every answer was a decision it saw.
    operator: memo === undefined || operator === undefined ? undefined : operator.wrapMemo,
  };
  return DECISION_PATH.encoded.map((name) => ({ name, wrap: byName[name] }));
}

/** The store the service calls: `store` wrapped as DECISION_PATH.store declares. */
export function composeServiceStore(store: CounterStore, parts: DecisionPathParts): { readonly store: CounterStore; readonly applied: readonly string[] } {
  const { value, applied } = applyWrappers(store, storeWrappers(parts));
  return { store: value, applied };
}

/** The decision path above the service, as the gRPC and HTTP servers take it. */
export interface DecisionPath {
  /** The decoded call (HTTP /json; gRPC calls the memo did not answer). */
  readonly shouldRateLimit: ShouldRateLimitFn;
  /** The gRPC server's wrapper of the byte-level call; undefined when no encoded wrapper is on. */
  readonly wrapEncoded: ((next: EncodedShouldRateLimitFn) => EncodedShouldRateLimitFn) | undefined;
  /** The wrappers applied, by layer, innermost first. */
  readonly applied: { readonly decision: readonly string[]; readonly encoded: readonly string[] };
}

/** The decision path over `service`, wrapped as DECISION_PATH.decision and .encoded declare. */
export function composeDecisionPath(service: RateLimitService, parts: DecisionPathParts): DecisionPath {
  const decision = applyWrappers<ShouldRateLimitFn>(service.shouldRateLimit.bind(service), decisionWrappers(parts));
  const memo = answerMemoFor(service, parts.tracing);
  const encoded = encodedWrappers(parts, memo);
  const encodedApplied = encoded.filter((w) => w.wrap !== undefined).map((w) => w.name);
  return {
    shouldRateLimit: decision.value,
    wrapEncoded: encodedApplied.length === 0 ? undefined : (next) => applyWrappers(next, encoded).value,
    applied: { decision: decision.applied, encoded: encodedApplied },
  };
}

/**
 * The local answer memo: on when the service has a local over-limit cache (LOCAL_CACHE_SIZE_IN_BYTES
 * > 0) and tracing is off (every call must get its span).
 */
export function answerMemoFor(service: RateLimitService, tracing: Tracing | undefined): LocalAnswerMemo | undefined {
  return service.localCache !== undefined && tracing === undefined ? new LocalAnswerMemo() : undefined;
}

/** The operator page's monitor; undefined with OPERATOR_PAGE=off. */
export function operatorMonitorFor(
  settings: Settings,
  deps: { readonly clock: Clock; readonly random: RandomSource; readonly stats: StatsStore; readonly requestLimits: RequestLimits },
): OperatorMonitor | undefined {
  if (settings.operatorPage === 'off') return undefined;
  return new OperatorMonitor({
    ...deps,
    topSize: settings.operatorTopSize,
    sampleEvery: settings.operatorSampleEvery,
    chartRules: settings.operatorChartRules,
  });
}

/** Where xDS rule sets and load errors go: the service, and the operator page's rules view when it is on. */
export function xdsRuleSink(service: RateLimitService, operator: OperatorMonitor | undefined, clock: Clock): XdsRuleProviderOptions['sink'] {
  if (operator === undefined) return service;
  return {
    setRuleSet: (rules: RuleSet) => service.setRuleSet(rules),
    recordConfigError: (err: unknown) => {
      service.recordConfigError(err);
      operator.rules.failed('xds', err, clock.now());
    },
  };
}

/** `ratelimit_server.<method>.total_requests` and `.response_time`, per unary call. */
export function callStatsRecorder(stats: StatsStore): (method: string, ms: number) => void {
  const callStats = new Map<string, { total: ReturnType<StatsStore['counter']>; time: ReturnType<StatsStore['timer']> }>();
  return (method, ms) => {
    let h = callStats.get(method);
    if (h === undefined) {
      h = { total: stats.counter(`ratelimit_server.${method}.total_requests`), time: stats.timer(`ratelimit_server.${method}.response_time`) };
      callStats.set(method, h);
    }
    h.total.inc();
    h.time.record(Math.round(ms));
  };
}

export function limiterOptionsFrom(s: Settings): LimiterOptions {
  return Object.freeze({
    cacheKeyPrefix: s.cacheKeyPrefix,
    nearLimitRatio: s.nearLimitRatio,
    expirationJitterMaxSeconds: s.expirationJitterMaxSeconds,
    localCacheSizeInBytes: s.localCacheSizeInBytes,
    stopCacheKeyIncrementWhenOverlimit: s.stopCacheKeyIncrementWhenOverlimit,
    shadowMode: s.shadowMode,
    quotaMode: s.quotaMode,
    responseDynamicMetadata: s.responseDynamicMetadata,
    responseHeaders: Object.freeze({
      enabled: s.limitResponseHeadersEnabled,
      limitHeader: s.limitLimitHeader,
      remainingHeader: s.limitRemainingHeader,
      resetHeader: s.limitResetHeader,
      policyHeaders: s.limitResponsePolicyHeadersEnabled,
    }),
  });
}

/** GRPC_SERVER_USE_TLS and mutual TLS as server options; the files were checked by loadSettings. */
export function serverTlsOptions(s: Settings): GrpcTlsOptions | undefined {
  if (!s.grpcServerUseTls) return undefined;
  let pair;
  try {
    pair = loadKeyPair(s.grpcServerTlsCert, s.grpcServerTlsKey);
  } catch (err) {
    throw new RateLimitError('settings_invalid', `GRPC_SERVER_TLS_CERT/GRPC_SERVER_TLS_KEY: cannot load the key pair: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (s.grpcClientTlsCacert === '') return { key: pair.key, cert: pair.cert };
  const san = s.grpcClientTlsSan;
  return {
    key: pair.key,
    cert: pair.cert,
    ca: readFileSync(s.grpcClientTlsCacert),
    requestClientCert: true,
    verifyClient: san === '' ? undefined : (cert) => clientCertificateProblem(cert, san),
  };
}

/**
 * The RLQS service (RLQS_ENABLED): a QuotaBalancer on the counter store's share store, reading the
 * quota rules of the rule snapshot in force (swapped with the descriptors on every reload).
 */
export function buildRlqs(settings: Settings, service: RateLimitService, share: QuotaShareStore | undefined, deps: { clock: Clock; stats: StatsStore; logger: Logger }): RlqsService {
  // The settings check refuses RLQS_ENABLED with a store that cannot share quotas.
  if (share === undefined) throw new RateLimitError('settings_invalid', 'RLQS_ENABLED: the counter store cannot share quotas');
  let quotaRules: QuotaRuleSet = EMPTY_QUOTA_RULES;
  service.onRulesChanged((rules: RuleSet) => {
    quotaRules = rules.quotaRules;
  });
  const balancer = new QuotaBalancer({
    ...balancerTuningOf(settings),
    // Unique per process: the prefix of this replica's instance ids in the shared store.
    replicaId: `${process.pid.toString(36)}${randomBytes(4).toString('hex')}`,
    clock: deps.clock,
    store: share,
    rules: () => quotaRules,
    stats: deps.stats,
    keyPrefix: settings.cacheKeyPrefix,
  });
  return new RlqsService({ ...rlqsServiceTuningOf(settings), balancer, clock: deps.clock, logger: deps.logger.child({ component: 'rlqs' }) });
}
