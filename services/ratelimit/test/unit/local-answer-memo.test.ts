// The memo of encoded local-cache answers must be invisible: two dispatchers over two identical
// services, one with the memo and one without, get the same request sequence on the same
// injected clock and must answer the same bytes, count the same statistics (rule counters, local
// cache hits and misses, global shadow mode) and send the same store operations — across second
// and window boundaries, rule reloads, local-cache expiry and eviction, mixed requests and
// changed hits_addend — while the memo really answers the repeats.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeRateLimitRequest, type RateLimitRequestMsg } from '@rls/rls-proto';
import { loadRuleSet, type LimiterOptions } from '@rls/engine';
import { GrpcCall, GrpcDispatcher } from '../../src/server/grpc-calls.js';
import { InflateScheduler, type InflateLane } from '../../src/server/grpc-inflate.js';
import { LocalAnswerMemo } from '../../src/server/local-answer-memo.js';
import { harness, type Harness } from '@rls/engine/testing';

const PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

class CapturedCall extends GrpcCall {
  readonly answer: Promise<Buffer | string>;
  private settle!: (v: Buffer | string) => void;
  constructor() {
    super();
    this.answer = new Promise((resolve) => (this.settle = resolve));
  }
  get headers(): undefined {
    return undefined;
  }
  sendUnary(body: Buffer): void {
    this.settle(Buffer.from(body));
  }
  sendStatus(_http: number, code: number, message: string): void {
    this.settle(`status ${code}: ${message}`);
  }
  startStreaming(): boolean {
    return false;
  }
  sendMessage(): void {}
  stopReading(): void {}
  // Only compressed messages use these; this test sends none.
  holdBytes(): string | undefined {
    return undefined;
  }
  releaseBytes(): void {}
  get connectionKey(): object {
    return this;
  }
  get inflateLane(): InflateLane {
    return new InflateScheduler({ bytesPerSecond: 1, now: Date.now, delay: setTimeout }).lane();
  }
}

interface Side {
  h: Harness;
  dispatcher: GrpcDispatcher;
  decided: { n: number };
  memo: LocalAnswerMemo | undefined;
}

const silent = { debug() {}, info() {}, warn() {}, error() {} };

function side(yaml: string, options: Partial<LimiterOptions>, withMemo: boolean, memoBytes?: number): Side {
  const h = harness(yaml, options, 1_000_000);
  const decided = { n: 0 };
  const memo = withMemo ? new LocalAnswerMemo(undefined, memoBytes) : undefined;
  const dispatcher = new GrpcDispatcher({
    shouldRateLimit: (req) => {
      decided.n++;
      return h.service.shouldRateLimit(req);
    },
    health: { isHealthy: () => true, onChange: () => {} },
    logger: silent,
    wrapShouldRateLimit: memo?.wrap,
  });
  return { h, dispatcher, decided, memo };
}

async function call(s: Side, req: RateLimitRequestMsg): Promise<Buffer | string> {
  const message = encodeRateLimitRequest(req);
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  const c = new CapturedCall();
  assert.ok(s.dispatcher.begin(c, 'POST', PATH, 'application/grpc', undefined, undefined));
  s.dispatcher.onData(c, frame);
  s.dispatcher.onEnd(c);
  return await c.answer;
}

function statsOf(s: Side): Record<string, number> {
  s.h.service.localCache?.refreshGauges();
  const out: Record<string, number> = {};
  for (const c of s.h.stats.allCounters()) if (c.total !== 0) out[c.name] = c.total;
  for (const g of s.h.stats.allGauges()) if (g.value() !== 0) out[`gauge ${g.name}`] = g.value();
  return out;
}

/** Runs `steps` on both sides, comparing every answer, then the stats and store operations. */
class Pair {
  readonly memo: Side;
  readonly plain: Side;
  constructor(
    private readonly yaml: string,
    options: Partial<LimiterOptions>,
    memoBytes?: number,
  ) {
    this.memo = side(yaml, options, true, memoBytes);
    this.plain = side(yaml, options, false);
  }
  async send(req: RateLimitRequestMsg, times = 1): Promise<Buffer | string> {
    let last: Buffer | string = '';
    for (let i = 0; i < times; i++) {
      const [a, b] = [await call(this.memo, req), await call(this.plain, req)];
      assert.deepEqual(a, b, `same answer to ${JSON.stringify(req)} (#${i + 1})`);
      last = a;
    }
    return last;
  }
  advance(ms: number): void {
    this.memo.h.clock.advance(ms);
    this.plain.h.clock.advance(ms);
  }
  reload(): void {
    for (const s of [this.memo, this.plain]) s.h.service.setRuleSet(loadRuleSet([{ name: 'rules.yaml', content: this.yaml }], { mergeDomainConfig: false, stats: s.h.stats }));
  }
  assertSameEffects(): void {
    assert.deepEqual(statsOf(this.memo), statsOf(this.plain));
    assert.deepEqual(this.memo.h.store.increments, this.plain.h.store.increments);
  }
}

