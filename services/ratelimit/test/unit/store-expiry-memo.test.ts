// The EXPIRE-once encoding of `expireOnCreate` ops (expiry-memo.ts, redis-commands.ts): which
// commands go out, how their replies are read, and what the memo learns. Against real Redis in
// test/integration/store-redis.test.ts and the store contract.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SATURATED_COUNT, StoreError, type CounterOp } from '@rls/engine';
import { EXPIRY_MEMO_SLOTS, ExpiryMemo, expiryHash } from '../../src/backends/expiry-memo.js';
import { encodeCommand, encodeIncrements, expireCommands, IncrementPlan, IncrementPlanReplies } from '../../src/backends/redis-commands.js';
import { RespErrorReply, type RespReply } from '../../src/backends/resp-parser.js';

const tagged = (key: string, addend = 1, expireSeconds = 3600): CounterOp => ({ key, addend, expireSeconds, windowSeconds: 3600, expireOnCreate: true });
const plain = (key: string, addend = 1, expireSeconds = 60): CounterOp => ({ key, addend, expireSeconds, windowSeconds: 60 });
const incrby = (key: string, addend: number): string => encodeCommand(['INCRBY', key, String(addend)]);
const expire = (key: string, ttl: number): string => encodeCommand(['EXPIRE', key, String(ttl)]);

/** Feeds `replies` to the plan's reply handler; its outcome. */
function decode(plan: IncrementPlan, memo: ExpiryMemo, replies: RespReply[]): { values?: number[]; fresh?: number[] | undefined; error?: StoreError; done: boolean[] } {
  const out: { values?: number[]; fresh?: number[] | undefined; error?: StoreError; done: boolean[] } = { done: [] };
  const h = new IncrementPlanReplies(
    plan,
    memo,
    (values, fresh) => {
      out.values = values;
      out.fresh = fresh;
    },
    (err) => (out.error = err),
  );
  for (const r of replies) out.done.push(h.accept(r));
  return out;
}

test('a key the memo does not know gets INCRBY + EXPIRE; once EXPIRE answered 1, INCRBY alone', () => {
  const memo = new ExpiryMemo();
  const ops = [tagged('a_w3600'), plain('b', 2)];
  const first = new IncrementPlan(ops, memo);
  assert.equal(first.text(), incrby('a_w3600', 1) + expire('a_w3600', 3600) + incrby('b', 2) + expire('b', 60));
  assert.equal(first.text(), encodeIncrements(ops), 'the same bytes as the plain encoding while nothing is known');
  assert.equal(first.replies, 4);
  const got = decode(first, memo, [5, 1, 7, 1]);
  assert.deepEqual(got.values, [5, 7]);
  assert.equal(got.fresh, undefined);
  assert.deepEqual(got.done, [false, false, false, true]);
  assert.ok(memo.has(expiryHash('a_w3600')));
  assert.ok(!memo.has(expiryHash('b')), 'upstream-format keys are never recorded');

  const second = new IncrementPlan(ops, memo);
  assert.equal(second.text(), incrby('a_w3600', 1) + incrby('b', 2) + expire('b', 60));
  assert.equal(second.replies, 3);
  assert.deepEqual(second.commands().map((c) => [c.key, c.text]), [
    ['a_w3600', incrby('a_w3600', 1)],
    ['b', incrby('b', 2)],
    ['b', expire('b', 60)],
  ]);
  assert.deepEqual(decode(second, memo, [6, 9, 1]).values, [6, 9]);
});

test('EXPIRE answering 0 (the key was gone) teaches the memo nothing', () => {
  const memo = new ExpiryMemo();
  decode(new IncrementPlan([tagged('gone')], memo), memo, [1, 0]);
  assert.ok(!memo.has(expiryHash('gone')));
});

test('INCRBY alone answering exactly the addend marks the op fresh: its EXPIRE must follow', () => {
  const memo = new ExpiryMemo();
  memo.add(expiryHash('x'));
  memo.add(expiryHash('y'));
  const plan = new IncrementPlan([tagged('x', 3), tagged('y', 3), tagged('z', 3)], memo);
  assert.equal(plan.replies, 4);
  const got = decode(plan, memo, [3, 10, 3, 1]);
  assert.deepEqual(got.values, [3, 10, 3]);
  assert.deepEqual(got.fresh, [0], 'x was recreated; y counted on; z was sent with its EXPIRE');
  assert.deepEqual(expireCommands(plan.ops, got.fresh ?? []).map((c) => c.text), [expire('x', 3600)]);
  // Addend 0 on a recreated key answers 0.
  const zero = new IncrementPlan([tagged('x', 0)], memo);
  assert.deepEqual(decode(zero, memo, [0]).fresh, [0]);
});

test('errors: an error reply rejects once every reply has arrived; INCRBY overflow reads saturated', () => {
  const memo = new ExpiryMemo();
  memo.add(expiryHash('k'));
  const plan = new IncrementPlan([tagged('k'), tagged('wrong'), tagged('huge')], memo);
  const got = decode(plan, memo, [4, new RespErrorReply('WRONGTYPE Operation against a key'), 1, new RespErrorReply('ERR increment or decrement would overflow'), 1]);
  assert.deepEqual(got.done, [false, false, false, false, true]);
  assert.ok(got.error instanceof StoreError && /WRONGTYPE/.test(got.error.message));
  assert.ok(memo.has(expiryHash('huge')), 'its EXPIRE answered 1');
  const ok = decode(new IncrementPlan([tagged('huge')], memo), memo, [new RespErrorReply('ERR increment or decrement would overflow')]);
  assert.deepEqual(ok.values, [SATURATED_COUNT]);
  assert.equal(ok.fresh, undefined, 'a saturated key exists: no EXPIRE needed');
});

test('the memo is a fixed table: a colliding key takes the slot (then gets EXPIRE again), clear forgets all', () => {
  const memo = new ExpiryMemo();
  const h = expiryHash('first');
  memo.add(h);
  // Another hash landing in the same slot: flipping bit 0 and bit 16 leaves (h ^ h >>> 16) & mask alone.
  const other = h ^ 0x10001;
  memo.add(other);
  assert.ok(memo.has(other));
  assert.ok(!memo.has(h), 'overwritten: the next call for it sends EXPIRE again');
  for (let i = 0; i < 4 * EXPIRY_MEMO_SLOTS; i++) memo.add(expiryHash(`k${i}`));
  memo.clear();
  assert.ok(!memo.has(expiryHash('k1')));
  assert.notEqual(expiryHash(''), 0, '0 marks an empty slot');
});
