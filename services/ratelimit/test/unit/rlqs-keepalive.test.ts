// Server keepalive on the lean HTTP/2 transport (GRPC_KEEPALIVE_TIME / GRPC_KEEPALIVE_TIMEOUT,
// docs/ratelimit.md "gRPC connection bounds"), seen from a raw HTTP/2 client holding an RLQS stream:
// a silent peer that answers PINGs keeps its long-lived stream for as long as it likes; one that has
// vanished (answers nothing) loses the connection, and with it the stream slot, within
// keepalive time + timeout; a connection without streams is not pinged; 0 turns keepalive off.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeRateLimitQuotaUsageReports, STREAM_RATE_LIMIT_QUOTAS_PATH } from '@rls/rls-proto';
import { connectH2, FrameFlag, FrameType, grpcRequestHeaders, waitFor, type H2RawClient } from '@rls/testkit';
import { createGrpcServer, type GrpcServer } from '../../src/server/grpc-server.js';
import { DEFAULT_GRPC_LIMITS } from '../../src/server/grpc-limits-settings.js';
import type { RlqsService } from '../../src/server/rlqs-calls.js';
import { rlqsTestService } from '../support/rlqs-test-service.js';
import { scriptedService, TestHealth } from '../support/server-test-support.js';

const KEEPALIVE_MS = 300;
const TIMEOUT_MS = 400;

const servers: GrpcServer[] = [];
after(async () => {
  for (const s of servers) await s.close();
});

async function start(keepaliveTimeMs: number): Promise<{ port: number; rlqs: RlqsService }> {
  const { rlqs } = rlqsTestService({ firstReportTimeoutMs: 60_000 });
  const server = createGrpcServer({
    shouldRateLimit: scriptedService().fn,
    health: new TestHealth(),
    rlqs,
    limits: { ...DEFAULT_GRPC_LIMITS, keepaliveTimeMs, keepaliveTimeoutMs: TIMEOUT_MS },
  });
  servers.push(server);
  await server.listen('127.0.0.1', 0);
  return { port: (server.address() as { port: number }).port, rlqs };
}

/** Opens stream 1 as an RLQS call and sends one report, leaving the stream open. */
async function openRlqsStream(port: number): Promise<H2RawClient> {
  const c = await connectH2({ port });
  await c.handshake();
  c.settingsAck();
  c.headers(1, grpcRequestHeaders(STREAM_RATE_LIMIT_QUOTAS_PATH), { endStream: false });
  const report = encodeRateLimitQuotaUsageReports({
    domain: 'edge',
    bucketQuotaUsages: [{ bucketId: [{ key: 'name', value: 'api' }], timeElapsed: 0, numRequestsAllowed: 1, numRequestsDenied: 0 }],
  });
  c.grpcData(1, report, false);
  return c;
}

const serverPings = (c: H2RawClient): number => c.received.filter((f) => f.type === FrameType.PING && (f.flags & FrameFlag.ACK) === 0).length;

describe('server keepalive on long-lived streams', () => {
  test('a silent peer that answers PINGs keeps its RLQS stream across several keepalive periods', async () => {
    const { port, rlqs } = await start(KEEPALIVE_MS);
    const c = await openRlqsStream(port);
    try {
      let answered = 0;
      const until = Date.now() + 4 * (KEEPALIVE_MS + TIMEOUT_MS);
      while (Date.now() < until) {
        const f = await c.waitFor((x) => x.type === FrameType.PING && (x.flags & FrameFlag.ACK) === 0, until - Date.now() + 1000, 'a keepalive PING').catch(() => undefined);
        if (f === undefined) break;
        c.ping(f.payload, true);
        answered++;
      }
      assert.ok(answered >= 3, `the server pinged ${answered} times in ${4 * (KEEPALIVE_MS + TIMEOUT_MS)} ms of silence`);
      assert.equal(await c.closedWithin(1), false, c.summary());
      assert.ok(!c.received.some((f) => f.type === FrameType.GOAWAY || f.type === FrameType.RST_STREAM), c.summary());
      assert.equal(rlqs.streamCount, 1);
      await c.pingRoundTrip();
    } finally {
      await c.close();
    }
  });

  test('a peer that answers nothing is cut off within keepalive time + timeout, releasing its stream', async () => {
    const { port, rlqs } = await start(KEEPALIVE_MS);
    const c = await openRlqsStream(port);
    const lastSent = Date.now();
    try {
      await waitFor(() => rlqs.streamCount === 1, { what: 'the stream open', timeoutMs: 5_000 });
      const end = await c.connectionError(KEEPALIVE_MS + TIMEOUT_MS + 3_000);
      const after = Date.now() - lastSent;
      assert.ok(after >= KEEPALIVE_MS + TIMEOUT_MS - 50, `closed after ${after} ms, before keepalive + timeout`);
      assert.equal(serverPings(c), 1, c.summary());
      assert.match(end.goaway?.debug ?? '', /keepalive: nothing received within 400 ms of a PING/);
      await waitFor(() => rlqs.streamCount === 0, { what: 'the stream released', timeoutMs: 5_000 });
    } finally {
      await c.close();
    }
  });

  test('no PING without open streams, and none at all with GRPC_KEEPALIVE_TIME=0', async () => {
    const idle = await start(KEEPALIVE_MS);
    const bare = await connectH2({ port: idle.port });
    const off = await start(0);
    const quiet = await openRlqsStream(off.port);
    try {
      await bare.handshake();
      bare.settingsAck();
      await new Promise((r) => setTimeout(r, 3 * (KEEPALIVE_MS + TIMEOUT_MS)));
      assert.equal(serverPings(bare), 0, bare.summary());
      assert.equal(serverPings(quiet), 0, quiet.summary());
      assert.equal(await quiet.closedWithin(1), false);
      assert.equal(off.rlqs.streamCount, 1);
    } finally {
      await Promise.all([bare.close(), quiet.close()]);
    }
  });
});