const YAML = `
domain: d
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: shadowed
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: open
    rate_limit: { unit: hour, requests_per_unit: 1000 }
`;

const req = (key: string, value: string, hitsAddend = 0, extra: RateLimitRequestMsg['descriptors'] = []): RateLimitRequestMsg => ({
  domain: 'd',
  descriptors: [{ entries: [{ key, value }] }, ...extra],
  hitsAddend,
});

describe('memo of local-cache answers', () => {
  test('answers, stats and store operations are those of the full path; repeats are answered from the memo', async () => {
    const p = new Pair(YAML, { localCacheSizeInBytes: 10_000, responseHeaders: { enabled: true, limitHeader: 'RateLimit-Limit', remainingHeader: 'RateLimit-Remaining', resetHeader: 'RateLimit-Reset' } });
    // 2 OK, the 3rd goes over in the store (key remembered), then local answers.
    await p.send(req('user', 'a'), 8);
    assert.equal(p.plain.decided.n, 8);
    assert.equal(p.memo.decided.n, 4, 'the 5th to 8th requests came from the memo');
    p.assertSameEffects();

    // A new second: duration_until_reset changed, the memo starts over.
    p.advance(1000);
    await p.send(req('user', 'a'), 3);
    assert.equal(p.memo.decided.n, 5);
    // Other bytes (hits_addend) are another entry.
    await p.send(req('user', 'a', 3), 3);
    assert.equal(p.memo.decided.n, 6);
    p.assertSameEffects();

    // Reloaded rules: the next answer is decided again.
    p.reload();
    await p.send(req('user', 'a'), 2);
    assert.equal(p.memo.decided.n, 7);

    // A request with a descriptor that needs the store is never remembered.
    const mixed = req('user', 'a', 0, [{ entries: [{ key: 'open', value: 'x' }] }]);
    await p.send(mixed, 3);
    assert.equal(p.memo.decided.n, 10);

    // Rule-level shadow mode: answered OK from the local cache, shadow_mode counted each time.
    await p.send(req('shadowed', 's'), 5);
    p.assertSameEffects();

    // The minute ends: the local cache forgets the keys and the store counts again.
    p.advance(60_000);
    await p.send(req('user', 'a'), 5);
    p.assertSameEffects();
    assert.ok(p.memo.memo!.size > 0);
  });

  test('bounded in bytes per second: large over-limit requests are decided each time once the budget is spent', async () => {
    // Room for about one small entry (request + answer): a large request never fits.
    const p = new Pair(YAML, { localCacheSizeInBytes: 10_000 }, 200);
    const big = req('user', 'v'.repeat(400));
    await p.send(big, 6);
    assert.equal(p.memo.decided.n, 6, 'never answered from the memo');
    assert.equal(p.memo.memo!.size, 0);
    await p.send(req('user', 'a'), 6);
    assert.ok(p.memo.decided.n < 12, 'a small one still fits');
    assert.ok(p.memo.memo!.heldBytes <= 200, `held ${p.memo.memo!.heldBytes} bytes`);
    p.assertSameEffects();
  });

  test('a remembered key evicted from a full local cache is decided again', async () => {
    // Room for one remembered key only: the second key over its limit evicts the first.
    const p = new Pair(YAML, { localCacheSizeInBytes: 60 });
    await p.send(req('user', 'a'), 4);
    await p.send(req('user', 'b'), 4);
    const before = p.memo.decided.n;
    await p.send(req('user', 'a'), 2);
    assert.equal(p.memo.decided.n, before + 2, 'no memo answer for the evicted key');
    p.assertSameEffects();
  });

  test('global SHADOW_MODE: OK answers with global_shadow_mode counted per request', async () => {
    const p = new Pair(YAML, { localCacheSizeInBytes: 10_000, shadowMode: true });
    await p.send(req('user', 'a'), 6);
    assert.ok(p.memo.decided.n < 6);
    p.assertSameEffects();
    assert.equal(p.memo.h.stats.counterValue('ratelimit.service.global_shadow_mode'), 4);
  });
});
