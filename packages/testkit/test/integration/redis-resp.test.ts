import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readReply, redisCall, RedisReplyError, startRedis } from '@rls/testkit';

test('readReply decodes every RESP2 type and reports incomplete input', () => {
  const buf = Buffer.from('*4\r\n:12\r\n$3\r\nabc\r\n$-1\r\n+OK\r\n-ERR boom\r\n');
  const first = readReply(buf);
  assert.ok(first !== undefined);
  assert.deepEqual(first.value, [12, 'abc', null, 'OK']);
  const second = readReply(buf, first.end);
  assert.ok(second?.value instanceof RedisReplyError);
  assert.equal(second.value.message, 'ERR boom');
  for (let cut = 1; cut < first.end; cut++) assert.equal(readReply(buf.subarray(0, cut)), undefined, `cut at ${cut}`);
});

test('startRedis with requirepass and a unix socket; call() decodes replies and throws error replies', async () => {
  const r = await startRedis({ requirepass: 'pw', unixSocket: true });
  try {
    assert.equal(await r.call('SET', 'k', 'v'), 'OK');
    assert.equal(await r.call('RPUSH', 'l', 'a', 'b'), 2);
    assert.deepEqual(await r.call('LRANGE', 'l', '0', '-1'), ['a', 'b']);
    assert.deepEqual(await r.call('MGET', 'k', 'missing'), ['v', null]);
    assert.equal(await r.command('GET', 'k'), '$1\nv');
    await assert.rejects(r.call('INCR', 'k'), RedisReplyError);
    assert.ok(r.socketPath !== undefined);
    assert.equal(await redisCall({ path: r.socketPath }, ['GET', 'k'], 'pw'), 'v');
    await assert.rejects(redisCall({ path: r.socketPath }, ['GET', 'k']), /NOAUTH/);
  } finally {
    await r.stop();
  }
});
