// The per-rule series cap (STATS_MAX_SERIES_PER_RULE) on every path that puts a request value
// into a statistic name: detailed_metric, value_to_metric, limit overrides (per domain) and
// unknown domains. Real rule sets and a real registry; the cap is 3 to keep the cases small.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { StatsStore, loadRuleSet, type RequestDescriptor } from '@rls/engine';
import { statsText, statsTextChunks } from '../../src/server/debug-server.js';

const RULES = `domain: cap
descriptors:
  - key: user
    detailed_metric: true
    rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: route
    value_to_metric: true
    descriptors:
      - key: method
        rate_limit: { unit: minute, requests_per_unit: 10 }
`;

const P = 'ratelimit.service.rate_limit.';

function d(entries: [string, string][], limit?: { requestsPerUnit: number; unit: number }): RequestDescriptor {
  return { entries: entries.map(([key, value]) => ({ key, value })), limit, hitsAddend: undefined } as RequestDescriptor;
}

describe('per-value statistics cap', () => {
  test('detailed_metric: the first 3 values keep their own series, later ones fold into <rule>.overflow, across reloads', () => {
    const full: string[] = [];
    const stats = new StatsStore({ maxSeriesPerGroup: 3, onGroupFull: (g) => full.push(g) });
    const load = () => loadRuleSet([{ name: 'cap.yaml', content: RULES }], { mergeDomainConfig: false, stats });
    let rules = load();
    for (let i = 0; i < 10; i++) rules.getLimit('cap', d([['user', `u${i}`]]))!.stats.totalHits.inc();
    // A reload keeps the admitted values (their counters live on) and the cap.
    rules = load();
    rules.getLimit('cap', d([['user', 'u0']]))!.stats.totalHits.inc();
    rules.getLimit('cap', d([['user', 'u99']]))!.stats.totalHits.inc();
    assert.equal(stats.counterValue(`${P}cap.user_u0.total_hits`), 2);
    assert.equal(stats.counterValue(`${P}cap.user_u2.total_hits`), 1);
    assert.equal(stats.counterValue(`${P}cap.user_u3.total_hits`), 0);
    assert.equal(stats.counterValue(`${P}cap.user.overflow.total_hits`), 8);
    assert.equal(stats.counterValue('ratelimit.service.stats_series_overflow'), 8);
    assert.deepEqual(full, ['cap.user'], 'reported once');
    const series = statsText(stats).split('\n').filter((l) => l.startsWith(`${P}cap.user`) && l.includes('.total_hits:'));
    assert.equal(series.length, 4, series.join('\n'));
  });

  test('value_to_metric, overrides (per domain) and unknown domains are capped too', () => {
    const stats = new StatsStore({ maxSeriesPerGroup: 3 });
    const rules = loadRuleSet([{ name: 'cap.yaml', content: RULES }], { mergeDomainConfig: false, stats });
    for (let i = 0; i < 5; i++) rules.getLimit('cap', d([['route', `r${i}`], ['method', 'GET']]))!.stats.totalHits.inc();
    assert.equal(stats.counterValue(`${P}cap.route_r2.method.total_hits`), 1);
    assert.equal(stats.counterValue(`${P}cap.route.method.overflow.total_hits`), 2);
    for (let i = 0; i < 5; i++) rules.getLimit('cap', d([['anything', `a${i}`]], { requestsPerUnit: 5, unit: 2 }))!.stats.totalHits.inc();
    assert.equal(stats.counterValue(`${P}cap.anything_a0.total_hits`), 1);
    assert.equal(stats.counterValue(`${P}cap.overflow.total_hits`), 2);
    for (let i = 0; i < 5; i++) assert.equal(rules.getLimit(`nope${i}`, d([['k', 'v']])), undefined);
    assert.equal(stats.counterValue(`${P}nope2.domain_not_found`), 1);
    assert.equal(stats.counterValue(`${P}nope3.domain_not_found`), 0);
    assert.equal(stats.counterValue(`${P}overflow.domain_not_found`), 2);
    assert.equal(stats.counterValue('ratelimit.service.stats_series_overflow'), 6);
  });

  test('rules without per-value statistics are not affected, and nothing shows up until a cap is hit', () => {
    const stats = new StatsStore({ maxSeriesPerGroup: 1 });
    const rules = loadRuleSet([{ name: 'cap.yaml', content: 'domain: s\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 10 }\n' }], { mergeDomainConfig: false, stats });
    for (let i = 0; i < 5; i++) rules.getLimit('s', d([['user', `u${i}`]]))!.stats.totalHits.inc();
    assert.equal(stats.counterValue(`${P}s.user.total_hits`), 5);
    assert.ok(!statsText(stats).includes('overflow'));
  });

  test('/stats streamed in slices (sorted runs merged) is exactly the sorted text, and yields to the event loop', async () => {
    const stats = new StatsStore();
    // 3 runs' worth of counters in an order unrelated to their names, plus gauges and timers.
    for (let i = 0; i < 10_000; i++) stats.counter(`c.${(i * 7919) % 10_000}`).add(i);
    for (let i = 0; i < 500; i++) stats.gauge(`b.${i}`).set(i);
    stats.timer('a.t').record(5);
    let turns = 0;
    const timer = setInterval(() => (turns += 1), 0);
    let streamed = '';
    for await (const chunk of statsTextChunks(stats)) streamed += chunk;
    clearInterval(timer);
    assert.equal(streamed, statsText(stats));
    assert.ok(turns > 0, 'other work ran while /stats was produced');
  });
});
