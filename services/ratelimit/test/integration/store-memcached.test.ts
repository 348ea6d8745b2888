import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDnsServer, startMemcached, tempDir, waitFor, type DnsServer, type MemcachedServer } from '@rls/testkit';
import { StatsStore, StoreError, type CounterOp, type CounterStore } from '@rls/engine';
import { MemcachedStore, parseHostPort } from '../../src/backends/memcached-store.js';
import { expirationField, invalidKeyReason, parseCounter } from '../../src/backends/memcached-protocol.js';
import { HashRing, keyHash } from '../../src/backends/memcached-ring.js';
import { createSrvLookup, resolveSrvTargets } from '../../src/backends/srv.js';
import { runCounterStoreContract, type ContractTraits } from '../support/store-contract.js';
import { runAlgorithmStoreCases } from './algorithm-store-cases.js';
import { runAlgorithmContract } from '../support/algorithm-contract.js';

let a: MemcachedServer;
let b: MemcachedServer;
let dns: DnsServer;
const SRV = '_memcache._tcp.rls.test';

before(async () => {
  [a, b, dns] = await Promise.all([startMemcached(), startMemcached(), startDnsServer()]);
  dns.setSrv(SRV, [
    { port: b.port, target: 'localhost' },
    { port: a.port, target: 'localhost' },
  ]);
});
after(async () => {
  await Promise.all([a.stop(), b.stop(), dns.stop()]);
});

const op = (key: string, addend: number, expireSeconds = 60): CounterOp => ({ key, addend, expireSeconds, windowSeconds: 60 });
const systemClock = { now: () => Date.now() };

const traits: ContractTraits = {
  asyncIncrements: { settle: (s: CounterStore) => (s as MemcachedStore).settled() },
  ttlOnCreateOnly: true,
  refusesUnsafeKeys: true,
};

/** TTL of a key read from whichever node holds it (memcached's meta get), -2 when missing. */
const ttlOf = (store: MemcachedStore) => async (key: string) => {
  const node = store.nodeFor(key);
  const server = [a, b].find((s) => node !== undefined && parseHostPort(node).port === s.port);
  if (server === undefined) return -2;
  return (await server.ttl(key)) ?? -2;
};

runCounterStoreContract(
  'memcached, 2 nodes (MCSTORE_HOST_PORT)',
  async () => {
    await Promise.all([a.flushAll(), b.flushAll()]);
    const store = new MemcachedStore({ servers: [a.url, b.url], connectionsPerNode: 2, timeoutMs: 2_000, clock: systemClock });
    await store.waitUntilConnected(5_000);
    return { store, cleanup: () => store.close(), ttlSeconds: ttlOf(store) };
  },
  traits,
);

runCounterStoreContract(
  'memcached via SRV (test DNS server on loopback)',
  async () => {
    await Promise.all([a.flushAll(), b.flushAll()]);
    const store = new MemcachedStore({ srv: { name: SRV, refreshMs: 0, lookup: createSrvLookup(dns.address, 2_000) }, connectionsPerNode: 2, timeoutMs: 2_000, clock: systemClock });
    await store.waitUntilConnected(5_000);
    assert.deepEqual(store.servers(), [`localhost:${a.port}`, `localhost:${b.port}`].sort());
    return { store, cleanup: () => store.close(), ttlSeconds: ttlOf(store) };
  },
  traits,
);

/** The test server holding `key` for `store`. */
const serverOf = (store: MemcachedStore, key: string): MemcachedServer => {
  const node = store.nodeFor(key);
  const server = [a, b].find((s) => node !== undefined && parseHostPort(node).port === s.port);
  if (server === undefined) throw new Error(`no node for ${key}`);
  return server;
};

