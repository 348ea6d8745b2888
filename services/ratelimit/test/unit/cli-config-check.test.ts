import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rls/testkit';
import { main } from '../../src/cli/ratelimit-config-check.js';

function run(argv: string[]): { code: number; out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  const code = main(argv, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out, err };
}

test('valid directory: exit 0 with a summary', () => {
  const r = run(['-config_dir', new URL('../../../../examples/ratelimit/config', import.meta.url).pathname]);
  assert.equal(r.code, 0);
  assert.ok(r.out.includes('all rate limit configs ok'));
  assert.match(r.out.join('\n'), /opening config file: quickstart\.yaml/);
  assert.match(r.out.join('\n'), /1 domain\(s\), 2 rule\(s\) with a limit/);
});

test('invalid rules: exit 1 with the file and upstream error text (YAML errors too)', () => {
  const d = tempDir();
  try {
    writeFileSync(join(d.path, 'a.yaml'), 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n');
    const r = run([`--config_dir=${d.path}`]);
    assert.equal(r.code, 1);
    assert.match(r.err[0]!, /^error loading rate limit configs: a\.yaml: invalid rate limit unit 'fortnight'/);
    writeFileSync(join(d.path, 'a.yaml'), "'''");
    const y = run(['-config_dir', d.path]);
    assert.equal(y.code, 1);
    assert.match(y.err[0]!, /^error loading rate limit configs: a\.yaml: error loading config file: /);
  } finally {
    d.cleanup();
  }
});

test('duplicate domains need -merge_domain_configs', () => {
  const d = tempDir();
  try {
    writeFileSync(join(d.path, 'a.yaml'), 'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1 }\n');
    writeFileSync(join(d.path, 'b.yaml'), 'domain: d\ndescriptors:\n  - key: b\n    rate_limit: { unit: second, requests_per_unit: 1 }\n');
    assert.equal(run(['-config_dir', d.path]).code, 1);
    assert.match(run(['-config_dir', d.path]).err[0]!, /b\.yaml: duplicate domain 'd' in config file/);
    assert.equal(run(['-config_dir', d.path, '-merge_domain_configs']).code, 0);
  } finally {
    d.cleanup();
  }
});

test('usage errors exit 2', () => {
  assert.equal(run([]).code, 2);
  assert.equal(run(['-nope']).code, 2);
});
