// RLQS through the real `ratelimit` process (RLQS_ENABLED=true, memory store): a simulated Envoy
// on a grpc-js connection gets its assignment from the quota rules in the rule files, and the
// bounds attacked from outside: a client trying to watch a million buckets (per report, per
// stream, per domain) and a client flooding reports each end only their own stream, and the
// process's tracked bucket count stays within RLQS_MAX_BUCKETS_PER_DOMAIN.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { systemClock } from '@rls/engine';
import { encodeRateLimitQuotaUsageReports, STREAM_RATE_LIMIT_QUOTAS_PATH } from '@rls/rls-proto';
import { freePort, grpcSimStream, SimulatedEnvoy, waitFor, type SimUsageReports } from '@rls/testkit';
import { statFresh } from '../support/fresh-connection.js';
import { HAND_WRITTEN_SIM_CODEC } from '../support/rlqs-grpc-js-host.js';
import { startService, writeRules, type ServiceProcess } from '../support/service-process.js';

const RULES = `domain: edge
descriptors:
  - key: k
    rate_limit: { unit: second, requests_per_unit: 1 }
quota_buckets:
  - bucket_id: { name: api }
    quota: { unit: second, requests_per_unit: 20 }
default_quota: { strategy: allow_all }
`;
const API = [{ key: 'name', value: 'api' }];

function rawCall(client: grpc.Client): { call: grpc.ClientDuplexStream<SimUsageReports, Buffer>; status: Promise<grpc.StatusObject> } {
  const call = client.makeBidiStreamRequest(STREAM_RATE_LIMIT_QUOTAS_PATH, (m: SimUsageReports) => encodeRateLimitQuotaUsageReports(m), (b: Buffer) => b);
  call.on('data', () => undefined);
  call.on('error', () => undefined);
  return { call, status: new Promise((resolve) => call.on('status', resolve)) };
}

const buckets = (from: number, n: number): SimUsageReports['bucketQuotaUsages'] =>
  Array.from({ length: n }, (_, i) => ({ bucketId: [{ key: 'id', value: `b${from + i}` }], timeElapsed: 0, numRequestsAllowed: 1, numRequestsDenied: 0 }));