runAlgorithmStoreCases(
  'memcached, 2 nodes',
  async () => {
    await Promise.all([a.flushAll(), b.flushAll()]);
    const store = new MemcachedStore({ servers: [a.url, b.url], connectionsPerNode: 2, timeoutMs: 2_000, clock: systemClock });
    await store.waitUntilConnected(5_000);
    return {
      store,
      raw: (key) => serverOf(store, key).get(key),
      plant: async (key, value) => void (await serverOf(store, key).command(`set ${key} 0 0 ${Buffer.byteLength(value)}\r\n${value}\r\n`, /STORED\r\n$/)),
      pttl: async (key) => {
        const t = await serverOf(store, key).ttl(key);
        return t === undefined ? -2 : t * 1000;
      },
      settle: () => store.settled(),
      cleanup: () => store.close(),
    };
  },
  { bucket: false },
);

// token_bucket is left out on purpose (memcached-store.ts): the contract checks that such rules are refused.
runAlgorithmContract(
  'memcached, 2 nodes',
  async () => {
    const store = new MemcachedStore({ servers: [a.url, b.url], connectionsPerNode: 2, timeoutMs: 2_000, clock: systemClock });
    await store.waitUntilConnected(5_000);
    return { store, cleanup: () => store.close() };
  },
  { algorithms: ['sliding_window'], settle: (s) => (s as MemcachedStore).settled() },
);

