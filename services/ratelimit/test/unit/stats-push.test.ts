// Push sinks against real statsd listeners (UDP and TCP) started here: exact lines, delta
// semantics, gauges, timers, EXTRA_TAGS, a statsd that is down or goes away, the debug-log sink.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { freePort, waitFor } from '@rls/testkit';
import { createLogger, silentLogger } from '../../src/logger.js';
import { StatsPushSink, type IntervalScheduler } from '../../src/stats/push-sink.js';
import { PlainStatsdFormatter } from '../../src/stats/statsd-line.js';
import { createStatsdTransport } from '../../src/stats/statsd-transport.js';
import { startStatsSinks, type StatsSinksOptions } from '../../src/stats/stats-sinks.js';
import { StatsStore } from '@rls/engine';
import { startTcpStatsd, startUdpStatsd, type StatsdListener } from '../support/stats-listeners.js';

/** The flush interval under the test's control. */
class ManualScheduler implements IntervalScheduler {
  readonly registered: number[] = [];
  private readonly fns = new Set<() => void>();
  every(ms: number, fn: () => void): { cancel(): void } {
    this.registered.push(ms);
    this.fns.add(fn);
    return { cancel: () => this.fns.delete(fn) };
  }
  tick(): void {
    for (const fn of this.fns) fn();
  }
}

const logger = silentLogger();

for (const protocol of ['udp', 'tcp'] as const) {
  describe(`plain statsd push over ${protocol}`, () => {
    test('counters go out as non-zero deltas per interval, gauges every interval, timers on each observation', async () => {
      const listener: StatsdListener = protocol === 'udp' ? await startUdpStatsd() : await startTcpStatsd();
      const store = new StatsStore();
      const scheduler = new ManualScheduler();
      const transport = createStatsdTransport({ host: '127.0.0.1', port: listener.port, protocol, logger });
      const sink = new StatsPushSink({ flushIntervalMs: 10_000 }, { store, formatter: new PlainStatsdFormatter({}), transport, logger, scheduler });
      const hits = store.counter('ratelimit.service.rate_limit.domain.key_value.total_hits');
      store.counter('ratelimit.service.rate_limit.domain.key_value.over_limit'); // exists, never moves
      const cx = store.gauge('ratelimit.redis_pool.cx_active');
      const rt = store.timer('ratelimit_server.ShouldRateLimit.response_time');
      sink.start();
      assert.deepEqual(scheduler.registered, [10_000]);

      rt.record(12.7);
      assert.deepEqual(await listener.next(1, 0), ['ratelimit_server.ShouldRateLimit.response_time:12|ms']);

      hits.add(3);
      cx.set(2);
      scheduler.tick();
      assert.deepEqual(await listener.next(2, 1), ['ratelimit.service.rate_limit.domain.key_value.total_hits:3|c', 'ratelimit.redis_pool.cx_active:2|g']);

      hits.add(2);
      hits.inc();
      scheduler.tick();
      assert.deepEqual(await listener.next(2, 3), ['ratelimit.service.rate_limit.domain.key_value.total_hits:3|c', 'ratelimit.redis_pool.cx_active:2|g']);

      // Nothing counted since: only the gauge goes out.
      scheduler.tick();
      assert.deepEqual(await listener.next(1, 5), ['ratelimit.redis_pool.cx_active:2|g']);

      // A timer created after start is pushed too.
      store.timer('ratelimit_server.Check.response_time').record(0.4);
      assert.deepEqual(await listener.next(1, 6), ['ratelimit_server.Check.response_time:0|ms']);

      // stop() flushes what is left.
      hits.add(5);
      cx.set(0);
      await sink.stop();
      assert.deepEqual(await listener.next(2, 7), ['ratelimit.service.rate_limit.domain.key_value.total_hits:5|c', 'ratelimit.redis_pool.cx_active:0|g']);
      assert.equal(listener.lines.length, 9, `no other line: ${JSON.stringify(listener.lines)}`);
      assert.equal(transport.connected(), false, 'the transport is closed by stop()');
      await listener.close();
    });
  });
}

describe('EXTRA_TAGS and stat tags in plain statsd names', () => {
  test('tags are appended as .__k=v sorted by key, with . : | in values turned into _', async () => {
    const listener = await startUdpStatsd();
    const store = new StatsStore();
    const transport = createStatsdTransport({ host: '127.0.0.1', port: listener.port, protocol: 'udp', logger });
    const formatter = new PlainStatsdFormatter({ zone: 'us.east:1|a', env: 'prod' });
    const sink = new StatsPushSink({ flushIntervalMs: 10_000 }, { store, formatter, transport, logger, scheduler: new ManualScheduler() });
    sink.start();
    store.counter('ratelimit.service.rate_limit.d.k.total_hits').add(1);
    store.counter('ratelimit.memcache.multiget', { code: 'success' }).add(2);
    store.timer('ratelimit_server.ShouldRateLimit.response_time').record(7);
    sink.flush();
    const lines = await listener.next(3, 0);
    assert.deepEqual(lines, [
      'ratelimit_server.ShouldRateLimit.response_time.__env=prod.__zone=us_east_1_a:7|ms',
      'ratelimit.service.rate_limit.d.k.total_hits.__env=prod.__zone=us_east_1_a:1|c',
      'ratelimit.memcache.multiget.__code=success.__env=prod.__zone=us_east_1_a:2|c',
    ]);
    await sink.stop();
    await listener.close();
  });
});

