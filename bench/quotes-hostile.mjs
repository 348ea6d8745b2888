// A well-behaved client's latency on the quotes service alone and beside each attack of issue 23
// (findings 8 and 9) on its live streams and caches; run through bench/quotes-hostile.sh (see
// bench/README.md). For every attack a fresh quotes process (from the sources, SQLite, simulated
// market refreshed every second, so every refresh's work shows) is started; the well-behaved client
// (its own process, open loop at --rps, latency from each request's due time) runs one phase alone
// and one beside the attacker (its own process too, at --attacker-nice). The table shows p50/p99 of
// both, the ratio (target: p99 under attack <= 3x alone), the server's RSS and what the attacker
// did. Prints, asserts nothing. The same file is the client and the attacker (first argument).
import { fork, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer, connect } from 'node:net';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';

const root = new URL('..', import.meta.url).pathname;
const ATTACKS = {
  none: 'nothing: a control row showing how much p99 moves between two phases on its own',
  'stream-hosts': 'one pro token opens short 20-coin streams, each with its own Host, at the plan\'s burst rate (45/s), 4 at a time',
  'cache-hosts': 'one pro token asks 20-coin quotes and /api/v3/coins/markets with a new ~250-character Host each time, and 8 KB Hosts, at 45 requests/s',
  'stream-pairs': 'many pro tokens hold streams following every coin in every quote currency (the most pairs a refresh can have to quote)',
};

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((sorted.length * p) / 100) - 1))] ?? NaN;

// ---------------------------------------------------------------- the well-behaved client
async function client(cfg) {
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  const t0 = performance.now();
  const from = t0 + cfg.warmupMs;
  const to = from + cfg.durationMs;
  const lat = [];
  /** The worst latency in each second of the phase: a burst at the start, a stall per refresh, or lasting harm. */
  const worst = [];
  let failed = 0;
  let inFlight = 0;
  const one = (due) => {
    if (inFlight > cfg.rps * 5) {
      if (due >= from && due < to) (lat.push(cfg.timeoutMs), failed++);
      return;
    }
    inFlight++;
    let done = false;
    const finish = (ok) => {
      if (done) return;
      done = true;
      inFlight--;
      const ms = Math.min(cfg.timeoutMs, performance.now() - due);
      if (due >= from && due < to) {
        lat.push(ms);
        const sec = Math.floor((due - from) / 1000);
        worst[sec] = Math.max(worst[sec] ?? 0, ms);
        if (!ok) failed++;
      }
    };
    const req = request({ host: '127.0.0.1', port: cfg.port, path: cfg.path, agent, headers: { authorization: `Bearer ${cfg.token}` } }, (res) => {
      res.on('data', () => {});
      res.on('end', () => finish(res.statusCode === 200));
      res.on('error', () => finish(false));
    });
    req.on('error', () => finish(false));
    req.setTimeout(cfg.timeoutMs, () => req.destroy());
    req.end();
  };
  let i = 0;
  const end = to + 100;
  while (performance.now() < end) {
    const due = t0 + (i * 1000) / cfg.rps;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    one(due);
    i++;
  }
  while (inFlight > 0 && performance.now() < end + cfg.timeoutMs) await sleep(10);
  lat.sort((a, b) => a - b);
  process.send({ p50: pct(lat, 50), p99: pct(lat, 99), max: lat.at(-1) ?? NaN, n: lat.length, failed, worst: Array.from(worst, (x) => Math.round(x ?? 0)) });
  agent.destroy();
}

