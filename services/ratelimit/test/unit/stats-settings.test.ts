// The statistics settings: seed names, upstream aliases, defaults, and the start-up errors for
// mogrifiers and mapping files listed together.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rls/testkit';
import { SettingsReader, type Env } from '@rls/settings';
import { resolveStatsOptions, STATS_SETTING_DEFS, type StatsSettings } from '../../src/stats/stats-settings.js';

function read(env: Env): { settings: StatsSettings; errors: string[]; warnings: string[] } {
  const reader = new SettingsReader(env);
  const out: Record<string, unknown> = {};
  for (const [k, d] of Object.entries(STATS_SETTING_DEFS)) out[k] = reader.read(d as Parameters<SettingsReader['read']>[0]);
  return { settings: out as StatsSettings, errors: reader.errors, warnings: reader.warnings };
}

describe('stats settings', () => {
  test('defaults: plain statsd push over tcp to localhost:8125 every 10s, no pull', () => {
    const { settings, errors } = read({});
    assert.deepEqual(errors, []);
    const { options, errors: e2 } = resolveStatsOptions(settings, {});
    assert.deepEqual(e2, []);
    assert.deepEqual(options.push, { mode: 'statsd', host: 'localhost', port: 8125, protocol: 'tcp', mogrifiers: [] });
    assert.equal(options.flushIntervalMs, 10_000);
    assert.deepEqual(options.pull, { enabled: false });
    assert.equal(options.disabled, false);
  });

  test('upstream names work as aliases; push and pull together are allowed', () => {
    const { settings, errors } = read({
      USE_STATSD: 'true',
      USE_PROMETHEUS: 'true',
      PROMETHEUS_ADDR: '127.0.0.1:9102',
      PROMETHEUS_PATH: '/m',
      PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS: 'true',
      STATSD_PROTOCOL: 'udp',
      STATS_FLUSH_INTERVAL: '1500ms',
      EXTRA_TAGS: 'env:prod,team:rl',
    });
    assert.deepEqual(errors, []);
    const { options } = resolveStatsOptions(settings, {});
    assert.equal(options.push.mode, 'statsd');
    assert.equal(options.push.protocol, 'udp');
    assert.equal(options.flushIntervalMs, 1500);
    assert.deepEqual(options.extraTags, { env: 'prod', team: 'rl' });
    assert.ok(options.pull.enabled);
    assert.deepEqual(options.pull.address, { host: '127.0.0.1', port: 9102 });
    assert.equal(options.pull.path, '/m');
    assert.equal(options.pull.mapping.rules.find((r) => r.nameTemplate === 'ratelimit_service_response_time_seconds')?.scale, undefined);
  });

  test('USE_DOG_STATSD selects tagged push and its mogrifiers are validated', () => {
    const env = { USE_DOG_STATSD: 'true', USE_TAGGED_STATS_MOGRIFIERS: 'A,B', TAGGED_STATS_MOGRIFIERS_A_PATTERN: '^x$', TAGGED_STATS_MOGRIFIERS_A_NAME: 'y', DOG_STATSD_MOGRIFIER_B_NAME: 'z' };
    const { settings } = read(env);
    const r = resolveStatsOptions(settings, env);
    assert.equal(r.options.push.mode, 'tagged');
    assert.equal(r.options.push.mogrifiers.length, 1);
    assert.deepEqual(r.errors, ['mogrifier B: TAGGED_STATS_MOGRIFIER_B_PATTERN is missing']);
  });

  test('bad values are listed together, including the mapping file', () => {
    const dir = tempDir('rls-stats-settings-');
    try {
      const file = join(dir.path, 'bad.yaml');
      writeFileSync(file, 'mappings:\n  - match: "a.*"\n');
      const { errors } = read({ STATSD_PORT: 'x', STATS_FLUSH_INTERVAL: '0s', EXTRA_TAGS: 'novalue', PULL_METRICS_ADDR: '9090', USE_PULL_METRICS: 'true' });
      assert.equal(errors.length, 4, errors.join('\n'));
      assert.match(errors.join('\n'), /STATSD_PORT="x"/);
      assert.match(errors.join('\n'), /STATS_FLUSH_INTERVAL="0s": must be greater than zero/);
      assert.match(errors.join('\n'), /EXTRA_TAGS="novalue"/);
      assert.match(errors.join('\n'), /PULL_METRICS_ADDR="9090"/);
      const r = resolveStatsOptions({ ...read({ USE_PULL_METRICS: 'true' }).settings, pullMetricsMapperYaml: file }, {});
      assert.equal(r.errors.length, 1);
      assert.match(r.errors[0] ?? '', /bad\.yaml: invalid metrics mapping \(1 problem\):\n {2}mappings\[0\]\.name: required/);
    } finally {
      dir.cleanup();
    }
  });

  test('DISABLE_STATS wins over everything', () => {
    const env = { DISABLE_STATS: 'true', USE_PULL_METRICS: 'true', USE_TAGGED_STATS_PUSH: 'true', TAGGED_STATS_MOGRIFIERS: 'BROKEN' };
    const r = resolveStatsOptions(read(env).settings, env);
    assert.equal(r.options.disabled, true);
    assert.deepEqual(r.errors, []);
  });
});
