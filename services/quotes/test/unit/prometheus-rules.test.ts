// examples/prometheus/quotes.rules.yaml with promtool (Debian's prometheus package, which .ci/run
// installs): the rules parse and their unit tests (quotes.rules.test.yaml) pass. The e2e test
// test/e2e/grafana-dashboards.test.ts loads them into a real Prometheus scraping the service.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const examples = fileURLToPath(new URL('../../../../examples/prometheus/', import.meta.url));

function promtool(args: string[]): string {
  const r = spawnSync('promtool', args, { cwd: examples, encoding: 'utf8', timeout: 30_000 });
  if (r.error) assert.fail(`promtool could not run (${r.error.message}); install Debian's prometheus package (.ci/run does)`);
  const out = r.stdout + r.stderr;
  assert.equal(r.status, 0, `promtool ${args.join(' ')} failed:\n${out}`);
  return out;
}

test('promtool accepts the quotes rules', () => {
  assert.match(promtool(['check', 'rules', 'quotes.rules.yaml']), /SUCCESS: 8 rules found/);
});

test('the quotes rules pass their promtool unit tests (5xx ratio, stale ingestion, no leader, limiter failing open)', () => {
  assert.match(promtool(['test', 'rules', 'quotes.rules.test.yaml']), /SUCCESS/);
});