// ---------------------------------------------------------------- the attacker
/** Opens a stream, waits for its first quote event (or another status), hangs up unless `hold`. */
function stream(port, path, host, hold) {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    let text = '';
    let settled = false;
    const settle = (status) => {
      if (settled) return;
      settled = true;
      if (!hold || status !== 200) s.destroy();
      resolve({ status, socket: s });
    };
    s.setEncoding('latin1');
    s.on('connect', () => s.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAccept: text/event-stream\r\n\r\n`));
    s.on('data', (d) => {
      if (settled) return; // a held stream: read and drop
      text += d;
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0);
      if (status !== 0 && (status !== 200 || text.includes('event: quote'))) settle(status);
    });
    s.on('error', () => settle(-1));
    s.on('close', () => settle(-1));
    s.setTimeout(30_000, () => settle(-2));
  });
}

function get(port, path, headers, agent) {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent }, (res) => {
      res.on('data', () => {});
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(-1));
    });
    req.on('error', () => resolve(-1));
    req.end();
  });
}

async function attacker(cfg) {
  const until = performance.now() + cfg.durationMs;
  const counts = {};
  const count = (k) => (counts[k] = (counts[k] ?? 0) + 1);
  const paced = async (rate, concurrency, work) => {
    let next = 0;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < until) {
          const i = next++;
          const due = start + (i * 1000) / rate;
          const wait = due - performance.now();
          if (wait > 0) await sleep(wait);
          if (performance.now() >= until) break;
          await work(i);
        }
      }),
    );
  };
  const coins20 = cfg.coins.slice(0, 20).join(',');
  if (cfg.attack === 'none') await sleep(cfg.durationMs);
  else if (cfg.attack === 'stream-hosts') {
    const path = `/api/v2/crypto/stream?coin=${coins20}&currency=BRL&token=${cfg.tokens[0]}`;
    await paced(45, 4, async (i) => count(`stream ${(await stream(cfg.port, path, `h${i}.attacker.example`, false)).status}`));
  } else if (cfg.attack === 'cache-hosts') {
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    await paced(45, 4, async (i) => {
      const label = `${String(i).padStart(6, '0')}${'x'.repeat(53)}`;
      const host = `${label}.${label}.${label}.${label}.example`;
      const auth = { authorization: `Bearer ${cfg.tokens[0]}` };
      if (i % 3 === 0) count(`quote ${await get(cfg.port, `/api/v2/crypto?coin=${coins20}&currency=USD`, { ...auth, host }, agent)}`);
      else if (i % 3 === 1) count(`8KB-Host quote ${await get(cfg.port, `/api/v2/crypto?coin=${coins20}&currency=USD`, { ...auth, host: `${label}${'y'.repeat(8000)}.example` }, agent)}`);
      else count(`markets ${await get(cfg.port, '/api/v3/coins/markets?vs_currency=usd&per_page=100', { ...auth, host }, agent)}`);
    });
    agent.destroy();
  } else if (cfg.attack === 'stream-pairs') {
    // Every coin in every currency, 20 coins a stream, 5 streams a token, opened at 45/s and held.
    const chunks = [];
    for (let i = 0; i < cfg.coins.length; i += 20) chunks.push(cfg.coins.slice(i, i + 20).join(','));
    const wanted = [];
    for (const cur of cfg.currencies) for (const c of chunks) wanted.push({ cur, c });
    const held = [];
    await paced(45, 4, async (i) => {
      if (i >= wanted.length) return void (await sleep(100));
      const w = wanted[i];
      const token = cfg.tokens[1 + Math.floor(i / 5)];
      const r = await stream(cfg.port, `/api/v2/crypto/stream?coin=${w.c}&currency=${w.cur}&token=${token}`, '127.0.0.1', true);
      count(`stream ${r.status}`);
      if (r.status === 200) held.push(r.socket);
    });
    counts['streams wanted'] = wanted.length;
    counts['pairs'] = `${cfg.coins.length} coins x ${cfg.currencies.length} currencies`;
    for (const s of held) s.destroy();
  }
  process.send(counts);
}

// ---------------------------------------------------------------- the bench
async function freePort() {
  return await new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const rssMb = (pid) => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

function runChild(role, cfg, nice = 0) {
  const self = new URL(import.meta.url).pathname;
  const child = nice > 0 ? spawn('nice', ['-n', String(nice), process.execPath, self, role, JSON.stringify(cfg)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }) : fork(self, [role, JSON.stringify(cfg)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    let got;
    child.on('message', (m) => (got = m));
    child.on('exit', (code) => (got === undefined ? reject(new Error(`${role} exited (${code}) without a result`)) : resolve(got)));
  });
}

async function main() {
  const { values: opt } = parseArgs({
    args: process.argv.slice(2),
    options: {
      seconds: { type: 'string', default: '20' },
      rps: { type: 'string', default: '100' },
      'timeout-ms': { type: 'string', default: '2000' },
      only: { type: 'string' },
      'attacker-nice': { type: 'string', default: '10' },
      help: { type: 'boolean', default: false },
    },
  });
  if (opt.help) {
    console.log(`usage: bash bench/quotes-hostile.sh [--seconds N] [--rps N] [--timeout-ms N] [--only a,b] [--attacker-nice N]\nattacks:\n${Object.entries(ATTACKS).map(([k, v]) => `  ${k.padEnd(13)} ${v}`).join('\n')}`);
    return;
  }
  const seconds = Number(opt.seconds);
  const rps = Number(opt.rps);
  const timeoutMs = Number(opt['timeout-ms']);
  const nice = Number(opt['attacker-nice']);
  const selected = opt.only ? opt.only.split(',') : Object.keys(ATTACKS);
  for (const a of selected) if (!(a in ATTACKS)) throw new Error(`unknown attack ${a} (${Object.keys(ATTACKS).join(', ')})`);
  // The service's own modules, through tsx (this process runs with --import tsx).
  const { AccountService } = await import('../services/quotes/src/accounts/account-service.ts');
  const { defaultPlansFile, loadPlans } = await import('../services/quotes/src/accounts/plans.ts');
  const { packageRoot } = await import('../services/quotes/src/package-root.ts');
  const { openSqliteStore } = await import('../services/quotes/src/store/sqlite-store.ts');
  const { QUOTE_CURRENCIES } = await import('../services/quotes/src/market/currencies.ts');

  console.log(`quotes service, fresh process per attack (simulated market refreshed every second, burst limits off: the attacker keeps to the pro plan's 50/s itself)`);
  console.log(`well-behaved client: GET /api/v2/crypto?coin=BTC,ETH,SOL at ${rps}/s (open loop), ${seconds} s alone then ${seconds} s beside the attack; attacker at nice ${nice}; load average ${loadavg()[0].toFixed(1)}`);
  const rows = [];
  for (const attack of selected) {
    const dir = mkdtempSync(join(tmpdir(), 'quotes-hostile-'));
    const store = openSqliteStore(join(dir, 'quotes.sqlite'));
    await store.migrate();
    const accounts = new AccountService({ tokens: store.tokens, usage: store.usage, plans: loadPlans(defaultPlansFile(packageRoot())), clock: { now: () => Date.now() }, random: randomBytes });
    const tokens = [];
    for (let i = 0; i < 40; i++) tokens.push((await accounts.createToken(`bench-${i}`, 'pro')).token);
    const victim = (await accounts.createToken('victim', 'pro')).token;
    await store.close();
    const port = await freePort();
    const server = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', 'services/quotes/src/cli/main.ts', 'serve'], {
      cwd: root,
      env: { ...process.env, QUOTES_DATA_DIR: dir, QUOTES_HOST: '127.0.0.1', QUOTES_METRICS_PORT: '0', QUOTES_PORT: String(port), MARKET_SOURCE: 'simulated', QUOTES_LOG_LEVEL: 'warn', QUOTES_REFRESH_SECONDS: '1', RATELIMIT_ENABLED: 'false' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const stop = () => server.kill('SIGTERM');
    process.on('exit', stop);
    try {
      for (let i = 0; ; i++) {
        const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
        if (ok) break;
        if (i > 600 || server.exitCode !== null) throw new Error('the quotes service did not start');
        await sleep(100);
      }
      const available = await fetch(`http://127.0.0.1:${port}/api/v2/crypto/available`, { headers: { authorization: `Bearer ${victim}` } }).then((r) => r.json());
      const coins = available.coins.filter((c) => c !== 'USDT');
      const clientCfg = { port, token: victim, rps, path: '/api/v2/crypto?coin=BTC,ETH,SOL&currency=USD', warmupMs: 2000, durationMs: seconds * 1000, timeoutMs };
      const alone = await runChild('client', clientCfg);
      const rssBefore = rssMb(server.pid);
      const attackerCfg = { port, attack, tokens, coins, currencies: QUOTE_CURRENCIES, durationMs: seconds * 1000 + 2000 };
      const [under, did] = await Promise.all([runChild('client', clientCfg), runChild('attacker', attackerCfg, nice)]);
      const rssAfter = rssMb(server.pid);
      rows.push({ attack, alone, under, rssBefore, rssAfter, did });
      console.log(`${attack}: worst latency per second (ms) alone ${alone.worst.join(' ')}; under attack ${under.worst.join(' ')}`);
    } finally {
      stop();
      await new Promise((r) => (server.exitCode !== null ? r() : server.once('exit', r)));
      process.off('exit', stop);
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const f = (x) => (Number.isFinite(x) ? x.toFixed(1) : '-');
  console.log('');
  console.log('| attack | alone p50 / p99 ms | under attack p50 / p99 / max ms | p99 ratio | failed | server RSS MB | what the attacker did |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const ratio = r.under.p99 / r.alone.p99;
    console.log(`| ${r.attack} | ${f(r.alone.p50)} / ${f(r.alone.p99)} | ${f(r.under.p50)} / ${f(r.under.p99)} / ${f(r.under.max)} | ${ratio.toFixed(2)}x ${ratio <= 3 ? '(<= 3x)' : '(OVER 3x)'} | ${r.under.failed}/${r.under.n} | ${r.rssBefore.toFixed(0)} -> ${r.rssAfter.toFixed(0)} | ${Object.entries(r.did).map(([k, v]) => `${k}: ${v}`).join(', ')} |`);
  }
}

const role = process.argv[2];
if (role === 'client') await client(JSON.parse(process.argv[3]));
else if (role === 'attacker') await attacker(JSON.parse(process.argv[3]));
else await main();
