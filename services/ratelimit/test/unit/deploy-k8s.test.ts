// The Kubernetes manifests (deploy/k8s): every overlay renders with `kubectl kustomize` without a
// warning (no deprecated kustomize field), every object validates against the Kubernetes schemas
// (kubernetes-models), the workloads carry the probes, resources and security settings the docs
// promise, references resolve, no password is shipped (redis-quotes needs postgres-password.env),
// the scrape annotations name a declared port, and the rules ConfigMap loads with
// ratelimit-config-check. kubectl >= 1.27 is required (the machines carry Google's kubectl; Debian's
// kubernetes-client 1.20 embeds kustomize v2, which cannot read these files): a missing or older
// kubectl fails this test instead of skipping it. Older kubectl binaries found beside it
// (Google's SDK ships kubectl.1.NN) must render the same objects.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { tempDir } from '@rls/testkit';
import { main as configCheck } from '../../src/cli/ratelimit-config-check.js';

const repo = new URL('../../../../', import.meta.url).pathname;
const k8s = join(repo, 'deploy/k8s');
const overlays = ['embedded', 'redis-quotes'] as const;

/** A rendered object as plain data; the schema classes below give it its real type. */
type K8sObject = Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string } };

/** Validators by apiVersion/kind: an object of a kind not listed here fails the test. */
const validators: Record<string, (o: K8sObject) => void> = {
  'apps/v1/Deployment': (o) => new Deployment(o as unknown as Deployment).validate(),
  'apps/v1/StatefulSet': (o) => new StatefulSet(o as unknown as StatefulSet).validate(),
  'v1/Service': (o) => new Service(o as unknown as Service).validate(),
  'v1/ConfigMap': (o) => new ConfigMap(o as unknown as ConfigMap).validate(),
  'v1/Secret': (o) => new Secret(o as unknown as Secret).validate(),
  'policy/v1/PodDisruptionBudget': (o) => new PodDisruptionBudget(o as unknown as PodDisruptionBudget).validate(),
};

const kubectl = process.env.KUBECTL ?? 'kubectl';
/** The oldest kubectl whose kustomize reads these files as written (tested: 1.27 to 1.33). */
const MIN_KUBECTL_MINOR = 27;
/** What the tests put into the required password file of the redis-quotes overlay. */
const TEST_PASSWORD = 'feedc0ffee';

/** A copy of deploy/k8s with the required password file, as an operator's checkout would have it. */
const work = tempDir('rls-k8s-');
cpSync(k8s, work.path, { recursive: true, filter: (src) => !src.endsWith('postgres-password.env') });
writeFileSync(join(work.path, 'overlays/redis-quotes/postgres-password.env'), `POSTGRES_PASSWORD=${TEST_PASSWORD}\n`);
after(() => work.cleanup());

