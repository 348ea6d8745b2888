import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startSentinelSet, waitFor, type SentinelSet } from '@rls/testkit';
import { parseSentinelUrl, SentinelStore } from '../../src/backends/sentinel-store.js';
import { StoreError, type CounterOp } from '@rls/engine';
import { runCounterStoreContract } from '../support/store-contract.js';
import { runAlgorithmStoreCases } from './algorithm-store-cases.js';
import { runAlgorithmContract } from '../support/algorithm-contract.js';
import { BUCKET_SCRIPT_SHA } from '../../src/backends/redis-commands.js';
import { Secret } from '@rls/settings';

const unhandled: unknown[] = [];
process.on('unhandledRejection', (r) => unhandled.push(r));

// One set for the whole file, with passwords on both the sentinels and the data nodes so the two
// credentials are proven separate; the failover test runs last because it changes the master.
let set: SentinelSet;
before(async () => {
  set = await startSentinelSet({ replicas: 1, sentinels: 3, sentinelPassword: 'sentinel-pw', dataPassword: 'data-pw' });
});
after(async () => {
  await set.stop();
  assert.deepEqual(unhandled, [], 'no unhandled rejections');
});

const make = (timeoutMs = 2_000, extra: Partial<ConstructorParameters<typeof SentinelStore>[0]> = {}): SentinelStore =>
  new SentinelStore({ url: set.url, sentinelAuth: Secret.fromText('sentinel-pw'), auth: Secret.fromText('data-pw'), poolSize: 2, timeoutMs, ...extra });

runCounterStoreContract('redis sentinel (1 master, 1 replica, 3 sentinels)', async () => {
  await set.master.call('FLUSHALL');
  const store = make();
  await store.waitUntilConnected(5_000);
  return { store, cleanup: () => store.close(), ttlSeconds: async (key: string) => (await set.master.call('TTL', key)) as number };
});

runAlgorithmStoreCases(
  'redis sentinel',
  async () => {
    await set.master.call('FLUSHALL');
    const store = make();
    await store.waitUntilConnected(5_000);
    return {
      store,
      raw: async (key) => ((await set.master.call('GET', key)) as string | null) ?? undefined,
      plant: async (key, value) => void (await set.master.call('SET', key, value)),
      pttl: async (key) => (await set.master.call('PTTL', key)) as number,
      cleanup: () => store.close(),
    };
  },
  {
    bucket: true,
    plantWrongType: async (_h, key) => void (await set.master.call('LPUSH', key, 'x')),
    flushScripts: async () => void (await set.master.call('SCRIPT', 'FLUSH')),
  },
);

runAlgorithmContract('redis sentinel', async () => {
  const store = make();
  await store.waitUntilConnected(5_000);
  return { store, cleanup: () => store.close() };
});

const op = (key: string): CounterOp => ({ key, addend: 1, expireSeconds: 60, windowSeconds: 60 });
// A token bucket of one per 100 s (TTLs outlast the failover), burst 5, at a fixed caller time.
const TB_NOW = 1_700_000_000_000_000;
const TB_E = 100_000_000;
const tbOp: CounterOp = { key: 'failover-tb', addend: 1, expireSeconds: 0, windowSeconds: 1, bucket: { nowUs: TB_NOW, emissionUs: TB_E, toleranceUs: 5 * TB_E } };

