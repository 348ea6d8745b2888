import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedis, waitFor, type RedisServer } from '@rls/testkit';
import { RedisStore, authHandshake, parseRedisEndpoint } from '../../src/backends/redis-store.js';
import { StoreError } from '@rls/engine';
import { runCounterStoreContract } from '../support/store-contract.js';
import { runAlgorithmStoreCases } from './algorithm-store-cases.js';
import { runAlgorithmContract } from '../support/algorithm-contract.js';
import { Secret } from '@rls/settings';

let redis: RedisServer;
before(async () => {
  redis = await startRedis({ unixSocket: true });
});
after(async () => {
  await redis.stop();
});

const harness = (socketType: 'tcp' | 'unix') => async () => {
  await redis.call('FLUSHALL');
  const url = socketType === 'tcp' ? redis.url : redis.socketPath!;
  const store = new RedisStore({ url, socketType, poolSize: 3, timeoutMs: 2_000 });
  await store.waitUntilConnected(5_000);
  return {
    store,
    cleanup: () => store.close(),
    ttlSeconds: async (key: string) => (await redis.call('TTL', key)) as number,
  };
};

runCounterStoreContract('redis over tcp', harness('tcp'));
runCounterStoreContract('redis over a unix socket', harness('unix'));

runAlgorithmStoreCases(
  'redis single',
  async () => {
    await redis.call('FLUSHALL');
    const store = new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 2, timeoutMs: 2_000 });
    await store.waitUntilConnected(5_000);
    return {
      store,
      raw: async (key) => ((await redis.call('GET', key)) as string | null) ?? undefined,
      plant: async (key, value) => void (await redis.call('SET', key, value)),
      pttl: async (key) => (await redis.call('PTTL', key)) as number,
      cleanup: () => store.close(),
    };
  },
  {
    bucket: true,
    plantWrongType: async (_h, key) => void (await redis.call('LPUSH', key, 'x')),
    flushScripts: async () => void (await redis.call('SCRIPT', 'FLUSH')),
  },
);

runAlgorithmContract('redis single', async () => {
  const store = new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 2, timeoutMs: 2_000 });
  await store.waitUntilConnected(5_000);
  return { store, cleanup: () => store.close() };
});

