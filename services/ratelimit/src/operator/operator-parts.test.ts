// The operator page's bounded parts on exact inputs: the space-saving top list and its slots, the
// latency histogram, the timed store wrapper, truncation and the rules tree's node bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '@rls/testkit';
import type { CounterStore } from '@rls/engine';
import { SpaceSaving, WindowedTopK } from './top-k.js';
import { LatencyWindow, timedStore } from './store-latency.js';
import { MAX_NODES, RulesRecorder, specsOfFiles, truncate } from './rules-view.js';

test('space-saving keeps at most its capacity; an evicted count becomes the newcomer\'s error', () => {
  const s = new SpaceSaving<string>(2);
  s.add('a', 'a', 5);
  s.add('b', 'b', 1);
  s.add('c', 'c', 1);
  assert.equal(s.size, 2);
  const c = s.entriesById().get('c')!;
  assert.deepEqual([c.count, c.error], [2, 1]);
  assert.equal(s.entriesById().get('a')!.count, 5);
  assert.throws(() => new SpaceSaving(0), RangeError);
});

test('windowed top list: merged over the current and previous slot, forgotten after two', () => {
  const t = new WindowedTopK<string>(10, 30_000);
  t.add('x', () => 'x', 3, 0);
  t.add('y', () => 'y', 1, 0);
  t.add('x', () => 'x', 2, 31_000);
  assert.deepEqual(
    t.top(5, 31_000).map((e) => [e.item, e.count]),
    [
      ['x', 5],
      ['y', 1],
    ],
  );
  assert.deepEqual(
    t.top(5, 61_000).map((e) => [e.item, e.count]),
    [['x', 2]],
  );
  assert.deepEqual(t.top(5, 95_000), []);
  assert.equal(t.size, 0);
  // A clock that goes back starts over instead of mixing slots.
  t.add('z', () => 'z', 1, 200_000);
  assert.deepEqual(t.top(5, 100_000), []);
});

test('latency window: percentiles from log buckets (upper edge, within 19 %), one minute kept', () => {
  const w = new LatencyWindow();
  for (let i = 0; i < 98; i++) w.record(1, 0);
  w.record(50, 0);
  w.record(50, 0);
  const v = w.view(5_000);
  assert.equal(v.samples, 100);
  assert.ok(v.p50Ms! >= 1 && v.p50Ms! <= 1.19, `p50 ${v.p50Ms}`);
  assert.ok(v.p99Ms! >= 50 && v.p99Ms! <= 59.5, `p99 ${v.p99Ms}`);
  assert.equal(v.maxMs, 50);
  const later = w.view(61_000);
  assert.equal(later.samples, 0);
  assert.equal(later.p50Ms, null);
});

test('timed store: one call in N timed; optional members present exactly when the inner store has them', async () => {
  const clock = new FakeClock();
  let calls = 0;
  const plain: CounterStore = {
    kind: 'fake',
    increment: (ops) => {
      calls++;
      return Promise.resolve(ops.map(() => 1));
    },
    get: (keys) => Promise.resolve(keys.map(() => 0)),
    isConnected: () => true,
    close: () => Promise.resolve(),
  };
  const w = new LatencyWindow();
  const timed = timedStore(plain, w, clock, 4);
  assert.equal('execute' in timed, false);
  assert.equal('algorithms' in timed, false);
  assert.equal('onConnectionChange' in timed, false);
  for (let i = 0; i < 8; i++) assert.deepEqual(await timed.increment([{ key: 'k', addend: 1, expireSeconds: 1, windowSeconds: 1 }]), [1]);
  assert.equal(calls, 8);
  assert.equal(w.view(clock.now()).samples, 2);

  const algorithms = new Set(['sliding_window' as const]);
  const rich: CounterStore = { ...plain, algorithms, execute: (ops) => Promise.resolve(ops.map(() => ({ value: 7 }))), onConnectionChange: () => undefined };
  const timedRich = timedStore(rich, w, clock, 1);
  assert.equal(timedRich.algorithms, algorithms);
  assert.deepEqual(await timedRich.execute!([{ key: 'k', addend: 1, expireSeconds: 1, windowSeconds: 1 }]), [{ value: 7 }]);
  // Failures are timed and still reach the caller.
  const failing = timedStore({ ...plain, increment: () => Promise.reject(new Error('down')) }, w, clock, 1);
  await assert.rejects(failing.increment([]), /down/);
});

test('truncate cuts at the bound with an ellipsis and never splits a surrogate pair', () => {
  assert.equal(truncate('abc', 5), 'abc');
  assert.equal(truncate('abcdefgh', 5), 'abcd…');
  const cut = truncate('abc😀😀😀', 5);
  assert.equal(cut, 'abc…');
  assert.ok(cut.length <= 5);
});

test('rules tree: cut at MAX_NODES descriptors and marked; history bounded', () => {
  let yaml = 'domain: big\ndescriptors:\n';
  for (let i = 0; i < MAX_NODES + 10; i++) yaml += `  - key: k${i}\n    rate_limit: { unit: second, requests_per_unit: 1 }\n`;
  const r = new RulesRecorder();
  r.loaded({ kind: 'file', specs: specsOfFiles([{ name: 'big.yaml', content: yaml }]), files: 1 }, 1000);
  const v = r.view();
  assert.equal(v.truncated, true);
  assert.equal(v.descriptorCount, MAX_NODES);
  assert.equal(v.domains[0]!.descriptors.length, MAX_NODES);
  assert.equal(v.reloads[0]!.rules, MAX_NODES);
  for (let i = 0; i < 70; i++) r.failed('file', new Error('x'.repeat(5000)), 2000 + i);
  const h = r.view().reloads;
  assert.equal(h.length, 50);
  assert.equal(h[0]!.at, 2069);
  assert.equal(h[0]!.error!.length, 1000);
});

test('rules tree: algorithm and burst read from the rule (token bucket burst defaults to requests_per_unit)', () => {
  const yaml = `domain: a
descriptors:
  - key: tb
    rate_limit: { unit: second, requests_per_unit: 10, algorithm: token_bucket }
  - key: tb2
    rate_limit: { unit: second, requests_per_unit: 10, algorithm: token_bucket, burst: 30 }
  - key: sw
    rate_limit: { unit: minute, requests_per_unit: 5, algorithm: sliding_window }
`;
  const r = new RulesRecorder();
  r.loaded({ kind: 'file', specs: specsOfFiles([{ name: 'a.yaml', content: yaml }]) }, 0);
  const d = r.view().domains[0]!.descriptors;
  assert.deepEqual(
    d.map((x) => [x.key, x.limit!.algorithm, x.limit!.burst]),
    [
      ['tb', 'token_bucket', 10],
      ['tb2', 'token_bucket', 30],
      ['sw', 'sliding_window', undefined],
    ],
  );
});