describe('MemcachedStore specifics', () => {
  test('keys spread over both nodes; the same list in another order maps every key to the same node', async () => {
    const s1 = new MemcachedStore({ servers: [a.url, b.url], connectionsPerNode: 1, timeoutMs: 2_000, clock: systemClock });
    const s2 = new MemcachedStore({ servers: [b.url, a.url], connectionsPerNode: 3, timeoutMs: 2_000, clock: systemClock });
    try {
      const keys = Array.from({ length: 1000 }, (_v, i) => `domain_key_value_${i}_1700000000`);
      const counts = new Map<string, number>();
      for (const k of keys) {
        assert.equal(s1.nodeFor(k), s2.nodeFor(k));
        counts.set(s1.nodeFor(k) ?? '', (counts.get(s1.nodeFor(k) ?? '') ?? 0) + 1);
      }
      for (const n of [a.url, b.url]) assert.ok((counts.get(n) ?? 0) > 350, `node ${n} holds ${counts.get(n)} of 1000 keys`);
      // The counter really lives on the node the ring names.
      await Promise.all([a.flushAll(), b.flushAll()]);
      await s1.increment(keys.slice(0, 20).map((k) => op(k, 1)));
      await s1.settled();
      for (const k of keys.slice(0, 20)) {
        const onA = await a.get(k);
        const onB = await b.get(k);
        assert.equal(s1.nodeFor(k) === a.url ? onA : onB, '1');
        assert.equal(s1.nodeFor(k) === a.url ? onB : onA, undefined);
      }
    } finally {
      await Promise.all([s1.close(), s2.close()]);
    }
  });

  test('consistent hashing: adding a third node moves about a third of the keys, only to it', () => {
    const two = new HashRing(new Map([['h1:1', 'h1:1'], ['h2:2', 'h2:2']]));
    const three = new HashRing(new Map([['h3:3', 'h3:3'], ['h1:1', 'h1:1'], ['h2:2', 'h2:2']]));
    let moved = 0;
    for (let i = 0; i < 10_000; i++) {
      const h = keyHash(`key_${i}`);
      const before = two.lookup(h);
      const now = three.lookup(h);
      if (before !== now) {
        moved++;
        assert.equal(now, 'h3:3');
      }
    }
    assert.ok(moved > 2_500 && moved < 4_200, `moved ${moved} of 10000`);
  });

  test('month and year windows persist: expirations over 30 days are sent as absolute times', async () => {
    await Promise.all([a.flushAll(), b.flushAll()]);
    const store = new MemcachedStore({ servers: [a.url, b.url], connectionsPerNode: 1, timeoutMs: 2_000, clock: systemClock });
    try {
      const month = 2_592_000 + 120;
      const year = 31_536_000 + 299;
      assert.deepEqual(await store.increment([op('month_key', 3, month), op('year_key', 4, year), op('day_key', 5, 86_400)]), [3, 4, 5]);
      await store.settled();
      assert.deepEqual(await store.get(['month_key', 'year_key', 'day_key']), [3, 4, 5]);
      const ttl = ttlOf(store);
      for (const [k, want] of [['month_key', month], ['year_key', year], ['day_key', 86_400]] as const) {
        const got = await ttl(k);
        // memcached keeps time in whole seconds since its start, so an absolute expiry may read one second long.
        assert.ok(got >= want - 3 && got <= want + 1, `${k}: ttl ${got}, want ~${want}`);
      }
    } finally {
      await store.close();
    }
  });

  test('close() flushes the asynchronous writes of answered calls', async () => {
    await Promise.all([a.flushAll(), b.flushAll()]);
    const store = new MemcachedStore({ servers: [a.url, b.url], connectionsPerNode: 2, timeoutMs: 2_000, clock: systemClock });
    const keys = Array.from({ length: 50 }, (_v, i) => `flush_${i}`);
    await store.increment(keys.map((k) => op(k, 7)));
    await store.close();
    const check = new MemcachedStore({ servers: [a.url, b.url], connectionsPerNode: 1, timeoutMs: 2_000, clock: systemClock });
    try {
      assert.deepEqual(await check.get(keys), keys.map(() => 7));
    } finally {
      await check.close();
    }
    await assert.rejects(store.increment([op('x', 1)]), StoreError);
  });

  test('statistics ratelimit.memcache.* count gets, adds, increments and keys', async () => {
    await Promise.all([a.flushAll(), b.flushAll()]);
    const stats = new StatsStore();
    const store = new MemcachedStore({ servers: [a.url, b.url], connectionsPerNode: 1, timeoutMs: 2_000, clock: systemClock, stats });
    try {
      await store.increment([op('s1', 1), op('s2', 1)]);
      await store.settled();
      await store.increment([op('s1', 1), op('s3', 0)]);
      await store.settled();
      const v = (name: string, code?: string): number => stats.counterValue(`ratelimit.memcache.${name}`, code === undefined ? undefined : { code });
      // Increment first: only the addend-0 key is read; s1 and s2 miss their first incr and are added.
      assert.equal(v('multiget', 'success'), 1);
      assert.equal(v('multiget', 'error'), 0);
      assert.equal(v('keys_requested'), 1);
      assert.equal(v('keys_found'), 0);
      assert.equal(v('add', 'success'), 2);
      assert.equal(v('increment', 'success'), 1);
    } finally {
      await store.close();
    }
  });

  test('a value that is not a number reads saturated (over every limit) and is not incremented', async () => {
    await Promise.all([a.flushAll(), b.flushAll()]);
    const stats = new StatsStore();
    const store = new MemcachedStore({ servers: [a.url], connectionsPerNode: 1, timeoutMs: 2_000, clock: systemClock, stats });
    try {
      await a.command('set text_key 0 60 3\r\nabc\r\n', /STORED\r\n$/);
      assert.deepEqual(await store.increment([op('text_key', 2), op('num_key', 1)]), [Number.MAX_SAFE_INTEGER, 1]);
      await store.settled();
      assert.equal(stats.counterValue('ratelimit.memcache.increment', { code: 'error' }), 0, 'memcached refuses to increment the unreadable value; not an error');
      assert.deepEqual(await store.increment([op('num_key', 1)]), [2]);
    } finally {
      await store.close();
    }
  });

  test('protocol helpers: key rules, expiration field, counter parsing', () => {
    assert.equal(invalidKeyReason('ok_key:1'), undefined);
    assert.equal(invalidKeyReason('ünï'), undefined);
    assert.match(invalidKeyReason('a b') ?? '', /whitespace/);
    assert.match(invalidKeyReason('a\u0001b') ?? '', /control/);
    assert.match(invalidKeyReason('x'.repeat(251)) ?? '', /250/);
    assert.match(invalidKeyReason('é'.repeat(126)) ?? '', /250/, 'the limit is in bytes');
    assert.equal(expirationField(60, 1_700_000_000_000), 60);
    assert.equal(expirationField(2_592_000, 1_700_000_000_000), 2_592_000);
    assert.equal(expirationField(2_592_001, 1_700_000_000_000), 1_700_000_000 + 2_592_001);
    assert.equal(expirationField(0, 1_700_000_000_000), 1, 'never 0 (= no expiry)');
    assert.equal(parseCounter('42'), 42);
    assert.equal(parseCounter('42   '), 42, 'memcached pads a shrunk number with spaces');
    assert.equal(parseCounter('9007199254740991'), Number.MAX_SAFE_INTEGER);
    assert.equal(parseCounter('18446744073709551615'), Number.MAX_SAFE_INTEGER, 'past 2^53: saturated, not 0');
    assert.equal(parseCounter('-1'), Number.MAX_SAFE_INTEGER, 'unreadable: saturated, not 0');
    assert.equal(parseCounter('abc'), Number.MAX_SAFE_INTEGER);
  });

  test('start-up errors: both sources, neither, unresolvable SRV', async () => {
    const lookup = createSrvLookup(dns.address, 2_000);
    assert.throws(
      () => new MemcachedStore({ servers: [a.url], srv: { name: SRV, refreshMs: 0, lookup }, connectionsPerNode: 1, timeoutMs: 1_000, clock: systemClock }),
      /Both MCSTORE_HOST_PORT and MCSTORE_SRV are set/,
    );
    assert.throws(() => new MemcachedStore({ connectionsPerNode: 1, timeoutMs: 1_000, clock: systemClock }), /MCSTORE_HOST_PORT or MCSTORE_SRV/);
    assert.throws(() => new MemcachedStore({ servers: ['nohost'], connectionsPerNode: 1, timeoutMs: 1_000, clock: systemClock }), /host:port/);
    const bad = new MemcachedStore({ srv: { name: '_missing._tcp.rls.test', refreshMs: 0, lookup }, connectionsPerNode: 1, timeoutMs: 1_000, clock: systemClock });
    await assert.rejects(bad.ready(), /Unable to fetch servers from SRV _missing\._tcp\.rls\.test/);
    await bad.close();
  });

  test('SRV answers are sorted and de-duplicated; MCSTORE_SRV_REFRESH follows changes', async () => {
    const name = '_refresh._tcp.rls.test';
    dns.setSrv(name, [{ port: b.port, target: 'localhost.' }]);
    const lookup = createSrvLookup(dns.address, 2_000);
    dns.setSrv('_dups._tcp.rls.test', [
      { port: 2, target: 'b.rls.test' },
      { port: 1, target: 'a.rls.test' },
      { port: 2, target: 'b.rls.test' },
    ]);
    assert.deepEqual(await resolveSrvTargets(lookup, '_dups._tcp.rls.test'), ['a.rls.test:1', 'b.rls.test:2']);
    const store = new MemcachedStore({ srv: { name, refreshMs: 100, lookup }, connectionsPerNode: 1, timeoutMs: 2_000, clock: systemClock });
    try {
      await store.waitUntilConnected(5_000);
      assert.deepEqual(store.servers(), [`localhost:${b.port}`]);
      dns.setSrv(name, [
        { port: b.port, target: 'localhost' },
        { port: a.port, target: 'localhost' },
      ]);
      await waitFor(() => store.servers().length === 2, { what: 'refreshed node list', timeoutMs: 5_000 });
      // A failed refresh keeps the nodes in use.
      dns.remove(name);
      const asked = dns.queries().length;
      await waitFor(() => dns.queries().length > asked + 1, { what: 'another refresh', timeoutMs: 5_000 });
      assert.equal(store.servers().length, 2);
      await Promise.all([a.flushAll(), b.flushAll()]);
      assert.deepEqual(await store.increment([op('after_refresh', 1)]), [1]);
    } finally {
      await store.close();
    }
  });
});