describe('RedisStore specifics', () => {
  test('INCRBY and EXPIRE land in Redis with the given key, addend and TTL', async () => {
    await redis.call('FLUSHALL');
    const store = new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 1, timeoutMs: 2_000 });
    try {
      await store.increment([{ key: 'prefix:domain_key_value_1234', addend: 3, expireSeconds: 101, windowSeconds: 1 }]);
      assert.equal(await redis.call('GET', 'prefix:domain_key_value_1234'), '3');
      const pttl = (await redis.call('PTTL', 'prefix:domain_key_value_1234')) as number;
      assert.ok(pttl > 99_000 && pttl <= 101_000, `pttl ${pttl}`);
    } finally {
      await store.close();
    }
  });

  test('a Redis error reply (WRONGTYPE) rejects with StoreError carrying Redis text; the connection keeps working', async () => {
    await redis.call('FLUSHALL');
    await redis.call('LPUSH', 'list', 'x');
    await redis.call('SET', 'text', 'abc');
    const store = new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 1, timeoutMs: 2_000 });
    try {
      const err = await store.increment([{ key: 'ok', addend: 1, expireSeconds: 60, windowSeconds: 60 }, { key: 'list', addend: 1, expireSeconds: 60, windowSeconds: 60 }]).then(
        () => assert.fail('should reject'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof StoreError);
      assert.equal(err.code, 'store_unavailable');
      assert.match(err.message, /WRONGTYPE/);
      await assert.rejects(store.get(['text']), (e: unknown) => e instanceof StoreError && /abc/.test(e.message));
      // Replies stay aligned after errors.
      assert.deepEqual(await store.increment([{ key: 'ok', addend: 1, expireSeconds: 60, windowSeconds: 60 }]), [2]);
      assert.deepEqual(await store.get(['ok', 'none']), [2, 0]);
    } finally {
      await store.close();
    }
  });

  test('calls are spread over the pool', async () => {
    const store = new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 4, timeoutMs: 2_000 });
    try {
      await store.waitUntilConnected(5_000);
      for (let i = 0; i < 8; i++) {
        await store.increment([{ key: 'spread', addend: 1, expireSeconds: 60, windowSeconds: 60 }]);
      }
      const clients = String(await redis.call('CLIENT', 'LIST'))
        .split('\n')
        .filter((l) => / cmd=(incrby|expire) /.test(l));
      assert.equal(clients.length, 4, 'every pooled connection carried INCRBY/EXPIRE traffic');
    } finally {
      await store.close();
    }
  });

  test('expireOnCreate keys: EXPIRE goes with the first INCRBY only; again after the connections dropped or the key vanished', async () => {
    await redis.call('FLUSHALL');
    await redis.call('CONFIG', 'RESETSTAT');
    const expires = async (): Promise<number> => Number(/cmdstat_expire:calls=(\d+)/.exec(String(await redis.call('INFO', 'commandstats')))?.[1] ?? 0);
    const incrbys = async (): Promise<number> => Number(/cmdstat_incrby:calls=(\d+)/.exec(String(await redis.call('INFO', 'commandstats')))?.[1] ?? 0);
    const store = new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 1, timeoutMs: 2_000 });
    const tagged = (addend: number) => ({ key: 'rl_d_k_v_1800000000_w3600', addend, expireSeconds: 3600, windowSeconds: 3600, expireOnCreate: true });
    const plain = { key: 'rl_d_k_v_1800000000', addend: 1, expireSeconds: 3600, windowSeconds: 3600 };
    try {
      await store.waitUntilConnected(5_000);
      for (let i = 1; i <= 5; i++) assert.deepEqual(await store.increment([tagged(1), plain]), [i, i]);
      assert.equal(await incrbys(), 10);
      assert.equal(await expires(), 1 + 5, 'the tagged key got EXPIRE once, the upstream-format key on every call');

      // A key that lost its TTL while the store was not looking (a failover that replicated the
      // INCRBY but not the EXPIRE): the memo is forgotten when the connections drop, so it heals.
      await redis.call('PERSIST', 'rl_d_k_v_1800000000_w3600');
      await redis.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      await waitFor(async () => (await store.increment([tagged(0)]).then(() => true, () => false)) && Number(await redis.call('TTL', 'rl_d_k_v_1800000000_w3600')) > 0, {
        what: 'the TTL set again after the reconnect',
        timeoutMs: 5_000,
      });

      // Deleted behind the store's back: INCRBY answers exactly the addend, so EXPIRE follows.
      await redis.call('DEL', 'rl_d_k_v_1800000000_w3600');
      const before = await expires();
      assert.deepEqual(await store.increment([tagged(4)]), [4]);
      assert.equal(await expires(), before + 1, 'one EXPIRE for the recreated key');
      const ttl = (await redis.call('TTL', 'rl_d_k_v_1800000000_w3600')) as number;
      assert.ok(ttl > 3500 && ttl <= 3600, `ttl ${ttl}`);
      assert.deepEqual(await store.increment([tagged(1)]), [5]);
      assert.equal(await expires(), before + 1, 'and then none again');
    } finally {
      await store.close();
    }
  });

  test('url and auth parsing', () => {
    assert.deepEqual(parseRedisEndpoint('localhost:6379', 'tcp'), { kind: 'tcp', host: 'localhost', port: 6379 });
    assert.deepEqual(parseRedisEndpoint('[::1]:7000', 'tcp'), { kind: 'tcp', host: '::1', port: 7000 });
    assert.deepEqual(parseRedisEndpoint('/var/run/redis.sock', 'unix'), { kind: 'unix', path: '/var/run/redis.sock' });
    assert.throws(() => parseRedisEndpoint('localhost', 'tcp'), StoreError);
    assert.throws(() => parseRedisEndpoint('host:0', 'tcp'), StoreError);
    assert.equal(authHandshake(Secret.fromText('secret'))?.toString(), '*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n');
    // user:password is split at the first ':'; lengths are bytes.
    assert.equal(authHandshake(Secret.fromText('user:pä:ss'))?.toString(), '*3\r\n$4\r\nAUTH\r\n$4\r\nuser\r\n$6\r\npä:ss\r\n');
    assert.equal(authHandshake(Secret.NONE), undefined);
    assert.equal(authHandshake(undefined), undefined);
  });
});
