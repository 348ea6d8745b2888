// RLQS (StreamRateLimitQuotas, issue 28): whether it is served, its bounds and its timing. Every
// bound holds something a data plane controls (docs/ratelimit.md, "RLQS": threat model); the
// defaults fit Envoy's use (one stream per filter config, one report per interval).
import { DEFAULT_BALANCER_TUNING, type QuotaBalancerOptions } from '@rls/engine';
import { DEFAULT_RLQS_REPORT_LIMITS, type RlqsReportLimits } from '@rls/rls-proto';
import { def, parseBool, parseDurationMs, parseInteger } from '@rls/settings';
import type { RlqsServiceOptions } from './rlqs-calls.js';

const MIB = 1024 * 1024;
const durationBetween = (raw: string, minMs: number, maxMs: number, name: string): number => {
  const ms = parseDurationMs(raw);
  if (ms < minMs || ms > maxMs) throw new Error(`${name} must be between ${minMs} ms and ${maxMs} ms`);
  return ms;
};

export const RLQS_SETTING_DEFS = {
  rlqsEnabled: def({
    name: 'RLQS_ENABLED',
    default: 'false',
    meaning:
      'Serve envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas on the gRPC port (long-lived per-client state, so opt-in). Off: the method answers UNIMPLEMENTED. Needs BACKEND_TYPE=memory (one process) or redis (single, sentinel or cluster: quotas shared by replicas); refused on memcached.',
    parse: (raw) => (raw === '' ? false : parseBool(raw)),
  }),
  rlqsMaxStreams: def({ name: 'RLQS_MAX_STREAMS', default: '10000', meaning: 'RLQS streams open on this process; more are refused with RESOURCE_EXHAUSTED. 1–1000000.', parse: (raw) => parseInteger(raw, 1, 1_000_000) }),
  rlqsMaxStreamsPerConnection: def({
    name: 'RLQS_MAX_STREAMS_PER_CONNECTION',
    default: '16',
    meaning: 'RLQS streams open on one gRPC connection (Envoy opens one per filter config); more are refused with RESOURCE_EXHAUSTED. 1–10000.',
    parse: (raw) => parseInteger(raw, 1, 10_000),
  }),
  rlqsMaxBucketsPerStream: def({
    name: 'RLQS_MAX_BUCKETS_PER_STREAM',
    default: '4096',
    meaning: 'Buckets one RLQS stream may make the server track; a report adding more ends the stream with RESOURCE_EXHAUSTED. 1–1000000.',
    parse: (raw) => parseInteger(raw, 1, 1_000_000),
  }),
  rlqsMaxBucketsPerDomain: def({
    name: 'RLQS_MAX_BUCKETS_PER_DOMAIN',
    default: '100000',
    meaning: 'Buckets all RLQS streams of one domain may create on this process (a client watching a million buckets); past it the stream adding one ends with RESOURCE_EXHAUSTED. 1–10000000.',
    parse: (raw) => parseInteger(raw, 1, 10_000_000),
  }),
  rlqsMaxReportBytes: def({
    name: 'RLQS_MAX_REPORT_BYTES',
    default: String(4 * MIB),
    meaning: 'Bytes of one RLQS usage report message (before any decoding); larger ends the stream with RESOURCE_EXHAUSTED. 1024–67108864.',
    parse: (raw) => parseInteger(raw, 1024, 64 * MIB),
  }),
  rlqsMaxBucketsPerReport: def({
    name: 'RLQS_MAX_BUCKETS_PER_REPORT',
    default: '4096',
    meaning: 'bucket_quota_usages in one report message; more ends the stream with INVALID_ARGUMENT. 1–1000000.',
    parse: (raw) => parseInteger(raw, 1, 1_000_000),
  }),
  rlqsMaxReportsPerSecond: def({
    name: 'RLQS_MAX_REPORTS_PER_SECOND',
    default: '200',
    meaning: 'Report messages one RLQS stream may send per second (Envoy sends one per reporting interval plus one at once for every new bucket, so a burst of new buckets costs a report each); more ends the stream with RESOURCE_EXHAUSTED. 1–100000.',
    parse: (raw) => parseInteger(raw, 1, 100_000),
  }),
  rlqsStreamSendBufferBytes: def({
    name: 'RLQS_STREAM_SEND_BUFFER',
    default: String(MIB),
    meaning: 'Bytes of assignments queued for an RLQS client that does not read (beyond its HTTP/2 window); past it the stream is reset (RST_STREAM CANCEL) rather than buffered for. 1024–67108864.',
    parse: (raw) => parseInteger(raw, 1024, 64 * MIB),
  }),
  rlqsFirstReportTimeoutMs: def({
    name: 'RLQS_FIRST_REPORT_TIMEOUT',
    default: '10s',
    meaning: 'An RLQS stream that sends no report for this long after it opened ends with DEADLINE_EXCEEDED (duration, 100ms–10m).',
    parse: (raw) => durationBetween(raw, 100, 600_000, 'RLQS_FIRST_REPORT_TIMEOUT'),
  }),
  rlqsTickMs: def({
    name: 'RLQS_TICK',
    default: '1s',
    meaning: 'How often the server re-divides every quota among the instances reporting it and pushes changed assignments (duration, 100ms–1m).',
    parse: (raw) => durationBetween(raw, 100, 60_000, 'RLQS_TICK'),
  }),
  rlqsAssignmentTtlMs: def({
    name: 'RLQS_ASSIGNMENT_TTL',
    default: '10s',
    meaning: 'assignment_time_to_live sent with every assignment (whole seconds reach Envoy); unchanged assignments are re-sent when half of it is gone (duration, 1s–1h).',
    parse: (raw) => durationBetween(raw, 1000, 3_600_000, 'RLQS_ASSIGNMENT_TTL'),
  }),
  rlqsHoldMs: def({
    name: 'RLQS_HOLD',
    default: '1s',
    meaning: 'How long a lowered grant stays reserved, the time a push needs to reach Envoy (duration, 0–1m).',
    parse: (raw) => durationBetween(raw, 0, 60_000, 'RLQS_HOLD'),
  }),
  rlqsAbandonAfterMs: def({
    name: 'RLQS_ABANDON_AFTER',
    default: '60s',
    meaning: 'A bucket an instance stopped reporting for this long gets abandon_action and its grant is released (duration, 1s–1d).',
    parse: (raw) => durationBetween(raw, 1000, 86_400_000, 'RLQS_ABANDON_AFTER'),
  }),
  rlqsIdleAbandonMs: def({
    name: 'RLQS_IDLE_ABANDON',
    default: '10m',
    meaning: 'A bucket reported with zero traffic for this long gets abandon_action (Envoy re-watches on its next request), reclaiming its state (duration; 0 never).',
    parse: (raw) => durationBetween(raw, 0, 7 * 86_400_000, 'RLQS_IDLE_ABANDON'),
  }),
};