describe('MemcachedStore over TLS', () => {
  const certs = tempDir('rls-mc-tls-');
  const file = (n: string): string => join(certs.path, n);
  const ssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });
  const issue = (name: string): void => {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', file(`${name}.key`), '-subj', `/CN=${name}`, '-out', file(`${name}.csr`));
    ssl('x509', '-req', '-in', file(`${name}.csr`), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial', '-days', '2', '-out', file(`${name}.pem`), '-extfile', file(`${name}.ext`));
  };
  let good: MemcachedServer | undefined;
  let wrongName: MemcachedServer | undefined;
  before(async () => {
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', file('ca.key'), '-subj', '/CN=rls test ca', '-days', '2', '-out', file('ca.pem'));
    writeFileSync(file('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
    writeFileSync(file('other.ext'), 'subjectAltName=DNS:other.rls.test\n');
    writeFileSync(file('client.ext'), 'extendedKeyUsage=clientAuth\n');
    issue('server');
    issue('other');
    issue('client');
    good = await startMemcached({ tls: { certFile: file('server.pem'), keyFile: file('server.key') } });
    wrongName = await startMemcached({
      tls: { certFile: file('other.pem'), keyFile: file('other.key'), clientCertFile: file('client.pem'), clientKeyFile: file('client.key') },
      // Requires a client certificate signed by the CA (ssl_verify_mode 3 = require).
      args: ['-o', `ssl_ca_cert=${file('ca.pem')},ssl_verify_mode=3`],
    });
  });
  after(async () => {
    await Promise.all([good?.stop(), wrongName?.stop()]);
    certs.cleanup();
  });

  const readFile = (n: string): Buffer => readFileSync(file(n));

  test('counts over TLS with the CA; refuses a server whose certificate the CA did not sign', async () => {
    const store = new MemcachedStore({ servers: [(good as MemcachedServer).url], connectionsPerNode: 1, timeoutMs: 2_000, clock: systemClock, tls: { ca: readFile('ca.pem') } });
    try {
      await store.waitUntilConnected(5_000);
      assert.deepEqual(await store.increment([op('tls_key', 2)]), [2]);
      await store.settled();
      assert.deepEqual(await store.increment([op('tls_key', 1)]), [3]);
    } finally {
      await store.close();
    }
    const untrusted = new MemcachedStore({ servers: [(good as MemcachedServer).url], connectionsPerNode: 1, timeoutMs: 1_000, clock: systemClock, tls: {} });
    try {
      await assert.rejects(untrusted.waitUntilConnected(1_500), /not connected.*(self[- ]signed|unable to (get|verify))/i);
      assert.equal(untrusted.isConnected(), false);
    } finally {
      await untrusted.close();
    }
  });

  test('hostname verification, its skip setting, and a client certificate', async () => {
    const ca = readFile('ca.pem');
    const clientCert = { cert: readFile('client.pem'), key: readFile('client.key') };
    const strict = new MemcachedStore({ servers: [(wrongName as MemcachedServer).url], connectionsPerNode: 1, timeoutMs: 1_000, clock: systemClock, tls: { ca, ...clientCert } });
    try {
      await assert.rejects(strict.waitUntilConnected(1_500), /not connected.*(altnames|does not match)/i);
    } finally {
      await strict.close();
    }
    const noClientCert = new MemcachedStore({ servers: [(wrongName as MemcachedServer).url], connectionsPerNode: 1, timeoutMs: 1_000, clock: systemClock, tls: { ca, checkServerIdentity: () => undefined } });
    try {
      await assert.rejects(noClientCert.waitUntilConnected(1_500), StoreError, 'the server requires a client certificate');
    } finally {
      await noClientCert.close();
    }
    const skip = new MemcachedStore({ servers: [(wrongName as MemcachedServer).url], connectionsPerNode: 1, timeoutMs: 2_000, clock: systemClock, tls: { ca, ...clientCert, checkServerIdentity: () => undefined } });
    try {
      await skip.waitUntilConnected(5_000);
      assert.deepEqual(await skip.increment([op('mtls_key', 5)]), [5]);
    } finally {
      await skip.close();
    }
  });
});
