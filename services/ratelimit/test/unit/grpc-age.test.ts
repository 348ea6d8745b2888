// GRPC_MAX_CONNECTION_AGE / _GRACE: a long-lived connection (an open health Watch stream) gets a
// GOAWAY after the jittered age and is closed after the grace; the jitter is ±10 % from the
// injected randomness; new calls after the GOAWAY go over a new connection.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { encodeHealthCheckRequest, HEALTH_WATCH_PATH } from '@rls/rls-proto';
import { waitFor } from '@rls/testkit';
import { createGrpcServer } from '../../src/server/grpc-server.js';
import type { TransportLogger } from '../../src/server/transport-logger.js';
import { scriptedService, TestHealth } from '../support/server-test-support.js';

function capturingLogger(): { logger: TransportLogger; ages: number[] } {
  const ages: number[] = [];
  const noop = (): void => undefined;
  return {
    ages,
    logger: {
      debug: (obj: object) => {
        const a = (obj as { ageMs?: number }).ageMs;
        if (a !== undefined) ages.push(a);
      },
      info: noop,
      warn: noop,
      error: noop,
    },
  };
}

function frame(msg: Buffer): Buffer {
  const out = Buffer.alloc(5 + msg.length);
  out.writeUInt32BE(msg.length, 1);
  msg.copy(out, 5);
  return out;
}

interface Observed {
  goawayAfterMs: number;
  closeAfterMs: number;
  watchOpenAtGoaway: boolean;
  goawayCode: number;
}

/** Connects, keeps a Watch stream open, and times the GOAWAY and the close. */
function observe(port: number): Promise<Observed> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const session = http2.connect(`http://127.0.0.1:${port}`);
    let goawayAfterMs = -1;
    let goawayCode = -1;
    let watchOpenAtGoaway = false;
    session.on('error', () => undefined);
    const stream = session.request({ ':method': 'POST', ':path': HEALTH_WATCH_PATH, 'content-type': 'application/grpc', te: 'trailers' });
    stream.on('error', () => undefined);
    stream.on('data', () => undefined);
    stream.end(frame(encodeHealthCheckRequest({ service: '' })));
    session.on('goaway', (code: number) => {
      // The forced close at the end of the grace sends a second GOAWAY; the first one counts.
      if (goawayAfterMs >= 0) return;
      goawayAfterMs = Date.now() - started;
      goawayCode = code;
      watchOpenAtGoaway = !stream.closed && !stream.destroyed;
    });
    session.on('close', () => {
      if (goawayAfterMs < 0) reject(new Error('closed without GOAWAY'));
      else resolve({ goawayAfterMs, closeAfterMs: Date.now() - started, watchOpenAtGoaway, goawayCode });
    });
  });
}

describe(`gRPC maximum connection age`, () => {
  test('GOAWAY after the age, forced close after the grace, with a stream still open', async () => {
    const { logger, ages } = capturingLogger();
    const server = createGrpcServer({
      shouldRateLimit: scriptedService().fn,
      health: new TestHealth(),
      logger,
      maxConnectionAgeMs: 300,
      maxConnectionAgeGraceMs: 400,
      random: { int: (max) => Math.floor(max / 2) },
    });
    await server.listen('127.0.0.1', 0);
    const port = (server.address() as { port: number }).port;
    try {
      const seen = await observe(port);
      assert.deepEqual(ages, [300]);
      assert.equal(seen.goawayCode, http2.constants.NGHTTP2_NO_ERROR);
      assert.ok(seen.watchOpenAtGoaway, 'the watch stream was still open when the GOAWAY came');
      assert.ok(seen.goawayAfterMs >= 280, `GOAWAY after ${seen.goawayAfterMs} ms`);
      assert.ok(seen.closeAfterMs - seen.goawayAfterMs >= 380, `closed ${seen.closeAfterMs - seen.goawayAfterMs} ms after the GOAWAY`);
      await waitFor(() => server.connectionCount() === 0, { what: 'the server to drop the connection' });
    } finally {
      await server.close(100);
    }
  });

  test('the age carries ±10 % jitter from the injected randomness', async () => {
    for (const [r, expected] of [
      [0, 900],
      [0.5, 1000],
      [0.999999, 1100],
    ] as const) {
      const { logger, ages } = capturingLogger();
      const server = createGrpcServer({
        shouldRateLimit: scriptedService().fn,
        health: new TestHealth(),
        logger,
        maxConnectionAgeMs: 1000,
        maxConnectionAgeGraceMs: 0,
        random: { int: (max) => Math.floor(r * max) },
      });
      await server.listen('127.0.0.1', 0);
      try {
        const seen = await observe((server.address() as { port: number }).port);
        assert.equal(ages.length, 1);
        assert.ok(Math.abs(ages[0]! - expected) <= 1, `age ${ages[0]} for r=${r}`);
        assert.ok(seen.goawayAfterMs >= expected - 20, `GOAWAY after ${seen.goawayAfterMs} ms, age ${expected}`);
      } finally {
        await server.close(100);
      }
    }
  });

  test('a connection whose calls finish before the grace closes at once; no limit when the age is 0', async () => {
    const server = createGrpcServer({ shouldRateLimit: scriptedService().fn, health: new TestHealth(), maxConnectionAgeMs: 200, maxConnectionAgeGraceMs: 60_000 });
    await server.listen('127.0.0.1', 0);
    const port = (server.address() as { port: number }).port;
    try {
      const closed = await new Promise<{ goaway: boolean; ms: number }>((resolve) => {
        const started = Date.now();
        const session = http2.connect(`http://127.0.0.1:${port}`);
        let goaway = false;
        session.on('error', () => undefined);
        session.on('goaway', () => (goaway = true));
        session.on('close', () => resolve({ goaway, ms: Date.now() - started }));
      });
      assert.ok(closed.goaway);
      assert.ok(closed.ms < 10_000, `closed after ${closed.ms} ms, long before the 60 s grace`);
    } finally {
      await server.close(100);
    }

    const unlimited = createGrpcServer({ shouldRateLimit: scriptedService().fn, health: new TestHealth(), maxConnectionAgeMs: 0 });
    await unlimited.listen('127.0.0.1', 0);
    const session = http2.connect(`http://127.0.0.1:${(unlimited.address() as { port: number }).port}`);
    try {
      await new Promise((resolve) => session.once('connect', resolve));
      assert.equal(unlimited.connectionCount(), 1);
    } finally {
      session.destroy();
      await unlimited.close(100);
    }
  });
});
