// Every value upstream accepts for a setting we share with it starts our service too (issue 12,
// finding 9): a migration must never crash-loop on its old manifest. Where our design bounds a
// value, it is clamped and a warning names the variable, the given and the used value.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSettings, SETTING_DEFS, type Settings } from '../../src/settings.js';
import { parseGoFloat, parseGoInt, parseSignedDurationMs, IGNORE_CLAMPS, type SettingDef } from '@rls/settings';

const MEMCACHE = { BACKEND_TYPE: 'memcache', MEMCACHE_HOST_PORT: '127.0.0.1:11211' };

interface Case {
  /** The upstream variable name. */
  env: string;
  value: string;
  key: keyof Settings;
  want: unknown;
  /** Expected clamp warning (after `<env>="<value>": `), or undefined when none may appear. */
  warn?: RegExp;
  base?: Record<string, string>;
}

const c = (env: string, value: string, key: keyof Settings, want: unknown, warn?: RegExp, base?: Record<string, string>): Case => ({
  env,
  value,
  key,
  want,
  ...(warn !== undefined ? { warn } : {}),
  ...(base !== undefined ? { base } : {}),
});

const CASES: Case[] = [
  // memcached: upstream's integration tests run with 100; gomemcache reads 0 or less as its default 2.
  c('MEMCACHE_MAX_IDLE_CONNS', '100', 'mcstoreMaxIdleConns', 64, /more than 64 connections per node.*; using 64$/, MEMCACHE),
  c('MEMCACHE_MAX_IDLE_CONNS', '2', 'mcstoreMaxIdleConns', 2, undefined, MEMCACHE),
  c('MEMCACHE_MAX_IDLE_CONNS', '64', 'mcstoreMaxIdleConns', 64, undefined, MEMCACHE),
  c('MEMCACHE_MAX_IDLE_CONNS', '0', 'mcstoreMaxIdleConns', 2, /default.*; using 2$/, MEMCACHE),
  c('MEMCACHE_MAX_IDLE_CONNS', '-1', 'mcstoreMaxIdleConns', 2, /; using 2$/, MEMCACHE),
  c('MEMCACHE_MAX_IDLE_CONNS', '0x10', 'mcstoreMaxIdleConns', 16, undefined, MEMCACHE),
  c('MEMCACHE_SRV_REFRESH', '1m', 'mcstoreSrvRefreshMs', 60_000, undefined, MEMCACHE),
  c('MEMCACHE_SRV_REFRESH', '-5s', 'mcstoreSrvRefreshMs', 0, /negative duration; using 0$/, MEMCACHE),
  c('MEMCACHE_TLS', 'True', 'mcstoreTls', true, undefined, MEMCACHE),

  // Redis pools, timeouts, pipelining, start-up retry.
  c('REDIS_POOL_SIZE', '10', 'kvstorePoolSize', 10),
  c('REDIS_POOL_SIZE', '0x20', 'kvstorePoolSize', 32),
  c('REDIS_POOL_SIZE', '010', 'kvstorePoolSize', 8), // Go's base 0: a leading 0 is octal
  c('REDIS_POOL_SIZE', '1_000', 'kvstorePoolSize', 1000),
  c('REDIS_POOL_SIZE', '0', 'kvstorePoolSize', 1, /supported range 1\.\.1024; using 1$/),
  c('REDIS_POOL_SIZE', '-3', 'kvstorePoolSize', 1, /; using 1$/),
  c('REDIS_POOL_SIZE', '5000', 'kvstorePoolSize', 1024, /; using 1024$/),
  c('REDIS_PERSECOND_POOL_SIZE', '2048', 'kvstorePersecondPoolSize', 1024, /; using 1024$/),
  c('REDIS_TIMEOUT', '1.5s', 'kvstoreTimeoutMs', 1500),
  c('REDIS_TIMEOUT', '150ms', 'kvstoreTimeoutMs', 150),
  c('REDIS_TIMEOUT', '0', 'kvstoreTimeoutMs', 10_000, /greater than zero.*; using 10s$/),
  c('REDIS_TIMEOUT', '-1s', 'kvstoreTimeoutMs', 10_000, /; using 10s$/),
  c('REDIS_PERSECOND_TIMEOUT', '0', 'kvstorePersecondTimeoutMs', 10_000, /; using 10s$/),
  c('REDIS_POOL_ON_EMPTY_BEHAVIOR', 'WAIT', 'kvstorePoolOnEmptyBehavior', 'WAIT'),
  c('REDIS_POOL_ON_EMPTY_BEHAVIOR', 'wait', 'kvstorePoolOnEmptyBehavior', 'WAIT'),
  c('REDIS_POOL_ON_EMPTY_BEHAVIOR', 'BLOCK', 'kvstorePoolOnEmptyBehavior', 'WAIT', /; using WAIT$/),
  c('REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR', '', 'kvstorePersecondPoolOnEmptyBehavior', 'WAIT', /; using WAIT$/),
  c('REDIS_POOL_ON_EMPTY_WAIT_DURATION', '-1s', 'kvstorePoolOnEmptyWaitMs', 0, /; using 0$/),
  c('REDIS_PIPELINE_WINDOW', '150us', 'kvstorePipelineWindowMs', 0.15),
  c('REDIS_PIPELINE_WINDOW', '-1ms', 'kvstorePipelineWindowMs', 0, /negative duration; using 0$/),
  c('REDIS_PIPELINE_LIMIT', '-1', 'kvstorePipelineLimit', -1),
  c('REDIS_PERSECOND_PIPELINE_LIMIT', '-8', 'kvstorePersecondPipelineLimit', -8),
  c('REDIS_CLUSTER_PIPELINE_PARALLELISM', '0', 'kvstoreClusterPipelineParallelism', 0),
  c('REDIS_STARTUP_INITIAL_INTERVAL', '0', 'kvstoreStartupInitialIntervalMs', 1000, /; using 1s$/),
  c('REDIS_STARTUP_MAX_INTERVAL', '0', 'kvstoreStartupMaxIntervalMs', 30_000, /; using 30s$/),
  c('REDIS_STARTUP_MAX_INTERVAL', '500ms', 'kvstoreStartupMaxIntervalMs', 500),
  c('REDIS_STARTUP_MAX_ELAPSED_TIME', '5m', 'kvstoreStartupMaxElapsedMs', 300_000),
  c('REDIS_STARTUP_MAX_ELAPSED_TIME', '-1s', 'kvstoreStartupMaxElapsedMs', 1, /first failed attempt; using 1ms$/),
  c('REDIS_HEALTH_CHECK_ACTIVE_CONNECTION', 'T', 'kvstoreHealthCheckActiveConnection', true),

  // Limiter behaviour.
  c('EXPIRATION_JITTER_MAX_SECONDS', '600', 'expirationJitterMaxSeconds', 600),
  c('EXPIRATION_JITTER_MAX_SECONDS', '-1', 'expirationJitterMaxSeconds', 0, /supported range 0\.\.31536000; using 0$/),
  c('EXPIRATION_JITTER_MAX_SECONDS', '9223372036854775807', 'expirationJitterMaxSeconds', 31_536_000, /; using 31536000$/),
  c('LOCAL_CACHE_SIZE_IN_BYTES', '0x100000', 'localCacheSizeInBytes', 1_048_576),
  c('LOCAL_CACHE_SIZE_IN_BYTES', '-1', 'localCacheSizeInBytes', 0, /; using 0$/),
  c('NEAR_LIMIT_RATIO', '0.9', 'nearLimitRatio', 0.9),
  c('NEAR_LIMIT_RATIO', '1e-1', 'nearLimitRatio', 0.1),
  c('NEAR_LIMIT_RATIO', '0x1p-1', 'nearLimitRatio', 0.5),
  c('NEAR_LIMIT_RATIO', '1.5', 'nearLimitRatio', 1, /supported range 0\.\.1; using 1$/),
  c('NEAR_LIMIT_RATIO', '-0.5', 'nearLimitRatio', 0, /; using 0$/),
  c('NEAR_LIMIT_RATIO', '+Inf', 'nearLimitRatio', 1, /; using 1$/),
  c('NEAR_LIMIT_RATIO', 'NaN', 'nearLimitRatio', 0.8, /not a number; using 0\.8$/),

  // Listeners and logging.
  c('PORT', '0x1f90', 'port', 8080),
  c('GRPC_MAX_CONNECTION_AGE', '1h30m', 'grpcMaxConnectionAgeMs', 5_400_000),
  c('GRPC_MAX_CONNECTION_AGE', '-1s', 'grpcMaxConnectionAgeMs', 0, /negative duration; using 0$/),
  c('GRPC_MAX_CONNECTION_AGE_GRACE', '-1m', 'grpcMaxConnectionAgeGraceMs', 0, /; using 0$/),
  c('LOG_FORMAT', 'json', 'logFormat', 'json'),
  c('LOG_FORMAT', 'logfmt', 'logFormat', 'text', /not json; using text$/),
  c('LOG_LEVEL', 'WARNING', 'logLevel', 'warn'),
  c('LOG_LEVEL', 'panic', 'logLevel', 'fatal'),
  c('STATSD_PORT', '0', 'statsdPort', 0),
  c('STATSD_PORT', '0x1f9d', 'statsdPort', 8093),

  // xDS client and tracing.
  c('XDS_CLIENT_BACKOFF_INITIAL_INTERVAL', '0', 'xdsBackoffInitialMs', 10_000, /; using 10s$/),
  c('XDS_CLIENT_BACKOFF_INITIAL_INTERVAL', '-1s', 'xdsBackoffInitialMs', 10_000, /; using 10s$/),
  c('XDS_CLIENT_BACKOFF_MAX_INTERVAL', '0', 'xdsBackoffMaxMs', 60_000, /; using 60s$/),
  c('CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL', '0', 'xdsConnectRetryIntervalMs', 3000, /; using 3s$/),
  c('XDS_CLIENT_BACKOFF_RANDOM_FACTOR', '-0.5', 'xdsBackoffRandomFactor', 0, /; using 0$/),
  c('XDS_CLIENT_BACKOFF_RANDOM_FACTOR', 'NaN', 'xdsBackoffRandomFactor', 0.5, /not a number; using 0\.5$/),
  c('XDS_CLIENT_BACKOFF_RANDOM_FACTOR', '1.5', 'xdsBackoffRandomFactor', 1.5),
  c('XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES', '0x100000', 'xdsMaxMsgSizeBytes', 1_048_576),
  c('XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES', '-1', 'xdsMaxMsgSizeBytes', 0, /; using 0$/),
  c('TRACING_SAMPLING_RATE', '0.25', 'tracingSamplingRate', 0.25),
  c('TRACING_SAMPLING_RATE', '2', 'tracingSamplingRate', 1, /; using 1$/),
  c('TRACING_SAMPLING_RATE', '-1', 'tracingSamplingRate', 0, /; using 0$/),
];

