import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rls/testkit';
import { describeAlgorithms, type Algorithm } from '@rls/engine';
import { MEMCACHED_ALGORITHMS } from '../../src/backends/memcached-store.js';
import { main } from '../../src/cli/ratelimit-config-check.js';

const describeBackend = (kind: string, algorithms: ReadonlySet<Algorithm>): string => `${kind} (runs ${describeAlgorithms({ kind, algorithms })})`;

function run(argv: string[], env: Record<string, string> = {}): { code: number; out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  const code = main(argv, { out: (l) => out.push(l), err: (l) => err.push(l) }, env);
  return { code, out, err };
}

test('valid directory: exit 0 with a summary', () => {
  const r = run(['-config_dir', new URL('../../../../examples/ratelimit/config', import.meta.url).pathname]);
  assert.equal(r.code, 0);
  assert.ok(r.out.includes('all rate limit configs ok'));
  assert.match(r.out.join('\n'), /opening config file: quickstart\.yaml/);
  assert.match(r.out.join('\n'), /1 domain\(s\), 4 rule\(s\) with a limit/);
  assert.ok(r.out.includes('  quickstart.remote_address_192.0.2.0/24: 0/SECOND'), 'the cidr deny rule');
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

test('the algorithm extension: validated, listed, and checked against the backend\'s store', () => {
  const d = tempDir();
  try {
    writeFileSync(
      join(d.path, 'a.yaml'),
      'domain: d\ndescriptors:\n  - key: s\n    rate_limit: {unit: second, requests_per_unit: 5, algorithm: sliding_window}\n  - key: t\n    rate_limit: {unit: minute, requests_per_unit: 60, algorithm: token_bucket, burst: 10}\n',
    );
    const ok = run(['-config_dir', d.path]);
    assert.equal(ok.code, 0, ok.err.join('\n'));
    assert.ok(ok.out.includes('backend: redis (runs fixed_window, sliding_window, token_bucket)'));
    assert.ok(ok.out.includes('  d.s: 5/SECOND algorithm=sliding_window'));
    assert.ok(ok.out.includes('  d.t: 60/MINUTE algorithm=token_bucket burst=10'));
    const memory = run(['-config_dir', d.path, '-backend_type', 'memory']);
    assert.equal(memory.code, 0);
    assert.ok(memory.out.includes('backend: memory (runs fixed_window, sliding_window, token_bucket)'));
    // memcached: checked against what MemcachedStore declares (MEMCACHED_ALGORITHMS), from the flag or BACKEND_TYPE
    for (const r of [run(['-config_dir', d.path, '-backend_type=memcache']), run(['-config_dir', d.path], { BACKEND_TYPE: 'mcstore' })]) {
      if (MEMCACHED_ALGORITHMS.has('token_bucket')) {
        assert.equal(r.code, 0, r.err.join('\n'));
        assert.ok(r.out.includes(`backend: ${describeBackend('memcached', MEMCACHED_ALGORITHMS)}`));
      } else {
        assert.equal(r.code, 1);
        assert.equal(
          r.err[0],
          `error loading rate limit configs: a.yaml: descriptor 'd.t': algorithm token_bucket is not supported by the memcached store: it cannot run a token bucket's read-compare-write of its timestamp atomically (it runs: ${describeAlgorithms({ kind: 'memcached', algorithms: MEMCACHED_ALGORITHMS })}); choose another algorithm or another store`,
        );
      }
    }
    writeFileSync(join(d.path, 'a.yaml'), 'domain: d\ndescriptors:\n  - key: s\n    rate_limit: {unit: second, requests_per_unit: 5, burst: 2}\n');
    const bad = run(['-config_dir', d.path]);
    assert.equal(bad.code, 1);
    assert.equal(bad.err[0], "error loading rate limit configs: a.yaml: burst is only valid with algorithm token_bucket, not fixed_window (descriptor 'd.s', line 3)");
    const badBackend = run(['-config_dir', d.path, '-backend_type', 'etcd']);
    assert.equal(badBackend.code, 2);
    assert.match(badBackend.err[0]!, /^invalid backend type "etcd" \(-backend_type\): expected redis, mcstore or memory/);
  } finally {
    d.cleanup();
  }
});

test('the algorithm example rules are valid', () => {
  const dir = new URL('../../../../examples/ratelimit/algorithms', import.meta.url).pathname;
  const r = run(['-config_dir', dir]);
  assert.equal(r.code, 0, r.err.join('\n'));
  assert.match(r.out.join('\n'), /1 domain\(s\), 4 rule\(s\) with a limit/);
  assert.ok(r.out.includes('  algorithms.upload: 10/SECOND algorithm=token_bucket burst=30'));
  assert.ok(r.out.includes('  algorithms.remote_address.path_/login: 5/MINUTE algorithm=token_bucket burst=5'));
});

test('the extension examples (rate_limits, unit_multiplier, cidr, prefix, a cidr list) check out, one summary line per limit', () => {
  const dir = new URL('../../../../examples/ratelimit/limits', import.meta.url).pathname;
  const r = run(['-config_dir', dir]);
  assert.equal(r.code, 0, r.err.join('\n'));
  assert.match(r.out.join('\n'), /1 domain\(s\), 9 rule\(s\) with a limit/);
  for (const line of [
    '  limits.api_key.per_second: 10/SECOND name=per_second',
    '  limits.api_key.per_day: 1000/DAY name=per_day',
    '  limits.report: 20/5 × MINUTE',
    '  limits.remote_address_10.20.0.0/16: unlimited',
    '  limits.remote_address_2001:db8:bad::/48: 0/SECOND',
    '  limits.remote_address_192.0.2.0/24+2: 0/SECOND',
    '  limits.team_team-batch-*: 100/6 × HOUR',
  ]) {
    assert.ok(r.out.includes(line), `${line}\n${r.out.join('\n')}`);
  }
});

test('a refusal of the extensions names the file, the descriptor and the line', () => {
  const tmp = tempDir('cc-ext-');
  const dir = tmp.path;
  try {
    writeFileSync(join(dir, 'bad.yaml'), 'domain: d\ndescriptors:\n  - key: ip\n    cidr: 10.0.0.1/8\n    rate_limit: {unit: second, requests_per_unit: 1}\n');
    const r = run(['-config_dir', dir]);
    assert.equal(r.code, 1);
    assert.match(r.err.join('\n') + r.out.join('\n'), /bad\.yaml: cidr '10\.0\.0\.1\/8' has host bits set; the block is 10\.0\.0\.0\/8 \(descriptor 'd\.ip', line 3\)/);
  } finally {
    tmp.cleanup();
  }
});

test('-env_file: the rule directory, store and options come from the file the service starts with', () => {
  const d = tempDir();
  try {
    const dir = join(d.path, 'root', 'app', 'config');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'a.yaml'), 'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1 }\n');
    writeFileSync(join(dir, 'b.yaml'), 'domain: d\ndescriptors:\n  - key: b\n    rate_limit: { unit: second, requests_per_unit: 1 }\n');
    const envFile = join(d.path, 'service.env');
    writeFileSync(envFile, `# comment\nBACKEND_TYPE=memory\nRUNTIME_ROOT=${join(d.path, 'root')}\nRUNTIME_SUBDIRECTORY=app\nMERGE_DOMAIN_CONFIG=true\n`);
    const r = run(['-env_file', envFile]);
    assert.equal(r.code, 0, r.err.join('\n'));
    assert.ok(r.out.includes(`loading config directory: ${dir}`));
    assert.ok(r.out.includes('backend: memory (runs fixed_window, sliding_window, token_bucket)'));
    assert.ok(r.out.includes('2 file(s), 1 domain(s), 2 rule(s) with a limit'), 'MERGE_DOMAIN_CONFIG=true from the file merged the two');
    // node's spelling of the flag; the environment wins over the file, as with node --env-file.
    const envWins = run([`--env-file=${envFile}`], { BACKEND_TYPE: 'redis', MERGE_DOMAIN_CONFIG: 'false' });
    assert.equal(envWins.code, 1);
    assert.match(envWins.err[0]!, /duplicate domain 'd'/);
    // Flags win over both.
    const flags = run(['-env_file', envFile, '-backend_type', 'mcstore', '-config_dir', join(dir, 'nowhere')]);
    assert.equal(flags.code, 1);
    assert.ok(flags.out.includes(`loading config directory: ${join(dir, 'nowhere')}`));
  } finally {
    d.cleanup();
  }
});

