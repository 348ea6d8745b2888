import { createRateLimitClient, type RateLimitClient, type RateLimitClientTls, type RateLimitRequestMsg, type RateLimitResponseMsg } from '@rls/rls-proto';
import { requestOf, type PreparedDecision, type RateLimitDecider } from './decider.js';

export interface RemoteDeciderOptions {
  /** gRPC target of the rate limit service, e.g. `ratelimit:8081`. */
  address: string;
  tls: RateLimitClientTls | undefined;
  /** Deadline of each call in milliseconds; past it the failure mode applies. */
  timeoutMs: number;
}

/** ShouldRateLimit over gRPC to a `ratelimit` deployment (exactly what Envoy would send). */
export class RemoteDecider implements RateLimitDecider {
  readonly kind = 'remote';
  private readonly client: RateLimitClient;
  constructor(opts: RemoteDeciderOptions) {
    this.client = createRateLimitClient({
      address: opts.address,
      tls: opts.tls,
      timeoutMs: opts.timeoutMs,
      // Fail fast while the service is down instead of queueing calls until it returns: the
      // failure mode must apply within the deadline.
      channelOptions: { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 1000 },
    });
  }
  /** Opens the connection ahead of the first request (start-up), so it does not spend its deadline connecting. */
  waitForReady(timeoutMs: number): Promise<void> {
    return this.client.waitForReady(timeoutMs);
  }
  shouldRateLimit(req: RateLimitRequestMsg | PreparedDecision, metadata?: Readonly<Record<string, string>>): Promise<RateLimitResponseMsg> {
    return this.client.shouldRateLimit(requestOf(req), metadata === undefined ? undefined : { metadata });
  }
  close(): Promise<void> {
    this.client.close();
    return Promise.resolve();
  }
}
