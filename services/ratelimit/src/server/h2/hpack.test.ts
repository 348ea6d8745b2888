// HPACK against the examples of RFC 7541 Appendix C (integers C.1; requests without and with
// Huffman coding C.3/C.4; responses with a 256-octet table and eviction C.5/C.6; the single
// representations of C.2), the Huffman code itself, the error cases a hostile peer can send, and
// our response blocks with the per-connection encoder's indexing.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { HpackDecoder, HpackError, FIELDS_MALFORMED, FIELDS_OK, FIELDS_TOO_LARGE } from './hpack-decoder.js';
import { encodeInteger, OK_HEADERS_BLOCK, OK_TRAILERS_BLOCK, ResponseBlockEncoder, statusTrailersBlock, trailersOnlyBlock } from './hpack-encoder.js';
import { huffmanCodes, huffmanDecode, EOS } from './huffman.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const LIMIT = 64 * 1024;

function decode(d: HpackDecoder, block: Buffer): [string, string][] {
  const out: string[] = [];
  assert.equal(d.decode(block, out, LIMIT), FIELDS_OK);
  const pairs: [string, string][] = [];
  for (let i = 0; i < out.length; i += 2) pairs.push([out[i]!, out[i + 1]!]);
  return pairs;
}

describe('HPACK integers (RFC 7541 C.1)', () => {
  test('10 in a 5-bit prefix, 1337 in a 5-bit prefix, 42 at an octet boundary', () => {
    assert.deepEqual(encodeInteger(0, 5, 10), hex('0a'));
    assert.deepEqual(encodeInteger(0, 5, 1337), hex('1f9a0a'));
    assert.deepEqual(encodeInteger(0, 8, 42), hex('2a'));
  });
});