describe('settings upstream accepts start (table)', () => {
  for (const t of CASES) {
    test(`${t.env}=${JSON.stringify(t.value)}${t.warn !== undefined ? ' (clamped)' : ''}`, () => {
      const { settings, warnings } = loadSettings({ ...(t.base ?? {}), [t.env]: t.value });
      assert.deepEqual(settings[t.key], t.want);
      const prefix = `${t.env}=${JSON.stringify(t.value)}: `;
      const mine = warnings.filter((w) => w.startsWith(prefix));
      if (t.warn === undefined) {
        assert.deepEqual(mine, [], 'no clamp warning');
      } else {
        assert.equal(mine.length, 1, `one warning naming ${t.env}, got ${JSON.stringify(warnings)}`);
        assert.match(mine[0]!.slice(prefix.length), t.warn);
      }
    });
  }

  test('every boolean setting takes each of Go\'s strconv.ParseBool spellings', () => {
    const spellings: [string, boolean][] = [
      ['1', true], ['t', true], ['T', true], ['TRUE', true], ['true', true], ['True', true],
      ['0', false], ['f', false], ['F', false], ['FALSE', false], ['false', false], ['False', false],
    ];
    let checked = 0;
    for (const d of Object.values(SETTING_DEFS) as SettingDef<unknown>[]) {
      if (d.default !== 'true' && d.default !== 'false') continue;
      for (const [text, want] of spellings) assert.equal(d.parse(text, IGNORE_CLAMPS), want, `${d.name}=${text}`);
      checked++;
    }
    assert.ok(checked >= 20, `checked ${checked} boolean settings`);
  });

  test('KVSTORE_STARTUP_MAX_INTERVAL below the initial interval starts, with a warning', () => {
    const { warnings } = loadSettings({ REDIS_STARTUP_INITIAL_INTERVAL: '10s', REDIS_STARTUP_MAX_INTERVAL: '5s' });
    assert.ok(warnings.some((w) => /KVSTORE_STARTUP_MAX_INTERVAL is below KVSTORE_STARTUP_INITIAL_INTERVAL/.test(w)), JSON.stringify(warnings));
  });

  test('several clamps at once: each gets its own warning, nothing fails', () => {
    const { warnings } = loadSettings({ ...MEMCACHE, MEMCACHE_MAX_IDLE_CONNS: '100', NEAR_LIMIT_RATIO: '2', EXPIRATION_JITTER_MAX_SECONDS: '-5' });
    assert.equal(warnings.filter((w) => /^(MEMCACHE_MAX_IDLE_CONNS|NEAR_LIMIT_RATIO|EXPIRATION_JITTER_MAX_SECONDS)=/.test(w)).length, 3);
  });

  test('values upstream rejects too are still errors', () => {
    for (const [env, value] of [
      ['REDIS_POOL_SIZE', '10.5'],
      ['REDIS_POOL_SIZE', '9223372036854775808'],
      ['REDIS_TIMEOUT', '10'],
      ['NEAR_LIMIT_RATIO', 'high'],
      ['REDIS_CLUSTER_PIPELINE_PARALLELISM', '-1'],
      ['SHADOW_MODE', 'yes'],
      ['PORT', '70000'],
    ] as const) {
      assert.throws(() => loadSettings({ [env]: value }), new RegExp(`${env}=`), `${env}=${value}`);
    }
  });
});

