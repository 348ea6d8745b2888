import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { packageRoot } from '../package-root.js';
import type { RateLimitDecider } from './decider.js';
import { EmbeddedDecider } from './embedded-decider.js';
import { RateLimitGate, type FailureMode } from './rate-limit-gate.js';
import { RemoteDecider } from './remote-decider.js';

/** The rule directory shipped with the service (`ratelimit/quotes.yaml`). */
export function shippedRulesDir(): string {
  return join(packageRoot(), 'ratelimit');
}

export interface RemoteDeciderSettings {
  address: string;
  /** PEM files (undefined: system roots, no client certificate); undefined: plaintext. */
  tls: { ca: string | undefined; cert: string | undefined; key: string | undefined; serverName: string | undefined } | undefined;
  timeoutMs: number;
}

/** A remote decider that starts connecting now, so the first requests do not spend their short deadline on the handshake. */
export function connectRemoteDecider(s: RemoteDeciderSettings, logger: Logger): RemoteDecider {
  const t = s.tls;
  const read = (f: string | undefined): Buffer | undefined => (f === undefined ? undefined : readFileSync(f));
  const remote = new RemoteDecider({
    address: s.address,
    tls: t === undefined ? undefined : { ca: read(t.ca), cert: read(t.cert), key: read(t.key), servername: t.serverName },
    timeoutMs: s.timeoutMs,
  });
  remote.waitForReady(5000).catch((err: unknown) => {
    logger.warn({ address: s.address, err: err instanceof Error ? err.message : String(err) }, 'rate limit service not reachable yet; the failure mode applies until it is');
  });
  return remote;
}

/** The embedded engine on a rule directory (default: the shipped one), with the process's randomness. */
export function embeddedDecider(rulesDir: string | undefined, clock: Clock, maxBytes?: number): EmbeddedDecider {
  return new EmbeddedDecider({ rulesDir: rulesDir ?? shippedRulesDir(), clock, maxBytes, random: { int: (max) => (max <= 0 ? 0 : randomInt(max)) } });
}

export interface GateSettings {
  domain: string;
  failureMode: FailureMode;
  /** Shown in the start-up line (remote mode). */
  address: string | undefined;
}

/** The gate in front of a decider, announced in the log. */
export function createGate(decider: RateLimitDecider, s: GateSettings, logger: Logger, clock: Clock): RateLimitGate {
  const log = logger.child({ component: 'ratelimit' });
  log.info({ mode: decider.kind, address: s.address, domain: s.domain, failureMode: s.failureMode }, 'burst limits enabled');
  return new RateLimitGate(decider, s.domain, s.failureMode, log, clock);
}
