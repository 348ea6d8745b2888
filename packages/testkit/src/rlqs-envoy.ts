// A simulated Envoy `envoy.filters.http.rate_limit_quota` data plane, for testing an RLQS server.
// It behaves as the filter and the RLQS protocol are documented to (envoy/service/
// rate_limit_quota/v3/rlqs.proto, RateLimitQuotaBucketSettings):
//   - the first request matched into a bucket creates it in the "no assignment" state, applies
//     `no_assignment_behavior` (allow all when unset) and reports the bucket at once: the watch;
//   - every `reporting_interval` the bucket's allowed / denied counts and the time elapsed since
//     its last report go out, all due buckets in one RateLimitQuotaUsageReports message;
//   - a quota assignment is enforced locally (blanket rule, token bucket, requests per time unit);
//     the same strategy again only extends its time to live, a different one replaces it (a new
//     token bucket starts full) and the bucket's usage is reported at once, as is the first one;
//   - when the assignment's TTL runs out, `expired_assignment_behavior` applies (a fallback
//     strategy or the last assignment) for its timeout, after which, or at once when unset, the
//     bucket is abandoned; a TTL of zero expires at once, an absent one never;
//   - an abandon action erases the bucket; the next request starts over with a watch;
//   - a bucket still without assignment after `initialAssignmentTimeoutMs` is purged;
//   - a broken stream is reopened at the next report; usage collected meanwhile is dropped.
// Time is the injected clock: nothing happens until `advance()` runs the timers due at `now()`.
// Messages the server sends that the protocol forbids (an action without a bucket id or for a
// bucket never reported, a token bucket without tokens or fill interval) are recorded in
// `violations` and otherwise ignored, so tests can assert a server never sends them.
//
// Where Envoy's own implementation differs from its documentation (see docs/ratelimit.md, "RLQS": it
// reports whole seconds, rejects requests_per_time_unit, reverts to no_assignment instead of
// abandoning), this simulator follows the documentation.
import * as grpc from '@grpc/grpc-js';

export interface SimBucketEntry {
  key: string;
  value: string;
}

/** `RateLimitStrategy`, shaped as @rls/rls-proto's RateLimitStrategyMsg. */
export type SimStrategy =
  | { kind: 'blanket_rule'; blanketRule: number }
  | { kind: 'requests_per_time_unit'; requestsPerTimeUnit: number; timeUnit: number }
  | { kind: 'token_bucket'; tokenBucket: { maxTokens: number; tokensPerFill: number | undefined; fillInterval: number | undefined } }
  | { kind: 'none' };

/** `RateLimitQuotaUsageReports`, shaped as @rls/rls-proto's message. */
export interface SimUsageReports {
  domain: string;
  bucketQuotaUsages: { bucketId: SimBucketEntry[] | undefined; timeElapsed: number | undefined; numRequestsAllowed: number; numRequestsDenied: number }[];
}

/** `RateLimitQuotaResponse`, shaped as @rls/rls-proto's message. */
export interface SimResponse {
  bucketAction: {
    bucketId: SimBucketEntry[] | undefined;
    action: { kind: 'quota_assignment'; assignmentTimeToLive: number | undefined; rateLimitStrategy: SimStrategy | undefined } | { kind: 'abandon' } | undefined;
  }[];
}

export const ALLOW_ALL: SimStrategy = { kind: 'blanket_rule', blanketRule: 0 };
export const DENY_ALL: SimStrategy = { kind: 'blanket_rule', blanketRule: 1 };

/** `RateLimitQuotaBucketSettings` fields the simulator honours. */
export interface SimBucketSettings {
  reportingIntervalMs: number;
  /** `no_assignment_behavior.fallback_rate_limit`; allow all when unset. */
  noAssignment?: SimStrategy | undefined;
  /** `expired_assignment_behavior`; unset: the bucket is abandoned when its assignment expires. */
  expiredAssignment?: { timeoutMs: number; behavior: { fallback: SimStrategy } | 'reuse_last' } | undefined;
  /** How long a bucket waits for its first assignment before it is purged (the filter's choice); default 10 intervals. */
  initialAssignmentTimeoutMs?: number | undefined;
}

/** One open stream: the simulator sends on it; the transport calls back `onResponse` / `onClosed`. */
export interface SimStream {
  send(msg: SimUsageReports): void;
  close(): void;
}

export interface SimStreamCallbacks {
  onResponse(msg: SimResponse): void;
  onClosed(reason: string): void;
}

