// deploy/compose.yaml, statically: every build file and bind-mounted file exists, the two quotes
// replicas share one database and the ratelimit service, Prometheus scrapes the port ratelimit
// serves its metrics on, and the services carry healthchecks. scripts/image-smoke.sh brings the
// stack up for real (it needs podman and root, so it runs from .ci/run, not from this suite).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parse } from 'yaml';

const repo = new URL('../../../../', import.meta.url).pathname;
const composeFile = join(repo, 'deploy/compose.yaml');
const composeDir = dirname(composeFile);

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string; args?: Record<string, string> };
  environment?: Record<string, string>;
  volumes?: string[];
  healthcheck?: { test: string[] };
  read_only?: boolean;
  ports?: string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
}

function load(): Record<string, ComposeService> {
  // `merge: true` resolves the `<<: *quotes` keys the way compose implementations do.
  const doc = parse(readFileSync(composeFile, 'utf8'), { merge: true }) as { services: Record<string, ComposeService>; volumes?: Record<string, unknown> };
  return doc.services;
}

test('compose: build files and bind-mounted files exist; named volumes are declared', () => {
  const services = load();
  const declared = Object.keys((parse(readFileSync(composeFile, 'utf8'), { merge: true }) as { volumes?: Record<string, unknown> }).volumes ?? {});
  for (const [name, s] of Object.entries(services)) {
    if (s.build) {
      const context = resolve(composeDir, s.build.context);
      assert.ok(existsSync(join(context, s.build.dockerfile)), `${name}: ${s.build.dockerfile} in ${context}`);
    }
    for (const v of s.volumes ?? []) {
      const source = v.split(':')[0]!;
      if (source.startsWith('.') || source.startsWith('/')) assert.ok(existsSync(resolve(composeDir, source)), `${name}: ${source}`);
      else assert.ok(declared.includes(source), `${name}: named volume ${source} declared`);
    }
  }
});

test('compose: two quotes replicas share PostgreSQL and ask ratelimit, which runs on Redis', () => {
  const services = load();
  const replicas = Object.entries(services).filter(([, s]) => s.image?.startsWith('localhost/rls-quotes') === true);
  assert.equal(replicas.length, 2);
  const urls = new Set(replicas.map(([, s]) => s.environment?.DATABASE_URL));
  assert.equal(urls.size, 1, 'one database');
  assert.match([...urls][0] ?? '', /^postgres:\/\/quotes:.*@postgres:5432\/quotes$/);
  for (const [name, s] of replicas) assert.equal(s.environment?.RATELIMIT_GRPC_ADDR, 'ratelimit:8081', name);
  // Roles (issue 14): every replica may serve; those with all/ingest compete for the one ingest lease.
  const roles = replicas.map(([, s]) => s.environment?.QUOTES_ROLE ?? 'all');
  for (const role of roles) assert.ok(['all', 'api', 'ingest'].includes(role), role);
  assert.ok(roles.some((r) => r !== 'api'), 'at least one replica can ingest');
  assert.ok(roles.some((r) => r !== 'ingest'), 'at least one replica serves the API');
  const rl = services.ratelimit?.environment ?? {};
  assert.equal(rl.BACKEND_TYPE, 'redis');
  assert.equal(rl.KVSTORE_URL, 'redis:6379');
  assert.equal(rl.RUNTIME_WATCH_ROOT, 'false');
  assert.ok(services.redis && services.postgres);
});

test('compose: Prometheus scrapes the ratelimit metrics port; long-running services have healthchecks', () => {
  const services = load();
  const promVolume = services.prometheus?.volumes?.find((v) => v.includes('prometheus.yml'));
  assert.ok(promVolume);
  const prom = parse(readFileSync(resolve(composeDir, promVolume.split(':')[0]!), 'utf8')) as { scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }> }> };
  const job = prom.scrape_configs.find((j) => j.job_name === 'ratelimit');
  const port = (services.ratelimit?.environment?.PULL_METRICS_ADDR ?? '').replace(/^.*:/, '');
  assert.deepEqual(job?.static_configs[0]?.targets, [`ratelimit:${port}`]);
  assert.equal(services.ratelimit?.environment?.USE_PULL_METRICS, 'true');
  for (const name of ['redis', 'ratelimit', 'postgres', 'quotes-1', 'quotes-2']) {
    assert.equal(services[name]?.healthcheck?.test[0], 'CMD', `${name}: exec-form healthcheck`);
    assert.equal(services[name]?.read_only, true, `${name}: read-only root`);
  }
});

test('compose: every published port is loopback-only and movable by the variable scripts/stack.sh checks first', () => {
  const published = new Map<string, string>();
  for (const [name, s] of Object.entries(load())) {
    for (const p of s.ports ?? []) {
      const m = /^127\.0\.0\.1:\$\{(RLS_[A-Z0-9_]+_PORT):-(\d+)\}:\d+$/.exec(p);
      assert.ok(m, `${name}: ${p} is 127.0.0.1:\${RLS_..._PORT:-default}:port`);
      published.set(m[1]!, m[2]!);
    }
  }
  // scripts/stack.sh's PORTS table: "VARIABLE default what".
  const script = readFileSync(join(repo, 'scripts/stack.sh'), 'utf8');
  const table = /^PORTS=\(\n([\s\S]*?)\n\)/m.exec(script)?.[1] ?? '';
  const checked = new Map([...table.matchAll(/"(RLS_[A-Z0-9_]+_PORT) (\d+) /g)].map((m) => [m[1]!, m[2]!]));
  assert.ok(checked.size > 0, 'PORTS table found in scripts/stack.sh');
  assert.deepEqual(Object.fromEntries(checked), Object.fromEntries(published));
});

test('compose: the quotes replicas start after PostgreSQL and ratelimit are healthy (docker compose honours it)', () => {
  const services = load();
  for (const name of ['quotes-1', 'quotes-2']) {
    const deps = services[name]?.depends_on;
    assert.ok(deps !== undefined && !Array.isArray(deps), `${name}: depends_on with conditions`);
    assert.equal(deps.postgres?.condition, 'service_healthy');
    assert.equal(deps.ratelimit?.condition, 'service_healthy');
  }
});
