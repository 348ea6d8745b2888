// DogStatsD push: mogrifier settings (every spelling, validation listing every bad variable) and
// the tagged lines a real UDP listener receives.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../src/logger.js';
import { mogrify, readMogrifiers } from '../../src/stats/mogrifiers.js';
import { StatsPushSink } from '../../src/stats/push-sink.js';
import { TaggedStatsdFormatter } from '../../src/stats/statsd-line.js';
import { createStatsdTransport } from '../../src/stats/statsd-transport.js';
import { StatsStore } from '@rls/engine';
import { startUdpStatsd } from '../support/stats-listeners.js';

const noInterval = { every: () => ({ cancel: () => {} }) };

describe('readMogrifiers', () => {
  test("the seed's example: some.original.metric.<TAG> → some.original.metric with domain:<TAG>", () => {
    const r = readMogrifiers({
      TAGGED_STATS_MOGRIFIERS: 'SEED',
      TAGGED_STATS_MOGRIFIER_SEED_PATTERN: '^some\\.original\\.metric\\.(.*)$',
      TAGGED_STATS_MOGRIFIER_SEED_NAME: 'some.original.metric',
      TAGGED_STATS_MOGRIFIER_SEED_TAGS: 'domain:$1',
    });
    assert.deepEqual(r.errors, []);
    assert.deepEqual(mogrify('some.original.metric.mydomain', r.mogrifiers), { name: 'some.original.metric', tags: [['domain', 'mydomain']] });
    assert.equal(mogrify('another.metric', r.mogrifiers), undefined);
  });

  test('every spelling of the list and item variables is accepted', () => {
    const item = (prefix: string, id: string) => ({
      [`${prefix}${id}_PATTERN`]: '^ratelimit\\.service\\.rate_limit\\.(.*)\\.(.*)\\.(.*)$',
      [`${prefix}${id}_NAME`]: 'ratelimit.service.rate_limit.$3',
      [`${prefix}${id}_TAGS`]: 'domain:$1,descriptor:$2',
    });
    const spellings: [string, string][] = [
      ['TAGGED_STATS_MOGRIFIERS', 'TAGGED_STATS_MOGRIFIER_'],
      ['USE_TAGGED_STATS_MOGRIFIERS', 'TAGGED_STATS_MOGRIFIERS_'],
      ['USE_DOG_STATSD_MOGRIFIERS', 'DOG_STATSD_MOGRIFIER_'],
      ['USE_DOG_STATSD_MOGRIFIERS', 'DOG_STATSD_MOGRIFIERS_'],
    ];
    for (const [listVar, prefix] of spellings) {
      const r = readMogrifiers({ [listVar]: 'RL', ...item(prefix, 'RL') });
      assert.deepEqual(r.errors, [], `${listVar} / ${prefix}`);
      assert.deepEqual(mogrify('ratelimit.service.rate_limit.mongo_cps.database_users.within_limit', r.mogrifiers), {
        name: 'ratelimit.service.rate_limit.within_limit',
        tags: [
          ['domain', 'mongo_cps'],
          ['descriptor', 'database_users'],
        ],
      });
    }
  });

  test('first matching mogrifier wins; $0 is the whole match; an out-of-range $n stays literal', () => {
    const r = readMogrifiers({
      TAGGED_STATS_MOGRIFIERS: 'A, B',
      TAGGED_STATS_MOGRIFIER_A_PATTERN: '^x\\.(\\w+)$',
      TAGGED_STATS_MOGRIFIER_A_NAME: 'first.$1.$5',
      TAGGED_STATS_MOGRIFIER_A_TAGS: 'whole:$0',
      TAGGED_STATS_MOGRIFIER_B_PATTERN: '^x\\.',
      TAGGED_STATS_MOGRIFIER_B_NAME: 'second',
    });
    assert.deepEqual(r.errors, []);
    assert.deepEqual(mogrify('x.abc', r.mogrifiers), { name: 'first.abc.$5', tags: [['whole', 'x.abc']] });
    assert.deepEqual(mogrify('x.a.b', r.mogrifiers), { name: 'second', tags: [] });
  });

  test('every bad variable is reported at once', () => {
    const r = readMogrifiers({
      TAGGED_STATS_MOGRIFIERS: 'NOPAT,NONAME,BADTAGS,BADRE',
      TAGGED_STATS_MOGRIFIER_NOPAT_NAME: 'n',
      TAGGED_STATS_MOGRIFIER_NONAME_PATTERN: 'p',
      TAGGED_STATS_MOGRIFIER_BADTAGS_PATTERN: 'p',
      TAGGED_STATS_MOGRIFIER_BADTAGS_NAME: 'n',
      TAGGED_STATS_MOGRIFIER_BADTAGS_TAGS: ':v,k:,ok:1',
      TAGGED_STATS_MOGRIFIER_BADRE_PATTERN: '(unclosed',
      TAGGED_STATS_MOGRIFIER_BADRE_NAME: 'n',
    });
    assert.equal(r.mogrifiers.length, 0);
    assert.equal(r.errors.length, 5, r.errors.join('\n'));
    assert.match(r.errors[0] ?? '', /NOPAT_PATTERN is missing/);
    assert.match(r.errors[1] ?? '', /NONAME_NAME is missing/);
    assert.match(r.errors[2] ?? '', /BADTAGS_TAGS=.*tag ':v'/);
    assert.match(r.errors[3] ?? '', /BADTAGS_TAGS=.*tag 'k:'/);
    assert.match(r.errors[4] ?? '', /BADRE_PATTERN=.*invalid regular expression/);
  });
});