describe('SentinelStore', () => {
  test('KVSTORE_URL needs a master name and at least one sentinel', () => {
    const msg = 'Expected master name and a list of urls for the sentinels, in the format: <redis master name>,<sentinel1>,...,<sentineln>';
    assert.throws(() => parseSentinelUrl('mymaster'), (e: unknown) => e instanceof StoreError && e.message === msg);
    assert.throws(() => parseSentinelUrl(''), StoreError);
    assert.throws(() => parseSentinelUrl('m,nohostport'), StoreError);
    assert.deepEqual(parseSentinelUrl('m, 10.0.0.1:26379 ,h:1'), { masterName: 'm', sentinels: ['10.0.0.1:26379', 'h:1'] });
  });

  test('writes go to the master the sentinels name; a down sentinel in the list is skipped', async () => {
    const store = new SentinelStore({
      url: `${set.masterName},127.0.0.1:1,${set.sentinels.map((s) => s.address).join(',')}`,
      sentinelAuth: Secret.fromText('sentinel-pw'),
      auth: Secret.fromText('data-pw'),
      poolSize: 1,
      timeoutMs: 2_000,
    });
    try {
      await store.waitUntilConnected(5_000);
      assert.equal(store.currentMaster(), set.master.url);
      assert.deepEqual(await store.increment([op('where')]), [1]);
      assert.equal(await set.master.call('GET', 'where'), '1');
    } finally {
      await store.close();
    }
  });

  test('wrong sentinel or data credentials: calls fail within the timeout with the server text', async () => {
    const badSentinel = make(400, { sentinelAuth: Secret.fromText('nope') });
    const badData = make(400, { auth: Secret.fromText('nope') });
    try {
      const t0 = performance.now();
      await assert.rejects(badSentinel.increment([op('x')]), (e: unknown) => e instanceof StoreError && /WRONGPASS|invalid password/i.test(e.message));
      assert.ok(performance.now() - t0 < 900);
      await assert.rejects(badData.increment([op('x')]), (e: unknown) => e instanceof StoreError && /WRONGPASS|invalid password/i.test(e.message));
      assert.equal(badData.isConnected(), false);
    } finally {
      await Promise.all([badSentinel.close(), badData.close()]);
    }
  });

  test('failover mid-traffic: the store follows the new master without restart; no call hangs', async () => {
    const timeoutMs = 500;
    const store = make(timeoutMs);
    const events: boolean[] = [];
    store.onConnectionChange((up) => events.push(up));
    try {
      await store.waitUntilConnected(5_000);
      const oldMaster = set.master.url;
      assert.equal(store.currentMaster(), oldMaster);
      let ok = 0;
      let failed = 0;
      let slowest = 0;
      let stop = false;
      let lastValue = 0;
      const traffic = (async () => {
        while (!stop) {
          const t0 = performance.now();
          try {
            lastValue = (await store.increment([op('failover')]))[0] ?? 0;
            ok++;
          } catch (err) {
            assert.ok(err instanceof StoreError, String(err));
            failed++;
            await new Promise((r) => setTimeout(r, 20));
          }
          slowest = Math.max(slowest, performance.now() - t0);
        }
      })();
      await waitFor(() => ok >= 20, { what: 'traffic before the failover' });
      assert.deepEqual(await store.execute([tbOp]), [{ value: TB_NOW + TB_E, admitted: true }]);
      assert.equal(await set.master.call('WAIT', '1', '2000'), 1, 'the TAT reached the replica');
      await set.master.stop();
      const t0 = performance.now();
      await waitFor(async () => (await set.currentMaster()) !== oldMaster, { what: 'the sentinels to elect a new master', timeoutMs: 20_000, intervalMs: 100 });
      const newMaster = await set.currentMaster();
      await waitFor(() => store.currentMaster() === newMaster && store.isConnected(), { what: 'the store to follow', timeoutMs: 5_000 });
      const okAtSwitch = ok;
      await waitFor(() => ok >= okAtSwitch + 20, { what: 'traffic on the new master', timeoutMs: 5_000 });
      const recoveryMs = performance.now() - t0;
      stop = true;
      await traffic;
      assert.ok(failed > 0, 'some calls failed while no master was up');
      assert.ok(slowest < timeoutMs + 300, `no call waited past the timeout (slowest ${Math.round(slowest)} ms)`);
      assert.ok(recoveryMs < 20_000, `recovered in ${Math.round(recoveryMs)} ms`);
      assert.equal(await set.node(newMaster).call('GET', 'failover'), String(lastValue), 'writes land on the new master');
      assert.deepEqual(events.slice(-2), [false, true]);
      // The new master has the replicated TAT but not the script (never loaded there): NOSCRIPT, then EVAL.
      assert.deepEqual(await set.node(newMaster).call('SCRIPT', 'EXISTS', BUCKET_SCRIPT_SHA), [0]);
      assert.deepEqual(await store.execute([tbOp]), [{ value: TB_NOW + 2 * TB_E, admitted: true }]);
    } finally {
      await store.close();
    }
  });
});
