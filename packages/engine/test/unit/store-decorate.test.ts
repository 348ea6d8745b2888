// decorateStore (store/decorate-store.ts): every CounterStore member survives decoration, forwarded
// to the inner store unless overridden; optional members stay absent exactly when the inner store
// lacks them; the member list cannot fall behind the contract.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '@rls/testkit';
import { decorateStore, MemoryStore, STORE_MEMBERS, type CounterOp, type CounterStore } from '@rls/engine';

const OP: CounterOp = { key: 'k', addend: 1, expireSeconds: 60, windowSeconds: 60 };

/** A store with every member (Required: the compiler fails this test when the contract grows). */
function fullStore(log: string[]): Required<CounterStore> & { readonly self: () => unknown } {
  const algorithms = new Set(['sliding_window' as const]);
  const store = {
    kind: 'full',
    algorithms,
    increment(ops: readonly CounterOp[]) {
      log.push(`increment ${ops.length} ${String(this === store)}`);
      return Promise.resolve(ops.map(() => 1));
    },
    execute(ops: readonly CounterOp[]) {
      log.push(`execute ${String(this === store)}`);
      return Promise.resolve(ops.map(() => ({ value: 2 })));
    },
    get(keys: readonly string[]) {
      log.push(`get ${String(this === store)}`);
      // Answered at once (a value, not a promise), as an in-process store may.
      return keys.map(() => 3);
    },
    delete(keys: readonly string[]) {
      log.push(`delete ${keys.join(',')} ${String(this === store)}`);
      return Promise.resolve();
    },
    isConnected() {
      return this === store;
    },
    onConnectionChange(listener: (connected: boolean) => void) {
      log.push(`listen ${String(this === store)}`);
      listener(true);
    },
    close() {
      log.push(`close ${String(this === store)}`);
      return Promise.resolve();
    },
    self: () => store,
  };
  return store;
}

test('decorateStore: the member list is the contract (every member of a full store is listed, nothing else)', () => {
  const full = fullStore([]);
  const members = Object.keys(full).filter((k) => k !== 'self');
  assert.deepEqual(Object.keys(STORE_MEMBERS).sort(), members.sort());
});

test('decorateStore: with no overrides every member is forwarded, methods called on the inner store', async () => {
  const log: string[] = [];
  const inner = fullStore(log);
  const d = decorateStore(inner);
  for (const key of Object.keys(STORE_MEMBERS)) assert.ok(key in d, `${key} survives decoration`);
  assert.equal(d.kind, 'full');
  assert.equal(d.algorithms, inner.algorithms);
  assert.deepEqual(await d.increment([OP, OP]), [1, 1]);
  assert.deepEqual(await d.execute?.([OP]), [{ value: 2 }]);
  assert.deepEqual(d.get(['a']), [3], 'an answer given at once is forwarded as it is (no promise)');
  await d.delete?.(['a', 'b']);
  assert.equal(d.isConnected(), true);
  let heard: boolean | undefined;
  d.onConnectionChange?.((c) => (heard = c));
  assert.equal(heard, true);
  await d.close();
  assert.deepEqual(log, ['increment 2 true', 'execute true', 'get true', 'delete a,b true', 'listen true', 'close true']);
});

test('decorateStore: optional members stay absent when the inner store lacks them, even with an override', () => {
  const plain: CounterStore = {
    kind: 'plain',
    increment: (ops) => Promise.resolve(ops.map(() => 1)),
    get: (keys) => keys.map(() => 0),
    isConnected: () => true,
    close: () => Promise.resolve(),
  };
  const d = decorateStore(plain, { execute: (e) => e, delete: (x) => x });
  for (const key of ['algorithms', 'execute', 'delete', 'onConnectionChange']) assert.equal(key in d, false, key);
  for (const key of ['kind', 'increment', 'get', 'isConnected', 'close']) assert.equal(key in d, true, key);
});

test('decorateStore: an override gets the bound inner member and replaces it; values not overridden stay live', async () => {
  const log: string[] = [];
  const inner = fullStore(log);
  const d = decorateStore(inner, {
    increment: (increment) => async (ops) => (await increment(ops)).map((v) => v * 10),
    kind: (kind) => `${kind}+`,
  });
  assert.deepEqual(await d.increment([OP]), [10]);
  assert.equal(d.kind, 'full+');
  assert.deepEqual(log, ['increment 1 true']);
  // A value member is read from the inner store on each access.
  const live: CounterStore & { algorithms?: ReadonlySet<'token_bucket'> } = { ...inner, algorithms: new Set<'token_bucket'>() };
  const dl = decorateStore(live);
  live.algorithms = new Set(['token_bucket']);
  assert.equal(dl.algorithms?.has('token_bucket'), true);
});

test('decorateStore: a real MemoryStore still answers at once and counts through the decoration', async () => {
  const clock = new FakeClock();
  clock.setSeconds(1_800_000_000);
  const inner = new MemoryStore({ clock });
  const d = decorateStore(inner);
  assert.deepEqual(d.increment([OP]), [1], 'a value, not a promise');
  assert.deepEqual(d.increment([OP]), [2]);
  assert.deepEqual(d.get(['k']), [2]);
  assert.throws(() => d.increment([{ ...OP, addend: 0.5 }]), { code: 'store_unavailable' }, 'a failure thrown at once stays a throw');
  await d.delete?.(['k']);
  assert.deepEqual(inner.get(['k']), [0]);
  await d.close();
});
