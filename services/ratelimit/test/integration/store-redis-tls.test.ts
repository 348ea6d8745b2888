import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedisTls, type TlsRedisServer } from '@rls/testkit';
import { RedisStore } from '../../src/backends/redis-store.js';
import { redisTlsOptions } from '../../src/backends/redis-tls.js';
import { StoreError, type CounterOp } from '@rls/engine';
import { runCounterStoreContract } from '../support/store-contract.js';
import { Secret } from '@rls/settings';

// TLS with a required client certificate, a default-user password and an ACL user.
let redis: TlsRedisServer;
before(async () => {
  redis = await startRedisTls({ authClients: 'yes', requirepass: 'admin-pw' });
  await redis.call('ACL', 'SETUSER', 'limiter', 'on', '>lim-pw', '~*', '+@all');
});
after(async () => {
  await redis.stop();
});

const tls = () => redisTlsOptions({ caCert: redis.tls.caCert, clientCert: redis.tls.clientCert, clientKey: redis.tls.clientKey });

runCounterStoreContract('redis over TLS with an ACL user', async () => {
  await redis.call('FLUSHALL');
  const store = new RedisStore({ url: redis.tlsUrl, socketType: 'tcp', auth: Secret.fromText('limiter:lim-pw'), poolSize: 2, timeoutMs: 2_000, tls: tls() });
  await store.waitUntilConnected(5_000);
  return { store, cleanup: () => store.close(), ttlSeconds: async (key: string) => (await redis.call('TTL', key)) as number };
});

const op = (key: string): CounterOp => ({ key, addend: 1, expireSeconds: 60, windowSeconds: 60 });

async function failsWith(opts: ConstructorParameters<typeof RedisStore>[0], pattern: RegExp): Promise<void> {
  const store = new RedisStore(opts);
  try {
    await assert.rejects(store.increment([op('x')]), (e: unknown) => e instanceof StoreError && pattern.test(e.message));
    assert.equal(store.isConnected(), false);
  } finally {
    await store.close();
  }
}

describe('RedisStore with TLS', () => {
  test('the ACL user is the one running the commands', async () => {
    const store = new RedisStore({ url: redis.tlsUrl, socketType: 'tcp', auth: Secret.fromText('limiter:lim-pw'), poolSize: 1, timeoutMs: 2_000, tls: tls() });
    try {
      await store.increment([op('who')]);
      const clients = String(await redis.call('CLIENT', 'LIST'));
      assert.match(clients, /cmd=(incrby|expire) user=limiter /);
    } finally {
      await store.close();
    }
  });

  test('refused: unknown CA, no client certificate, plain text to the TLS port, TLS to the plain port', async () => {
    const base = { url: redis.tlsUrl, socketType: 'tcp' as const, auth: Secret.fromText('limiter:lim-pw'), poolSize: 1, timeoutMs: 1_000, reconnectMinMs: 500 };
    await failsWith({ ...base, tls: redisTlsOptions({ clientCert: redis.tls.clientCert, clientKey: redis.tls.clientKey }) }, /self.signed|unable to verify|certificate/i);
    await failsWith({ ...base, tls: redisTlsOptions({ caCert: redis.tls.caCert }) }, /redis connection lost|certificate|alert/i);
    await failsWith({ ...base }, /timed out|connection lost|protocol/i);
    await failsWith({ ...base, url: redis.url, tls: tls() }, /connection lost|wrong version|packet|timed out/i);
  });

  test('hostname verification: a certificate for another name fails unless KVSTORE_TLS_SKIP_HOSTNAME_VERIFICATION', async () => {
    const other = await startRedisTls({ serverNames: ['redis.internal.example'] });
    try {
      const files = { caCert: other.tls.caCert };
      const base = { url: other.tlsUrl, socketType: 'tcp' as const, poolSize: 1, timeoutMs: 1_000, reconnectMinMs: 500 };
      await failsWith({ ...base, tls: redisTlsOptions(files) }, /altnames|Hostname|IP/i);
      const store = new RedisStore({ ...base, tls: redisTlsOptions({ ...files, skipHostnameVerification: true }) });
      try {
        assert.deepEqual(await store.increment([op('skip')]), [1]);
      } finally {
        await store.close();
      }
      // Skipping the name check still verifies the chain.
      const stranger = await startRedisTls({ serverNames: ['redis.internal.example'] });
      try {
        await failsWith({ ...base, url: stranger.tlsUrl, tls: redisTlsOptions({ ...files, skipHostnameVerification: true }) }, /signature|unable to verify|certificate/i);
      } finally {
        await stranger.stop();
      }
    } finally {
      await other.stop();
    }
  });
});
