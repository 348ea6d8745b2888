// Property-based tests (fast-check, fixed seed) of the memcached text-protocol reply parsers
// (GetReply, LineReply), driven the way memcached-connection.ts drives them: the receive buffer
// grows chunk by chunk and the parser at the head of the queue is asked again from its reply's
// start. Streams of random replies settle every request with exactly its reply however the bytes
// are split; random and damaged streams give results or StoreError, nothing else, the same for
// every split; value lengths and lines claiming more than the bounds are refused at once.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { StoreError } from '@rls/engine';
import { GetReply, LineReply, MAX_LINE_BYTES, MAX_VALUE_BYTES, parseCounter, type ReplyParser } from '../../src/backends/memcached-protocol.js';
import { fcOptions, mutatedArb } from '@rls/testkit';

type Settled = { err: string | undefined; value: string | [string, number][] };
interface Outcome {
  settled: Settled[];
  protocolError: string | undefined;
}

/** Feeds `chunks` through a queue of parsers (kinds 'get' / 'line'), as the connection does. */
function run(kinds: readonly ('get' | 'line')[], chunks: readonly Buffer[]): Outcome {
  const settled: Settled[] = [];
  const queue: ReplyParser[] = kinds.map((k) =>
    k === 'get'
      ? new GetReply((err, values) => settled.push({ err: err?.message, value: [...values.entries()] }))
      : new LineReply((err, line) => settled.push({ err: err?.message, value: line })),
  );
  let head = 0;
  let recv = Buffer.alloc(0);
  try {
    for (const chunk of chunks) {
      recv = Buffer.concat([recv, chunk]);
      let pos = 0;
      while (pos < recv.length) {
        const p = queue[head];
        if (p === undefined) throw new StoreError('reply without a request');
        const end = p.parse(recv, pos);
        if (end < 0) break;
        assert.ok(end > pos && end <= recv.length, `parser returned ${end} from ${pos} of ${recv.length}`);
        pos = end;
        head++;
      }
      recv = recv.subarray(pos);
    }
  } catch (err) {
    if (!(err instanceof StoreError)) throw err;
    return { settled, protocolError: err.message };
  }
  return { settled, protocolError: undefined };
}

// Printable ASCII only: memcached keys have no spaces or control characters.
const keyArb = fc.string({ minLength: 1, maxLength: 20 }).map((s) => Array.from(s, (c) => (c > ' ' && c < '\x7f' ? c : '_')).join(''));
const counterText = fc.oneof(
  fc.nat().map(String),
  fc.tuple(fc.nat({ max: 99999 }), fc.nat({ max: 4 })).map(([n, pad]) => `${n}${' '.repeat(pad)}`),
  fc.string({ unit: 'binary-ascii', maxLength: 12 }),
);
const errorLine = fc.oneof(fc.constant('ERROR'), lineTail('CLIENT_ERROR '), lineTail('SERVER_ERROR '));
function lineTail(prefix: string): fc.Arbitrary<string> {
  return fc.string({ maxLength: 20 }).map((s) => prefix + s.replace(/[\r\n]/g, ' '));
}

interface Planned {
  kind: 'get' | 'line';
  bytes: string;
  expect: Settled;
}
const getReplyArb: fc.Arbitrary<Planned> = fc.oneof(
  fc.array(fc.tuple(keyArb, fc.nat({ max: 65535 }), counterText), { maxLength: 4 }).map((items) => {
    const expected = new Map<string, number>();
    let bytes = '';
    for (const [k, flags, v] of items) {
      bytes += `VALUE ${k} ${flags} ${Buffer.byteLength(v, 'latin1')}\r\n${v}\r\n`;
      expected.set(k, parseCounter(v));
    }
    return { kind: 'get' as const, bytes: `${bytes}END\r\n`, expect: { err: undefined, value: [...expected.entries()] } };
  }),
  errorLine.map((l) => ({ kind: 'get' as const, bytes: `${l}\r\n`, expect: { err: `memcached: ${l}`, value: [] } })),
);
const lineReplyArb: fc.Arbitrary<Planned> = fc.oneof(
  fc.constantFrom('STORED', 'NOT_STORED', 'NOT_FOUND', 'VERSION 1.6.21').map((l) => ({ kind: 'line' as const, bytes: `${l}\r\n`, expect: { err: undefined, value: l } })),
  fc.nat().map((n) => ({ kind: 'line' as const, bytes: `${n}\r\n`, expect: { err: undefined, value: String(n) } })),
  errorLine.map((l) => ({ kind: 'line' as const, bytes: `${l}\r\n`, expect: { err: `memcached: ${l}`, value: l } })),
);
const streamArb = fc.array(fc.oneof(getReplyArb, lineReplyArb), { minLength: 1, maxLength: 5 }).map((plans) => ({
  kinds: plans.map((p) => p.kind),
  bytes: Buffer.from(plans.map((p) => p.bytes).join(''), 'latin1'),
  settled: plans.map((p) => p.expect),
}));

