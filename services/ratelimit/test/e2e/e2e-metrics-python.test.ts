// /metrics of the running service, parsed by an independent implementation: the official Python
// Prometheus client's text parser (Debian python3-prometheus-client).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRateLimitClient } from '@rls/rls-proto';
import { clearOfWindowEdge, freePort } from '@rls/testkit';
import { postJson, startService, writeRules } from '../support/service-process.js';

const PARSE = `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for fam in text_string_to_metric_families(sys.stdin.read()):
    for s in fam.samples:
        out.append({"family": fam.name, "type": fam.type, "name": s.name, "labels": s.labels, "value": s.value})
print(json.dumps(out))
`;

interface Sample {
  family: string;
  type: string;
  name: string;
  labels: Record<string, string>;
  value: number;
}

test('Prometheus scrape parses with the Python client parser and carries the default mapping', async () => {
  const rules = writeRules({
    'm.yaml': 'domain: m\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 3 }\n  - key: a\n    descriptors:\n      - key: b\n        rate_limit: { unit: hour, requests_per_unit: 100 }\n',
  });
  const metricsPort = await freePort();
  const svc = await startService({ ...rules.env, BACKEND_TYPE: 'memory', USE_STATS_PUSH: 'false', USE_PULL_METRICS: 'true', PULL_METRICS_ADDR: `127.0.0.1:${metricsPort}` });
  const client = createRateLimitClient({ address: svc.grpcAddress, timeoutMs: 5000 });
  try {
    await clearOfWindowEdge(60, 5000); // the 5 requests count in one minute window
    for (let i = 0; i < 5; i++) await postJson(svc.httpUrl, { domain: 'm', descriptors: [{ entries: [{ key: 'k', value: 'x' }] }] });
    await client.shouldRateLimit({ domain: 'm', descriptors: [{ entries: [{ key: 'a', value: '1' }, { key: 'b', value: '2' }] }], hitsAddend: 0 });
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const r = spawnSync('/usr/bin/python3', ['-c', PARSE], { input: text, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const samples = JSON.parse(r.stdout) as Sample[];
    // The Python parser names counter samples the OpenMetrics way (`<family>_total`), so counters
    // are found by family name; histogram series by sample name.
    const find = (name: string, labels: Record<string, string>): Sample | undefined =>
      samples.find(
        (s) => (s.type === 'counter' ? s.family === name : s.name === name) && Object.keys(s.labels).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
      );
    assert.equal(find('ratelimit_service_rate_limit_total_hits', { domain: 'm', key1: 'k' })?.value, 5);
    assert.equal(find('ratelimit_service_rate_limit_over_limit', { domain: 'm', key1: 'k' })?.value, 2);
    assert.equal(find('ratelimit_service_rate_limit_within_limit', { domain: 'm', key1: 'k' })?.value, 3);
    assert.equal(find('ratelimit_service_rate_limit_total_hits', { domain: 'm', key1: 'a', key2: 'b' })?.value, 1);
    assert.equal(find('ratelimit_service_total_requests', { grpc_method: 'ShouldRateLimit' })?.value, 1);
    assert.equal(find('ratelimit_service_response_time_seconds_count', { grpc_method: 'ShouldRateLimit' })?.value, 1);
    assert.equal(find('ratelimit_service_config_load_success', {})?.value, 1);
  } finally {
    client.close();
    await svc.stop();
    rules.cleanup();
  }
});