describe('RLQS in the real process', () => {
  let svc: ServiceProcess;
  let rules: ReturnType<typeof writeRules>;
  let client: grpc.Client;
  let metricsUrl: string;
  before(async () => {
    rules = writeRules({ 'edge.yaml': RULES });
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    svc = await startService({
      ...rules.env,
      USE_PULL_METRICS: 'true',
      PULL_METRICS_ADDR: `127.0.0.1:${metricsPort}`,
      BACKEND_TYPE: 'memory',
      RLQS_ENABLED: 'true',
      RLQS_MAX_BUCKETS_PER_STREAM: '5000',
      RLQS_MAX_BUCKETS_PER_DOMAIN: '12000',
      RLQS_MAX_REPORTS_PER_SECOND: '10',
    });
    client = new grpc.Client(svc.grpcAddress, grpc.credentials.createInsecure());
  });
  after(async () => {
    client.close();
    await svc.stop();
    rules.cleanup();
  });

  test('a simulated Envoy gets the token bucket of its quota rule and enforces it', async () => {
    const sim = new SimulatedEnvoy({ domain: 'edge', clock: systemClock, settings: () => ({ reportingIntervalMs: 1000 }), open: grpcSimStream(client, HAND_WRITTEN_SIM_CODEC) });
    try {
      sim.request(API);
      await waitFor(() => sim.stateOf(API) === 'active', { what: 'the assignment', timeoutMs: 10_000 });
      assert.deepEqual(sim.strategyOf(API), { kind: 'token_bucket', tokenBucket: { maxTokens: 20, tokensPerFill: 100, fillInterval: 5 } });
      let ok = 0;
      for (let i = 0; i < 50; i++) if (sim.request(API)) ok++;
      assert.ok(ok >= 20 && ok <= 21, `admitted ${ok} of 50 from a full bucket of 20`);
      assert.deepEqual(sim.violations, []);
      assert.equal(await statFresh(svc.debugUrl, 'ratelimit.rlqs.streams'), '1');
    } finally {
      sim.close();
    }
  });

  test('per-rule RLQS statistics reach /metrics as labelled series (built-in Prometheus mapping)', async () => {
    const series = async (name: string, labels: string): Promise<number> => {
      const text = await (await fetch(metricsUrl)).text();
      const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
      return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
    };
    const labels = 'domain="edge",rule="name=api"';
    const before = { allowed: await series('ratelimit_rlqs_allowed_total', labels), denied: await series('ratelimit_rlqs_denied_total', labels) };
    const c = rawCall(client);
    try {
      c.call.write({ domain: 'edge', bucketQuotaUsages: [{ bucketId: API, timeElapsed: 1, numRequestsAllowed: 7, numRequestsDenied: 3 }] });
      await waitFor(async () => (await series('ratelimit_rlqs_allowed_total', labels)) >= before.allowed + 7 && (await series('ratelimit_rlqs_denied_total', labels)) >= before.denied + 3, {
        what: 'the reported counts in /metrics',
        timeoutMs: 10_000,
      });
      await waitFor(async () => (await series('ratelimit_rlqs_assignments_total', labels)) >= 1, { what: 'the assignment count in /metrics', timeoutMs: 10_000 });
      await waitFor(async () => (await series('ratelimit_rlqs_demand', labels)) > 0, { what: 'the demand gauge in /metrics', timeoutMs: 10_000 });
      // Per rule, not per bucket: no statsd-style RLQS rule name is left unmapped.
      const text = await (await fetch(metricsUrl)).text();
      assert.doesNotMatch(text, /^ratelimit_rlqs_edge_/m);
    } finally {
      c.call.cancel();
      await c.status;
    }
  });

  test('a million buckets in one report: refused while decoding (RLQS_MAX_REPORT_BYTES / RLQS_MAX_BUCKETS_PER_REPORT)', async () => {
    const c = rawCall(client);
    c.call.write({ domain: 'edge', bucketQuotaUsages: buckets(0, 1_000_000) });
    const s = await c.status;
    assert.ok(s.code === grpc.status.RESOURCE_EXHAUSTED || s.code === grpc.status.INVALID_ARGUMENT, `${s.code} ${s.details}`);
    assert.match(s.details, /RLQS_MAX_REPORT_BYTES|RLQS_MAX_BUCKETS_PER_REPORT|larger than max/);
  });

  test('a million buckets, 4,096 per report: each stream ends at RLQS_MAX_BUCKETS_PER_STREAM, the domain at RLQS_MAX_BUCKETS_PER_DOMAIN', async () => {
    const statuses: grpc.StatusObject[] = [];
    let next = 1_000_000;
    // Three streams on three connections: 5,000 each would be 15,000 > 12,000 for the domain.
    for (let k = 0; k < 3; k++) {
      const conn = new grpc.Client(svc.grpcAddress, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
      const c = rawCall(conn);
      for (let r = 0; r < 9; r++) {
        c.call.write({ domain: 'edge', bucketQuotaUsages: buckets(next, 4096) });
        next += 4096;
        await new Promise((resolve) => setTimeout(resolve, 110));
      }
      statuses.push(await c.status);
      conn.close();
      const tracked = Number(await statFresh(svc.debugUrl, 'ratelimit.rlqs.buckets'));
      assert.ok(tracked <= 12_000, `tracked buckets ${tracked}`);
    }
    for (const s of statuses) assert.equal(s.code, grpc.status.RESOURCE_EXHAUSTED, s.details);
    assert.ok(statuses.some((s) => /more than 5000 buckets on one RLQS stream/.test(s.details)), statuses.map((s) => s.details).join('; '));
  });

  test('a client flooding reports is ended (RLQS_MAX_REPORTS_PER_SECOND); another stream keeps its assignment', async () => {
    const sim = new SimulatedEnvoy({ domain: 'edge', clock: systemClock, settings: () => ({ reportingIntervalMs: 1000 }), open: grpcSimStream(client, HAND_WRITTEN_SIM_CODEC) });
    try {
      sim.request(API);
      await waitFor(() => sim.stateOf(API) === 'active', { what: 'the assignment', timeoutMs: 10_000 });
      const c = rawCall(client);
      for (let i = 0; i < 1000; i++) c.call.write({ domain: 'edge', bucketQuotaUsages: buckets(0, 1) });
      const s = await c.status;
      assert.equal(s.code, grpc.status.RESOURCE_EXHAUSTED);
      assert.match(s.details, /RLQS_MAX_REPORTS_PER_SECOND/);
      assert.equal(sim.stateOf(API), 'active');
    } finally {
      sim.close();
    }
  });
});
