// compose.ts: the decision path's wrappers are applied from one declared list (DECISION_PATH), in
// the documented order (docs/architecture.md), each only when its feature is on; real tracing
// (in-memory exporter), a real operator monitor, real service and memory store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ExportResultCode } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { FakeClock } from '@rls/testkit';
import { DEFAULT_LIMITER_OPTIONS, loadRuleSet, MemoryStore, RateLimitService, StatsStore, type RuleSet } from '@rls/engine';
import { applyWrappers, composeDecisionPath, composeServiceStore, DECISION_PATH, operatorMonitorFor, type DecisionPathParts } from '../../src/compose.js';
import { silentLogger } from '../../src/logger.js';
import { loadSettings } from '../../src/settings.js';
import { createTracing, type Tracing } from '../../src/tracing/tracing.js';

const clock = new FakeClock();
clock.setSeconds(1_800_000_000);
const random = { int: () => 0 };

const rules = (stats: StatsStore): RuleSet =>
  loadRuleSet([{ name: 'd.yaml', content: 'domain: d\ndescriptors:\n  - {key: k, rate_limit: {unit: minute, requests_per_unit: 1}}\n' }], { mergeDomainConfig: false, stats });

function service(localCacheSizeInBytes: number): { service: RateLimitService; store: MemoryStore } {
  const store = new MemoryStore({ clock });
  const stats = new StatsStore();
  const svc = new RateLimitService({ store, stats, clock, random, options: { ...DEFAULT_LIMITER_OPTIONS, localCacheSizeInBytes } });
  svc.setRuleSet(rules(stats));
  return { service: svc, store };
}

function operator(operatorPage: string): DecisionPathParts['operator'] {
  const { settings } = loadSettings({ OPERATOR_PAGE: operatorPage, OPERATOR_SAMPLE_EVERY: '1' });
  return operatorMonitorFor(settings, { clock, random, stats: new StatsStore(), requestLimits: undefined as never });
}

/** Tracing with an exporter that keeps the spans (the SDK's in-memory one forgets them on shutdown). */
async function tracing(spans: ReadableSpan[]): Promise<Tracing> {
  const exporter: SpanExporter = {
    export: (batch, done) => {
      spans.push(...batch);
      done({ code: ExportResultCode.SUCCESS });
    },
    shutdown: () => Promise.resolve(),
  };
  return createTracing({ protocol: 'http', serviceName: 's', serviceNamespace: '', serviceInstanceId: 'i', samplingRate: 1 }, { logger: silentLogger(), exporter });
}

test('applyWrappers: list order, the first innermost; a wrapper that is off is skipped', () => {
  const tag = (name: string) => (next: () => string) => () => `${name}(${next()})`;
  const { value, applied } = applyWrappers(() => 'call', [
    { name: 'a', wrap: tag('a') },
    { name: 'off', wrap: undefined },
    { name: 'b', wrap: tag('b') },
  ]);
  assert.equal(value(), 'b(a(call))');
  assert.deepEqual(applied, ['a', 'b']);
});

test('the order is the documented one: docs/architecture.md lists DECISION_PATH layer by layer', () => {
  const doc = readFileSync(new URL('../../../../docs/architecture.md', import.meta.url), 'utf8');
  for (const [layer, names] of Object.entries(DECISION_PATH)) {
    assert.ok(doc.includes(`- \`${layer}\`: ${names.map((n) => `\`${n}\``).join(' → ')}`), `docs/architecture.md names the ${layer} layer's order`);
  }
});

test('default settings: the operator wrappers on, tracing and the memo off', () => {
  const { service: svc, store } = service(0);
  const parts = { tracing: undefined, operator: operator('loopback') };
  const s = composeServiceStore(store, parts);
  assert.deepEqual(s.applied, ['operator']);
  assert.notEqual(s.store, store);
  const path = composeDecisionPath(svc, parts);
  assert.deepEqual(path.applied, { decision: ['operator'], encoded: [] });
  assert.equal(path.wrapEncoded, undefined);
});

test('OPERATOR_PAGE=off and no tracing: the service gets the store itself and its own decision', () => {
  const { service: svc, store } = service(0);
  const parts = { tracing: undefined, operator: operator('off') };
  assert.equal(parts.operator, undefined);
  assert.equal(composeServiceStore(store, parts).store, store);
  assert.deepEqual(composeDecisionPath(svc, parts).applied, { decision: [], encoded: [] });
});

test('local cache on: the memo inside the operator observer', () => {
  const { service: svc } = service(1 << 20);
  const op = operator('on');
  const path = composeDecisionPath(svc, { tracing: undefined, operator: op });
  assert.deepEqual(path.applied, { decision: ['operator'], encoded: ['memo', 'operator'] });
  assert.ok(path.wrapEncoded !== undefined);
});

test('tracing on: spans wrap the service, the store round trips are their children, the memo is off', async () => {
  const spans: ReadableSpan[] = [];
  const tr = await tracing(spans);
  const store = new MemoryStore({ clock });
  const parts = { tracing: tr, operator: operator('loopback') };
  const s = composeServiceStore(store, parts);
  assert.deepEqual(s.applied, ['tracing', 'operator']);
  const stats = new StatsStore();
  const traced = new RateLimitService({ store: s.store, stats, clock, random, options: { ...DEFAULT_LIMITER_OPTIONS, localCacheSizeInBytes: 1 << 20 } });
  traced.setRuleSet(rules(stats));
  const path = composeDecisionPath(traced, parts);
  assert.deepEqual(path.applied, { decision: ['tracing', 'operator'], encoded: [] });
  const res = await path.shouldRateLimit({ domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }], hitsAddend: 1 }, { signal: new AbortController().signal });
  assert.equal(res.overallCode, 1);
  await tr.shutdown(1000);
  const root = spans.find((sp) => sp.name === 'ShouldRateLimit Execution');
  const child = spans.find((sp) => sp.name === 'Counter Store Execution');
  assert.ok(root !== undefined && child !== undefined, spans.map((sp) => sp.name).join(','));
  assert.equal(child.parentSpanContext?.spanId, root.spanContext().spanId);
});