export interface SimulatedEnvoyOptions {
  domain: string;
  clock: { now(): number };
  /** Settings of the bucket a request falls into (Envoy's matcher tree ends in these). */
  settings: (id: readonly SimBucketEntry[]) => SimBucketSettings;
  /** Opens the RLQS stream; called on the first bucket and again after the stream broke. */
  open: (callbacks: SimStreamCallbacks) => SimStream;
}

export type SimBucketState = 'no_assignment' | 'active' | 'expired';

/** Local enforcement of one strategy; a token bucket refills continuously, as Envoy's does. */
class Enforcer {
  private tokens: number;
  private last: number;
  constructor(
    readonly strategy: SimStrategy,
    private readonly capacity: number,
    /** Tokens per millisecond; Infinity allows all, 0 with capacity 0 denies all. */
    private readonly rate: number,
    now: number,
  ) {
    this.tokens = capacity;
    this.last = now;
  }
  admit(now: number): boolean {
    if (this.rate === Infinity) return true;
    if (now > this.last) {
      this.tokens = Math.min(this.capacity, this.tokens + (now - this.last) * this.rate);
      this.last = now;
    }
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return true;
    }
    return false;
  }
}

const UNIT_MS = [0, 1000, 60_000, 3_600_000, 86_400_000, 2_592_000_000, 31_536_000_000];

/** The enforcer for a strategy, or the reason the strategy is invalid. */
function enforcerFor(s: SimStrategy | undefined, now: number): Enforcer | string {
  if (s === undefined || s.kind === 'none') return new Enforcer(ALLOW_ALL, 0, Infinity, now);
  switch (s.kind) {
    case 'blanket_rule':
      if (s.blanketRule === 0) return new Enforcer(s, 0, Infinity, now);
      if (s.blanketRule === 1) return new Enforcer(s, 0, 0, now);
      return `blanket_rule ${s.blanketRule} is not ALLOW_ALL or DENY_ALL`;
    case 'token_bucket': {
      const t = s.tokenBucket;
      if (!(t.maxTokens > 0)) return 'token_bucket.max_tokens must be above 0';
      if (t.tokensPerFill !== undefined && !(t.tokensPerFill > 0)) return 'token_bucket.tokens_per_fill must be above 0 when set';
      if (t.fillInterval === undefined || !(t.fillInterval > 0)) return 'token_bucket.fill_interval must be set and above 0';
      return new Enforcer(s, t.maxTokens, (t.tokensPerFill ?? 1) / (t.fillInterval * 1000), now);
    }
    case 'requests_per_time_unit': {
      if (s.requestsPerTimeUnit === 0) return new Enforcer(s, 0, 0, now);
      const unitMs = UNIT_MS[s.timeUnit];
      if (unitMs === undefined || unitMs === 0) return `requests_per_time_unit.time_unit ${s.timeUnit} is not a defined unit`;
      return new Enforcer(s, s.requestsPerTimeUnit, s.requestsPerTimeUnit / unitMs, now);
    }
  }
}

