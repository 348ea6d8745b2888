// StreamRateLimitQuotas on the real lean HTTP/2 server (issue 28 phase 2): grpc-js clients (a
// simulated Envoy, and raw bidi calls) against createGrpcServer with an RlqsService. Checks the
// stream carries several reports and server pushes, outlives the request read time, ends with OK on
// half-close, and that each bound and error ends only the offending stream with its status.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { DEFAULT_BALANCER_TUNING, loadRuleSet, MemoryShareStore, QuotaBalancer, StatsStore } from '@rls/engine';
import { DEFAULT_RLQS_REPORT_LIMITS, decodeRateLimitQuotaResponse, encodeRateLimitQuotaUsageReports, STREAM_RATE_LIMIT_QUOTAS_PATH, type RateLimitQuotaResponseMsg } from '@rls/rls-proto';
import { FakeClock, SimulatedEnvoy, grpcSimStream, waitFor, type SimUsageReports } from '@rls/testkit';
import { createGrpcServer, type GrpcServer } from '../../src/server/grpc-server.js';
import { DEFAULT_GRPC_LIMITS } from '../../src/server/grpc-limits-settings.js';
import { RlqsService, type RlqsServiceOptions } from '../../src/server/rlqs-calls.js';
import { HAND_WRITTEN_SIM_CODEC } from '../support/rlqs-grpc-js-host.js';
import { scriptedService, TestHealth } from '../support/server-test-support.js';

const RULES = loadRuleSet(
  [{ name: 'edge.yaml', content: 'domain: edge\nquota_buckets:\n  - bucket_id: { name: api }\n    quota: { unit: second, requests_per_unit: 20 }\n' }],
  { mergeDomainConfig: false },
).quotaRules;
const API = [{ key: 'name', value: 'api' }];

interface Rig {
  server: GrpcServer;
  rlqs: RlqsService;
  balancer: QuotaBalancer;
  clock: FakeClock;
  client: grpc.Client;
  address: string;
}

async function startRig(over: Partial<RlqsServiceOptions> = {}, requestReadTimeoutMs = 10_000): Promise<Rig> {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const balancer = new QuotaBalancer({
    ...DEFAULT_BALANCER_TUNING,
    replicaId: 'r',
    clock,
    store: new MemoryShareStore(),
    rules: () => RULES,
    stats: new StatsStore(),
    keyPrefix: '',
    idleAbandonMs: 3_000,
    maxBucketsPerStream: 3,
  });
  const rlqs = new RlqsService({
    balancer,
    clock,
    reportLimits: DEFAULT_RLQS_REPORT_LIMITS,
    maxStreamsPerConnection: 4,
    maxReportsPerSecond: 20,
    sendBufferBytes: 1024 * 1024,
    firstReportTimeoutMs: 10_000,
    // Ticks come from new watches and from the test.
    tickMs: 3_600_000,
    logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
    ...over,
  });
  const server = createGrpcServer({
    shouldRateLimit: scriptedService().fn,
    health: new TestHealth(),
    rlqs,
    limits: { ...DEFAULT_GRPC_LIMITS, requestReadTimeoutMs },
  });
  await server.listen('127.0.0.1', 0);
  const port = (server.address() as { port: number }).port;
  const address = `127.0.0.1:${port}`;
  return { server, rlqs, balancer, clock, client: new grpc.Client(address, grpc.credentials.createInsecure()), address };
}

async function stopRig(r: Rig): Promise<void> {
  r.client.close();
  await r.server.close(100);
}

interface RawCall {
  call: grpc.ClientDuplexStream<SimUsageReports, RateLimitQuotaResponseMsg>;
  status: Promise<grpc.StatusObject>;
  received: RateLimitQuotaResponseMsg[];
}

function rawCall(client: grpc.Client): RawCall {
  const call = client.makeBidiStreamRequest(
    STREAM_RATE_LIMIT_QUOTAS_PATH,
    (m: SimUsageReports) => encodeRateLimitQuotaUsageReports(m),
    (b: Buffer) => decodeRateLimitQuotaResponse(b),
  );
  const received: RateLimitQuotaResponseMsg[] = [];
  call.on('data', (m: RateLimitQuotaResponseMsg) => received.push(m));
  call.on('error', () => undefined);
  const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  return { call, status, received };
}

