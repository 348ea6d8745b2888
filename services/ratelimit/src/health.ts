// Health as upstream models it: named components, overall healthy only when every enabled
// component is. `/healthcheck` and grpc.health.v1 (service "ratelimit") report the aggregate.

export type HealthListener = (healthy: boolean) => void;

export class HealthChecker {
  private readonly components = new Map<string, boolean>();
  private readonly listeners: HealthListener[] = [];
  private last: boolean;

  constructor(initial: Record<string, boolean> = {}) {
    for (const [k, v] of Object.entries(initial)) this.components.set(k, v);
    this.last = this.compute();
  }

  /** Adds or updates a component; notifies listeners when the aggregate changes. */
  set(component: string, healthy: boolean): void {
    this.components.set(component, healthy);
    const now = this.compute();
    if (now !== this.last) {
      this.last = now;
      for (const l of this.listeners) l(now);
    }
  }

  isHealthy(): boolean {
    return this.last;
  }

  component(name: string): boolean | undefined {
    return this.components.get(name);
  }

  /** Every component and its state, sorted by name (debug output, logs). */
  snapshot(): Record<string, boolean> {
    return Object.fromEntries([...this.components.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  onChange(listener: HealthListener): void {
    this.listeners.push(listener);
  }

  private compute(): boolean {
    for (const v of this.components.values()) if (!v) return false;
    return true;
  }
}

/** The part of a CounterStore the store health component watches. */
export interface ConnectionSource {
  isConnected(): boolean;
  onConnectionChange?(listener: (connected: boolean) => void): void;
}

/**
 * The counter-store component (docs/ratelimit.md, "Health"; upstream calls it `redis`): healthy once the store
 * has a connection. With `activeConnectionCheck` (KVSTORE_HEALTH_CHECK_ACTIVE_CONNECTION) it also
 * fails whenever the last connection is gone and recovers with the next one; without it, losing
 * the store later shows up as request errors, not as health. A store without connections (the
 * embedded memory store) reports connected and stays healthy.
 */
export function trackStoreHealth(health: HealthChecker, component: string, store: ConnectionSource, activeConnectionCheck: boolean): void {
  health.set(component, store.isConnected());
  store.onConnectionChange?.((up) => {
    if (up) health.set(component, true);
    else if (activeConnectionCheck) health.set(component, false);
  });
}
