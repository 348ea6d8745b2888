// Property-based tests of the HPACK decoder and the Huffman decoder (fast-check, fixed seed):
// random header lists written every way the test encoder can write them decode back exactly with
// the dynamic tables in step; random bytes and damaged valid blocks give fields or HpackError and
// nothing else; lengths and integers claiming gigabytes are refused before anything is allocated;
// the decoded list never exceeds the list-size limit however much a block references.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { HpackDecoder, HpackError, FIELDS_TOO_LARGE } from './hpack-decoder.js';
import { huffmanDecode } from './huffman.js';
import { STATIC_TABLE } from './hpack-static-table.js';
import { TestHpackEncoder, huffmanEncode, type FieldChoice } from '../../../test/support/hpack-test-encoder.js';
import { fcOptions, mutatedArb, valueOrTyped, varintBytes } from '@rls/testkit';

const LIMIT = 64 * 1024;

const latin1 = (max: number): fc.Arbitrary<string> =>
  fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: max }).map((a) => String.fromCharCode(...a));
const tokenChar = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-_.!#$%&\'*+^`|~'.split(''));
const nameArb = fc.oneof(
  fc.constantFrom(...STATIC_TABLE.map(([n]) => n)),
  fc.array(tokenChar, { minLength: 1, maxLength: 24 }).map((a) => a.join('')),
);
const valueArb = fc.oneof(fc.constantFrom('', 'GET', '/', 'http', '200', 'gzip, deflate'), latin1(64));
const fieldArb = fc.tuple(nameArb, valueArb);
const choiceArb: fc.Arbitrary<FieldChoice> = fc.record({
  representation: fc.constantFrom('indexed' as const, 'incremental' as const, 'without' as const, 'never' as const),
  nameByIndex: fc.boolean(),
  huffmanName: fc.boolean(),
  huffmanValue: fc.boolean(),
});
interface BlockPlan {
  fields: [string, string][];
  choices: FieldChoice[];
  sizeUpdates: number[];
}
const blockArb: fc.Arbitrary<BlockPlan> = fc.record({
  fields: fc.array(fieldArb, { maxLength: 12 }),
  choices: fc.array(choiceArb, { minLength: 12, maxLength: 12 }),
  sizeUpdates: fc.oneof({ weight: 4, arbitrary: fc.constant<number[]>([]) }, { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 4096 }), { minLength: 1, maxLength: 2 }) }),
});

function encodeStory(plans: BlockPlan[]): Buffer[] {
  const enc = new TestHpackEncoder(4096);
  return plans.map((p) => enc.encode(p.fields, (i) => p.choices[i]!, p.sizeUpdates));
}

/** Valid blocks of a story (several blocks, so later ones reference a warm table). */
const storyBlocksArb = fc.array(blockArb, { minLength: 1, maxLength: 4 }).map(encodeStory);

function decodeAll(blocks: Buffer[], limit = LIMIT): { fields: string[][]; flags: number[] } | HpackError {
  const d = new HpackDecoder(4096);
  const fields: string[][] = [];
  const flags: number[] = [];
  for (const b of blocks) {
    const out: string[] = [];
    const r = valueOrTyped(() => d.decode(b, out, limit), (e) => e instanceof HpackError);
    if (!r.ok) return r.err as HpackError;
    fields.push(out);
    flags.push(r.value);
  }
  return { fields, flags };
}

