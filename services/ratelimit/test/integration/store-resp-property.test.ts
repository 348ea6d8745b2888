// Property-based tests (fast-check, fixed seed) of the streaming RESP2 reply parser: streams of
// random replies decode to exactly those replies however the bytes are split into chunks; random
// bytes and damaged streams give replies or RespProtocolError and nothing else, with the same
// outcome whether fed whole or split at any position; lengths, counts and nesting that would
// make the parser buffer or recurse without bound are refused as soon as they are read.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_REPLY_BYTES, MAX_REPLY_DEPTH, RespErrorReply, RespParser, RespProtocolError, type RespReply } from '../../src/backends/resp-parser.js';
import { fcOptions, mutatedArb } from '@rls/testkit';

const lineText = fc.string({ maxLength: 12 }).map((s) => s.replace(/[\r\n]/g, ' '));
const replyArb: fc.Arbitrary<RespReply> = fc.letrec<{ reply: RespReply }>((tie) => ({
  reply: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 31 }), fc.constantFrom(0, -1, Number.MAX_SAFE_INTEGER)),
    fc.string({ unit: 'binary', maxLength: 12 }),
    lineText.map((s) => ({ simple: s }) as unknown as RespReply),
    lineText.map((s) => new RespErrorReply(s)),
    fc.constant(null),
    fc.array(tie('reply'), { maxLength: 4 }),
  ),
})).reply;

/** `{simple}` marks a status reply (`+`), which decodes to a plain string. */
function encode(r: RespReply, out: string[]): void {
  if (r === null) out.push(out.length % 2 === 0 ? '$-1\r\n' : '*-1\r\n');
  else if (typeof r === 'number') out.push(`:${r}\r\n`);
  else if (typeof r === 'string') out.push(`$${Buffer.byteLength(r)}\r\n${r}\r\n`);
  else if (r instanceof RespErrorReply) out.push(`-${r.message}\r\n`);
  else if (Array.isArray(r)) {
    out.push(`*${r.length}\r\n`);
    for (const x of r) encode(x, out);
  } else out.push(`+${(r as { simple: string }).simple}\r\n`);
}
function expected(r: RespReply): RespReply {
  if (r === null || typeof r !== 'object' || r instanceof RespErrorReply) return r;
  if (Array.isArray(r)) return r.map(expected);
  return (r as { simple: string }).simple;
}
const streamArb = fc.array(replyArb, { minLength: 1, maxLength: 6 }).map((replies) => {
  const out: string[] = [];
  for (const r of replies) encode(r, out);
  return { bytes: Buffer.from(out.join(''), 'utf8'), replies: replies.map(expected) };
});

interface Outcome {
  replies: RespReply[];
  error: string | undefined;
}

/** Feeds `chunks` in order; a RespProtocolError ends the stream (as the connection drops), anything else fails the test. */
function run(chunks: Buffer[]): Outcome {
  const replies: RespReply[] = [];
  const p = new RespParser((r) => replies.push(r));
  try {
    for (const c of chunks) p.feed(c);
  } catch (err) {
    if (!(err instanceof RespProtocolError)) throw err;
    return { replies, error: err.message };
  }
  return { replies, error: undefined };
}

function splits(bytes: Buffer): Buffer[][] {
  const out: Buffer[][] = [];
  for (let cut = 1; cut < bytes.length; cut++) out.push([bytes.subarray(0, cut), bytes.subarray(cut)]);
  return out;
}

describe('RESP parser properties', () => {
  test('random reply streams decode exactly, whole, split at every position, and in random chunks', () => {
    fc.assert(
      fc.property(streamArb, fc.array(fc.nat(), { maxLength: 8 }), ({ bytes, replies }, cuts) => {
        assert.deepEqual(run([bytes]), { replies, error: undefined });
        for (const chunks of splits(bytes)) assert.deepEqual(run(chunks), { replies, error: undefined });
        const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const chunks: Buffer[] = [];
        let prev = 0;
        for (const c of [...at, bytes.length]) {
          chunks.push(bytes.subarray(prev, c));
          prev = c;
        }
        assert.deepEqual(run(chunks), { replies, error: undefined });
      }),
      fcOptions(300),
    );
  });

  test('random bytes and damaged streams: replies or RespProtocolError, the same however split', () => {
    const check = (b: Uint8Array): void => {
      const bytes = Buffer.from(b);
      const whole = run([bytes]);
      for (const chunks of splits(bytes)) {
        const got = run(chunks);
        // The same replies and the same verdict; a split can only leave a reply pending (no error) when whole also had none.
        assert.deepEqual(got.replies, whole.replies);
        assert.equal(got.error === undefined, whole.error === undefined, `whole: ${whole.error}, split: ${got.error}`);
      }
    };
    fc.assert(fc.property(fc.uint8Array({ maxLength: 48 }), check), fcOptions(1000));
    fc.assert(fc.property(fc.array(fc.constantFrom(...':+-$*0123456789\r\n-x'.split('')), { maxLength: 40 }).map((a) => Buffer.from(a.join(''))), check), fcOptions(1000));
    fc.assert(fc.property(mutatedArb(streamArb.map((s) => s.bytes)), check), fcOptions(600));
  });

  test('lengths and counts claiming more than the reply limit are refused at once, without buffering or allocating', () => {
    const before = process.memoryUsage();
    fc.assert(
      fc.property(fc.bigInt({ min: BigInt(Math.floor(MAX_REPLY_BYTES / 3)) + 1n, max: 10n ** 19n - 1n }), fc.constantFrom('$', '*'), (n, type) => {
        const bytes = Buffer.from(`${type}${n}\r\n`);
        const out = run([bytes]);
        assert.ok(out.error !== undefined || (type === '$' && n <= BigInt(MAX_REPLY_BYTES)), `${type}${n} left pending`);
      }),
      fcOptions(500),
    );
    // 20 digits: beyond any 64-bit integer.
    assert.match(run([Buffer.from(':12345678901234567890\r\n')]).error ?? '', /longer than 19 digits/);
    const after = process.memoryUsage();
    assert.ok(after.heapUsed + after.arrayBuffers - before.heapUsed - before.arrayBuffers < 128 * 1024 * 1024);
  });

  test('nesting beyond the depth limit is refused, however deep (no stack overflow)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200_000 }), (depth) => {
        const bytes = Buffer.from('*1\r\n'.repeat(depth) + ':1\r\n');
        const out = run([bytes]);
        if (depth <= MAX_REPLY_DEPTH) {
          let v: RespReply = 1;
          for (let i = 0; i < depth; i++) v = [v];
          assert.deepEqual(out, { replies: [v], error: undefined });
        } else assert.match(out.error ?? '', /nested deeper/);
      }),
      fcOptions(60),
    );
  });

  test('a reply larger than the limit split over many chunks is refused once the limit is passed', () => {
    const p = new RespParser(() => assert.fail('no reply expected'));
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    p.feed(Buffer.from(`$${MAX_REPLY_BYTES}\r\n`));
    let fed = 0;
    assert.throws(() => {
      for (let i = 0; i < 32; i++) {
        p.feed(chunk);
        fed += chunk.length;
      }
    }, RespProtocolError);
    assert.ok(fed <= MAX_REPLY_BYTES + chunk.length, `buffered ${fed} bytes`);
  });
});
