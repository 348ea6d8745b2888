// The operator page's JSON on the debug server of an app built in-process (docs/ratelimit.md,
// "Operator page"): the rules tree with its sources, a reload error from a real file reload, and
// the bounds — top list size, value truncation, the 15-minute ring, the tracked rules, the reload
// history — plus who may read it (OPERATOR_PAGE).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { FakeClock, startXdsServer, tempDir, waitFor } from '@rls/testkit';
import { buildRateLimitApp, type RateLimitApp } from '../../src/app.js';
import { silentLogger } from '../../src/logger.js';
import { loadSettings } from '../../src/settings.js';
import type { OperatorState } from '../../src/operator/operator-monitor.js';
import type { RulesView } from '../../src/operator/rules-view.js';
import { buildXdsApp, limitResource, PROTO_DIR } from '../support/xds-support.js';

const RULES = `domain: ops
descriptors:
  - key: client
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: team
    value: blue
    shadow_mode: true
    descriptors:
      - key: user
        rate_limit: { unit: hour, requests_per_unit: 10, name: per-user }
  - key: open
    rate_limit: { unlimited: true }
`;
const SECOND = `domain: other
descriptors:
  - key: k
    rate_limit: { unit: second, requests_per_unit: 5 }
  - key: ip
    cidr: [10.0.0.0/8, 192.0.2.0/24, 198.51.100.0/24, "2001:db8::/32"]
    rate_limit: { unit: second, requests_per_unit: 0 }
`;

interface Fixture {
  app: RateLimitApp;
  base: string;
  http: string;
  clock: FakeClock;
  rulesDir: string;
  close: () => Promise<void>;
}

async function startApp(env: Record<string, string>): Promise<Fixture> {
  const dir = tempDir('rls-operator-');
  const rulesDir = join(dir.path, 'rl', 'config');
  mkdirSync(rulesDir, { recursive: true });
  writeFileSync(join(rulesDir, 'a.yaml'), RULES);
  writeFileSync(join(rulesDir, 'b.yaml'), SECOND);
  const { settings } = loadSettings({
    BACKEND_TYPE: 'memory',
    RUNTIME_ROOT: dir.path,
    RUNTIME_SUBDIRECTORY: 'rl',
    RUNTIME_WATCH_ROOT: 'false',
    RUNTIME_WATCH_DEBOUNCE: '20ms',
    HOST: '127.0.0.1',
    PORT: '0',
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: '0',
    DEBUG_HOST: '127.0.0.1',
    DEBUG_PORT: '0',
    ...env,
  });
  const clock = new FakeClock(Date.UTC(2026, 10, 26, 0, 0, 5));
  const app = buildRateLimitApp(settings, { logger: silentLogger(), clock });
  app.loadRules();
  const addr = await app.start();
  return {
    app,
    base: `http://127.0.0.1:${addr.debug.port}`,
    http: `http://127.0.0.1:${addr.http.port}`,
    clock,
    rulesDir,
    close: async () => {
      await app.stop();
      dir.cleanup();
    },
  };
}

async function decide(http: string, domain: string, entries: { key: string; value: string }[]): Promise<string> {
  const r = await fetch(`${http}/json`, { method: 'POST', body: JSON.stringify({ domain, descriptors: [{ entries }] }) });
  const body = (await r.json()) as { overallCode: string };
  return body.overallCode;
}

