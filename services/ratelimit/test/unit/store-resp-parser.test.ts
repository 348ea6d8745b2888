import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RespErrorReply, RespParser, type RespReply } from '../../src/backends/resp-parser.js';
import { encodeCommand, encodeIncrements } from '../../src/backends/redis-commands.js';

const stream = Buffer.from(
  ':1\r\n:-42\r\n+PONG\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n' +
    '$5\r\nhé\r\n\r\n$-1\r\n*3\r\n$2\r\n17\r\n$-1\r\n$0\r\n\r\n*0\r\n*-1\r\n:9007199254740991\r\n',
);
const expected: RespReply[] = [
  1,
  -42,
  'PONG',
  new RespErrorReply('WRONGTYPE Operation against a key holding the wrong kind of value'),
  'hé\r\n',
  null,
  ['17', null, ''],
  [],
  null,
  9007199254740991,
];

function parseInChunks(chunks: Buffer[]): RespReply[] {
  const got: RespReply[] = [];
  const p = new RespParser((r) => got.push(r));
  for (const c of chunks) p.feed(c);
  return got;
}

test('the parser decodes every reply type of a stream', () => {
  assert.deepEqual(parseInChunks([stream]), expected);
});

test('replies split across chunks at any byte, and byte by byte, decode the same', () => {
  for (let cut = 1; cut < stream.length; cut++) {
    assert.deepEqual(parseInChunks([stream.subarray(0, cut), stream.subarray(cut)]), expected, `cut at ${cut}`);
  }
  const bytes = Array.from({ length: stream.length }, (_v, i) => stream.subarray(i, i + 1));
  assert.deepEqual(parseInChunks(bytes), expected);
});

test('an unknown type byte throws (the connection is then replaced)', () => {
  assert.throws(() => parseInChunks([Buffer.from('?oops\r\n')]), /unexpected RESP type/);
});

test('commands are encoded as RESP arrays with byte lengths', () => {
  assert.equal(encodeCommand(['MGET', 'a', 'ü']), '*3\r\n$4\r\nMGET\r\n$1\r\na\r\n$2\r\nü\r\n');
  assert.equal(
    encodeIncrements([{ key: 'k é', addend: 3, expireSeconds: 101, windowSeconds: 1 }]),
    '*3\r\n$6\r\nINCRBY\r\n$4\r\nk é\r\n$1\r\n3\r\n*3\r\n$6\r\nEXPIRE\r\n$4\r\nk é\r\n$3\r\n101\r\n',
  );
});
