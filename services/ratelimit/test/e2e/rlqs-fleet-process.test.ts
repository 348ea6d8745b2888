// Two real `ratelimit` processes on one Redis sharing an RLQS quota (issue 28 phase 2, step 4):
// four simulated Envoys, two on each process, each offering 30 requests/s to one bucket whose
// global quota is 20/s (token bucket, burst 20). In real time, after the convergence time the
// total admitted per second across both processes must stay within the quota plus the documented
// overshoot bound: admitted over a window ≤ quota × window + Σ max_tokens of assignments changed in
// it (≤ burst + instances per full re-division), and the quota must not be starved either.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { systemClock } from '@rls/engine';
import { grpcSimStream, SimulatedEnvoy, startRedis, waitFor, type RedisServer } from '@rls/testkit';
import { HAND_WRITTEN_SIM_CODEC } from '../support/rlqs-grpc-js-host.js';
import { startService, writeRules, type ServiceProcess } from '../support/service-process.js';

const QUOTA = 20;
const BURST = 20;
const OFFERED = 30;
const RULES = `domain: edge\nquota_buckets:\n  - bucket_id: { name: api }\n    quota: { unit: second, requests_per_unit: ${QUOTA}, burst: ${BURST} }\n`;
const API = [{ key: 'name', value: 'api' }];

let redis: RedisServer;
let rules: ReturnType<typeof writeRules>;
const services: ServiceProcess[] = [];
before(async () => {
  redis = await startRedis();
  rules = writeRules({ 'edge.yaml': RULES });
  for (let i = 0; i < 2; i++) {
    services.push(
      await startService({
        ...rules.env,
        BACKEND_TYPE: 'redis',
        KVSTORE_SOCKET_TYPE: 'tcp',
        KVSTORE_URL: redis.url,
        RLQS_ENABLED: 'true',
        RLQS_TICK: '500ms',
        RLQS_HOLD: '500ms',
      }),
    );
  }
});
after(async () => {
  for (const s of services) await s.stop();
  await redis.stop();
  rules.cleanup();
});

test('two processes on one Redis: four Envoys offering 6x the quota admit within the global quota', async () => {
  const clients = [0, 1, 2, 3].map((i) => new grpc.Client(services[i % 2]!.grpcAddress, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }));
  const sims = clients.map(
    (client) => new SimulatedEnvoy({ domain: 'edge', clock: systemClock, settings: () => ({ reportingIntervalMs: 500 }), open: grpcSimStream(client, HAND_WRITTEN_SIM_CODEC) }),
  );
  const start = Date.now();
  const admittedAt: number[] = [];
  try {
    // Offered load: OFFERED/s per instance, in steps of 50 ms, for 12 s.
    const stepMs = 50;
    const perStep = (OFFERED * stepMs) / 1000;
    let carry = 0;
    for (let t = 0; Date.now() - start < 12_000; t++) {
      carry += perStep;
      const n = Math.floor(carry);
      carry -= n;
      for (const sim of sims) {
        sim.advance();
        for (let k = 0; k < n; k++) if (sim.request(API)) admittedAt.push(Date.now() - start);
      }
      const due = start + (t + 1) * stepMs;
      await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
    }
    await waitFor(() => sims.every((s) => s.stateOf(API) === 'active'), { what: 'every instance assigned' });
    // Convergence: 4 s (a few ticks and reporting intervals); measure the 8 s after.
    const windowS = 8;
    const inWindow = admittedAt.filter((ms) => ms >= 4_000 && ms < 12_000).length;
    const bound = QUOTA * windowS + BURST + sims.length;
    console.log(`admitted ${inWindow} in ${windowS} s (quota ${QUOTA * windowS}, bound ${bound}); total ${admittedAt.length} in 12 s`);
    assert.ok(inWindow <= bound, `admitted ${inWindow} > ${bound}`);
    assert.ok(inWindow >= QUOTA * windowS * 0.5, `admitted ${inWindow}: the quota is starved`);
    for (const sim of sims) assert.deepEqual(sim.violations, []);
  } finally {
    for (const s of sims) s.close();
    for (const c of clients) c.close();
  }
});