describe('Go value syntax', () => {
  test('integers as strconv.ParseInt(s, 0, 64)', () => {
    const ok: [string, bigint][] = [['10', 10n], ['+7', 7n], ['-5', -5n], ['0x1F', 31n], ['0o17', 15n], ['017', 15n], ['0b101', 5n], ['1_000', 1000n], ['0x_1f', 31n], ['0', 0n], ['9223372036854775807', 9223372036854775807n]];
    for (const [text, want] of ok) assert.equal(parseGoInt(text), want, text);
    for (const bad of ['', '1__0', '_1', '1_', '0x', '08', '1e3', '9223372036854775808', 'ten']) assert.throws(() => parseGoInt(bad), bad);
  });

  test('floats as strconv.ParseFloat', () => {
    const ok: [string, number][] = [['0.8', 0.8], ['.5', 0.5], ['5.', 5], ['1E-1', 0.1], ['inf', Infinity], ['-Infinity', -Infinity], ['0x1p-2', 0.25]];
    for (const [text, want] of ok) assert.equal(parseGoFloat(text), want, text);
    assert.ok(Number.isNaN(parseGoFloat('nan')));
    for (const bad of ['', 'abc', '1..2', '0x1.8']) assert.throws(() => parseGoFloat(bad), bad);
  });

  test('durations as time.ParseDuration, negative included', () => {
    const ok: [string, number][] = [['-1s', -1000], ['+5s', 5000], ['1h30m', 5_400_000], ['.5s', 500], ['5.s', 5000], ['1µs', 0.001], ['0', 0]];
    for (const [text, want] of ok) assert.equal(parseSignedDurationMs(text), want, text);
    for (const bad of ['10', '1d', '', 's']) assert.throws(() => parseSignedDurationMs(bad), bad);
  });
});
