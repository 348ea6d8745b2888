// A well-behaved client that asks /healthcheck every few milliseconds over one keep-alive
// connection while a test does something heavy: the slowest answer is how long the service's
// event loop was blocked (plus scheduling noise). It runs in its own process so the test's own
// work (encoding a 4 MB request, say) does not count as the service's stall.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';

export interface ProbeResult {
  /** Slowest answer (ms). */
  maxMs: number;
  answers: number;
  failures: number;
}

export interface HealthProbe {
  /** Stops polling; resolves with the slowest answer. */
  stop(): Promise<ProbeResult>;
}

const PROBE_SCRIPT = `
const http = require('node:http');
const url = process.argv[1] + '/healthcheck';
const intervalMs = Number(process.argv[2]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
let running = true, maxMs = 0, answers = 0, failures = 0;
const once = () => new Promise((resolve) => {
  const started = performance.now();
  const done = (ok) => { maxMs = Math.max(maxMs, performance.now() - started); if (ok) answers++; else failures++; resolve(); };
  const req = http.get(url, { agent }, (res) => { res.resume(); res.on('end', () => done(res.statusCode === 200)); });
  req.setTimeout(10000, () => req.destroy(new Error('timeout')));
  req.on('error', () => done(false));
});
(async () => {
  process.stdout.write('started\\n');
  while (running) { await once(); await new Promise((r) => setTimeout(r, intervalMs)); }
  process.stdout.write(JSON.stringify({ maxMs, answers, failures }) + '\\n');
  agent.destroy();
})();
process.stdin.on('data', () => { running = false; });
`;

/** Starts the probe and resolves once it polls. */
export async function startHealthProbe(httpUrl: string, intervalMs = 10): Promise<HealthProbe> {
  const child = spawn(process.execPath, ['-e', PROBE_SCRIPT, httpUrl, String(intervalMs)], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  const lines: ((line: string) => void)[] = [];
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => {
    out += d;
    let i;
    while ((i = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, i);
      out = out.slice(i + 1);
      lines.shift()?.(line);
    }
  });
  const nextLine = (): Promise<string> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('health probe did not answer')), 20_000);
      lines.push((l) => {
        clearTimeout(timer);
        resolve(l);
      });
    });
  await nextLine();
  // A few answers first, so the measured period has the probe's connection warm.
  await new Promise((r) => setTimeout(r, 50));
  return {
    stop: async () => {
      const result = nextLine();
      child.stdin.end('stop\n');
      return JSON.parse(await result) as ProbeResult;
    },
  };
}

/** Resident set size of a process in bytes (Linux /proc), for memory-growth bounds. */
export async function rssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  if (m === null) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

/**
 * Runs `work` while a probe polls /healthcheck and returns the slowest answer. On a loaded
 * machine any single answer can be late for reasons outside the service (the OS did not schedule
 * it), so an attempt over `boundMs` is repeated, up to `attempts` times, and the best attempt is
 * returned: a real stall (the seconds this measures against) is there every time.
 */
export async function measureStall(httpUrl: string, work: () => Promise<void>, boundMs: number, attempts = 3): Promise<ProbeResult & { attempts: number }> {
  let best: ProbeResult | undefined;
  let n = 0;
  while (n < attempts) {
    n += 1;
    const probe = await startHealthProbe(httpUrl);
    await work();
    const r = await probe.stop();
    if (best === undefined || r.maxMs < best.maxMs) best = r;
    if (best.maxMs < boundMs) break;
  }
  return { ...best!, attempts: n };
}
