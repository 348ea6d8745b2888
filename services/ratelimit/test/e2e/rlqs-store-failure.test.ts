// RLQS when the counter store fails, through the real process on Redis: the data plane holds a
// token bucket assignment; Redis goes away; at the next ticks the server pushes the rule's
// documented fallback (`on_store_failure: deny_all` here) and says so in its statistics
// (`ratelimit.rlqs.store_error`, `ratelimit.rlqs.<domain>.<rule>.store_fallback`).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { systemClock } from '@rls/engine';
import { grpcSimStream, SimulatedEnvoy, startRedis, waitFor, type RedisServer } from '@rls/testkit';
import { statFresh } from '../support/fresh-connection.js';
import { HAND_WRITTEN_SIM_CODEC } from '../support/rlqs-grpc-js-host.js';
import { startService, writeRules, type ServiceProcess } from '../support/service-process.js';

const RULES = `domain: edge
quota_buckets:
  - bucket_id: { name: api }
    name: api_rule
    quota: { unit: second, requests_per_unit: 20, on_store_failure: deny_all }
`;
const API = [{ key: 'name', value: 'api' }];

let redis: RedisServer;
let rules: ReturnType<typeof writeRules>;
let svc: ServiceProcess;
before(async () => {
  redis = await startRedis();
  rules = writeRules({ 'edge.yaml': RULES });
  svc = await startService({ ...rules.env, BACKEND_TYPE: 'redis', KVSTORE_SOCKET_TYPE: 'tcp', KVSTORE_URL: redis.url, KVSTORE_TIMEOUT: '300ms', RLQS_ENABLED: 'true', RLQS_TICK: '200ms' });
});
after(async () => {
  await svc.stop();
  await redis.stop();
  rules.cleanup();
});

test('store down: the rule\'s on_store_failure (deny_all) is pushed and counted', async () => {
  const client = new grpc.Client(svc.grpcAddress, grpc.credentials.createInsecure());
  const sim = new SimulatedEnvoy({ domain: 'edge', clock: systemClock, settings: () => ({ reportingIntervalMs: 200 }), open: grpcSimStream(client, HAND_WRITTEN_SIM_CODEC) });
  const pump = setInterval(() => sim.advance(), 50);
  try {
    sim.request(API);
    await waitFor(() => sim.strategyOf(API)?.kind === 'token_bucket', { what: 'the token bucket assignment', timeoutMs: 10_000 });
    await redis.stop();
    await waitFor(() => sim.strategyOf(API)?.kind === 'blanket_rule', { what: 'the fallback pushed', timeoutMs: 15_000 });
    assert.deepEqual(sim.strategyOf(API), { kind: 'blanket_rule', blanketRule: 1 });
    assert.equal(sim.request(API), false, 'DENY_ALL enforced');
    assert.ok(Number(await statFresh(svc.debugUrl, 'ratelimit.rlqs.store_error')) > 0);
    assert.ok(Number(await statFresh(svc.debugUrl, 'ratelimit.rlqs.edge.api_rule.store_fallback')) > 0);
  } finally {
    clearInterval(pump);
    sim.close();
    client.close();
  }
});