/** A GET with a chosen Host header (fetch always sends the URL's). */
function asHost(base: string, path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: Number(new URL(base).port), path, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function getJson<T>(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: T; headers: Headers }> {
  const r = await fetch(url, { headers });
  const text = await r.text();
  return { status: r.status, body: (text === '' ? undefined : JSON.parse(text)) as T, headers: r.headers };
}

describe('operator page JSON', () => {
  let f: Fixture;

  before(async () => {
    f = await startApp({ OPERATOR_SAMPLE_EVERY: '1', OPERATOR_TOP_SIZE: '3', OPERATOR_CHART_RULES: '2' });
  });
  after(async () => {
    await f?.close();
  });

  test('rules tree: domains with their source file, nested descriptors, limits, algorithm, shadow, unlimited', async () => {
    const { status, body, headers } = await getJson<RulesView>(`${f.base}/operator/api/rules`);
    assert.equal(status, 200);
    assert.match(headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(body.source.kind, 'file');
    assert.equal(body.source.files, 2);
    assert.deepEqual(
      body.domains.map((d) => [d.domain, d.source]),
      [
        ['ops', 'file a.yaml'],
        ['other', 'file b.yaml'],
      ],
    );
    const ops = body.domains.find((d) => d.domain === 'ops')!;
    const client = ops.descriptors[0]!;
    assert.deepEqual(client.limit, { requestsPerUnit: 1, unit: 'MINUTE', unlimited: false, name: '', algorithm: 'fixed_window', replaces: [] });
    const team = ops.descriptors[1]!;
    assert.equal(team.value, 'blue');
    assert.equal(team.shadowMode, true);
    assert.equal(team.limit, undefined);
    assert.equal(team.children[0]!.key, 'user');
    assert.equal(team.children[0]!.limit!.name, 'per-user');
    assert.equal(ops.descriptors[2]!.limit!.unlimited, true);
    const other = body.domains.find((d) => d.domain === 'other')!;
    assert.equal(other.descriptors[1]!.value, 'cidr:[10.0.0.0/8, 192.0.2.0/24, 198.51.100.0/24, … 1 more]', 'a list: its first entries and how many more');
    assert.equal(body.descriptorCount, 6);
    assert.equal(body.truncated, false);
    assert.equal(body.reloads[0]!.ok, true);
    assert.equal(body.reloads[0]!.rules, 5);
  });

  test('rules: an unchanged generation answers 304 to If-None-Match', async () => {
    const first = await getJson<RulesView>(`${f.base}/operator/api/rules`);
    const etag = first.headers.get('etag')!;
    const again = await fetch(`${f.base}/operator/api/rules`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
  });

  test('top list: over-limit descriptors, at most OPERATOR_TOP_SIZE, values cut at 64 characters', async () => {
    const long = 'v'.repeat(300);
    // client=<value>: 1 per minute, so every request after the first of a value is over the limit.
    for (let i = 0; i < 6; i++) await decide(f.http, 'ops', [{ key: 'client', value: long }]);
    for (let i = 0; i < 3; i++) await decide(f.http, 'ops', [{ key: 'client', value: 'c0' }]);
    let { body } = await getJson<OperatorState>(`${f.base}/operator/api/state`);
    assert.equal(body.top.capacity, 3);
    assert.equal(body.top.sampleEvery, 1);
    assert.deepEqual(
      body.top.entries.map((e) => [e.domain, e.entries.map((x) => x.value.length), e.count, e.error]),
      [
        ['ops', [64], 5, 0],
        ['ops', [2], 2, 0],
      ],
    );
    assert.ok(body.top.entries[0]!.entries[0]!.value.endsWith('…'));
    // Four more over-limit values: the sketch holds 3 per slot; an item above total ÷ capacity
    // (11 ÷ 3) is never evicted, so the heavy one stays on top.
    for (let i = 0; i < 4; i++) {
      for (let j = 0; j < 2; j++) await decide(f.http, 'ops', [{ key: 'client', value: `d${i}` }]);
    }
    ({ body } = await getJson<OperatorState>(`${f.base}/operator/api/state`));
    assert.equal(body.top.entries.length, 3);
    assert.equal(body.top.entries[0]!.entries[0]!.value.length, 64);
    assert.ok(body.top.entries[0]!.count >= 5);
  });

  test('top list: the list covers one to two 30-second slots, then forgets', async () => {
    f.clock.advance(61_000);
    const { body } = await getJson<OperatorState>(`${f.base}/operator/api/state`);
    assert.deepEqual(body.top.entries, []);
  });

  test('rates: 90 ten-second buckets at most, and at most OPERATOR_CHART_RULES keys, busiest first', async () => {
    const monitor = f.app.operator!;
    monitor.sampleRates();
    // other.k (5/s): 7 hits in this bucket (2 over); ops.client values: a few hits.
    for (let i = 0; i < 7; i++) await decide(f.http, 'other', [{ key: 'k', value: 'x' }]);
    await decide(f.http, 'ops', [{ key: 'client', value: 'fresh' }]);
    await decide(f.http, 'ops', [{ key: 'team', value: 'blue' }, { key: 'user', value: 'u1' }]);
    f.clock.advance(10_000);
    monitor.sampleRates();
    let { body } = await getJson<OperatorState>(`${f.base}/operator/api/state`);
    const firstBuckets = body.rates.buckets;
    assert.ok(firstBuckets >= 1);
    assert.deepEqual(body.rates.series.map((s) => s.key).sort(), ['ops.client', 'other.k']);
    const k = body.rates.series.find((s) => s.key === 'other.k')!;
    assert.equal(k.hits.at(-1), 7);
    assert.equal(k.overLimit.at(-1), 2);
    assert.equal(body.rates.totalHits.at(-1), 9);
    assert.equal(body.rates.requests.at(-1), 9);
    for (let i = 0; i < 120; i++) {
      f.clock.advance(10_000);
      monitor.sampleRates();
    }
    ({ body } = await getJson<OperatorState>(`${f.base}/operator/api/state`));
    assert.equal(body.rates.buckets, 90);
    assert.equal(body.rates.bucketMs, 10_000);
    assert.equal(body.rates.totalHits.length, 90);
    assert.equal(body.rates.endAt, f.clock.now());
    for (const s of body.rates.series) {
      assert.equal(s.hits.length, 90);
      // The busy bucket has left the 15-minute window.
      assert.equal(s.hits.reduce((a, b) => a + b, 0), 0);
    }
  });

  test('store, health, workers and local cache are reported', async () => {
    const { body } = await getJson<OperatorState>(`${f.base}/operator/api/state`);
    assert.equal(body.store.kind, 'memory');
    assert.equal(body.store.description, 'embedded memory');
    assert.equal(body.store.connected, true);
    assert.ok(body.store.latency.samples >= 0);
    // The store component keeps upstream's name; the page's label names the store configured.
    assert.deepEqual(
      body.health.map((h) => [h.component, h.label, h.healthy]),
      [
        ['redis', 'store (embedded memory)', true],
        ['sigterm', 'sigterm', true],
      ],
    );
    assert.deepEqual(body.process.workers, { mode: 'single', count: 1 });
    assert.deepEqual(body.localCache, { enabled: false });
  });

  test('a broken rule file written to the watched directory shows as a reload error; the tree stays', async () => {
    writeFileSync(join(f.rulesDir, 'c.yaml'), 'domain: broken\ndescriptors:\n  - key: x\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n');
    const view = await waitFor(
      async () => {
        const { body } = await getJson<RulesView>(`${f.base}/operator/api/rules`);
        return body.reloads[0]?.ok === false ? body : undefined;
      },
      { what: 'a reload error on the operator page', timeoutMs: 10_000, intervalMs: 50 },
    );
    const entry = view.reloads[0]!;
    assert.equal(entry.source, 'file');
    assert.equal(entry.file, 'c.yaml');
    assert.match(entry.error!, /^c\.yaml: .*fortnight/);
    assert.deepEqual(
      view.domains.map((d) => d.domain),
      ['ops', 'other'],
    );
  });

  test('reload history keeps the last 50 loads', async () => {
    for (let i = 0; i < 60; i++) f.app.loadRules();
    const { body } = await getJson<RulesView>(`${f.base}/operator/api/rules`);
    assert.equal(body.reloads.length, 50);
  });

  test('the page and its files are served with a strict content security policy; unknown paths 404', async () => {
    const page = await fetch(`${f.base}/operator/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'; script-src 'self'/);
    assert.match(await page.text(), /<script src="app.js" defer><\/script>/);
    for (const p of ['/operator/app.js', '/operator/style.css']) assert.equal((await fetch(f.base + p)).status, 200, p);
    const redirect = await fetch(`${f.base}/operator`, { redirect: 'manual' });
    assert.equal(redirect.status, 301);
    assert.equal(redirect.headers.get('location'), '/operator/');
    const missing = await fetch(`${f.base}/operator/nope`);
    assert.equal(missing.status, 404);
    assert.match(await missing.text(), /no such operator resource/);
    const index = await (await fetch(`${f.base}/`)).text();
    assert.match(index, /^\/operator\/: operator page/m);
  });

  test('OPERATOR_PAGE=loopback refuses a request that names another host (DNS rebinding)', async () => {
    const refused = await asHost(f.base, '/operator/api/state', 'evil.example');
    assert.equal(refused.status, 403);
    // The debug server's own rule refuses it first (it runs before every route).
    assert.match(refused.body, /DEBUG_ALLOWED_HOSTS/);
    const port = Number(new URL(f.base).port);
    assert.equal((await asHost(f.base, '/operator/api/state', `localhost:${port}`)).status, 200);
  });
});

describe('OPERATOR_PAGE=loopback with a wider debug server rule', () => {
  test('the page still wants a loopback Host where the rest of the debug server takes a listed name or an IP address', async () => {
    const f = await startApp({ DEBUG_ALLOWED_HOSTS: 'ratelimit.internal' });
    try {
      for (const host of ['ratelimit.internal:6070', '10.1.2.3:6070']) {
        assert.equal((await asHost(f.base, '/rlconfig', host)).status, 200, host);
        const page = await asHost(f.base, '/operator/api/state', host);
        assert.equal(page.status, 403, host);
        assert.match(page.body, /OPERATOR_PAGE=loopback/);
      }
    } finally {
      await f.close();
    }
  });
});

describe('operator page JSON with hostile values', () => {
  let f: Fixture;

  before(async () => {
    f = await startApp({ OPERATOR_SAMPLE_EVERY: '1', OPERATOR_TOP_SIZE: '4', OPERATOR_CHART_RULES: '5' });
    writeFileSync(
      join(f.rulesDir, 'c.yaml'),
      'domain: hostile\ndescriptors:\n  - key: user\n    detailed_metric: true\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n',
    );
    f.app.loadRules();
  });
  after(async () => {
    await f?.close();
  });

  test('bidi overrides and controls in a value are escaped; a 4,000-character value is cut in the top list and the chart caption', async () => {
    const monitor = f.app.operator!;
    monitor.sampleRates();
    const rlo = '\u202Elive';
    const long = 'L'.repeat(4000);
    for (let i = 0; i < 3; i++) {
      await decide(f.http, 'hostile', [{ key: 'user', value: rlo }]);
      await decide(f.http, 'hostile', [{ key: 'user', value: long }]);
      await decide(f.http, 'hostile', [{ key: 'user', value: 'bell\u0007\u001B[2J' }]);
    }
    f.clock.advance(10_000);
    monitor.sampleRates();
    const { body } = await getJson<OperatorState>(`${f.base}/operator/api/state`);
    const values = body.top.entries.map((e) => e.entries[0]!.value);
    assert.ok(values.includes('\\u{202E}live'), JSON.stringify(values));
    assert.ok(values.includes('bell\\u{0007}\\u{001B}[2J'), JSON.stringify(values));
    const cut = values.find((v) => v.startsWith('LLL'))!;
    assert.equal(cut.length, 64);
    assert.ok(cut.endsWith('…'));
    // Nothing invisible or reordering reaches the page, in any string of the state.
    const strings: string[] = [];
    const walk = (v: unknown): void => {
      if (typeof v === 'string') strings.push(v);
      else if (typeof v === 'object' && v !== null) for (const x of Object.values(v)) walk(x);
    };
    walk(body);
    for (const str of strings) assert.doesNotMatch(str, /[\p{Cc}\p{Cf}]/u, JSON.stringify(str));
    // Chart captions: the statistics keys embed the values (detailed_metric).
    const keys = body.rates.series.map((s) => s.key);
    assert.ok(keys.includes('hostile.user_\\u{202E}live'), JSON.stringify(keys));
    for (const k of keys) assert.ok(k.length <= 128, `caption of ${k.length} characters`);
    assert.ok(keys.some((k) => k.startsWith('hostile.user_LLL') && k.endsWith('…')));
  });

  test('a flood of distinct over-limit decoys that pushes the offender out marks the list incomplete', async () => {
    f.clock.advance(61_000);
    // The offender: 1 per minute, so 10 calls give 9 over-limit hits.
    for (let i = 0; i < 10; i++) await decide(f.http, 'ops', [{ key: 'client', value: 'offender' }]);
    let { body } = await getJson<OperatorState>(`${f.base}/operator/api/state`);
    assert.equal(body.top.entries[0]!.entries[0]!.value, 'offender');
    assert.deepEqual([body.top.dropped, body.top.complete], [0, true]);
    // 40 decoys, two calls each (the second is over the limit): they evict one another and the
    // sketch's minimum climbs past the offender's count.
    for (let i = 0; i < 40; i++) {
      for (let j = 0; j < 2; j++) await decide(f.http, 'ops', [{ key: 'client', value: `decoy-${i}` }]);
    }
    ({ body } = await getJson<OperatorState>(`${f.base}/operator/api/state`));
    assert.ok(!body.top.entries.some((e) => e.entries[0]!.value === 'offender'), 'the offender was pushed out');
    assert.ok(body.top.dropped > 0);
    assert.ok(body.top.hiddenMax >= 9, `hiddenMax ${body.top.hiddenMax}`);
    assert.equal(body.top.complete, false);
    assert.ok(body.top.entries.every((e) => e.uncertain));
  });
});

describe('OPERATOR_PAGE=off', () => {
  test('the page is not served, not listed, and no monitor is attached', async () => {
    const f = await startApp({ OPERATOR_PAGE: 'off' });
    try {
      assert.equal(f.app.operator, undefined);
      assert.equal((await fetch(`${f.base}/operator/api/state`)).status, 404);
      const index = await (await fetch(`${f.base}/`)).text();
      assert.doesNotMatch(index, /operator/);
    } finally {
      await f.close();
    }
  });
});

describe('OPERATOR_PAGE=on', () => {
  test('the page follows the debug server\'s rule: a host listed in DEBUG_ALLOWED_HOSTS may read it, others may not', async () => {
    const f = await startApp({ OPERATOR_PAGE: 'on', DEBUG_ALLOWED_HOSTS: 'ratelimit.internal' });
    try {
      assert.equal((await asHost(f.base, '/operator/api/state', 'ratelimit.internal:6070')).status, 200);
      assert.equal((await asHost(f.base, '/operator/api/state', 'evil.example:6070')).status, 403);
    } finally {
      await f.close();
    }
  });
});

describe('operator settings', () => {
  test('bad values are refused at start with the variable named', () => {
    assert.throws(() => loadSettings({ OPERATOR_PAGE: 'public' }), /OPERATOR_PAGE/);
    assert.throws(() => loadSettings({ OPERATOR_TOP_SIZE: '0' }), /OPERATOR_TOP_SIZE/);
    assert.throws(() => loadSettings({ OPERATOR_CHART_RULES: '500' }), /OPERATOR_CHART_RULES/);
    assert.throws(() => loadSettings({ OPERATOR_SAMPLE_EVERY: 'x' }), /OPERATOR_SAMPLE_EVERY/);
  });
});

describe('operator page with rules from xDS', () => {
  test('the tree names the resource and the version; a rejected update is in the history, the tree stays', async () => {
    const server = await startXdsServer({ protoDir: PROTO_DIR });
    const { app } = buildXdsApp({ CONFIG_GRPC_XDS_SERVER_URL: server.address });
    try {
      server.push('v1', [limitResource('foo-config', 'foo', 'k1', 'v1', 3)]);
      app.xds!.start();
      const loaded = await waitFor(
        () => {
          const v = app.operator!.rulesView();
          return v.source.kind === 'xds' ? v : undefined;
        },
        { what: 'the xDS rules on the operator page', timeoutMs: 10_000, intervalMs: 20 },
      );
      assert.deepEqual(loaded.source, { kind: 'xds', version: 'v1' });
      assert.deepEqual(
        loaded.domains.map((d) => [d.domain, d.source]),
        [['foo', 'xds resource foo-config']],
      );
      assert.equal(loaded.domains[0]!.descriptors[0]!.limit!.requestsPerUnit, 3);
      assert.deepEqual(
        loaded.reloads.map((r) => [r.source, r.ok, r.version]),
        [['xds', true, 'v1']],
      );
      server.push('v2', [{ name: 'bar-config', domain: 'bar', descriptors: [{ key: 'a', rate_limit: { unit: 'UNKNOWN', requests_per_unit: 5 } }] }]);
      const failed = await waitFor(
        () => {
          const v = app.operator!.rulesView();
          return v.reloads[0]?.ok === false ? v : undefined;
        },
        { what: 'the rejected xDS update on the operator page', timeoutMs: 10_000, intervalMs: 20 },
      );
      assert.equal(failed.reloads[0]!.source, 'xds');
      assert.equal(failed.reloads[0]!.error, "bar-config: invalid rate limit unit 'UNKNOWN' (descriptor 'bar.a')");
      assert.deepEqual(
        failed.domains.map((d) => d.domain),
        ['foo'],
      );
    } finally {
      app.xds!.stop();
      await app.stop();
      await server.stop();
    }
  });
});