function sameStrategy(a: SimStrategy, b: SimStrategy): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The canonical key of a bucket id (same form as @rls/rls-proto's bucketKey). */
export function simBucketKey(id: readonly SimBucketEntry[]): string {
  const m = new Map<string, string>();
  for (const e of id) m.set(e.key, e.value);
  const keys = [...m.keys()].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
  return `[${keys.map((k) => `[${JSON.stringify(k)},${JSON.stringify(m.get(k)!)}]`).join(',')}]`;
}

interface Bucket {
  readonly id: SimBucketEntry[];
  readonly key: string;
  readonly settings: SimBucketSettings;
  state: SimBucketState;
  enforcer: Enforcer;
  /** The strategy of the active assignment (for "same strategy extends"). */
  active: SimStrategy | undefined;
  createdAt: number;
  lastReport: number;
  nextReport: number;
  /** When the active assignment expires (Infinity: never). */
  expiresAt: number;
  /** When the expired-assignment behaviour ends and the bucket is abandoned. */
  abandonAt: number;
  allowed: number;
  denied: number;
}

/** Lifetime counts of one bucket key (kept across abandon and re-creation). */
export interface SimBucketTotals {
  allowed: number;
  denied: number;
}

export class SimulatedEnvoy {
  private readonly buckets = new Map<string, Bucket>();
  private stream: SimStream | undefined;
  /** Incremented per stream so callbacks of an old stream are ignored. */
  private generation = 0;

  /** Lifetime request counts per bucket key. */
  readonly totals = new Map<string, SimBucketTotals>();
  /** Protocol violations seen in server messages. */
  readonly violations: string[] = [];
  readonly counters = { reportsSent: 0, usagesSent: 0, assignments: 0, replaced: 0, extended: 0, abandonedByServer: 0, expired: 0, abandonedOnExpiry: 0, purged: 0, streamsOpened: 0, streamsClosed: 0, responses: 0 };

  constructor(private readonly opts: SimulatedEnvoyOptions) {}

  /** A request matched into bucket `id` at `now()`: returns whether it is allowed. */
  request(id: readonly SimBucketEntry[]): boolean {
    const now = this.opts.clock.now();
    this.advance();
    const key = simBucketKey(id);
    let b = this.buckets.get(key);
    let created = false;
    if (b === undefined) {
      b = this.create(id, key, now);
      created = true;
    }
    const ok = b.enforcer.admit(now);
    if (ok) b.allowed++;
    else b.denied++;
    let t = this.totals.get(key);
    if (t === undefined) this.totals.set(key, (t = { allowed: 0, denied: 0 }));
    if (ok) t.allowed++;
    else t.denied++;
    if (created) this.report([b], now);
    return ok;
  }

  /** Runs every timer due at `now()`: expiries, purges, and the reports that are due. */
  advance(): void {
    const now = this.opts.clock.now();
    const due: Bucket[] = [];
    for (const b of [...this.buckets.values()]) {
      if (b.state === 'active' && b.expiresAt <= now) this.expire(b, now);
      if (b.state === 'expired' && b.abandonAt <= now) {
        this.counters.abandonedOnExpiry++;
        this.buckets.delete(b.key);
        continue;
      }
      if (b.state === 'no_assignment' && now - b.createdAt >= (b.settings.initialAssignmentTimeoutMs ?? 10 * b.settings.reportingIntervalMs)) {
        this.counters.purged++;
        this.buckets.delete(b.key);
        continue;
      }
      if (b.nextReport <= now) due.push(b);
    }
    if (due.length > 0) this.report(due, now);
  }

  /** Feeds one server message (the transport calls this). */
  onResponse(msg: SimResponse): void {
    this.counters.responses++;
    const now = this.opts.clock.now();
    const reportNow: Bucket[] = [];
    for (const a of msg.bucketAction) {
      if (a.bucketId === undefined || a.bucketId.length === 0) {
        this.violations.push('bucket action without bucket_id');
        continue;
      }
      const key = simBucketKey(a.bucketId);
      const b = this.buckets.get(key);
      if (b === undefined) {
        // Envoy logs and ignores an action for a bucket it does not track; after an abandon or a
        // purge that is a normal race, so it is not a violation unless the key was never seen.
        if (!this.totals.has(key)) this.violations.push(`action for bucket ${key} that was never reported`);
        continue;
      }
      const act = a.action;
      if (act === undefined) {
        this.violations.push(`bucket action for ${key} without an action`);
        continue;
      }
      if (act.kind === 'abandon') {
        this.counters.abandonedByServer++;
        this.buckets.delete(key);
        continue;
      }
      const strategy = act.rateLimitStrategy ?? ALLOW_ALL;
      const ttl = act.assignmentTimeToLive;
      if (ttl !== undefined && ttl < 0) {
        this.violations.push(`negative assignment_time_to_live for ${key}`);
        continue;
      }
      this.counters.assignments++;
      const expiresAt = ttl === undefined ? Infinity : now + ttl * 1000;
      if (b.state === 'active' && b.active !== undefined && sameStrategy(b.active, strategy)) {
        this.counters.extended++;
        b.expiresAt = expiresAt;
        continue;
      }
      const enforcer = enforcerFor(strategy, now);
      if (typeof enforcer === 'string') {
        this.violations.push(`${key}: ${enforcer}`);
        continue;
      }
      if (b.state === 'active') this.counters.replaced++;
      b.state = 'active';
      b.active = strategy;
      b.enforcer = enforcer;
      b.expiresAt = expiresAt;
      reportNow.push(b);
    }
    // A first or changed assignment sends the bucket's usage at once.
    if (reportNow.length > 0) this.report(reportNow, now);
    this.advance();
  }

  /** The transport calls this when the stream ended or failed. */
  onStreamClosed(): void {
    if (this.stream === undefined) return;
    this.stream = undefined;
    this.counters.streamsClosed++;
  }

  /** The bucket's current state, or undefined when it is not tracked. */
  stateOf(id: readonly SimBucketEntry[]): SimBucketState | undefined {
    return this.buckets.get(simBucketKey(id))?.state;
  }

  /** The strategy currently enforced for the bucket, or undefined when it is not tracked. */
  strategyOf(id: readonly SimBucketEntry[]): SimStrategy | undefined {
    return this.buckets.get(simBucketKey(id))?.enforcer.strategy;
  }

  get trackedBuckets(): number {
    return this.buckets.size;
  }

  get connected(): boolean {
    return this.stream !== undefined;
  }

  /** Closes the stream (as Envoy does on shutdown). */
  close(): void {
    const s = this.stream;
    this.stream = undefined;
    s?.close();
  }

  private create(id: readonly SimBucketEntry[], key: string, now: number): Bucket {
    const settings = this.opts.settings(id);
    const fallback = enforcerFor(settings.noAssignment, now);
    if (typeof fallback === 'string') throw new Error(`no_assignment_behavior: ${fallback}`);
    const b: Bucket = {
      id: id.map((e) => ({ key: e.key, value: e.value })),
      key,
      settings,
      state: 'no_assignment',
      enforcer: fallback,
      active: undefined,
      createdAt: now,
      lastReport: now,
      nextReport: now + settings.reportingIntervalMs,
      expiresAt: Infinity,
      abandonAt: Infinity,
      allowed: 0,
      denied: 0,
    };
    this.buckets.set(key, b);
    return b;
  }

  private expire(b: Bucket, now: number): void {
    this.counters.expired++;
    const e = b.settings.expiredAssignment;
    b.state = 'expired';
    b.active = undefined;
    if (e === undefined || e.timeoutMs <= 0) {
      b.abandonAt = now;
      return;
    }
    b.abandonAt = b.expiresAt + e.timeoutMs;
    if (e.behavior !== 'reuse_last') {
      const f = enforcerFor(e.behavior.fallback, now);
      if (typeof f === 'string') throw new Error(`expired_assignment_behavior: ${f}`);
      b.enforcer = f;
    }
  }

  private report(list: readonly Bucket[], now: number): void {
    const msg: SimUsageReports = { domain: this.opts.domain, bucketQuotaUsages: [] };
    for (const b of list) {
      msg.bucketQuotaUsages.push({ bucketId: b.id, timeElapsed: (now - b.lastReport) / 1000, numRequestsAllowed: b.allowed, numRequestsDenied: b.denied });
      b.allowed = 0;
      b.denied = 0;
      b.lastReport = now;
      b.nextReport = now + b.settings.reportingIntervalMs;
    }
    const stream = this.ensureStream();
    if (stream === undefined) return;
    this.counters.reportsSent++;
    this.counters.usagesSent += msg.bucketQuotaUsages.length;
    stream.send(msg);
  }

  private ensureStream(): SimStream | undefined {
    if (this.stream !== undefined) return this.stream;
    const gen = ++this.generation;
    try {
      this.stream = this.opts.open({
        onResponse: (m) => {
          if (gen === this.generation) this.onResponse(m);
        },
        onClosed: () => {
          if (gen === this.generation) this.onStreamClosed();
        },
      });
      this.counters.streamsOpened++;
    } catch {
      this.stream = undefined;
    }
    return this.stream;
  }
}

/** How the gRPC transport encodes reports and decodes responses (the hand-written codec or protobufjs). */
export interface SimCodec {
  encodeReports(msg: SimUsageReports): Uint8Array;
  decodeResponse(bytes: Uint8Array): SimResponse;
}

export const RLQS_STREAM_PATH = '/envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas';

/**
 * `open` for SimulatedEnvoy over a grpc-js bidirectional stream on `client` (one client can carry
 * the streams of several simulated instances, as one HTTP/2 connection would not: pass one client
 * per instance to model separate Envoys).
 */
export function grpcSimStream(client: grpc.Client, codec: SimCodec, metadata?: grpc.Metadata): SimulatedEnvoyOptions['open'] {
  return (callbacks) => {
    const call = client.makeBidiStreamRequest(
      RLQS_STREAM_PATH,
      (m: SimUsageReports) => Buffer.from(codec.encodeReports(m)),
      (b: Buffer) => codec.decodeResponse(b),
      metadata ?? new grpc.Metadata(),
    );
    let closed = false;
    const end = (reason: string): void => {
      if (closed) return;
      closed = true;
      callbacks.onClosed(reason);
    };
    call.on('data', (m: SimResponse) => callbacks.onResponse(m));
    call.on('error', (err: Error) => end(err.message));
    call.on('end', () => end('server ended the stream'));
    call.on('close', () => end('closed'));
    return {
      send: (msg) => {
        if (!closed) call.write(msg);
      },
      close: () => {
        closed = true;
        call.cancel();
      },
    };
  };
}
