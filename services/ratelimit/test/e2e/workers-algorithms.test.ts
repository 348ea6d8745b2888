// Worker mode (WORKERS=2) with the algorithm extension on Redis: requests on fresh connections
// alternate between the workers, and both share the one store, so a token bucket and a sliding
// window hold their limit for the service as a whole, not per worker. A day-long unit keeps the
// window edge out of the run.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedis, waitFor, type RedisServer } from '@rls/testkit';
import { requestFresh } from '../support/fresh-connection.js';
import { startService, writeRules, type ServiceProcess } from '../support/service-process.js';

const N = 5;
const RULES = `domain: wk
descriptors:
  - {key: sliding, rate_limit: {unit: day, requests_per_unit: ${N}, algorithm: sliding_window}}
  - {key: bucket, rate_limit: {unit: day, requests_per_unit: ${N}, algorithm: token_bucket}}
`;

let redis: RedisServer;
let svc: ServiceProcess;
let rules: ReturnType<typeof writeRules>;

before(async () => {
  redis = await startRedis();
  rules = writeRules({ 'wk.yaml': RULES });
  svc = await startService({
    ...rules.env,
    WORKERS: '2',
    LOG_FORMAT: 'json',
    BACKEND_TYPE: 'redis',
    KVSTORE_SOCKET_TYPE: 'tcp',
    KVSTORE_URL: redis.url,
    USE_STATS_PUSH: 'false',
    SHUTDOWN_DRAIN_DELAY: '0s',
  });
  await waitFor(() => svc.output().includes('all workers listening'), { what: 'both workers listening', timeoutMs: 30_000 });
});

after(async () => {
  await svc?.stop();
  await redis?.stop();
  rules?.cleanup();
});

async function codes(key: string, requests: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < requests; i++) {
    const r = await requestFresh(`${svc.httpUrl}/json`, { method: 'POST', body: JSON.stringify({ domain: 'wk', descriptors: [{ entries: [{ key, value: 'alice' }] }] }) });
    out.push((JSON.parse(r.body) as { overallCode: string }).overallCode);
  }
  return out;
}

for (const key of ['sliding', 'bucket']) {
  test(`${key}: ${N} admitted across both workers, then refused`, async () => {
    const got = await codes(key, 2 * N);
    assert.deepEqual(got, [...Array<string>(N).fill('OK'), ...Array<string>(N).fill('OVER_LIMIT')]);
  });
}
