import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedis } from '@rls/testkit';

test('startRedis runs a private server that answers, stops and starts again', async () => {
  const r = await startRedis();
  try {
    assert.match(await r.command('SET', 'k', 'v'), /OK/);
    assert.match(await r.command('GET', 'k'), /v/);
    await r.stop();
    await assert.rejects(r.command('PING'));
    await r.start();
    assert.match(await r.command('PING'), /PONG/);
  } finally {
    await r.stop();
  }
});
