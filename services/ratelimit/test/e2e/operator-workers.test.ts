// The operator page's JSON in worker mode (docs/ratelimit.md, "Operator page", "Worker mode"): each
// worker says which one it is and how many run, shows the rules the primary sent, and the primary's
// rejected loads reach every worker's reload history.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startRedis, waitFor, type RedisServer } from '@rls/testkit';
import { startService, writeRules, type ServiceProcess } from '../support/service-process.js';
import type { OperatorState } from '../../src/operator/operator-monitor.js';
import type { RulesView } from '../../src/operator/rules-view.js';

const RULES = `domain: w
descriptors:
  - key: k
    rate_limit: { unit: minute, requests_per_unit: 3 }
`;

describe('operator page in worker mode', () => {
  let redis: RedisServer;
  let svc: ServiceProcess;
  let rules: ReturnType<typeof writeRules>;

  before(async () => {
    redis = await startRedis();
    rules = writeRules({ 'w.yaml': RULES });
    svc = await startService({
      ...rules.env,
      RUNTIME_WATCH_ROOT: 'false',
      RUNTIME_WATCH_DEBOUNCE: '50ms',
      WORKERS: '2',
      BACKEND_TYPE: 'redis',
      KVSTORE_SOCKET_TYPE: 'tcp',
      KVSTORE_URL: redis.url,
    });
  });
  after(async () => {
    await svc?.stop();
    await redis?.stop();
    rules?.cleanup();
  });

  // A fresh connection per request, so both workers get asked.
  const get = async <T>(path: string): Promise<T> => (await (await fetch(svc.debugUrl + path, { headers: { connection: 'close' } })).json()) as T;

  test('each worker names itself and shows the rules from the primary; a rejected load reaches every worker', async () => {
    const ids = new Set<number>();
    await waitFor(
      async () => {
        const s = await get<OperatorState>('/operator/api/state');
        assert.equal(s.process.workers.mode, 'worker');
        assert.equal(s.process.workers.count, 2);
        ids.add(s.process.workers.id!);
        return ids.size === 2;
      },
      { what: 'answers from both workers', timeoutMs: 20_000, intervalMs: 20 },
    );
    const view = await get<RulesView>('/operator/api/rules');
    assert.deepEqual(
      view.domains.map((d) => [d.domain, d.source]),
      [['w', 'file w.yaml']],
    );
    assert.equal(view.reloads[0]!.source, 'primary');
    assert.equal(view.reloads[0]!.ok, true);

    writeFileSync(join(rules.dir, 'x.yaml'), 'domain: x\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n');
    await waitFor(
      async () => {
        const r = await get<RulesView>('/operator/api/rules');
        const e = r.reloads[0];
        if (e === undefined || e.ok) return false;
        assert.equal(e.source, 'primary file');
        assert.equal(e.file, 'x.yaml');
        assert.match(e.error ?? '', /^x\.yaml: .*fortnight/);
        // The tree still shows the rules in force.
        assert.deepEqual(
          r.domains.map((d) => d.domain),
          ['w'],
        );
        return true;
      },
      { what: 'the rejected load in the reload history', timeoutMs: 20_000, intervalMs: 50 },
    );
    // Connections go to the workers in turn: four answers in a row come from both, and all show it.
    await waitFor(
      async () => {
        for (let i = 0; i < 4; i++) {
          const v = await get<RulesView>('/operator/api/rules');
          if (v.reloads[0]?.ok !== false || v.reloads[1]?.ok !== true) return false;
        }
        return true;
      },
      { what: 'the rejected load in four answers in a row', timeoutMs: 10_000, intervalMs: 50 },
    );
  });
});