describe('HPACK single representations (RFC 7541 C.2)', () => {
  test('C.2.1 literal with indexing enters the dynamic table', () => {
    const d = new HpackDecoder();
    assert.deepEqual(decode(d, hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572')), [['custom-key', 'custom-header']]);
    assert.deepEqual(d.dynamicEntries(), [['custom-key', 'custom-header']]);
    assert.equal(d.dynamicSize(), 55);
  });
  test('C.2.2 literal without indexing leaves the table empty', () => {
    const d = new HpackDecoder();
    assert.deepEqual(decode(d, hex('040c 2f73 616d 706c 652f 7061 7468')), [[':path', '/sample/path']]);
    assert.deepEqual(d.dynamicEntries(), []);
  });
  test('C.2.3 literal never indexed', () => {
    const d = new HpackDecoder();
    assert.deepEqual(decode(d, hex('1008 7061 7373 776f 7264 0673 6563 7265 74')), [['password', 'secret']]);
    assert.equal(d.dynamicSize(), 0);
  });
  test('C.2.4 indexed field', () => {
    assert.deepEqual(decode(new HpackDecoder(), hex('82')), [[':method', 'GET']]);
  });
});

const REQ1 = [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com']];
const REQ2 = [...REQ1, ['cache-control', 'no-cache']];
const REQ3 = [[':method', 'GET'], [':scheme', 'https'], [':path', '/index.html'], [':authority', 'www.example.com'], ['custom-key', 'custom-value']];

for (const [name, blocks] of [
  ['C.3 requests without Huffman coding', ['8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d', '8286 84be 5808 6e6f 2d63 6163 6865', '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65']],
  ['C.4 requests with Huffman coding', ['8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff', '8286 84be 5886 a8eb 1064 9cbf', '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf']],
] as const) {
  test(`HPACK ${name}: fields and dynamic-table evolution`, () => {
    const d = new HpackDecoder();
    assert.deepEqual(decode(d, hex(blocks[0])), REQ1);
    assert.deepEqual(d.dynamicEntries(), [[':authority', 'www.example.com']]);
    assert.equal(d.dynamicSize(), 57);
    assert.deepEqual(decode(d, hex(blocks[1])), REQ2);
    assert.deepEqual(d.dynamicEntries(), [['cache-control', 'no-cache'], [':authority', 'www.example.com']]);
    assert.equal(d.dynamicSize(), 110);
    assert.deepEqual(decode(d, hex(blocks[2])), REQ3);
    assert.deepEqual(d.dynamicEntries(), [['custom-key', 'custom-value'], ['cache-control', 'no-cache'], [':authority', 'www.example.com']]);
    assert.equal(d.dynamicSize(), 164);
  });
}

test('a repeated block decodes the same until the dynamic table changes; inserting blocks are decoded every time', () => {
  const d = new HpackDecoder();
  decode(d, hex('8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d'));
  const path = hex('8286 04 0c 2f73 616d 706c 652f 7061 7468 be');
  const first = decode(d, path);
  assert.deepEqual(first, [[':method', 'GET'], [':scheme', 'http'], [':path', '/sample/path'], [':authority', 'www.example.com']]);
  assert.deepEqual(decode(d, Buffer.from(path)), first, 'same bytes, same fields');
  // A new entry shifts index 62: the same bytes now name it.
  decode(d, hex('5808 6e6f 2d63 6163 6865'));
  assert.deepEqual(decode(d, path).at(-1), ['cache-control', 'no-cache']);
  // A block with a literal to index inserts on every decode, repeated or not.
  const inserting = hex('400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65');
  decode(d, inserting);
  decode(d, inserting);
  assert.deepEqual(d.dynamicEntries().slice(0, 2), [['custom-key', 'custom-value'], ['custom-key', 'custom-value']]);
  // The remembered block is a copy: the caller's buffer may be reused for other bytes.
  const reused = Buffer.from(path);
  assert.equal(decode(d, reused).length, 4);
  reused.fill(0x82);
  assert.deepEqual(decode(d, Buffer.alloc(path.length, 0x82)), Array.from({ length: path.length }, () => [':method', 'GET']));
});

const DATE21 = 'Mon, 21 Oct 2013 20:13:21 GMT';
const DATE22 = 'Mon, 21 Oct 2013 20:13:22 GMT';
const LOC = 'https://www.example.com';
const COOKIE = 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1';

for (const [name, blocks] of [
  [
    'C.5 responses without Huffman coding',
    [
      '4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
      '4803 3330 37c1 c0bf',
      '88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31',
    ],
  ],
  [
    'C.6 responses with Huffman coding',
    [
      '4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3',
      '4883 640e ffc1 c0bf',
      '88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07',
    ],
  ],
] as const) {
  test(`HPACK ${name}: a 256-octet table evicts the oldest entries`, () => {
    const d = new HpackDecoder(256);
    assert.deepEqual(decode(d, hex(blocks[0])), [[':status', '302'], ['cache-control', 'private'], ['date', DATE21], ['location', LOC]]);
    assert.deepEqual(d.dynamicEntries(), [['location', LOC], ['date', DATE21], ['cache-control', 'private'], [':status', '302']]);
    assert.equal(d.dynamicSize(), 222);
    assert.deepEqual(decode(d, hex(blocks[1])), [[':status', '307'], ['cache-control', 'private'], ['date', DATE21], ['location', LOC]]);
    assert.deepEqual(d.dynamicEntries(), [[':status', '307'], ['location', LOC], ['date', DATE21], ['cache-control', 'private']]);
    assert.equal(d.dynamicSize(), 222);
    assert.deepEqual(decode(d, hex(blocks[2])), [
      [':status', '200'],
      ['cache-control', 'private'],
      ['date', DATE22],
      ['location', LOC],
      ['content-encoding', 'gzip'],
      ['set-cookie', COOKIE],
    ]);
    assert.deepEqual(d.dynamicEntries(), [['set-cookie', COOKIE], ['content-encoding', 'gzip'], ['date', DATE22]]);
    assert.equal(d.dynamicSize(), 215);
  });
}

describe('Huffman code (RFC 7541 Appendix B)', () => {
  test('codes derived from the lengths match the table', () => {
    const codes = huffmanCodes();
    assert.deepEqual(codes[0x30], { code: 0x0, bits: 5 }); // '0'
    assert.deepEqual(codes[0x61], { code: 0x3, bits: 5 }); // 'a'
    assert.deepEqual(codes[0x20], { code: 0x14, bits: 6 }); // ' '
    assert.deepEqual(codes[0x7b], { code: 0x7ffe, bits: 15 }); // '{'
    assert.deepEqual(codes[0x00], { code: 0x1ff8, bits: 13 });
    assert.deepEqual(codes[0xff], { code: 0x3ffffee, bits: 26 });
    assert.deepEqual(codes[EOS], { code: 0x3fffffff, bits: 30 });
  });

  test('every byte value round-trips through an encoding built from the codes', () => {
    const codes = huffmanCodes();
    const input = Buffer.from(Array.from({ length: 512 }, (_v, i) => (i * 7) % 256));
    let bits = '';
    for (const b of input) bits += codes[b]!.code.toString(2).padStart(codes[b]!.bits, '0');
    bits += '1'.repeat((8 - (bits.length % 8)) % 8);
    const bytes = Buffer.from(bits.match(/.{8}/g)!.map((x) => parseInt(x, 2)));
    assert.equal(huffmanDecode(bytes, 0, bytes.length), input.toString('latin1'));
  });

  test('invalid padding and EOS inside a string are refused', () => {
    // 'a' (00011) + padding 000 (not all ones)
    assert.equal(huffmanDecode(Buffer.from([0b00011000]), 0, 1), undefined);
    // 'a' + a whole byte of ones: padding longer than 7 bits
    assert.equal(huffmanDecode(Buffer.from([0b00011111, 0xff]), 0, 2), undefined);
    // EOS (30 ones) encoded explicitly
    assert.equal(huffmanDecode(Buffer.from([0xff, 0xff, 0xff, 0xff]), 0, 4), undefined);
    assert.equal(huffmanDecode(Buffer.from([0b00011111]), 0, 1), 'a');
  });
});

describe('HPACK decoder errors and limits', () => {
  const bad: Array<[string, string]> = [
    ['index 0', '80'],
    ['index beyond both tables', 'be'],
    ['truncated string', '400a6375'],
    ['truncated integer', '1f'],
    ['integer overflow', '1fffffffffff7f'],
    ['size update above the advertised limit', '3fe21f'],
    ['size update after a field', '8220'],
    ['bad Huffman', '0085ffffffffff'],
  ];
  for (const [name, block] of bad) {
    test(`${name} ⇒ HpackError`, () => {
      assert.throws(() => new HpackDecoder().decode(hex(block), [], LIMIT), HpackError);
    });
  }

  test('a size update evicts entries and later inserts respect the new size', () => {
    const d = new HpackDecoder();
    decode(d, hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572'));
    assert.equal(d.dynamicSize(), 55);
    decode(d, hex('20')); // size update to 0
    assert.deepEqual(d.dynamicEntries(), []);
    decode(d, hex('3f 21')); // back to 64
    decode(d, hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572'));
    assert.equal(d.dynamicSize(), 55);
    // An entry bigger than the table empties it (RFC 7541 §4.4).
    decode(d, Buffer.concat([hex('4040'), Buffer.from('x'.repeat(64)), hex('00')]));
    assert.deepEqual(d.dynamicEntries(), []);
  });

  test('a list over the limit is flagged, and the table still follows the peer', () => {
    const d = new HpackDecoder();
    const out: string[] = [];
    const block = Buffer.concat([hex('400a'), Buffer.from('custom-key'), hex('7f00'), Buffer.from('v'.repeat(127)), hex('be')]);
    assert.equal(d.decode(block, out, 100), FIELDS_TOO_LARGE);
    assert.equal(d.dynamicEntries().length, 1);
  });

  test('an upper-case literal name is flagged as malformed', () => {
    const out: string[] = [];
    assert.equal(new HpackDecoder().decode(Buffer.concat([hex('0003'), Buffer.from('Bad'), hex('0178')]), out, LIMIT), FIELDS_MALFORMED);
  });
});

describe('HPACK encoder blocks', () => {
  test('response blocks decode to the expected fields and leave the table empty', () => {
    const d = new HpackDecoder();
    assert.deepEqual(decode(d, OK_HEADERS_BLOCK), [[':status', '200'], ['content-type', 'application/grpc'], ['grpc-accept-encoding', 'identity,gzip']]);
    assert.deepEqual(decode(d, OK_TRAILERS_BLOCK), [['grpc-status', '0']]);
    assert.deepEqual(decode(d, statusTrailersBlock(14, 'x'.repeat(300))), [['grpc-status', '14'], ['grpc-message', 'x'.repeat(300)]]);
    assert.deepEqual(decode(d, trailersOnlyBlock(415, 13, 'bad', false)), [[':status', '415'], ['content-type', 'application/grpc'], ['grpc-status', '13'], ['grpc-message', 'bad']]);
    assert.deepEqual(decode(d, trailersOnlyBlock(200, 12, 'no', true)), [
      [':status', '200'],
      ['content-type', 'application/grpc'],
      ['grpc-accept-encoding', 'identity,gzip'],
      ['grpc-status', '12'],
      ['grpc-message', 'no'],
    ]);
    assert.deepEqual(d.dynamicEntries(), []);
  });

  test('a connection\'s encoder: fixed fields indexed after first use, other blocks untouched, off after a shrink', () => {
    const d = new HpackDecoder();
    const e = new ResponseBlockEncoder();
    const OK = [[':status', '200'], ['content-type', 'application/grpc'], ['grpc-accept-encoding', 'identity,gzip']];
    const STATUS_OK = [['grpc-status', '0']];
    // Trailers before any headers (cannot happen on a stream, but harmless): a plain literal.
    assert.deepEqual(decode(d, e.block(OK_TRAILERS_BLOCK)), STATUS_OK);
    assert.deepEqual(d.dynamicEntries(), []);
    const sent: Buffer[] = [];
    const error = statusTrailersBlock(14, 'unavailable');
    for (const b of [OK_HEADERS_BLOCK, OK_HEADERS_BLOCK, OK_TRAILERS_BLOCK, error, OK_HEADERS_BLOCK, OK_TRAILERS_BLOCK]) sent.push(e.block(b));
    assert.deepEqual(
      sent.map((b) => decode(d, b)),
      [OK, OK, STATUS_OK, [['grpc-status', '14'], ['grpc-message', 'unavailable']], OK, STATUS_OK],
    );
    assert.equal(sent[2]!.length > 1, true, 'grpc-status inserted once');
    assert.deepEqual([sent[4]!.length, sent[5]!.length], [3, 1]);
    assert.equal(sent[3], error);
    // The default size again: nothing to do. A smaller one: one size update to 0, then literals.
    e.peerTableSize(4096);
    assert.equal(e.takeSizeUpdate(), false);
    e.peerTableSize(1000);
    assert.equal(e.takeSizeUpdate(), true);
    assert.equal(e.takeSizeUpdate(), false);
    decode(d, hex('20'));
    assert.deepEqual(d.dynamicEntries(), []);
    assert.equal(e.block(OK_HEADERS_BLOCK), OK_HEADERS_BLOCK);
    assert.equal(e.block(OK_TRAILERS_BLOCK), OK_TRAILERS_BLOCK);
    e.peerTableSize(8192);
    assert.equal(e.block(OK_HEADERS_BLOCK), OK_HEADERS_BLOCK, 'indexing stays off for the connection');
  });
});

describe('decodeBlock: a typed result, repeats named by `repeated` and `key`', () => {
  // :method GET (indexed) and :path /sample/path (literal without indexing, C.2.2): the table stays as it was.
  const plain = hex('82 040c 2f73 616d 706c 652f 7061 7468');
  // custom-key: custom-header with incremental indexing (C.2.1): the table changes.
  const indexing = hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572');

  test('the same bytes again, table unchanged: repeated, same key and fields; other bytes: a new key', () => {
    const d = new HpackDecoder();
    const first = d.decodeBlock(plain, LIMIT);
    assert.deepEqual(first.fields, [':method', 'GET', ':path', '/sample/path']);
    assert.equal(first.flags, FIELDS_OK);
    assert.equal(first.repeated, false);
    const again = d.decodeBlock(Buffer.from(plain), LIMIT);
    assert.equal(again.repeated, true);
    assert.equal(again.key, first.key);
    assert.deepEqual(again.fields, first.fields);
    const other = d.decodeBlock(hex('82'), LIMIT);
    assert.equal(other.repeated, false);
    assert.notEqual(other.key, first.key);
    // Back to the first bytes: decoded again (only the previous block is remembered), under a new key.
    const back = d.decodeBlock(plain, LIMIT);
    assert.equal(back.repeated, false);
    assert.notEqual(back.key, first.key);
  });

  test('a block that changed the table is never a repeat; another decoder never gives the same key', () => {
    const d = new HpackDecoder();
    const a = d.decodeBlock(indexing, LIMIT);
    const b = d.decodeBlock(indexing, LIMIT);
    assert.equal(b.repeated, false);
    assert.notEqual(a.key, b.key);
    const e = new HpackDecoder();
    const x = d.decodeBlock(plain, LIMIT);
    const y = e.decodeBlock(plain, LIMIT);
    assert.deepEqual(x.fields, y.fields);
    assert.notEqual(x.key, y.key);
  });

  test('flags come with the result: a different list-size limit is not a repeat', () => {
    const d = new HpackDecoder();
    assert.equal(d.decodeBlock(plain, LIMIT).flags, FIELDS_OK);
    const small = d.decodeBlock(plain, 40);
    assert.equal(small.repeated, false);
    assert.equal(small.flags, FIELDS_TOO_LARGE);
    assert.equal(d.decodeBlock(plain, 40).flags, FIELDS_TOO_LARGE);
    assert.equal(d.decodeBlock(plain, 40).repeated, true);
  });
});
