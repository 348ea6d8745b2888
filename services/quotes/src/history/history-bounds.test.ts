import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BlockCache } from './block-cache.js';
import { bucketCount } from '../domain/intervals.js';
import { checkHistoryBudget, parseDateParam } from './range-rules.js';
import { SeriesBlock } from './series-block.js';
import { TurnQueue } from './turn-queue.js';
import { HistorySlots } from './history-slots.js';

const block = (points: number): SeriesBlock => {
  const b = SeriesBlock.builder(points);
  for (let i = 0; i < points; i++) b.push(i * 60, 1, 2, 0.5, 1.5, i % 2 === 0 ? null : 3, i * 60 + 60);
  return b.build();
};

describe('history bounds', () => {
  test('TurnQueue: one step per event-loop turn, first come first served, other callbacks in between', async () => {
    const turns = new TurnQueue();
    const log: string[] = [];
    const worker = async (name: string): Promise<void> => {
      for (let i = 1; i <= 3; i++) {
        await turns.next();
        log.push(`${name}${i}`);
      }
    };
    // An "I/O callback" re-armed every turn: it must run between any two steps.
    let other = true;
    const tick = (): void => {
      log.push('.');
      if (other) setImmediate(tick);
    };
    setImmediate(tick);
    await Promise.all([worker('a'), worker('b')]);
    other = false;
    const steps = log.join(' ').split(' . ').join('|');
    assert.doesNotMatch(log.join(' '), /[ab]\d [ab]\d/, `two steps ran in one turn: ${log.join(' ')}`);
    assert.deepEqual(log.filter((x) => x !== '.'), ['a1', 'b1', 'a2', 'b2', 'a3', 'b3'], steps);
  });

  test('SeriesBlock keeps points as numbers, null volume as NaN; digest follows the numbers', () => {
    const b = block(3);
    assert.deepEqual(b.point(0), { time: 0, open: 1, high: 2, low: 0.5, close: 1.5, volume: null, closeTime: 60 });
    assert.equal(b.point(1).volume, 3);
    assert.equal(b.bytes, 3 * 56 + 64);
    assert.equal(b.indexAt(61), 2);
    assert.equal(block(3).digest, b.digest);
    assert.notEqual(block(4).digest, b.digest);
  });

  test('BlockCache: bounded in bytes, least recently used out first; an oversized block is not kept', () => {
    const c = new BlockCache(1000);
    c.set('a', block(5)); // 344 bytes
    c.set('b', block(5));
    assert.ok(c.get('a') !== undefined); // a is now the most recent
    c.set('c', block(5)); // 1032 > 1000: b goes
    assert.equal(c.bytes, 688);
    assert.equal(c.peek('b'), undefined);
    assert.ok(c.peek('a') !== undefined && c.peek('c') !== undefined);
    c.set('huge', block(100));
    assert.equal(c.peek('huge'), undefined);
    assert.equal(c.bytes, 688);
  });

  test('dates: days, instants with zones, and clear refusals', () => {
    assert.equal(parseDateParam('startDate', '2026-03-10'), Date.UTC(2026, 2, 10) / 1000);
    assert.equal(parseDateParam('endDate', '2026-03-10'), Date.UTC(2026, 2, 11) / 1000, 'the end day is included');
    assert.equal(parseDateParam('endDate', '2026-03-10T10:00:00.5+01:00'), Date.UTC(2026, 2, 10, 9) / 1000);
    assert.equal(parseDateParam('startDate', '2024-02-29'), Date.UTC(2024, 1, 29) / 1000);
    for (const bad of ['2023-02-29', '2026-3-1', '10/03/2026', '2026-03-10 10:00Z', '', '1e9']) {
      assert.throws(() => parseDateParam('startDate', bad), { code: 'DATES_INVALID' }, bad);
    }
  });

  test('budget: buckets counted from the window (and from 2009 at the earliest) before any work', () => {
    const asOf = Date.UTC(2026, 2, 15, 12, 34, 56) / 1000;
    assert.equal(bucketCount('1h', Date.UTC(2026, 2, 10, 12) / 1000, asOf), 121);
    assert.equal(bucketCount('1wk', Date.UTC(2026, 2, 2) / 1000, Date.UTC(2026, 2, 16) / 1000), 2);
    assert.equal(bucketCount('3mo', Date.UTC(2025, 0, 1) / 1000, Date.UTC(2026, 0, 1) / 1000), 4);
    const w = { usedRange: '5d' as const, usedInterval: '1h' as const, from: Date.UTC(2026, 2, 10, 12) / 1000, to: asOf };
    assert.doesNotThrow(() => checkHistoryBudget(2, w, 242));
    assert.throws(() => checkHistoryBudget(3, w, 242), (e: unknown) => (e as { code: string; details: { points: number } }).code === 'HISTORY_TOO_LARGE' && (e as { details: { points: number } }).details.points === 363);
    const max = { usedRange: 'max' as const, usedInterval: '1d' as const, from: 0, to: asOf };
    assert.throws(() => checkHistoryBudget(8, max, 50_000), { code: 'HISTORY_TOO_LARGE' });
    assert.doesNotThrow(() => checkHistoryBudget(7, max, 50_000), 'max is counted from 2009, not 1970');
  });

  test('HistorySlots: a bounded number at once, a bounded queue first come first served, 503 past it', async () => {
    const slots = new HistorySlots(2, 1);
    const a = await slots.acquire();
    const b = await slots.acquire();
    const order: string[] = [];
    const c = slots.acquire().then((rel) => (order.push('c'), rel));
    await assert.rejects(slots.acquire(), (e: unknown) => (e as { code: string; details: { retryAfterSeconds: number } }).code === 'HISTORY_BUSY' && (e as { details: { retryAfterSeconds: number } }).details.retryAfterSeconds === 1);
    assert.deepEqual([slots.inUse, slots.queued], [2, 1]);
    a();
    a(); // idempotent: frees one slot, once
    const relC = await c;
    assert.deepEqual(order, ['c']);
    assert.deepEqual([slots.inUse, slots.queued], [2, 0]);
    b();
    relC();
    assert.equal(slots.inUse, 0);
  });
});
