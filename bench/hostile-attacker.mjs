// One attack of bench/hostile.mjs in its own process (started by it with an IPC channel, under
// `nice` when asked): its CPU is measured apart from the bench's, the bench's own event loop (RSS
// sampling, draining the service's output) is never held up by an attack loop, and at a higher
// niceness it takes only CPU the service and the well-behaved client leave idle, as an attacker on
// another machine would.
//
// Argument: JSON { name, ctx } (ctx without `log`). Messages from the parent: { type: 'prepare' },
// then { type: 'run', deadline }. To the parent: { type: 'log', msg }, { type: 'prepared' },
// { type: 'result', outcome }; the process exits after the result (or when the parent goes away).
import { ATTACKS } from './lib/hostile-attacks.mjs';

const { name, ctx: base } = JSON.parse(process.argv[2] ?? '{}');
const attack = ATTACKS.find((a) => a.name === name);
const ctx = { ...base, log: (msg) => process.send({ type: 'log', msg }) };
let prepared;
let cpu0;

function done(outcome) {
  const cpu = cpu0 ? process.cpuUsage(cpu0) : undefined;
  process.send({ type: 'result', outcome, cpuMs: cpu ? (cpu.user + cpu.system) / 1000 : undefined }, () => process.exit(0));
}

process.on('disconnect', () => process.exit(0));
process.on('message', async (m) => {
  if (!attack) {
    done(`unknown attack ${name}`);
    return;
  }
  if (m?.type === 'prepare') {
    try {
      if (attack.prepare) prepared = await attack.prepare(ctx);
      process.send({ type: 'prepared' });
    } catch (err) {
      done(`prepare failed: ${err?.stack ?? err}`);
    }
  } else if (m?.type === 'run') {
    cpu0 = process.cpuUsage();
    try {
      const r = await attack.run(ctx, m.deadline, prepared);
      done(r.outcome);
    } catch (err) {
      done(`attack failed: ${err?.stack ?? err}`);
    }
  }
});
process.send({ type: 'ready' });