export interface RlqsSettingsView {
  readonly rlqsMaxStreams: number;
  readonly rlqsMaxStreamsPerConnection: number;
  readonly rlqsMaxBucketsPerStream: number;
  readonly rlqsMaxBucketsPerDomain: number;
  readonly rlqsMaxReportBytes: number;
  readonly rlqsMaxBucketsPerReport: number;
  readonly rlqsMaxReportsPerSecond: number;
  readonly rlqsStreamSendBufferBytes: number;
  readonly rlqsFirstReportTimeoutMs: number;
  readonly rlqsTickMs: number;
  readonly rlqsAssignmentTtlMs: number;
  readonly rlqsHoldMs: number;
  readonly rlqsAbandonAfterMs: number;
  readonly rlqsIdleAbandonMs: number;
}

/** The balancer's tuning and bounds from the settings (hysteresis and demand decay keep their defaults). */
export function balancerTuningOf(s: RlqsSettingsView): Omit<QuotaBalancerOptions, 'replicaId' | 'clock' | 'store' | 'rules' | 'stats' | 'keyPrefix'> {
  return {
    ...DEFAULT_BALANCER_TUNING,
    tickMs: s.rlqsTickMs,
    assignmentTtlMs: s.rlqsAssignmentTtlMs,
    holdMs: s.rlqsHoldMs,
    abandonAfterMs: s.rlqsAbandonAfterMs,
    idleAbandonMs: s.rlqsIdleAbandonMs,
    maxStreams: s.rlqsMaxStreams,
    maxBucketsPerStream: s.rlqsMaxBucketsPerStream,
    maxBucketsPerDomain: s.rlqsMaxBucketsPerDomain,
  };
}

export function rlqsReportLimitsOf(s: RlqsSettingsView): RlqsReportLimits {
  return {
    ...DEFAULT_RLQS_REPORT_LIMITS,
    maxMessageBytes: s.rlqsMaxReportBytes,
    maxBucketsPerReport: s.rlqsMaxBucketsPerReport,
    sources: { maxMessageBytes: 'RLQS_MAX_REPORT_BYTES', maxBucketsPerReport: 'RLQS_MAX_BUCKETS_PER_REPORT' },
  };
}

/** The transport-side options of the RlqsService (the balancer, clock and logger come from the composition root). */
export function rlqsServiceTuningOf(s: RlqsSettingsView): Omit<RlqsServiceOptions, 'balancer' | 'clock' | 'logger'> {
  return {
    reportLimits: rlqsReportLimitsOf(s),
    maxStreamsPerConnection: s.rlqsMaxStreamsPerConnection,
    maxReportsPerSecond: s.rlqsMaxReportsPerSecond,
    sendBufferBytes: s.rlqsStreamSendBufferBytes,
    firstReportTimeoutMs: s.rlqsFirstReportTimeoutMs,
    tickMs: s.rlqsTickMs,
  };
}

/**
 * RLQS needs a store its replicas can share quotas through: memory (one process) or Redis (single,
 * Sentinel or Cluster; with the per-second split the quota records live in the main store).
 */
export function checkRlqsSettings(s: { readonly rlqsEnabled: boolean; readonly backendType: string }, fail: (message: string) => void): void {
  if (!s.rlqsEnabled) return;
  if (s.backendType === 'mcstore') fail('RLQS_ENABLED: quotas are shared through the counter store, and memcached cannot hold them; use BACKEND_TYPE=redis or memory');
}
