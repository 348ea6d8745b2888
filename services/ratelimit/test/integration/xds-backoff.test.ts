// Reconnect backoff of the xDS client: the formula (growth even with upstream's 0.5 default, cap,
// jitter from injected randomness), and the delays the client asks its scheduler for while the
// management server is down, starting over after a stream that delivered a response.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { freePort, startXdsServer, waitFor } from '@rls/testkit';
import { backoffDelayMs, effectiveMultiplier } from '../../src/provider/xds-backoff.js';
import { buildXdsApp, limitResource, PROTO_DIR, scriptedRandom } from '../support/xds-support.js';

describe('xDS backoff formula', () => {
  const fixed = scriptedRandom([0]);
  test('upstream defaults (10 s, 60 s, factor 0.5) grow 10, 20, 40, 60, 60 s without jitter', () => {
    const policy = { initialMs: 10_000, maxMs: 60_000, factor: 0.5, jitter: false };
    assert.equal(effectiveMultiplier(0.5), 2);
    assert.deepEqual([0, 1, 2, 3, 4, 10].map((n) => backoffDelayMs(policy, n, fixed)), [10_000, 20_000, 40_000, 60_000, 60_000, 60_000]);
  });

  test('a factor above 1 is used as the multiplier', () => {
    const policy = { initialMs: 1000, maxMs: 100_000, factor: 3, jitter: false };
    assert.deepEqual([0, 1, 2, 3].map((n) => backoffDelayMs(policy, n, fixed)), [1000, 3000, 9000, 27_000]);
  });

  test('jitter spreads each wait uniformly between the initial interval and the computed one', () => {
    const policy = { initialMs: 10_000, maxMs: 60_000, factor: 0.5, jitter: true };
    assert.equal(backoffDelayMs(policy, 0, scriptedRandom([0.99])), 10_000);
    assert.equal(backoffDelayMs(policy, 1, scriptedRandom([0])), 10_000);
    assert.equal(backoffDelayMs(policy, 1, scriptedRandom([0.5])), 15_000);
    assert.equal(backoffDelayMs(policy, 2, scriptedRandom([0.25])), 17_500);
    assert.equal(backoffDelayMs(policy, 5, scriptedRandom([0.5])), 35_000);
  });
});

describe('xDS client reconnects', () => {
  test('waits grow while the server is down, connect after it is up, and start over after a good stream', async () => {
    const port = await freePort();
    const { app, scheduler } = buildXdsApp({
      CONFIG_GRPC_XDS_SERVER_URL: `127.0.0.1:${port}`,
      XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: '1s',
      XDS_CLIENT_BACKOFF_MAX_INTERVAL: '5s',
      CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL: '2s',
    });
    const xds = app.xds!;
    const waitScheduled = async (n: number): Promise<void> => {
      await waitFor(() => scheduler.delays.length === n && scheduler.waiting === 1, { what: `backoff #${n}` });
    };
    try {
      xds.start();
      for (let i = 1; i <= 5; i++) {
        await waitScheduled(i);
        if (i < 5) scheduler.fire();
      }
      assert.deepEqual(scheduler.delays, [1000, 2000, 4000, 5000, 5000]);
      assert.equal(xds.client.attempts, 5);
      assert.equal(xds.client.state, 'waiting');

      // The server comes up on that port; the next attempt connects and gets the rules.
      const server = await startXdsServer({ protoDir: PROTO_DIR, port });
      try {
        server.push('1', [limitResource('r', 'd', 'k', 'v', 1)]);
        scheduler.fire();
        await server.waitForRequest((r) => r.versionInfo === '1');
        assert.equal(xds.client.state, 'streaming');
        assert.equal(xds.client.lastAckedVersion, '1');
        // After a stream that delivered a response, the next wait is the initial one again.
        server.dropStreams();
        await waitScheduled(6);
        assert.equal(scheduler.delays[5], 1000);
      } finally {
        await server.stop();
      }
      // Server gone again: the waits grow from the start.
      scheduler.fire();
      await waitScheduled(7);
      assert.equal(scheduler.delays[6], 2000);
    } finally {
      await app.stop();
    }
    assert.equal(xds.client.state, 'stopped');
    assert.equal(scheduler.waiting, 0);
  });
});
