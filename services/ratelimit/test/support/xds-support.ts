// Helpers of the xDS tests: a scheduler whose timers fire only when the test says so, resource
// builders, and an in-process app wired to a test management server.
import { PROTO_DIR } from '@rls/rls-proto';
import type { RlsConfigResource } from '@rls/testkit';
import { buildRateLimitApp, type RateLimitApp } from '../../src/app.js';
import type { RandomSource } from '@rls/engine';
import { silentLogger } from '../../src/logger.js';
import type { Scheduler } from '../../src/provider/xds-backoff.js';
import { loadSettings } from '../../src/settings.js';

export { PROTO_DIR };

/** Timers that only run when fired; every requested delay is recorded. */
export class ManualScheduler implements Scheduler {
  readonly delays: number[] = [];
  private pending: { fn: () => void; ms: number; id: number }[] = [];
  private seq = 0;

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.delays.push(ms);
    this.pending.push({ fn, ms, id });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.pending = this.pending.filter((p) => p.id !== handle);
  }

  get waiting(): number {
    return this.pending.length;
  }

  /** Runs the oldest pending timer; throws when there is none. */
  fire(): number {
    const next = this.pending.shift();
    if (next === undefined) throw new Error('no pending timer');
    next.fn();
    return next.ms;
  }
}

/** Returns the given fractions (of [0, 1)) in turn, as RandomSource integers. */
export function scriptedRandom(fractions: number[]): RandomSource {
  let i = 0;
  return { int: (max) => Math.floor((fractions[i++ % fractions.length] ?? 0) * max) };
}

export function limitResource(name: string, domain: string, key: string, value: string, rpu: number, unit = 'MINUTE'): RlsConfigResource {
  return { name, domain, descriptors: [{ key, value, rate_limit: { unit, requests_per_unit: rpu } }] };
}

export interface XdsApp {
  app: RateLimitApp;
  scheduler: ManualScheduler;
}

/** An app (memory store, no listeners) in xDS mode pointed at `serverUrl`; the caller starts `app.xds`. */
export function buildXdsApp(env: Record<string, string>, opts: { random?: RandomSource } = {}): XdsApp {
  const { settings } = loadSettings({
    CONFIG_TYPE: 'GRPC_XDS_SOTW',
    BACKEND_TYPE: 'memory',
    USE_STATS_PUSH: 'false',
    XDS_CLIENT_BACKOFF_JITTER: 'false',
    ...env,
  });
  const scheduler = new ManualScheduler();
  const app = buildRateLimitApp(settings, { logger: silentLogger(), xdsScheduler: scheduler, ...(opts.random !== undefined ? { random: opts.random } : {}) });
  return { app, scheduler };
}

export function request(domain: string, key: string, value: string): { domain: string; descriptors: { entries: { key: string; value: string }[] }[]; hitsAddend: number } {
  return { domain, descriptors: [{ entries: [{ key, value }] }], hitsAddend: 1 };
}