const usage = (value: string, allowed = 1): SimUsageReports['bucketQuotaUsages'][number] => ({
  bucketId: [{ key: 'name', value }],
  timeElapsed: 1,
  numRequestsAllowed: allowed,
  numRequestsDenied: 0,
});

describe('RLQS on the lean gRPC server', () => {
  let rig: Rig;
  before(async () => {
    rig = await startRig({}, 200);
  });
  after(() => stopRig(rig));

  test('a simulated Envoy: watch, pushed assignment, enforcement, reports on one stream, abandon', async () => {
    const { clock, balancer, rlqs } = rig;
    const sim = new SimulatedEnvoy({ domain: 'edge', clock, settings: () => ({ reportingIntervalMs: 1000 }), open: grpcSimStream(rig.client, HAND_WRITTEN_SIM_CODEC) });
    sim.request(API);
    // The watch triggers a tick at once: the assignment is pushed without waiting for the tick timer.
    await waitFor(() => sim.stateOf(API) === 'active', { what: 'the assignment' });
    assert.deepEqual(sim.strategyOf(API), { kind: 'token_bucket', tokenBucket: { maxTokens: 20, tokensPerFill: 100, fillInterval: 5 } });
    let ok = 0;
    for (let i = 0; i < 50; i++) if (sim.request(API)) ok++;
    assert.equal(ok, 20);
    // Idle reports for longer than the request read timeout (200 ms, real time): the stream lives on.
    for (let s = 0; s < 4; s++) {
      clock.advance(1000);
      sim.advance();
      await waitFor(() => rlqs.reportCount === sim.counters.reportsSent, { what: 'the report' });
      await balancer.tick();
      await new Promise((r) => setTimeout(r, 80));
    }
    await waitFor(() => sim.counters.abandonedByServer === 1, { what: 'the abandon' });
    assert.equal(sim.stateOf(API), undefined);
    assert.deepEqual(sim.violations, []);
    assert.equal(rlqs.streamCount, 1);
    sim.close();
    await waitFor(() => rlqs.streamCount === 0, { what: 'the stream forgotten after the client cancelled' });
  });

  test('several reports on one stream, then half-close: OK', async () => {
    const c = rawCall(rig.client);
    const before = rig.rlqs.reportCount;
    c.call.write({ domain: 'edge', bucketQuotaUsages: [usage('a')] });
    c.call.write({ domain: '', bucketQuotaUsages: [usage('a'), usage('b')] });
    c.call.write({ domain: 'edge', bucketQuotaUsages: [usage('b')] });
    await waitFor(() => rig.rlqs.reportCount === before + 3, { what: 'three reports' });
    await waitFor(() => c.received.length > 0, { what: 'a push' });
    c.call.end();
    const s = await c.status;
    assert.equal(s.code, grpc.status.OK);
    await waitFor(() => rig.rlqs.streamCount === 0, { what: 'the stream forgotten' });
  });

  test('a changed domain ends that stream with INVALID_ARGUMENT; another stream on the connection goes on', async () => {
    const good = rawCall(rig.client);
    good.call.write({ domain: 'edge', bucketQuotaUsages: [usage('x')] });
    const bad = rawCall(rig.client);
    bad.call.write({ domain: 'edge', bucketQuotaUsages: [usage('y')] });
    bad.call.write({ domain: 'other', bucketQuotaUsages: [usage('y')] });
    const s = await bad.status;
    assert.equal(s.code, grpc.status.INVALID_ARGUMENT);
    assert.match(s.details, /changed domain from 'edge' to 'other'/);
    const n = rig.rlqs.reportCount;
    good.call.write({ domain: '', bucketQuotaUsages: [usage('x')] });
    await waitFor(() => rig.rlqs.reportCount === n + 1, { what: 'the other stream still reporting' });
    good.call.end();
    assert.equal((await good.status).code, grpc.status.OK);
  });

  test('buckets per stream (the balancer bound): RESOURCE_EXHAUSTED', async () => {
    const c = rawCall(rig.client);
    c.call.write({ domain: 'edge', bucketQuotaUsages: ['a', 'b', 'c', 'd'].map((v) => usage(v)) });
    const s = await c.status;
    assert.equal(s.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.equal(s.details, 'more than 3 buckets on one RLQS stream');
  });

  test('reports per second: a client sending as fast as it can is ended with RESOURCE_EXHAUSTED', async () => {
    const c = rawCall(rig.client);
    for (let i = 0; i < 50; i++) c.call.write({ domain: 'edge', bucketQuotaUsages: [usage('fast')] });
    const s = await c.status;
    assert.equal(s.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(s.details, /more than 20 RLQS reports per second on one stream \(RLQS_MAX_REPORTS_PER_SECOND\)/);
  });

  test('streams per connection: the fifth is refused, the four open ones are not disturbed', async () => {
    const open = [0, 1, 2, 3].map(() => rawCall(rig.client));
    for (const c of open) c.call.write({ domain: 'edge', bucketQuotaUsages: [usage('p')] });
    await waitFor(() => rig.rlqs.streamCount === 4, { what: 'four streams' });
    const fifth = rawCall(rig.client);
    fifth.call.write({ domain: 'edge', bucketQuotaUsages: [usage('p')] });
    const s = await fifth.status;
    assert.equal(s.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(s.details, /RLQS_MAX_STREAMS_PER_CONNECTION/);
    // Another connection has its own allowance.
    const other = new grpc.Client(rig.address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    const o = rawCall(other);
    o.call.write({ domain: 'edge', bucketQuotaUsages: [usage('p')] });
    await waitFor(() => rig.rlqs.streamCount === 5, { what: 'a stream on another connection' });
    o.call.end();
    assert.equal((await o.status).code, grpc.status.OK);
    other.close();
    for (const c of open) c.call.end();
    for (const c of open) assert.equal((await c.status).code, grpc.status.OK);
  });

  test('a report that is not a message ends the stream with INTERNAL', async () => {
    const call = rig.client.makeBidiStreamRequest(STREAM_RATE_LIMIT_QUOTAS_PATH, (b: Buffer) => b, (b: Buffer) => b);
    call.on('error', () => undefined);
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    call.write(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]));
    const s = await status;
    assert.equal(s.code, grpc.status.INTERNAL);
    assert.match(s.details, /error unmarshalling request/);
  });
});

describe('RLQS stream lifecycle bounds', () => {
  test('a stream without a first report ends with DEADLINE_EXCEEDED after RLQS_FIRST_REPORT_TIMEOUT', async () => {
    const rig = await startRig({ firstReportTimeoutMs: 100 });
    try {
      // grpc-js sends the request headers when the call starts; nothing else is written.
      const c = rawCall(rig.client);
      const s = await c.status;
      assert.equal(s.code, grpc.status.DEADLINE_EXCEEDED);
      assert.match(s.details, /RLQS_FIRST_REPORT_TIMEOUT/);
      assert.equal(rig.rlqs.streamCount, 0);
    } finally {
      await stopRig(rig);
    }
  });

  test('shutdown ends open streams with UNAVAILABLE', async () => {
    const rig = await startRig();
    const c = rawCall(rig.client);
    c.call.write({ domain: 'edge', bucketQuotaUsages: [usage('s')] });
    await waitFor(() => rig.rlqs.streamCount === 1, { what: 'the stream' });
    const closing = rig.server.close(1000);
    const s = await c.status;
    assert.equal(s.code, grpc.status.UNAVAILABLE);
    await closing;
    rig.client.close();
  });

  test('without an RlqsService the method is UNIMPLEMENTED', async () => {
    const server = createGrpcServer({ shouldRateLimit: scriptedService().fn, health: new TestHealth() });
    await server.listen('127.0.0.1', 0);
    const client = new grpc.Client(`127.0.0.1:${(server.address() as { port: number }).port}`, grpc.credentials.createInsecure());
    try {
      const c = rawCall(client);
      c.call.write({ domain: 'edge', bucketQuotaUsages: [usage('u')] });
      assert.equal((await c.status).code, grpc.status.UNIMPLEMENTED);
    } finally {
      client.close();
      await server.close(100);
    }
  });
});
