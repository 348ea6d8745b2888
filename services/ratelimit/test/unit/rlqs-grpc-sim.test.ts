// The simulated Envoy over a real grpc-js bidirectional stream (loopback, in this process) to a
// QuotaBalancer on the memory share store. The simulator encodes with protobufjs from our .proto
// files, an independent codec, so this also checks the server's hand-written RLQS codec on the
// wire: watch → assignment → local enforcement → abandon, and a refusal status for a bad stream.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { DEFAULT_BALANCER_TUNING, MemoryShareStore, QuotaBalancer, StatsStore, loadQuotaRules } from '@rls/engine';
import { PROTO_DIR, PROTO_FILES } from '@rls/rls-proto';
import { FakeClock, grpcSimStream, SimulatedEnvoy, waitFor, type SimCodec, type SimResponse, type SimUsageReports } from '@rls/testkit';
import { hostRlqs, type RlqsHost } from '../support/rlqs-grpc-js-host.js';

type Plain = Record<string, unknown>;

function protobufjsCodec(): SimCodec {
  const root = new protobuf.Root();
  root.resolvePath = (_o: string, t: string): string => (t.startsWith('google/protobuf/') ? t : `${PROTO_DIR}${t}`);
  root.loadSync(PROTO_FILES.rlqs, { keepCase: false });
  root.resolveAll();
  const Reports = root.lookupType('envoy.service.rate_limit_quota.v3.RateLimitQuotaUsageReports');
  const Response = root.lookupType('envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse');
  const dur = (d: Plain | undefined): number | undefined => (d === undefined ? undefined : Number(d.seconds ?? 0) + Number(d.nanos ?? 0) / 1e9);
  const id = (b: Plain | undefined) => (b === undefined ? undefined : Object.entries((b.bucket as Record<string, string> | undefined) ?? {}).map(([key, value]) => ({ key, value })));
  return {
    encodeReports: (m: SimUsageReports) =>
      Reports.encode(
        Reports.fromObject({
          domain: m.domain,
          bucketQuotaUsages: m.bucketQuotaUsages.map((u) => ({
            bucketId: { bucket: Object.fromEntries((u.bucketId ?? []).map((e) => [e.key, e.value])) },
            timeElapsed: { seconds: Math.trunc(u.timeElapsed ?? 0), nanos: Math.round(((u.timeElapsed ?? 0) % 1) * 1e9) },
            numRequestsAllowed: u.numRequestsAllowed,
            numRequestsDenied: u.numRequestsDenied,
          })),
        }),
      ).finish(),
    decodeResponse: (b: Uint8Array): SimResponse => {
      const o = Response.toObject(Response.decode(b), { longs: Number, enums: Number }) as Plain;
      return {
        bucketAction: ((o.bucketAction as Plain[] | undefined) ?? []).map((a) => {
          const qa = a.quotaAssignmentAction as Plain | undefined;
          const st = qa?.rateLimitStrategy as Plain | undefined;
          const tb = st?.tokenBucket as Plain | undefined;
          return {
            bucketId: id(a.bucketId as Plain | undefined),
            action:
              a.abandonAction !== undefined
                ? { kind: 'abandon' as const }
                : qa === undefined
                  ? undefined
                  : {
                      kind: 'quota_assignment' as const,
                      assignmentTimeToLive: dur(qa.assignmentTimeToLive as Plain | undefined),
                      rateLimitStrategy:
                        st === undefined
                          ? undefined
                          : tb !== undefined
                            ? { kind: 'token_bucket' as const, tokenBucket: { maxTokens: Number(tb.maxTokens ?? 0), tokensPerFill: (tb.tokensPerFill as Plain | undefined)?.value as number | undefined, fillInterval: dur(tb.fillInterval as Plain | undefined) } }
                            : { kind: 'blanket_rule' as const, blanketRule: Number(st.blanketRule ?? 0) },
                    },
          };
        }),
      };
    },
  };
}

const RULES = loadQuotaRules(
  [{ name: 'r.yaml', content: 'domain: edge\nquota_buckets:\n  - bucket_id: { name: api }\n    quota: { unit: second, requests_per_unit: 20 }\n' }],
  { mergeDomainConfig: false },
);
const API = [{ key: 'name', value: 'api' }];

describe('simulated Envoy over grpc-js to the balancer (protobufjs on the client side)', () => {
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
  let host: RlqsHost;
  let client: grpc.Client;
  before(async () => {
    host = await hostRlqs(balancer);
    client = new grpc.Client(host.address, grpc.credentials.createInsecure());
  });
  after(async () => {
    client.close();
    await host.stop();
  });

  test('watch, assignment, enforcement and abandon travel the stream intact', async () => {
    const sim = new SimulatedEnvoy({ domain: 'edge', clock, settings: () => ({ reportingIntervalMs: 1000 }), open: grpcSimStream(client, protobufjsCodec()) });
    sim.request(API);
    await waitFor(() => host.counts.received === 1, { what: 'the watch' });
    await balancer.tick();
    await waitFor(() => sim.stateOf(API) === 'active', { what: 'the assignment' });
    assert.deepEqual(sim.strategyOf(API), { kind: 'token_bucket', tokenBucket: { maxTokens: 20, tokensPerFill: 100, fillInterval: 5 } });
    let ok = 0;
    for (let i = 0; i < 50; i++) if (sim.request(API)) ok++;
    assert.equal(ok, 20);
    // No traffic for idleAbandonMs: the server abandons the bucket.
    for (let s = 0; s < 4; s++) {
      clock.advance(1000);
      sim.advance();
      await waitFor(() => host.counts.received === sim.counters.reportsSent, { what: 'the report' });
      await balancer.tick();
    }
    await waitFor(() => sim.counters.abandonedByServer === 1, { what: 'the abandon' });
    assert.equal(sim.stateOf(API), undefined);
    assert.deepEqual(sim.violations, []);
    sim.close();
  });

  test('a stream that watches more buckets than allowed ends with RESOURCE_EXHAUSTED', async () => {
    const call = client.makeBidiStreamRequest(
      '/envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas',
      (m: SimUsageReports) => Buffer.from(protobufjsCodec().encodeReports(m)),
      (b: Buffer) => b,
    );
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    call.on('error', () => undefined);
    call.write({
      domain: 'edge',
      bucketQuotaUsages: ['a', 'b', 'c', 'd'].map((v) => ({ bucketId: [{ key: 'k', value: v }], timeElapsed: 0, numRequestsAllowed: 1, numRequestsDenied: 0 })),
    });
    const s = await status;
    assert.equal(s.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.equal(s.details, 'more than 3 buckets on one RLQS stream');
  });
});