test('the quick start file: memory store and the example rules, as npm start runs them', () => {
  const repo = new URL('../../../../', import.meta.url).pathname;
  const r = run(['-env_file', join(repo, 'examples/quickstart.env')], { RUNTIME_ROOT: join(repo, 'examples') });
  assert.equal(r.code, 0, r.err.join('\n'));
  assert.ok(r.out.includes('backend: memory (runs fixed_window, sliding_window, token_bucket)'));
  assert.ok(r.out.includes(`loading config directory: ${join(repo, 'examples/ratelimit/config')}`));
});

test('without -config_dir, RUNTIME_ROOT or -env_file: usage error naming all three; a missing env file: exit 2', () => {
  const r = run([]);
  assert.equal(r.code, 2);
  assert.equal(r.err[0], 'missing -config_dir (or RUNTIME_ROOT in the environment or in -env_file)');
  const missing = run(['-env_file', '/nonexistent/quick.env']);
  assert.equal(missing.code, 2);
  assert.match(missing.err[0]!, /^cannot read -env_file \/nonexistent\/quick\.env: ENOENT/);
  const badBool = run(['-config_dir', '/tmp'], { MERGE_DOMAIN_CONFIG: 'maybe' });
  assert.equal(badBool.code, 2);
  assert.match(badBool.err[0]!, /^invalid MERGE_DOMAIN_CONFIG="maybe"/);
});

