// KVSTORE_PERSECOND=true: ops of limits with unit second (windowSeconds 1) go to a second store,
// all other ops to the main one. Both stores are called at the same time (upstream calls them one
// after the other), so a request that touches both costs one round trip, not two. An algorithm is
// offered when both stores run it (a sliding op's two keys share its window, so they stay together).
import { StoreError, type Algorithm, type CounterOp, type CounterStore, type OpResult } from '@rls/engine';

export class PerSecondSplitStore implements CounterStore {
  readonly kind: string;
  /** The algorithms both stores run (both are Redis stores in practice: all three). */
  readonly algorithms: ReadonlySet<Algorithm>;

  constructor(
    readonly main: CounterStore,
    readonly perSecond: CounterStore,
  ) {
    this.kind = main.kind;
    const both = [...(main.algorithms ?? ['fixed_window' as const])].filter((a) => a === 'fixed_window' || perSecond.algorithms?.has(a) === true);
    this.algorithms = new Set(both);
  }

  async execute(ops: readonly CounterOp[]): Promise<OpResult[]> {
    const main = this.main.execute?.bind(this.main);
    const second = this.perSecond.execute?.bind(this.perSecond);
    if (main === undefined || second === undefined) throw new StoreError(`${this.kind}: the per-second split store runs execute only over stores that both support it`);
    let secondCount = 0;
    for (const op of ops) if (op.windowSeconds === 1) secondCount++;
    if (secondCount === 0) return main(ops);
    if (secondCount === ops.length) return second(ops);
    const mainOps: CounterOp[] = [];
    const secondOps: CounterOp[] = [];
    for (const op of ops) (op.windowSeconds === 1 ? secondOps : mainOps).push(op);
    const [a, b] = await Promise.all([main(mainOps), second(secondOps)]);
    const out = new Array<OpResult>(ops.length);
    let i = 0;
    let j = 0;
    for (let k = 0; k < ops.length; k++) out[k] = (ops[k] as CounterOp).windowSeconds === 1 ? (b[j++] as OpResult) : (a[i++] as OpResult);
    return out;
  }

  async increment(ops: readonly CounterOp[]): Promise<number[]> {
    let secondCount = 0;
    for (const op of ops) if (op.windowSeconds === 1) secondCount++;
    if (secondCount === 0) return this.main.increment(ops);
    if (secondCount === ops.length) return this.perSecond.increment(ops);
    const mainOps: CounterOp[] = [];
    const secondOps: CounterOp[] = [];
    for (const op of ops) (op.windowSeconds === 1 ? secondOps : mainOps).push(op);
    const [a, b] = await Promise.all([this.main.increment(mainOps), this.perSecond.increment(secondOps)]);
    const out = new Array<number>(ops.length);
    let i = 0;
    let j = 0;
    for (let k = 0; k < ops.length; k++) out[k] = (ops[k] as CounterOp).windowSeconds === 1 ? (b[j++] as number) : (a[i++] as number);
    return out;
  }

  /**
   * With `windowSeconds` (aligned with `keys`) each key is read from its store. Without it the key
   * is read from both and the larger value wins: a key lives in one store only, the other reads 0.
   */
  async get(keys: readonly string[], windowSeconds?: readonly number[]): Promise<number[]> {
    if (keys.length === 0) return [];
    if (windowSeconds === undefined) {
      const [a, b] = await Promise.all([this.main.get(keys), this.perSecond.get(keys)]);
      return a.map((v, i) => Math.max(v, b[i] ?? 0));
    }
    const mainKeys: string[] = [];
    const secondKeys: string[] = [];
    keys.forEach((k, i) => (windowSeconds[i] === 1 ? secondKeys : mainKeys).push(k));
    const [a, b] = await Promise.all([this.main.get(mainKeys), this.perSecond.get(secondKeys)]);
    let i = 0;
    let j = 0;
    return keys.map((_k, k) => (windowSeconds[k] === 1 ? (b[j++] as number) : (a[i++] as number)));
  }

  /** From both stores (a key lives in one of them; deleting a missing key is harmless). */
  async delete(keys: readonly string[]): Promise<void> {
    const main = this.main.delete?.bind(this.main);
    const second = this.perSecond.delete?.bind(this.perSecond);
    if (main === undefined || second === undefined) throw new StoreError(`${this.kind}: the per-second split store deletes only over stores that both can`);
    await Promise.all([main(keys), second(keys)]);
  }

  /** Both stores must be reachable for every request to be served. */
  isConnected(): boolean {
    return this.main.isConnected() && this.perSecond.isConnected();
  }

  onConnectionChange(listener: (connected: boolean) => void): void {
    let last = this.isConnected();
    const check = (): void => {
      const now = this.isConnected();
      if (now === last) return;
      last = now;
      listener(now);
    };
    this.main.onConnectionChange?.(check);
    this.perSecond.onConnectionChange?.(check);
  }

  async close(): Promise<void> {
    await Promise.all([this.main.close(), this.perSecond.close()]);
  }
}
