// PairKeys: the `<id>\u0000<period>` map keys of the usage counters, handed out as the same string
// while an id's period lasts, and bounded in ids.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PairKeys } from '../../src/accounts/pair-keys.js';

test('the same (id, period) gives the identical string, equal to the key built by hand', () => {
  const keys = new PairKeys();
  const a = keys.key('tok-1', '2026-03');
  assert.equal(a, 'tok-1\u00002026-03');
  assert.equal(keys.key('tok-1', '2026-03'), a);
  // Same text from a string built afresh (not interned with the literal above).
  const id = ['tok', '1'].join('-');
  const period = ['2026', '03'].join('-');
  assert.equal(keys.key(id, period), a);
  assert.equal(keys.key('tok-2', '2026-03'), 'tok-2\u00002026-03');
});

test('a new period gives the new key (and the old period is not served from memory)', () => {
  const keys = new PairKeys();
  assert.equal(keys.key('tok-1', '2026-03'), 'tok-1\u00002026-03');
  assert.equal(keys.key('tok-1', '2026-04'), 'tok-1\u00002026-04');
  assert.equal(keys.key('tok-1', '2026-04'), 'tok-1\u00002026-04');
  assert.equal(keys.key('tok-1', '2026-03'), 'tok-1\u00002026-03', 'back to an earlier period (a day key and a month key share nothing)');
  assert.equal(keys.key('tok-2', '2026-04'), 'tok-2\u00002026-04');
});

test('ids and periods that could run together stay distinct', () => {
  const keys = new PairKeys();
  const seen = new Set<string>();
  for (const [id, period] of [['a', 'bc'], ['ab', 'c'], ['a\u0000b', 'c'], ['', 'abc'], ['abc', '']] as const) seen.add(keys.key(id, period));
  assert.ok(seen.has('a\u0000bc') && seen.has('ab\u0000c'));
  assert.equal(seen.size, 5);
});

test('bounded: past maxIds every id is forgotten, and keys stay correct', () => {
  const keys = new PairKeys(3);
  const memory = (k: PairKeys): Map<string, unknown> => (k as unknown as { last: Map<string, unknown> }).last;
  for (let i = 0; i < 3; i++) keys.key(`id-${i}`, 'p');
  assert.equal(memory(keys).size, 3);
  assert.equal(keys.key('id-3', 'p'), 'id-3\u0000p');
  assert.ok(memory(keys).size <= 3, `at most maxIds ids remembered, got ${memory(keys).size}`);
  for (let i = 0; i < 1000; i++) {
    assert.equal(keys.key(`id-${i}`, `p${i % 7}`), `id-${i}\u0000p${i % 7}`);
    assert.ok(memory(keys).size <= 3);
  }
  // A period change for a remembered id does not grow the memory.
  const k = new PairKeys(2);
  k.key('x', '1');
  k.key('x', '2');
  k.key('x', '3');
  assert.equal(memory(k).size, 1);
});

test('default bound is 10,000 ids', () => {
  const keys = new PairKeys();
  const memory = (keys as unknown as { last: Map<string, unknown> }).last;
  for (let i = 0; i < 25_000; i++) keys.key(`id-${i}`, '2026-03');
  assert.ok(memory.size <= 10_000, `remembered ${memory.size}`);
});