test('a store chosen by nobody is said to be the default', () => {
  const dir = new URL('../../../../examples/ratelimit/config', import.meta.url).pathname;
  const r = run(['-config_dir', dir]);
  assert.ok(r.out.some((l) => l.startsWith("(no BACKEND_TYPE, -backend_type or -env_file: checked for the service's default store")));
  assert.ok(!run(['-config_dir', dir], { BACKEND_TYPE: 'memory' }).out.some((l) => l.startsWith('(no BACKEND_TYPE')));
});

test('RLQS quota rules: listed when valid; a bad quota_buckets entry exits 1 naming the file and entry', () => {
  const d = tempDir();
  try {
    writeFileSync(
      join(d.path, 'edge.yaml'),
      'domain: edge\nquota_buckets:\n  - bucket_id: { name: api, tenant: "*" }\n    quota: { unit: second, requests_per_unit: 100 }\ndefault_quota: { strategy: deny_all }\n',
    );
    const ok = run(['-config_dir', d.path]);
    assert.equal(ok.code, 0, ok.err.join('\n'));
    assert.ok(ok.out.includes('RLQS quota rules: 1 quota_buckets entry in 1 domain(s)'), ok.out.join('\n'));
    assert.ok(ok.out.includes('  edge quota name=api,tenant=*: 100 per second (token_bucket, burst 100)'));
    assert.ok(ok.out.includes('  edge quota default: deny_all'));
    writeFileSync(join(d.path, 'edge.yaml'), 'domain: edge\nquota_buckets:\n  - bucket_id: { name: api }\n    quota: { strategy: token_bucket, unit: second }\n');
    const bad = run(['-config_dir', d.path]);
    assert.equal(bad.code, 1);
    assert.match(bad.err[0]!, /^error loading rate limit configs: edge\.yaml: quota_buckets\[0\]/);
  } finally {
    d.cleanup();
  }
});
