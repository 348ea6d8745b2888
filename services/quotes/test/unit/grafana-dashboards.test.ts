// The Grafana dashboards of examples/grafana/: well-formed, every panel has a query, and every
// query is valid PromQL for promtool (each is written into a rules file as a recording rule and
// `promtool check rules` parses it). The e2e test (test/e2e/grafana-dashboards.test.ts) runs them
// against a real Prometheus scraping both services.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rls/testkit';
import { concrete, DASHBOARDS, GRAFANA_DIR, panelQueries } from '../support/grafana-panels.js';

function promtool(args: string[]): string {
  const r = spawnSync('promtool', args, { encoding: 'utf8', timeout: 30_000 });
  if (r.error) assert.fail(`promtool could not run (${r.error.message}); install Debian's prometheus package (.ci/run does)`);
  const out = r.stdout + r.stderr;
  assert.equal(r.status, 0, `promtool ${args.join(' ')} failed:\n${out}`);
  return out;
}

for (const name of DASHBOARDS) {
  test(`${name}.json: every panel has a query, titles and ids are unique, the datasource is a variable`, () => {
    const doc = JSON.parse(readFileSync(join(GRAFANA_DIR, `${name}.json`), 'utf8')) as {
      uid: string;
      panels: { id: number; type: string; title: string; targets?: { expr: string; datasource?: { uid: string } }[] }[];
      templating: { list: { name: string }[] };
    };
    assert.match(doc.uid, /^rls-/);
    assert.deepEqual(doc.templating.list.map((v) => v.name), ['datasource', 'job', 'instance']);
    const ids = doc.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'unique panel ids');
    const graphs = doc.panels.filter((p) => p.type !== 'row');
    assert.ok(graphs.length >= 12, `${graphs.length} panels`);
    assert.equal(new Set(graphs.map((p) => p.title)).size, graphs.length, 'unique titles');
    for (const p of graphs) {
      assert.ok((p.targets ?? []).length > 0, `${p.title}: a query`);
      for (const t of p.targets ?? []) {
        assert.equal(t.datasource?.uid, '${datasource}', `${p.title}: the datasource variable`);
        assert.match(t.expr, /job=~"\$job"/, `${p.title}: filtered by the job variable`);
      }
    }
  });

  test(`${name}.json: promtool accepts every panel query`, () => {
    const queries = panelQueries(name);
    const dir = tempDir('grafana-promql-');
    try {
      // One recording rule per query: `promtool check rules` parses each expression.
      const lines = ['groups:', '  - name: panels', '    rules:'];
      queries.forEach((q, i) => lines.push(`      - record: panel:${name}:${i}`, `        expr: ${JSON.stringify(concrete(q.expr, name))}`));
      const file = join(dir.path, 'panels.rules.yaml');
      writeFileSync(file, lines.join('\n') + '\n');
      assert.match(promtool(['check', 'rules', file]), new RegExp(`SUCCESS: ${queries.length} rules found`));
    } finally {
      dir.cleanup();
    }
  });
}

test('promtool rejects a broken query (the check above is not vacuous)', () => {
  const dir = tempDir('grafana-promql-');
  try {
    const file = join(dir.path, 'bad.rules.yaml');
    writeFileSync(file, 'groups:\n  - name: panels\n    rules:\n      - record: panel:bad\n        expr: "sum by (route (rate(x[1m]))"\n');
    const r = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8', timeout: 30_000 });
    assert.notEqual(r.status, 0);
  } finally {
    dir.cleanup();
  }
});
