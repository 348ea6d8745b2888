// CounterStore decorators (the operator page's latency timing, tracing's child spans, ...) built
// from one helper, so a decorator cannot drop a member by forgetting to forward it. Every member of
// CounterStore is listed in STORE_MEMBERS, whose type is checked against `keyof CounterStore`: a
// member added to the contract does not compile until it is listed here, and then every decorator
// forwards it. A decorator names only the members it changes.
import type { CounterStore } from './counter-store.js';

/** A member's type without `undefined` (what an override receives and returns). */
type Member<K extends keyof CounterStore> = NonNullable<CounterStore[K]>;

/**
 * What a decorator changes: for a member, a function of the inner store's member (methods come
 * bound to the inner store) returning the decorated one. Called once, at decoration, and only when
 * the inner store has the member: an optional member stays absent exactly when the inner store
 * lacks it.
 */
export type StoreOverrides = { readonly [K in keyof CounterStore]?: (inner: Member<K>) => Member<K> };

/**
 * Every CounterStore member and how it is forwarded when not overridden: a `method` is bound to the
 * inner store; a `value` is read from the inner store on each access (a getter), so it stays live.
 */
export const STORE_MEMBERS = {
  kind: 'value',
  increment: 'method',
  algorithms: 'value',
  execute: 'method',
  get: 'method',
  delete: 'method',
  isConnected: 'method',
  onConnectionChange: 'method',
  close: 'method',
} as const satisfies Record<keyof CounterStore, 'value' | 'method'>;

/**
 * `inner` with `overrides` applied and every other member forwarded. A member the inner store lacks
 * is absent (`'execute' in store` is false), whether or not it has an override.
 */
export function decorateStore(inner: CounterStore, overrides: StoreOverrides = {}): CounterStore {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(STORE_MEMBERS) as (keyof CounterStore)[]) {
    const own: unknown = inner[key];
    if (own === undefined) continue;
    const override = overrides[key] as ((m: unknown) => unknown) | undefined;
    const member = typeof own === 'function' ? (own as (...a: unknown[]) => unknown).bind(inner) : own;
    if (override !== undefined) {
      out[key] = override(member);
    } else if (STORE_MEMBERS[key] === 'method') {
      out[key] = member;
    } else {
      Object.defineProperty(out, key, { get: () => inner[key], enumerable: true });
    }
  }
  return out as unknown as CounterStore;
}
