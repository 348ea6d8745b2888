#!/usr/bin/env node
// statsd push: our transport (services/ratelimit/src/stats/statsd-transport.ts with the plain line
// formatter of statsd-line.ts) against hot-shots sending the same counters and timers over UDP to
// a local socket in the parent process, which counts the lines that arrived (received/sent: UDP
// may drop under load; both sides are shown). A "request" is what a decision reports: four
// counters of one descriptor (total_hits, within_limit, over_limit, near_limit) and a timer.
// Requests are sent in batches of BATCH, yielding to the event loop between batches so the
// transports flush as they would in the service.
//   ours                one packet per tick up to 1432 bytes (the service's setting);
//   hot-shots           its defaults (maxBufferSize 0: one packet per stat);
//   hot-shots-buffered  maxBufferSize 1432, bufferFlushInterval 1 ms: the closest to ours.
// In the service the push sink sends each statistic once per flush interval (aggregated), not
// per request, so this measures the transport's cost per line, not a per-request cost.
//
//   node --conditions=source --import tsx bench/client-statsd.mjs
//   env: ROUNDS (3) DURATION (s per run, 3) BATCH (100) DESCRIPTORS (50 distinct) ONLY (comma list)
import dgram from 'node:dgram';
import { fileURLToPath } from 'node:url';
import { alternate, childRequest, envNumber, reportAndExit } from './lib/alternate.mjs';

const COUNTERS = ['total_hits', 'within_limit', 'over_limit', 'near_limit'];
const TIMER = 'ratelimit.service.response_time';
const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
silent.child = () => silent;

const CANDIDATES = {
  ours: async ({ port, descriptors }) => {
    const { createStatsdTransport } = await import('../services/ratelimit/src/stats/statsd-transport.ts');
    const { PlainStatsdFormatter } = await import('../services/ratelimit/src/stats/statsd-line.ts');
    const transport = createStatsdTransport({ host: '127.0.0.1', port, protocol: 'udp', logger: silent });
    const formatter = new PlainStatsdFormatter({});
    // The service's stat handles are objects made once per descriptor (the formatter caches their names).
    const stats = Array.from({ length: descriptors }, (_v, d) => COUNTERS.map((c) => ({ name: `ratelimit.service.rate_limit.bench.key_value_${d}.${c}`, tags: {} })));
    const timer = { name: TIMER, tags: {} };
    return {
      request: (d, ms) => {
        for (const s of stats[d]) transport.write(formatter.line(s, 1, 'c'));
        transport.write(formatter.line(timer, ms, 'ms'));
      },
      close: () => transport.close(),
    };
  },
  'hot-shots': async (ctx) => await hotShots(ctx, {}),
  'hot-shots-buffered': async (ctx) => await hotShots(ctx, { maxBufferSize: 1432, bufferFlushInterval: 1 }),
};

async function hotShots({ port, descriptors }, options) {
  const { StatsD } = await import('hot-shots');
  const client = new StatsD({ host: '127.0.0.1', port, protocol: 'udp', ...options, errorHandler: () => undefined });
  const names = Array.from({ length: descriptors }, (_v, d) => COUNTERS.map((c) => `ratelimit.service.rate_limit.bench.key_value_${d}.${c}`));
  return {
    request: (d, ms) => {
      for (const n of names[d]) client.increment(n, 1);
      client.timing(TIMER, ms);
    },
    close: () => new Promise((resolve) => client.close(() => resolve())),
  };
}

const child = childRequest();
if (child !== undefined) {
  const ctx = child.context;
  const c = await CANDIDATES[child.name](ctx);
  const linesPerRequest = COUNTERS.length + 1;
  let requests = 0;
  const run = async (seconds) => {
    const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
    let n = 0;
    while (process.hrtime.bigint() < end) {
      for (let i = 0; i < ctx.batch; i++) c.request((requests + i) % ctx.descriptors, (i % 50) + 0.5);
      requests += ctx.batch;
      n += ctx.batch;
      await new Promise((r) => setImmediate(r));
    }
    return n;
  };
  await run(1);
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const measured = await run(ctx.seconds);
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  await c.close();
  const lines = measured * linesPerRequest;
  reportAndExit({ opsPerSec: lines / wallS, cpuUsPerOp: (cpu.user + cpu.system) / lines, sent: requests * linesPerRequest });
}

// The receiver: counts lines per run; a big receive buffer so the count shows the sender, not us.
const socket = dgram.createSocket({ type: 'udp4', recvBufferSize: 64 * 1024 * 1024 });
let received = 0;
socket.on('message', (msg) => {
  let n = 1;
  for (let i = msg.indexOf(10); i !== -1; i = msg.indexOf(10, i + 1)) n++;
  received += n;
});
await new Promise((r) => socket.bind(0, '127.0.0.1', r));
const context = {
  port: socket.address().port,
  seconds: envNumber('DURATION', 3),
  batch: envNumber('BATCH', 100),
  descriptors: envNumber('DESCRIPTORS', 50),
};
const only = (process.env.ONLY ?? '').split(',').filter((x) => x !== '');
try {
  await alternate({
    title: `statsd over UDP: 4 counters + 1 timer per request, batches of ${context.batch} requests per tick, ${context.seconds} s per run (figures per line)`,
    self: fileURLToPath(import.meta.url),
    candidates: only.length > 0 ? only : Object.keys(CANDIDATES),
    rounds: envNumber('ROUNDS', 3),
    context,
    unit: 'line',
    before: () => {
      received = 0;
    },
    // Lines still in flight when the child exits arrive within a few ms.
    after: async () => {
      await new Promise((r) => setTimeout(r, 200));
      return { received };
    },
    extraColumns: [{ label: 'received/sent', value: (r) => `${r.received}/${r.sent} (${((100 * r.received) / r.sent).toFixed(1)} %)` }],
  });
} finally {
  socket.close();
}
