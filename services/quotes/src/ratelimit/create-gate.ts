import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { packageRoot } from '../package-root.js';
import type { Settings } from '../settings.js';
import type { RateLimitDecider } from './decider.js';
import { EmbeddedDecider } from './embedded-decider.js';
import { RateLimitGate } from './rate-limit-gate.js';
import { RemoteDecider } from './remote-decider.js';

/** The rule directory shipped with the service (`ratelimit/quotes.yaml`). */
export function shippedRulesDir(): string {
  return join(packageRoot(), 'ratelimit');
}

/** Remote when RATELIMIT_GRPC_ADDR is set, embedded otherwise; undefined with RATELIMIT_ENABLED=false. */
export function createRateLimitGate(settings: Readonly<Settings>, logger: Logger, clock: Clock): RateLimitGate | undefined {
  if (!settings.rateLimitEnabled) return undefined;
  let decider: RateLimitDecider;
  if (settings.rateLimitGrpcAddr !== undefined) {
    const t = settings.rateLimitTls;
    const read = (f: string | undefined): Buffer | undefined => (f === undefined ? undefined : readFileSync(f));
    const remote = new RemoteDecider({
      address: settings.rateLimitGrpcAddr,
      tls: t === undefined ? undefined : { ca: read(t.ca), cert: read(t.cert), key: read(t.key), servername: t.serverName },
      timeoutMs: settings.rateLimitTimeoutMs,
    });
    // Connect at start-up so the first requests do not spend their short deadline on the handshake.
    const address = settings.rateLimitGrpcAddr;
    remote.waitForReady(5000).catch((err: unknown) => {
      logger.warn({ address, err: err instanceof Error ? err.message : String(err) }, 'rate limit service not reachable yet; the failure mode applies until it is');
    });
    decider = remote;
  } else {
    decider = new EmbeddedDecider({ rulesDir: settings.rateLimitRulesDir ?? shippedRulesDir(), clock, random: { int: (max) => (max <= 0 ? 0 : randomInt(max)) } });
  }
  const log = logger.child({ component: 'ratelimit' });
  log.info({ mode: decider.kind, address: settings.rateLimitGrpcAddr, domain: settings.rateLimitDomain, failureMode: settings.rateLimitFailureMode }, 'burst limits enabled');
  return new RateLimitGate(decider, settings.rateLimitDomain, settings.rateLimitFailureMode, log, clock);
}
