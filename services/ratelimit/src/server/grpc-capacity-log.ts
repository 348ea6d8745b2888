// The log lines of GRPC_MAX_CONNECTIONS, shared by both gRPC transports: an eviction (the
// longest-idle connection closed for a newcomer) is info, a refusal (every connection busy) is a
// warning naming the setting. At most one line of each kind per 10 s, carrying the count since the
// last one, so a connection flood cannot flood the log.
import type { TransportLogger } from './transport-logger.js';

const LOG_EVERY_MS = 10_000;

export class GrpcCapacityLog {
  private refused = 0;
  private lastRefusalLog = -Infinity;
  private evicted = 0;
  private lastEvictionLog = -Infinity;

  constructor(
    private readonly logger: TransportLogger,
    private readonly maxConnections: number,
  ) {}

  refusal(now: number): void {
    this.refused++;
    if (now - this.lastRefusalLog < LOG_EVERY_MS) return;
    this.lastRefusalLog = now;
    this.logger.warn(
      { limit: this.maxConnections, refused: this.refused },
      `grpc connection refused: GRPC_MAX_CONNECTIONS (${this.maxConnections}) reached and every connection has a stream open`,
    );
    this.refused = 0;
  }

  eviction(now: number): void {
    this.evicted++;
    if (now - this.lastEvictionLog < LOG_EVERY_MS) return;
    this.lastEvictionLog = now;
    this.logger.info({ limit: this.maxConnections, evicted: this.evicted }, 'grpc connection limit reached: closed the longest-idle connection for a new one');
    this.evicted = 0;
  }
}