function splits(bytes: Buffer): Buffer[][] {
  const out: Buffer[][] = [];
  for (let cut = 1; cut < bytes.length; cut++) out.push([bytes.subarray(0, cut), bytes.subarray(cut)]);
  return out;
}

const kindsArb = fc.array(fc.constantFrom('get' as const, 'line' as const), { minLength: 1, maxLength: 6 });

describe('memcached reply parser properties', () => {
  test('random reply streams settle every request exactly, whole and split at every position', () => {
    fc.assert(
      fc.property(streamArb, ({ kinds, bytes, settled }) => {
        assert.deepEqual(run(kinds, [bytes]), { settled, protocolError: undefined });
        for (const chunks of splits(bytes)) assert.deepEqual(run(kinds, chunks), { settled, protocolError: undefined });
        const bytewise = Array.from({ length: bytes.length }, (_v, i) => bytes.subarray(i, i + 1));
        assert.deepEqual(run(kinds, bytewise), { settled, protocolError: undefined });
      }),
      fcOptions(300),
    );
  });

  test('random bytes and damaged streams: results or StoreError, the same however split', () => {
    const check = (kinds: ('get' | 'line')[], b: Uint8Array): void => {
      const bytes = Buffer.from(b);
      const whole = run(kinds, [bytes]);
      for (const chunks of splits(bytes)) {
        const got = run(kinds, chunks);
        assert.deepEqual(got.settled, whole.settled);
        assert.equal(got.protocolError === undefined, whole.protocolError === undefined, `whole: ${whole.protocolError}, split: ${got.protocolError}`);
      }
    };
    fc.assert(fc.property(kindsArb, fc.uint8Array({ maxLength: 48 }), check), fcOptions(800));
    const tokens = fc.constantFrom('VALUE ', 'END', '\r\n', '\r', '\n', ' ', 'k', '0', '1', '5', '99999999999', 'STORED', 'ERROR', '-1', 'x');
    fc.assert(fc.property(kindsArb, fc.array(tokens, { maxLength: 16 }).map((t) => Buffer.from(t.join(''))), check), fcOptions(800));
    fc.assert(
      fc.property(streamArb.chain((s) => fc.tuple(fc.constant(s.kinds), mutatedArb(fc.constant(s.bytes)))), ([kinds, b]) => check(kinds, b)),
      fcOptions(600),
    );
  });

  test('a VALUE length claiming more than the bound is refused at once, not waited for', () => {
    fc.assert(
      fc.property(fc.integer({ min: MAX_VALUE_BYTES + 1, max: 9_999_999_999 }), keyArb, (n, key) => {
        const out = run(['get'], [Buffer.from(`VALUE ${key} 0 ${n}\r\n`)]);
        assert.match(out.protocolError ?? '', /value over/);
      }),
      fcOptions(300),
    );
    // Not digits: refused rather than read by Number() as 0, 16 or 1000.
    for (const bad of ['', '0x10', '1e3', '-1', ' 5']) {
      assert.match(run(['get'], [Buffer.from(`VALUE k 0 ${bad}\r\n`)]).protocolError ?? '', /bad VALUE line|value block/, JSON.stringify(bad));
    }
  });

  test('a line that never ends is refused once it passes the line bound', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.constantFrom<('get' | 'line')[]>(['get'], ['line']), (chunkKiB, kinds) => {
        const chunk = Buffer.alloc(chunkKiB * 1024, 0x61);
        const chunks = Array.from({ length: Math.ceil((4 * MAX_LINE_BYTES) / chunk.length) + 1 }, () => chunk);
        const out = run(kinds, chunks);
        assert.match(out.protocolError ?? '', /line longer than/);
      }),
      fcOptions(50),
    );
  });
});