function kustomize(binary: string, dir: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(binary, ['kustomize', dir], { encoding: 'utf8' });
  if (r.error !== undefined) assert.fail(`\`${binary} kustomize\` could not run (kubectl >= 1.${MIN_KUBECTL_MINOR} is needed, or set KUBECTL): ${String(r.error)}`);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function parseObjects(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

const rendered = new Map<string, K8sObject[]>();
function render(overlay: string): K8sObject[] {
  let objects = rendered.get(overlay);
  if (objects === undefined) {
    const r = kustomize(kubectl, join(work.path, 'overlays', overlay));
    assert.equal(r.status, 0, `\`${kubectl} kustomize\` failed: ${r.stderr}`);
    // A deprecated field makes kustomize print "# Warning: ..." on stderr.
    assert.equal(r.stderr.trim(), '', `${overlay}: kustomize printed warnings`);
    objects = parseObjects(r.stdout);
    rendered.set(overlay, objects);
  }
  return objects;
}

function workloads(objects: K8sObject[]): Array<Deployment | StatefulSet> {
  return objects
    .filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet')
    .map((o) => (o.kind === 'Deployment' ? new Deployment(o as unknown as Deployment) : new StatefulSet(o as unknown as StatefulSet)));
}

function envOf(w: Deployment | StatefulSet, container: string): Map<string, string> {
  const c = w.spec?.template.spec?.containers.find((x) => x.name === container);
  assert.ok(c, `${w.metadata?.name}: container ${container}`);
  return new Map((c.env ?? []).map((e) => [e.name, e.value ?? '']));
}

function labelsMatch(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean {
  if (selector === undefined || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

for (const overlay of overlays) {
  test(`overlay ${overlay}: renders, and every object validates against the Kubernetes schemas`, () => {
    const objects = render(overlay);
    assert.ok(objects.length >= 4, 'at least the ratelimit Deployment, Service, PDB and rules');
    for (const o of objects) {
      const validate = validators[`${o.apiVersion}/${o.kind}`];
      assert.ok(validate, `${overlay}: no schema check for ${o.apiVersion} ${o.kind} ${o.metadata.name}`);
      assert.doesNotThrow(() => validate(o), `${overlay}: ${o.kind} ${o.metadata.name}`);
    }
  });

  test(`overlay ${overlay}: workloads have probes, measured resources, non-root read-only containers`, () => {
    const objects = render(overlay);
    for (const w of workloads(objects)) {
      const name = `${overlay}/${w.metadata?.name ?? '?'}`;
      const pod = w.spec?.template.spec;
      assert.ok(pod, name);
      assert.equal(pod.securityContext?.runAsNonRoot, true, `${name}: runAsNonRoot`);
      assert.ok((pod.securityContext?.runAsUser ?? 0) > 0, `${name}: numeric non-root uid`);
      for (const c of pod.containers) {
        assert.ok(c.readinessProbe, `${name}/${c.name}: readinessProbe`);
        assert.ok(c.livenessProbe, `${name}/${c.name}: livenessProbe`);
        assert.ok(c.resources?.requests?.memory, `${name}/${c.name}: memory request`);
        assert.ok(c.resources?.limits?.memory, `${name}/${c.name}: memory limit`);
        assert.equal(c.securityContext?.readOnlyRootFilesystem, true, `${name}/${c.name}: read-only root`);
        assert.equal(c.securityContext?.allowPrivilegeEscalation, false, `${name}/${c.name}: no privilege escalation`);
        // Every mount resolves to a pod volume or a claim template.
        const volumes = new Set([...(pod.volumes ?? []).map((v) => v.name), ...((w instanceof StatefulSet ? w.spec?.volumeClaimTemplates : undefined) ?? []).map((v) => v.metadata?.name)]);
        for (const m of c.volumeMounts ?? []) assert.ok(volumes.has(m.name), `${name}/${c.name}: volume ${m.name}`);
      }
      // ConfigMaps and Secrets referenced by volumes and env exist in the same rendering.
      const have = new Set(objects.map((o) => `${o.kind}/${o.metadata.name}`));
      for (const v of pod.volumes ?? []) if (v.configMap) assert.ok(have.has(`ConfigMap/${v.configMap.name}`), `${name}: ConfigMap ${v.configMap.name}`);
      for (const c of pod.containers) {
        for (const e of c.env ?? []) {
          const ref = e.valueFrom?.secretKeyRef;
          if (ref) assert.ok(have.has(`Secret/${ref.name}`), `${name}: Secret ${ref.name}`);
        }
      }
    }
    // Services and PodDisruptionBudgets select pods that some workload creates.
    const podLabels = workloads(objects).map((w) => w.spec?.template.metadata?.labels);
    for (const o of objects) {
      if (o.kind === 'Service') {
        const s = new Service(o as unknown as Service);
        assert.ok(podLabels.some((l) => labelsMatch(s.spec?.selector, l)), `${overlay}: Service ${o.metadata.name} selects pods`);
      }
      if (o.kind === 'PodDisruptionBudget') {
        const p = new PodDisruptionBudget(o as unknown as PodDisruptionBudget);
        assert.ok(podLabels.some((l) => labelsMatch(p.spec?.selector?.matchLabels, l)), `${overlay}: PDB ${o.metadata.name} selects pods`);
      }
    }
  });

  test(`overlay ${overlay}: the rules ConfigMap is mounted as the watched application directory and loads`, () => {
    const objects = render(overlay);
    const ratelimit = workloads(objects).find((w) => w.metadata?.name === 'ratelimit');
    assert.ok(ratelimit, 'ratelimit Deployment');
    const env = envOf(ratelimit, 'ratelimit');
    assert.equal(env.get('RUNTIME_WATCH_ROOT'), 'false', 'a ConfigMap update swaps ..data inside the directory');
    const appDir = join(env.get('RUNTIME_ROOT') ?? '', env.get('RUNTIME_SUBDIRECTORY') ?? '', env.get('RUNTIME_APPDIRECTORY') ?? 'config');
    const pod = ratelimit.spec?.template.spec;
    const mount = pod?.containers[0]?.volumeMounts?.find((m) => m.mountPath === appDir);
    assert.ok(mount, `a volume is mounted at ${appDir}`);
    const volume = pod?.volumes?.find((v) => v.name === mount.name);
    const cmName = volume?.configMap?.name;
    assert.ok(cmName, 'the application directory is a ConfigMap volume');
    const annotations = ratelimit.spec?.template.metadata?.annotations ?? {};
    assert.equal(annotations['prometheus.io/scrape'], 'true');
    const metricsPort = annotations['prometheus.io/port'];
    assert.equal(env.get('USE_PULL_METRICS'), 'true');
    assert.equal(env.get('PULL_METRICS_ADDR'), `:${metricsPort}`, 'the annotation names the metrics port');

    const cm = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === cmName);
    assert.ok(cm, `ConfigMap ${cmName}`);
    const data = (cm as { data?: Record<string, string> }).data ?? {};
    assert.ok(Object.keys(data).length > 0, 'rule files in the ConfigMap');
    const d = tempDir();
    try {
      for (const [key, text] of Object.entries(data)) writeFileSync(join(d.path, key), text);
      const out: string[] = [];
      const err: string[] = [];
      const code = configCheck(['-config_dir', d.path], { out: (l) => out.push(l), err: (l) => err.push(l) });
      assert.equal(code, 0, err.join('\n'));
      assert.ok(out.includes('all rate limit configs ok'));
    } finally {
      d.cleanup();
    }
  });
}

test('the rule files in deploy/k8s are the shipped ones, byte for byte', () => {
  const copies: Array<[string, string]> = [
    ['deploy/k8s/base/rules-quickstart.yaml', 'examples/ratelimit/config/quickstart.yaml'],
    ['deploy/k8s/overlays/redis-quotes/rules-quotes.yaml', 'services/quotes/ratelimit/quotes.yaml'],
  ];
  for (const [copy, source] of copies) {
    assert.equal(readFileSync(join(repo, copy), 'utf8'), readFileSync(join(repo, source), 'utf8'), `${copy} differs from ${source}`);
  }
});

test('overlay redis-quotes: ratelimit counts in Redis, quotes asks it over gRPC and stores in PostgreSQL', () => {
  const objects = render('redis-quotes');
  const ws = workloads(objects);
  const ratelimit = ws.find((w) => w.metadata?.name === 'ratelimit');
  const quotes = ws.find((w) => w.metadata?.name === 'quotes');
  assert.ok(ratelimit && quotes);
  const rl = envOf(ratelimit, 'ratelimit');
  assert.equal(rl.get('BACKEND_TYPE'), 'redis');
  assert.equal(rl.get('KVSTORE_SOCKET_TYPE'), 'tcp');
  assert.equal(rl.get('KVSTORE_URL'), 'redis:6379');
  assert.equal((ratelimit.spec as { replicas?: number }).replicas, 2);
  const q = envOf(quotes, 'quotes');
  assert.equal(q.get('RATELIMIT_GRPC_ADDR'), 'ratelimit:8081');
  // Both pods serve and compete for the one ingest lease (issue 14).
  assert.equal(q.get('QUOTES_ROLE'), 'all');
  assert.match(q.get('DATABASE_URL') ?? '', /^postgres:\/\/quotes:\$\(POSTGRES_PASSWORD\)@postgres:5432\/quotes$/);
  assert.equal((quotes.spec as { replicas?: number }).replicas, 2);
  const services = new Set(objects.filter((o) => o.kind === 'Service').map((o) => o.metadata.name));
  for (const s of ['ratelimit', 'redis', 'postgres', 'quotes']) assert.ok(services.has(s), `Service ${s}`);
});

test('overlay embedded: one ratelimit replica on the memory store, replaced (not surged) on rollout', () => {
  const ratelimit = workloads(render('embedded')).find((w) => w.metadata?.name === 'ratelimit');
  assert.ok(ratelimit instanceof Deployment);
  assert.equal(envOf(ratelimit, 'ratelimit').get('BACKEND_TYPE'), 'memory');
  assert.equal(ratelimit.spec?.replicas, 1);
  assert.equal(ratelimit.spec?.strategy?.type, 'Recreate');
});

test(`kubectl is 1.${MIN_KUBECTL_MINOR} or newer`, () => {
  const r = spawnSync(kubectl, ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
  assert.equal(r.error, undefined, `kubectl missing: ${String(r.error)}`);
  const v = (JSON.parse(r.stdout) as { clientVersion: { major: string; minor: string } }).clientVersion;
  assert.ok(Number(v.major) > 1 || Number.parseInt(v.minor, 10) >= MIN_KUBECTL_MINOR, `kubectl ${v.major}.${v.minor}: these manifests need 1.${MIN_KUBECTL_MINOR} or newer`);
});

test('no password is shipped: redis-quotes refuses to render without postgres-password.env, and uses the one given', () => {
  const bare = tempDir('rls-k8s-bare-');
  try {
    cpSync(k8s, bare.path, { recursive: true, filter: (src) => !src.endsWith('postgres-password.env') });
    const r = kustomize(kubectl, join(bare.path, 'overlays/redis-quotes'));
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /postgres-password\.env: no such file or directory/);
  } finally {
    bare.cleanup();
  }
  const secret = render('redis-quotes').find((o) => o.kind === 'Secret' && o.metadata.name === 'quotes-postgres') as { data?: Record<string, string> } | undefined;
  assert.equal(Buffer.from(secret?.data?.POSTGRES_PASSWORD ?? '', 'base64').toString(), TEST_PASSWORD);
  // Nothing under deploy/k8s carries a password literal (the file itself is git-ignored).
  const files = readdirSync(k8s, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.yaml'));
  for (const f of files) assert.doesNotMatch(readFileSync(join(k8s, f), 'utf8'), /change-me|POSTGRES_PASSWORD=[A-Za-z0-9]/, f);
  assert.match(readFileSync(join(repo, '.gitignore'), 'utf8'), /^deploy\/k8s\/overlays\/redis-quotes\/postgres-password\.env$/m);
});

test('every scrape annotation names a port its container declares', () => {
  for (const overlay of overlays) {
    for (const w of workloads(render(overlay))) {
      const annotations = w.spec?.template.metadata?.annotations ?? {};
      if (annotations['prometheus.io/scrape'] !== 'true') continue;
      const ports = (w.spec?.template.spec?.containers ?? []).flatMap((c) => (c.ports ?? []).map((p) => String(p.containerPort)));
      assert.ok(ports.includes(annotations['prometheus.io/port'] ?? ''), `${overlay}/${w.metadata?.name}: prometheus.io/port ${annotations['prometheus.io/port']} among ${ports.join(', ')}`);
      assert.match(annotations['prometheus.io/path'] ?? '', /^\//);
    }
  }
  const quotes = workloads(render('redis-quotes')).find((w) => w.metadata?.name === 'quotes');
  assert.equal(quotes?.spec?.template.metadata?.annotations?.['prometheus.io/scrape'], 'true', 'quotes is scraped (quotes-metrics-scrape.yaml)');
  // The listener is where the annotation points, on the pod's interfaces (the scraper is another pod).
  const env = envOf(quotes, 'quotes');
  assert.equal(env.get('QUOTES_METRICS_PORT'), quotes?.spec?.template.metadata?.annotations?.['prometheus.io/port']);
  assert.equal(env.get('QUOTES_METRICS_HOST'), '0.0.0.0');
});

test('the debug port is reachable by kubectl port-forward: bound to the pod loopback, where port-forward connects', () => {
  for (const overlay of overlays) {
    const ratelimit = workloads(render(overlay)).find((w) => w.metadata?.name === 'ratelimit');
    assert.ok(ratelimit);
    const env = envOf(ratelimit, 'ratelimit');
    // The CRI runtimes dial localhost inside the pod's network namespace for a port-forward, so a
    // loopback-bound debug server (and the operator page's loopback peer + Host rule) serve it.
    assert.equal(env.get('DEBUG_HOST'), '127.0.0.1');
    assert.equal(env.get('DEBUG_PORT') ?? '6070', '6070');
    assert.notEqual(env.get('OPERATOR_PAGE'), 'off');
  }
  assert.match(readFileSync(join(repo, 'README.md'), 'utf8'), /kubectl port-forward deploy\/ratelimit 6070:6070/);
});

test('older kubectl versions found beside kubectl render the same objects', (t) => {
  let dir: string;
  try {
    dir = dirname(realpathSync(spawnSync('sh', ['-c', `command -v ${kubectl}`], { encoding: 'utf8' }).stdout.trim()));
  } catch {
    dir = '';
  }
  const others = dir === '' ? [] : readdirSync(dir).filter((f) => /^kubectl\.1\.\d+$/.test(f)).sort();
  t.diagnostic(others.length === 0 ? 'no kubectl.1.NN beside kubectl: only the current one checked' : `checked: ${others.join(', ')}`);
  for (const name of others) {
    const minor = Number(name.slice('kubectl.1.'.length));
    if (minor < MIN_KUBECTL_MINOR) continue;
    for (const overlay of overlays) {
      const r = kustomize(join(dir, name), join(work.path, 'overlays', overlay));
      assert.equal(r.status, 0, `${name} ${overlay}: ${r.stderr}`);
      assert.equal(r.stderr.trim(), '', `${name} ${overlay}: warnings`);
      assert.deepEqual(parseObjects(r.stdout), render(overlay), `${name} ${overlay}`);
    }
  }
  assert.ok(existsSync(join(work.path, 'overlays/redis-quotes/postgres-password.env')));
});
