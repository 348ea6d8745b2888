// Shared driver of the protocol-client benches (bench/client-*.mjs): each candidate (our
// hand-written module, the library it would be replaced by) runs in a child process of its own so
// JIT and GC state do not leak between them; the candidates take turns for ROUNDS rounds so a slow
// spell of a shared machine hits each alike; the medians and the median of the per-round ratios
// against the first candidate are printed. Benchmarks print; they never assert (except that both
// sides did the same work, which the scripts check and report).
import { spawn, spawnSync } from 'node:child_process';
import { cpuMs } from './harness.mjs';

export const envNumber = (name, fallback) => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got ${JSON.stringify(raw)}`);
  return n;
};

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** The child side: set when this process was started by `alternate` for one candidate. */
export function childRequest() {
  const name = process.env.BENCH_CANDIDATE;
  if (name === undefined || name === '') return undefined;
  return { name, context: JSON.parse(process.env.BENCH_CONTEXT ?? '{}') };
}

/** Child side: prints the result for the parent and exits (open handles of a library must not keep it alive). */
export function reportAndExit(result) {
  process.stdout.write(`BENCH_RESULT ${JSON.stringify(result)}\n`);
  process.exit(0);
}

/** pids of the processes listening on these TCP ports (for their CPU time), via `ss`. */
export function pidsOnPorts(ports) {
  const pids = new Set();
  for (const port of ports) {
    const r = spawnSync('ss', ['-Htlnp', `sport = :${port}`], { encoding: 'utf8' });
    for (const m of (r.stdout ?? '').matchAll(/pid=(\d+)/g)) pids.add(Number(m[1]));
  }
  return [...pids];
}

const serverCpuMs = (pids) => pids.reduce((a, p) => a + cpuMs(p), 0);

/**
 * Async closed loop: `concurrency` callers each awaiting `op(i)` back to back; a warm-up of
 * `warmupS`, then the measured `seconds`. Returns ops/s, this process's CPU µs per op, and the
 * total number of ops (warm-up included) so the caller can check what the server holds.
 */
export async function closedLoop({ op, seconds, warmupS = 1, concurrency }) {
  let ops = 0;
  let total = 0;
  let stop = false;
  const caller = async (w) => {
    let i = w;
    while (!stop) {
      await op(i);
      i += concurrency;
      ops++;
      total++;
    }
  };
  const run = async (s) => {
    stop = false;
    const callers = Array.from({ length: concurrency }, (_v, w) => caller(w));
    await new Promise((r) => setTimeout(r, s * 1000));
    stop = true;
    await Promise.all(callers);
  };
  await run(warmupS);
  ops = 0;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await run(seconds);
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  return { opsPerSec: ops / wallS, cpuUsPerOp: (cpu.user + cpu.system) / ops, totalOps: total };
}

/** Sync loop of `op()` in batches until `seconds` passed, after a warm-up: ops/s and CPU µs per op. */
export function syncLoop({ op, seconds, warmupS = 1, batch = 1000 }) {
  const run = (s) => {
    const end = process.hrtime.bigint() + BigInt(Math.round(s * 1e9));
    let n = 0;
    while (process.hrtime.bigint() < end) {
      for (let i = 0; i < batch; i++) op(i);
      n += batch;
    }
    return n;
  };
  run(warmupS);
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const ops = run(seconds);
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  return { opsPerSec: ops / wallS, cpuUsPerOp: (cpu.user + cpu.system) / ops };
}

function runChild(self, name, context) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, self], {
      env: { ...process.env, BENCH_CANDIDATE: name, BENCH_CONTEXT: JSON.stringify(context) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('BENCH_RESULT '));
      if (code === 0 && line !== undefined) resolve(JSON.parse(line.slice('BENCH_RESULT '.length)));
      else reject(new Error(`${name} exited ${code}: ${out.slice(-2000)}`));
    });
  });
}

const fmt = (n, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/**
 * Parent side: runs every candidate once per round, in turn, each in a child process of `self`.
 * `serverPorts`: the store's ports, whose processes' CPU is added per op (over the child's whole
 * run, warm-up included, divided by its `totalOps`). `before(name)`/`after(name, result)` run around
 * each child (e.g. a UDP receiver counting what arrived); `after` may add fields to the result.
 * `unit` names an op in the output ("req", "msg", "line").
 */
export async function alternate({ title, self, candidates, rounds, context = {}, serverPorts = [], before, after, unit = 'op', extraColumns = [] }) {
  const pids = pidsOnPorts(serverPorts);
  const results = Object.fromEntries(candidates.map((c) => [c, []]));
  console.log(`${title}\n${rounds} alternated rounds${pids.length > 0 ? `; store CPU from pids ${pids.join(',')}` : ''}`);
  const showRow = (label, r) => {
    const extra = extraColumns.map((c) => `  ${c.label} ${c.value(r)}`).join('');
    console.log(
      `  ${label.padEnd(26)} ${fmt(r.opsPerSec).padStart(10)} ${unit}/s  ${fmt(r.cpuUsPerOp, 2).padStart(7)} µs CPU/${unit}` +
        (r.serverCpuUsPerOp !== undefined ? `  store ${fmt(r.serverCpuUsPerOp, 2).padStart(6)} µs/${unit}` : '') +
        extra,
    );
  };
  for (let round = 1; round <= rounds; round++) {
    console.log(`round ${round}`);
    for (const name of candidates) {
      await before?.(name);
      const s0 = pids.length > 0 ? serverCpuMs(pids) : 0;
      let r = await runChild(self, name, context);
      if (pids.length > 0 && r.totalOps > 0) r.serverCpuUsPerOp = ((serverCpuMs(pids) - s0) * 1000) / r.totalOps;
      r = { ...r, ...((await after?.(name, r)) ?? {}) };
      results[name].push(r);
      showRow(name, r);
    }
  }
  const base = candidates[0];
  console.log(`medians of ${rounds} rounds (ratio: median of the per-round ${unit}/s ratios against ${base}; CPU ratio likewise, >1 = ${base} cheaper)`);
  const summary = [];
  for (const name of candidates) {
    const rs = results[name];
    const m = {
      name,
      opsPerSec: median(rs.map((r) => r.opsPerSec)),
      cpuUsPerOp: median(rs.map((r) => r.cpuUsPerOp)),
      ...(rs[0].serverCpuUsPerOp !== undefined ? { serverCpuUsPerOp: median(rs.map((r) => r.serverCpuUsPerOp)) } : {}),
      speedRatio: median(rs.map((r, i) => results[base][i].opsPerSec / r.opsPerSec)),
      cpuRatio: median(rs.map((r, i) => r.cpuUsPerOp / results[base][i].cpuUsPerOp)),
    };
    for (const c of extraColumns) if (c.median !== undefined) m[c.key] = c.median(rs);
    summary.push(m);
    const extra = extraColumns.filter((c) => c.median !== undefined).map((c) => `  ${c.label} ${c.value(m)}`).join('');
    console.log(
      `  ${name.padEnd(26)} ${fmt(m.opsPerSec).padStart(10)} ${unit}/s  ${fmt(m.cpuUsPerOp, 2).padStart(7)} µs CPU/${unit}` +
        (m.serverCpuUsPerOp !== undefined ? `  store ${fmt(m.serverCpuUsPerOp, 2).padStart(6)} µs/${unit}` : '') +
        (name === base ? '' : `  ${base} ×${m.speedRatio.toFixed(2)} ${unit}/s, ×${m.cpuRatio.toFixed(2)} less CPU`) +
        extra,
    );
  }
  return summary;
}
