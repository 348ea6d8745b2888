// RLQS quota rules pushed over xDS (RateLimitConfig extension fields 1006/1007, docs/ratelimit.md
// "Quota rules over xDS") through the real process: a simulated Envoy gets the assignment of the
// pushed rule, a new version re-divides the bucket at the next tick, and a bad resource is NACKed with
// the file form's message while the rules in force keep deciding.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { systemClock } from '@rls/engine';
import { packRateLimitConfig, PROTO_DIR, type QuotaRuleMsg, type RateLimitConfigMsg } from '@rls/rls-proto';
import { grpcSimStream, SimulatedEnvoy, startXdsServer, waitFor, type XdsManagementServer } from '@rls/testkit';
import { HAND_WRITTEN_SIM_CODEC } from '../support/rlqs-grpc-js-host.js';
import { startService, type ServiceProcess } from '../support/service-process.js';

const API = [{ key: 'name', value: 'api' }];
const quota = (q: Partial<QuotaRuleMsg>): QuotaRuleMsg => ({ strategy: '', unit: 'UNKNOWN', onStoreFailure: '', ...q });

function edge(perSecond: number, strategy = ''): RateLimitConfigMsg {
  return {
    name: 'edge-quota',
    domain: 'edge',
    descriptors: [],
    quotaBuckets: [{ bucketId: { name: 'api' }, bucketIdCidr: {}, name: 'api', quota: quota({ strategy, unit: 'SECOND', requestsPerUnit: perSecond }) }],
    defaultQuota: quota({ strategy: 'allow_all' }),
  };
}

describe('RLQS quota rules over xDS, through the real process', () => {
  let server: XdsManagementServer;
  let svc: ServiceProcess;
  let client: grpc.Client;
  before(async () => {
    server = await startXdsServer({ protoDir: PROTO_DIR });
    server.pushRaw('v1', [packRateLimitConfig(edge(20))]);
    svc = await startService({
      BACKEND_TYPE: 'memory',
      USE_STATS_PUSH: 'false',
      CONFIG_TYPE: 'GRPC_XDS_SOTW',
      CONFIG_GRPC_XDS_SERVER_URL: server.address,
      CONFIG_GRPC_XDS_NODE_ID: 'rlqs-node',
      RLQS_ENABLED: 'true',
      SHUTDOWN_DRAIN_DELAY: '0s',
    });
    await server.waitForRequest((r) => r.versionInfo === 'v1' && r.errorDetail === undefined);
    client = new grpc.Client(svc.grpcAddress, grpc.credentials.createInsecure());
  });
  after(async () => {
    client?.close();
    await svc?.stop();
    await server?.stop();
  });

  test('the pushed rule assigns; a new version re-divides; a bad one is NACKed and the old rule keeps deciding', async () => {
    const sim = new SimulatedEnvoy({ domain: 'edge', clock: systemClock, settings: () => ({ reportingIntervalMs: 500 }), open: grpcSimStream(client, HAND_WRITTEN_SIM_CODEC) });
    try {
      sim.request(API);
      await waitFor(() => sim.stateOf(API) === 'active', { what: 'the first assignment', timeoutMs: 10_000 });
      assert.deepEqual(sim.strategyOf(API), { kind: 'token_bucket', tokenBucket: { maxTokens: 20, tokensPerFill: 100, fillInterval: 5 } });

      server.pushRaw('v2', [packRateLimitConfig(edge(8))]);
      await server.waitForRequest((r) => r.versionInfo === 'v2' && r.errorDetail === undefined);
      // The simulated Envoy has no timers of its own: advance() sends the reports that are due.
      await waitFor(
        () => {
          sim.advance();
          return JSON.stringify(sim.strategyOf(API)).includes('"maxTokens":8');
        },
        { what: 'the assignment of v2', timeoutMs: 10_000 },
      );

      const mark = server.requests.length;
      const nonce = server.pushRaw('v3', [packRateLimitConfig(edge(8, 'sometimes'))]);
      const nack = await server.waitForRequest((r) => r.responseNonce === nonce, { from: mark });
      assert.equal(nack.versionInfo, 'v2');
      assert.equal(
        nack.errorDetail?.message,
        "edge-quota: quota_buckets[0].quota: unknown strategy 'sometimes' (expected one of token_bucket, requests_per_time_unit, allow_all, deny_all)",
      );
      // Still v2's rule: the next reports keep the assignment of 8.
      const reportsBefore = sim.counters.reportsSent;
      await waitFor(
        () => {
          sim.advance();
          return sim.counters.reportsSent >= reportsBefore + 2;
        },
        { what: 'two more reports', timeoutMs: 10_000 },
      );
      assert.match(JSON.stringify(sim.strategyOf(API)), /"maxTokens":8/);
      assert.deepEqual(sim.violations, []);
    } finally {
      sim.close();
    }
  });
});