describe('DogStatsD lines', () => {
  test('mogrified names, extra tags then mogrifier tags, all three stat kinds', async () => {
    const listener = await startUdpStatsd();
    const { mogrifiers, errors } = readMogrifiers({
      USE_DOG_STATSD_MOGRIFIERS: 'RL',
      DOG_STATSD_MOGRIFIER_RL_PATTERN: '^ratelimit\\.service\\.rate_limit\\.(.*)\\.(.*)\\.(.*)$',
      DOG_STATSD_MOGRIFIER_RL_NAME: 'ratelimit.service.rate_limit.$3',
      DOG_STATSD_MOGRIFIER_RL_TAGS: 'domain:$1,descriptor:$2',
    });
    assert.deepEqual(errors, []);
    const logger = silentLogger();
    const store = new StatsStore();
    const transport = createStatsdTransport({ host: '127.0.0.1', port: listener.port, protocol: 'udp', logger });
    const sink = new StatsPushSink({ flushIntervalMs: 10_000 }, { store, formatter: new TaggedStatsdFormatter({ env: 'prod', build: '1.2' }, mogrifiers), transport, logger, scheduler: noInterval });
    sink.start();
    store.timer('ratelimit_server.ShouldRateLimit.response_time').record(5.9);
    assert.deepEqual(await listener.next(1, 0), ['ratelimit_server.ShouldRateLimit.response_time:5|ms|#build:1_2,env:prod']);
    store.counter('ratelimit.service.rate_limit.mongo_cps.database_users.within_limit').add(4);
    store.counter('ratelimit.memcache.add', { code: 'not_stored' }).add(1);
    store.gauge('ratelimit.redis_pool.cx_active').set(3);
    sink.flush();
    assert.deepEqual(await listener.next(3, 1), [
      'ratelimit.service.rate_limit.within_limit:4|c|#build:1_2,env:prod,domain:mongo_cps,descriptor:database_users',
      'ratelimit.memcache.add:1|c|#build:1_2,code:not_stored,env:prod',
      'ratelimit.redis_pool.cx_active:3|g|#build:1_2,env:prod',
    ]);
    await sink.stop();
    await listener.close();
  });
});