describe('HPACK decoder properties', () => {
  test('round trip: every representation, Huffman or raw, size updates; tables stay in step', () => {
    fc.assert(
      fc.property(fc.array(blockArb, { minLength: 1, maxLength: 5 }), (plans) => {
        const enc = new TestHpackEncoder(4096);
        const dec = new HpackDecoder(4096);
        for (const p of plans) {
          const block = enc.encode(p.fields, (i) => p.choices[i]!, p.sizeUpdates);
          const out: string[] = [];
          dec.decode(block, out, LIMIT);
          assert.deepEqual(out, p.fields.flat());
          assert.deepEqual(dec.dynamicEntries(), enc.entries());
          assert.ok(dec.dynamicSize() <= 4096);
        }
      }),
      fcOptions(400),
    );
  });

  test('random bytes: fields or HpackError, nothing else', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 96 }), { minLength: 1, maxLength: 3 }), (blocks) => {
        decodeAll(blocks.map((b) => Buffer.from(b)));
      }),
      fcOptions(3000),
    );
  });

  test('damaged valid blocks (bit flips, truncation, splices, huge integers): fields or HpackError', () => {
    // Random bytes appended to one block of a valid story (the blocks before it warm the table).
    fc.assert(
      fc.property(
        storyBlocksArb.chain((blocks) => fc.tuple(fc.constant(blocks), fc.nat({ max: blocks.length - 1 }), fc.uint8Array({ minLength: 1, maxLength: 24 }))),
        ([blocks, i, noise]) => {
          blocks[i] = Buffer.concat([blocks[i]!, noise]);
          decodeAll(blocks);
        },
      ),
      fcOptions(300),
    );
    fc.assert(
      fc.property(
        storyBlocksArb.chain((blocks) =>
          fc.tuple(fc.constant(blocks), fc.nat({ max: blocks.length - 1 })).chain(([bs, i]) => fc.tuple(fc.constant(bs), fc.constant(i), mutatedArb(fc.constant(bs[i]!), 4))),
        ),
        ([blocks, i, damaged]) => {
          blocks[i] = damaged;
          decodeAll(blocks);
        },
      ),
      fcOptions(1500),
    );
  });

  test('a string length or index claiming up to 2^64 is refused without allocating it', () => {
    const before = process.memoryUsage().arrayBuffers + process.memoryUsage().heapUsed;
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.constantFrom(0x00, 0x10, 0x40), fc.boolean(), (claimed, head, huffman) => {
        // Literal with a literal name whose length prefix claims `claimed` bytes; 3 bytes follow.
        const len = claimed < 127n ? [Number(claimed) | (huffman ? 0x80 : 0)] : [(huffman ? 0x80 : 0) | 0x7f, ...varintBytes(claimed - 127n)];
        const block = Buffer.from([head, ...len, 0x61, 0x62, 0x63]);
        const r = decodeAll([block]);
        if (claimed > 3n) {
          assert.ok(r instanceof HpackError, `length ${claimed} accepted`);
          assert.match(r.message, /string longer than the field block|integer too large/);
        }
        // Indexed field with a huge index.
        const idx = Buffer.from([0xff, ...varintBytes(claimed)]);
        const r2 = decodeAll([idx]);
        if (claimed + 127n > 61n) assert.ok(r2 instanceof HpackError);
      }),
      fcOptions(2000),
    );
    const after = process.memoryUsage().arrayBuffers + process.memoryUsage().heapUsed;
    assert.ok(after - before < 256 * 1024 * 1024, `memory grew by ${after - before} bytes`);
  });

  test('amplification: indexed references to big entries never decode past the list limit', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3000 }), fc.integer({ min: 1, max: 2000 }), fc.integer({ min: 64, max: 16384 }), (valueLen, repeats, limit) => {
        const enc = new TestHpackEncoder(4096);
        const value = 'x'.repeat(valueLen);
        const plain: FieldChoice = { representation: 'incremental', nameByIndex: false, huffmanName: false, huffmanValue: false };
        const first = enc.encode([['big', value]], () => plain);
        // 1 byte per reference to a (valueLen + 35)-octet field.
        const refs = Buffer.alloc(repeats, 0x80 | 62);
        const r = decodeAll([first, refs], limit);
        if (r instanceof HpackError) assert.fail(r.message);
        let size = 0;
        for (let i = 0; i < r.fields[1]!.length; i += 2) size += r.fields[1]![i]!.length + r.fields[1]![i + 1]!.length + 32;
        assert.ok(size <= limit, `decoded ${size} > ${limit}`);
        assert.equal(r.flags[1]! & FIELDS_TOO_LARGE, repeats * (valueLen + 35) > limit ? FIELDS_TOO_LARGE : 0);
      }),
      fcOptions(300),
    );
  });
});

describe('Huffman decoder properties', () => {
  test('round trip of any latin1 string', () => {
    fc.assert(
      fc.property(latin1(300), (s) => {
        const h = Buffer.from(huffmanEncode(s));
        assert.equal(huffmanDecode(h, 0, h.length), s);
        // The same bytes at an offset inside a larger buffer.
        const framed = Buffer.concat([Buffer.from([1, 2, 3]), h, Buffer.from([4])]);
        assert.equal(huffmanDecode(framed, 3, h.length), s);
      }),
      fcOptions(1000),
    );
  });

  test('random and damaged codes: a string or undefined, never a throw, output within 8/5 of the input', () => {
    const check = (b: Uint8Array): void => {
      const buf = Buffer.from(b);
      const s = huffmanDecode(buf, 0, buf.length);
      if (s !== undefined) assert.ok(s.length <= Math.ceil((buf.length * 8) / 5));
    };
    fc.assert(fc.property(fc.uint8Array({ maxLength: 256 }), check), fcOptions(3000));
    fc.assert(fc.property(mutatedArb(latin1(64).map((s) => Uint8Array.from(huffmanEncode(s)))), check), fcOptions(2000));
  });
});