describe('statsd outages', () => {
  test('tcp: statsd down at start, then up, then gone, then back — lines are queued and delivered, nothing throws', async () => {
    const port = await freePort();
    const store = new StatsStore();
    const transport = createStatsdTransport({ host: '127.0.0.1', port, protocol: 'tcp', logger, reconnectDelayMs: 20 });
    const sink = new StatsPushSink({ flushIntervalMs: 10_000 }, { store, formatter: new PlainStatsdFormatter({}), transport, logger, scheduler: new ManualScheduler() });
    sink.start();
    const c = store.counter('a');
    c.add(1);
    sink.flush(); // nobody listens yet
    c.add(2);
    sink.flush();
    assert.equal(transport.connected(), false);

    const first = await startTcpStatsd(port);
    assert.deepEqual(await first.next(2, 0), ['a:1|c', 'a:2|c']);
    await first.close(); // statsd goes away
    await waitFor(() => !transport.connected(), { what: 'the transport to notice the lost connection' });
    c.add(4);
    sink.flush();

    const second = await startTcpStatsd(port);
    assert.deepEqual(await second.next(1, 0), ['a:4|c']);
    c.add(5);
    sink.flush();
    assert.deepEqual(await second.next(1, 1), ['a:5|c']);
    await sink.stop();
    await second.close();
  });

  test('tcp: the queue while disconnected is bounded; lines past the bound are dropped', async () => {
    const port = await freePort();
    const store = new StatsStore();
    const transport = createStatsdTransport({ host: '127.0.0.1', port, protocol: 'tcp', logger, reconnectDelayMs: 20, maxQueuedBytes: 12 });
    const sink = new StatsPushSink({ flushIntervalMs: 10_000 }, { store, formatter: new PlainStatsdFormatter({}), transport, logger, scheduler: new ManualScheduler() });
    store.counter('a').add(1);
    store.counter('b').add(1);
    store.counter('c').add(1); // 6 bytes each with the newline: the third does not fit in 12
    sink.flush();
    const listener = await startTcpStatsd(port);
    assert.deepEqual(await listener.next(2, 0), ['a:1|c', 'b:1|c']);
    store.counter('d').add(1);
    sink.flush();
    assert.deepEqual(await listener.next(1, 2), ['d:1|c'], 'c was dropped, d is the next line');
    await sink.stop();
    await listener.close();
  });

  test('udp: nobody listening drops packets silently; a listener that appears gets the next flush', async () => {
    const port = await freePort();
    const store = new StatsStore();
    const transport = createStatsdTransport({ host: '127.0.0.1', port, protocol: 'udp', logger });
    const sink = new StatsPushSink({ flushIntervalMs: 10_000 }, { store, formatter: new PlainStatsdFormatter({}), transport, logger, scheduler: new ManualScheduler() });
    store.counter('lost').add(1);
    sink.flush();
    // Let the send of the lost packet complete before a listener exists (the send callback runs).
    await new Promise((r) => setImmediate(r));
    const socket = dgram.createSocket('udp4');
    const lines: string[] = [];
    socket.on('message', (m) => lines.push(...m.toString().split('\n')));
    await new Promise<void>((r) => socket.bind(port, '127.0.0.1', r));
    store.counter('seen').add(1);
    sink.flush();
    await waitFor(() => lines.includes('seen:1|c'), { what: 'seen:1|c' });
    await sink.stop();
    await new Promise<void>((r) => socket.close(() => r()));
  });
});

function sinkOptions(overrides: Partial<StatsSinksOptions>, port = 1): StatsSinksOptions {
  return {
    disabled: false,
    extraTags: {},
    flushIntervalMs: 10_000,
    push: { mode: 'statsd', host: '127.0.0.1', port, protocol: 'udp', mogrifiers: [] },
    pull: { enabled: false },
    ...overrides,
  };
}

describe('sink selection', () => {
  test('push and pull both off: stats are written to the log at debug level', async () => {
    const out: string[] = [];
    const store = new StatsStore();
    const sinks = await startStatsSinks(sinkOptions({ push: { mode: 'off', host: '', port: 0, protocol: 'tcp', mogrifiers: [] } }), {
      store,
      logger: createLogger({ level: 'debug', format: 'json', destination: { write: (l: string) => out.push(l) } }),
      scheduler: new ManualScheduler(),
    });
    store.counter('ratelimit.service.config_load_success').add(1);
    sinks.flush();
    const recs = out.map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(
      recs.some((r) => r['@message'] === 'stat ratelimit.service.config_load_success:1|c' && r.level === 'debug'),
      JSON.stringify(recs),
    );
    await sinks.stop();
  });

  test('DISABLE_STATS: nothing is sent even with push configured', async () => {
    const listener = await startUdpStatsd();
    const store = new StatsStore();
    const sinks = await startStatsSinks(sinkOptions({ disabled: true }, listener.port), { store, logger, scheduler: new ManualScheduler() });
    store.counter('x').add(1);
    store.timer('t').record(1);
    sinks.flush();
    await sinks.stop();
    assert.equal(sinks.metricsAddress, undefined);
    // A sentinel from another client must be the first thing the listener ever sees.
    const client = dgram.createSocket('udp4');
    await new Promise<void>((r) => client.send('sentinel:1|c', listener.port, '127.0.0.1', () => r()));
    assert.deepEqual(await listener.next(1, 0), ['sentinel:1|c']);
    client.close();
    await listener.close();
  });
});
