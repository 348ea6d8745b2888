// TLS (self-signed certificate from openssl), certificate replacement, unix socket listening
// and graceful close of the gRPC server, with @grpc/grpc-js and the @rls/rls-proto client.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import tls from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { tempDir, waitFor } from '@rls/testkit';
import { createRateLimitClient } from '@rls/rls-proto';
import { createGrpcServer } from '../../src/server/grpc-server.js';
import { grpcJsStubs, scriptedService, selfSignedCert, TestHealth, unaryCall } from '../support/server-test-support.js';

const dir = tempDir('rls-grpc-tls-');
after(() => dir.cleanup());

const request = { domain: 'tls', descriptors: [{ entries: [{ key: 'a', value: 'b' }] }] };

describe(`gRPC server over TLS`, () => {
  test('handshake with ALPN h2 and a self-signed certificate; grpc-js and the rls-proto client both work', async () => {
    const { key, cert } = selfSignedCert(dir.path);
    const server = createGrpcServer({ shouldRateLimit: scriptedService().fn, health: new TestHealth(), tls: { key, cert } });
    await server.listen('127.0.0.1', 0);
    const port = (server.address() as { port: number }).port;
    const stubs = grpcJsStubs(`localhost:${port}`, grpc.credentials.createSsl(cert));
    const client = createRateLimitClient({ address: `127.0.0.1:${port}`, tls: { ca: cert, servername: 'localhost' }, timeoutMs: 5000 });
    try {
      const res = await unaryCall<Record<string, unknown>>(stubs.rls, 'ShouldRateLimit', request);
      assert.equal(res.overallCode, 'OK');
      const viaOurs = await client.shouldRateLimit({ domain: 'tls', descriptors: [{ entries: [{ key: 'a', value: 'b' }] }], hitsAddend: 1 });
      assert.equal(viaOurs.overallCode, 1);
      assert.equal(await client.healthCheck('ratelimit'), 'SERVING');

      // A client that does not trust the certificate fails the handshake and the call.
      const untrusting = grpcJsStubs(`localhost:${port}`, grpc.credentials.createSsl());
      await assert.rejects(unaryCall(untrusting.rls, 'ShouldRateLimit', request), (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE);
      untrusting.close();

      // The negotiated protocol is h2.
      const alpn = await new Promise<string | false>((resolve, reject) => {
        const s = tls.connect({ host: '127.0.0.1', port, ca: cert, servername: 'localhost', ALPNProtocols: ['h2'] }, () => {
          resolve(s.alpnProtocol ?? false);
          s.end();
        });
        s.on('error', reject);
      });
      assert.equal(alpn, 'h2');
    } finally {
      stubs.close();
      client.close();
      await server.close(1000);
    }
  });

  test('setTls swaps the certificate for new connections', async () => {
    const first = selfSignedCert(dir.path, 'first');
    const second = selfSignedCert(dir.path, 'second');
    const server = createGrpcServer({ shouldRateLimit: scriptedService().fn, health: new TestHealth(), tls: first });
    await server.listen('127.0.0.1', 0);
    const port = (server.address() as { port: number }).port;
    try {
      const a = grpcJsStubs(`localhost:${port}`, grpc.credentials.createSsl(first.cert));
      assert.equal((await unaryCall<Record<string, unknown>>(a.rls, 'ShouldRateLimit', request)).overallCode, 'OK');
      a.close();
      server.setTls(second);
      const b = grpcJsStubs(`localhost:${port}`, grpc.credentials.createSsl(second.cert));
      assert.equal((await unaryCall<Record<string, unknown>>(b.rls, 'ShouldRateLimit', request)).overallCode, 'OK');
      b.close();
      const stale = grpcJsStubs(`localhost:${port}`, grpc.credentials.createSsl(first.cert));
      await assert.rejects(unaryCall(stale.rls, 'ShouldRateLimit', request), (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE);
      stale.close();
    } finally {
      await server.close(1000);
    }
  });

  test('mutual TLS: a client without a certificate is refused, one with a CA-signed certificate passes', async () => {
    const serverPair = selfSignedCert(dir.path, 'mtls-server');
    const clientPair = selfSignedCert(dir.path, 'mtls-client');
    const server = createGrpcServer({
      shouldRateLimit: scriptedService().fn,
      health: new TestHealth(),
      tls: { ...serverPair, ca: clientPair.cert, requestClientCert: true },
    });
    await server.listen('127.0.0.1', 0);
    const port = (server.address() as { port: number }).port;
    try {
      const anonymous = grpcJsStubs(`localhost:${port}`, grpc.credentials.createSsl(serverPair.cert));
      await assert.rejects(unaryCall(anonymous.rls, 'ShouldRateLimit', request), (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE);
      anonymous.close();
      const client = createRateLimitClient({
        address: `127.0.0.1:${port}`,
        tls: { ca: serverPair.cert, cert: clientPair.cert, key: clientPair.key, servername: 'localhost' },
        timeoutMs: 5000,
      });
      assert.equal((await client.shouldRateLimit({ domain: 'm', descriptors: [{ entries: [{ key: 'a', value: 'b' }] }], hitsAddend: 1 })).overallCode, 1);
      client.close();
    } finally {
      await server.close(1000);
    }
  });
});

describe(`gRPC server lifecycle`, () => {
  test('listens on a unix socket', async () => {
    const path = join(dir.path, 'rls.sock');
    const server = createGrpcServer({ shouldRateLimit: scriptedService().fn, health: new TestHealth() });
    await server.listenUnix(path);
    assert.equal(server.address(), path);
    const stubs = grpcJsStubs(`unix:${path}`);
    try {
      assert.equal((await unaryCall<Record<string, unknown>>(stubs.rls, 'ShouldRateLimit', request)).overallCode, 'OK');
    } finally {
      stubs.close();
      await server.close(1000);
    }
  });

  test('listen on a busy port rejects', async () => {
    const a = createGrpcServer({ shouldRateLimit: scriptedService().fn, health: new TestHealth() });
    await a.listen('127.0.0.1', 0);
    const b = createGrpcServer({ shouldRateLimit: scriptedService().fn, health: new TestHealth() });
    await assert.rejects(b.listen('127.0.0.1', (a.address() as { port: number }).port), /EADDRINUSE/);
    await a.close(100);
    await b.close(100);
  });

  test('graceful close lets an in-flight call finish, ends health watches and refuses new connections', async () => {
    const svc = scriptedService();
    const health = new TestHealth();
    const server = createGrpcServer({ shouldRateLimit: svc.fn, health });
    await server.listen('127.0.0.1', 0);
    const port = (server.address() as { port: number }).port;
    const stubs = grpcJsStubs(`127.0.0.1:${port}`);
    const watch = (stubs.health.Watch as (...a: unknown[]) => grpc.ClientReadableStream<unknown>).call(stubs.health, { service: 'ratelimit' });
    const watchEnd = new Promise<grpc.StatusObject>((resolve) => watch.on('status', resolve));
    watch.on('data', () => undefined);
    watch.on('error', () => undefined);
    const inflight = unaryCall<Record<string, unknown>>(stubs.rls, 'ShouldRateLimit', { domain: 'slow', descriptors: [{ entries: [{ key: 'a', value: 'b' }] }] });
    await waitFor(() => svc.seen.length === 1, { what: 'slow call to arrive' });
    const closing = server.close(5000);
    assert.equal((await inflight).overallCode, 'OK');
    assert.equal((await watchEnd).code, grpc.status.UNAVAILABLE);
    await closing;
    stubs.close();
    const late = grpcJsStubs(`127.0.0.1:${port}`);
    await assert.rejects(unaryCall(late.rls, 'ShouldRateLimit', request, { deadline: Date.now() + 1000 }), (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE || err.code === grpc.status.DEADLINE_EXCEEDED);
    late.close();
  });

  test('close with a short grace destroys connections whose calls do not finish', async () => {
    const svc = scriptedService();
    const server = createGrpcServer({ shouldRateLimit: svc.fn, health: new TestHealth() });
    await server.listen('127.0.0.1', 0);
    const port = (server.address() as { port: number }).port;
    const stubs = grpcJsStubs(`127.0.0.1:${port}`);
    // Settle-capturing wrapper: the rejection arrives while close() is awaited.
    const hanging = unaryCall(stubs.rls, 'ShouldRateLimit', { domain: 'hang', descriptors: [{ entries: [{ key: 'a', value: 'b' }] }] }, { deadline: Date.now() + 10_000 }).then(
      () => undefined,
      (err: grpc.ServiceError) => err,
    );
    await waitFor(() => svc.seen.length === 1, { what: 'hanging call to arrive' });
    const t0 = Date.now();
    await server.close(200);
    assert.ok(Date.now() - t0 < 3000);
    const err = await hanging;
    assert.equal(err?.code, grpc.status.UNAVAILABLE);
    await waitFor(() => svc.aborted.length === 1, { what: 'abort of the hanging handler' });
    stubs.close();
  });
});
