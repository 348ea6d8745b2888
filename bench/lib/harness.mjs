// Shared plumbing for the bench scripts: private redis-server, child servers, CPU accounting from
// /proc, and h2load / wrk runners that return parsed figures. Benchmarks print; they never assert.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, mkdirSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { createServer, createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

export const repoRoot = new URL('../..', import.meta.url).pathname;

export async function freePort() {
  return await new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export function tmp(prefix = 'bench-') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Writes one rule file (domain `bench`) into a fresh runtime tree; returns the service's RUNTIME_* env. */
export function rulesEnv(yaml) {
  const root = tmp('bench-rules-');
  const dir = join(root, 'current', 'rl', 'config');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'bench.yaml'), yaml);
  return { RUNTIME_ROOT: join(root, 'current'), RUNTIME_SUBDIRECTORY: 'rl', RUNTIME_APPDIRECTORY: 'config' };
}

const children = new Set();
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => process.exit(130));

export function start(cmd, args, env = {}) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  child.on('exit', () => children.delete(child));
  return {
    child,
    pid: child.pid,
    output: () => out,
    async stop() {
      if (child.exitCode !== null) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await done;
      clearTimeout(t);
    },
  };
}

export async function waitPort(port, what, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const c = createConnection({ host: '127.0.0.1', port }, () => {
        c.end();
        resolve(true);
      });
      c.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${what} did not listen on ${port}`);
    await delay(50);
  }
}

export async function startRedis() {
  const port = await freePort();
  const dir = tmp('bench-redis-');
  const r = start('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]);
  await waitPort(port, 'redis');
  return { ...r, port, url: `127.0.0.1:${port}` };
}

/** utime+stime of a process in milliseconds. */
export function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / clockTicks();
}

let hz;
function clockTicks() {
  if (hz === undefined) {
    const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    hz = Number(r.stdout.trim()) || 100;
  }
  return hz;
}

/** CPU time the hypervisor gave to others (steal) and the total, in ticks, from /proc/stat. */
export function stealTicks() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
  return { steal: f[7] ?? 0, total: f.reduce((a, b) => a + b, 0) };
}

export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/** gRPC length-prefixed frame around a protobuf message. */
export function grpcFrame(message) {
  const b = Buffer.alloc(5 + message.length);
  b.writeUInt8(0, 0);
  b.writeUInt32BE(message.length, 1);
  message.copy(b, 5);
  return b;
}

/**
 * Runs h2load against a gRPC unary path with a fixed body; returns req/s, latency percentiles
 * (from h2load's per-request log), the server's CPU time per request and h2load's own.
 */
export async function h2loadGrpc({ port, path, body, clients = 10, streams = 10, durationS = 10, warmupS = 2, serverPids = [] }) {
  const dir = tmp('bench-h2load-');
  const bodyFile = join(dir, 'body.bin');
  const logFile = join(dir, 'requests.log');
  writeFileSync(bodyFile, body);
  const url = `http://127.0.0.1:${port}${path}`;
  const args = ['-c', String(clients), '-m', String(streams), '-t', '1',
    '-H', 'content-type: application/grpc', '-H', 'te: trailers', '-d', bodyFile];
  // Warm-up (JIT, connection pools), then the measured run.
  spawnSync('h2load', [...args, '-D', String(warmupS), url], { encoding: 'utf8' });
  const cpu0 = serverPids.reduce((s, p) => s + cpuMs(p), 0);
  const st0 = stealTicks();
  // bash's `times` prints the CPU time h2load used (children user and system) after its report.
  const res = spawnSync('bash', ['-c', 'h2load "$@"; times', 'h2load', ...args, '-D', String(durationS), '--log-file', logFile, url], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const cpu1 = serverPids.reduce((s, p) => s + cpuMs(p), 0);
  const st1 = stealTicks();
  const out = res.stdout;
  const times = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/.exec(out.trimEnd());
  const clientMs = times ? (Number(times[1]) * 60 + Number(times[2]) + Number(times[3]) * 60 + Number(times[4])) * 1000 : NaN;
  const m = /finished in ([\d.]+)s, ([\d.]+) req\/s/.exec(out);
  const done = /requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(out);
  const lat = readFileSync(logFile, 'utf8').trim().split('\n').map((l) => Number(l.split('\t')[2]) / 1000).sort((a, b) => a - b);
  const requests = done ? Number(done[1]) : lat.length;
  return {
    rps: m ? Number(m[2]) : NaN,
    requests,
    failed: done ? Number(done[3]) + Number(done[4]) : NaN,
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    cpuUsPerReq: ((cpu1 - cpu0) * 1000) / Math.max(1, requests),
    clientUsPerReq: (clientMs * 1000) / Math.max(1, requests),
    /** Share of the machine's CPU time the hypervisor took (steal) during the run, in %. */
    stealPct: (100 * (st1.steal - st0.steal)) / Math.max(1, st1.total - st0.total),
    raw: out,
  };
}

/** Runs wrk with a POST body; returns req/s, p50/p99 and server CPU per request. */
export async function wrkPost({ port, path, body, connections = 50, threads = 1, durationS = 10, warmupS = 2, serverPids = [] }) {
  const dir = tmp('bench-wrk-');
  const script = join(dir, 'post.lua');
  writeFileSync(script, `wrk.method = "POST"\nwrk.body = ${JSON.stringify(body)}\nwrk.headers["Content-Type"] = "application/json"\n`);
  const url = `http://127.0.0.1:${port}${path}`;
  const base = ['-t', String(threads), '-c', String(connections), '-s', script, '--latency'];
  spawnSync('wrk', [...base, '-d', `${warmupS}s`, url], { encoding: 'utf8' });
  const cpu0 = serverPids.reduce((s, p) => s + cpuMs(p), 0);
  const res = spawnSync('wrk', [...base, '-d', `${durationS}s`, url], { encoding: 'utf8' });
  const cpu1 = serverPids.reduce((s, p) => s + cpuMs(p), 0);
  return { ...parseWrk(res.stdout), cpuUsPerReqFn: (n) => ((cpu1 - cpu0) * 1000) / Math.max(1, n) };
}

function toMs(v, unit) {
  const n = Number(v);
  return unit === 'us' ? n / 1000 : unit === 's' ? n * 1000 : n;
}

export function parseWrk(out) {
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const p50 = /\s50%\s+([\d.]+)(us|ms|s)/.exec(out);
  const p99 = /\s99%\s+([\d.]+)(us|ms|s)/.exec(out);
  const total = Number(/(\d+) requests in/.exec(out)?.[1]);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  return { rps, requests: total, non2xx, p50: p50 ? toMs(p50[1], p50[2]) : NaN, p99: p99 ? toMs(p99[1], p99[2]) : NaN, raw: out };
}

export function fmt(n, digits = 0) {
  return Number.isFinite(n) ? n.toFixed(digits) : '-';
}

export function table(rows, columns) {
  const widths = columns.map((c) => Math.max(c.title.length, ...rows.map((r) => String(c.get(r)).length)));
  const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join('  ');
  console.log(line(columns.map((c) => c.title)));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const r of rows) console.log(line(columns.map((c) => c.get(r))));
}
