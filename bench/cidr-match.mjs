// Matching by CIDR (docs/ratelimit.md, "Matching by CIDR and prefix"): decisions per second of the
// engine on the memory store, in this process (RateLimitService.shouldRateLimit, answered at once), for a domain
// whose `remote_address` rule matches
//   none     a value-less `key: remote_address` rule (every address its own counter), no CIDR rules
//   10       the same, beside 10 `cidr:` rules (random /16 to /32 blocks)
//   100000   the same, beside 100,000 `cidr:` rules (random /16 to /32 blocks, IPv4 and IPv6)
//   list     the same 100,000 blocks as one rule (`cidr: [...]`, one set of statistics)
// Every request carries one address drawn from a fixed pool (half inside some block, half not; a
// quarter IPv6), so each scenario does the same store work; only the matching differs. The
// scenarios take turns for ROUNDS rounds (so a slow spell of a shared machine hits each alike) and
// the medians are printed, with the ratios of 100000 and list to none (target ≥ 0.9×). It also prints how
// long the 100,000-rule file takes to load, the heap it holds and its typed arrays (off the JS heap).
// Throughput is counted per second of this process's CPU time (the figure a shared machine disturbs
// least) and per wall second. Environment: SECONDS (per scenario and round, default 2), ROUNDS (default 5).
// Run: npx tsc -b && node bench/cidr-match.mjs   (node --expose-gc: the heap column is what the rules retain)
import { DEFAULT_LIMITER_OPTIONS, loadRuleSet, MemoryStore, RateLimitService, StatsStore } from '../packages/engine/dist/src/index.js';
import { decodeRateLimitRequest, encodeRateLimitRequest } from '../packages/rls-proto/dist/src/index.js';
import { addresses, blocks, POOL, rulesYaml } from './lib/cidr-workload.mjs';

const SECONDS = Number(process.env.SECONDS ?? 2);
const ROUNDS = Math.max(1, Number(process.env.ROUNDS ?? 5));

const big = blocks(100_000);
const pool = addresses(big);

function scenario(name, cidrs, list = false) {
  const stats = new StatsStore();
  const content = rulesYaml(cidrs, { list });
  // With --expose-gc the heap figure is what the rule set retains (a full collection before and after the
  // load); without, it includes the load's garbage not yet collected.
  globalThis.gc?.();
  const t0 = process.hrtime.bigint();
  const mem0 = process.memoryUsage();
  const rules = loadRuleSet([{ name: 'bench.yaml', content }], { mergeDomainConfig: false, stats });
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  globalThis.gc?.();
  const mem1 = process.memoryUsage();
  const heapMb = (mem1.heapUsed - mem0.heapUsed) / 1e6;
  const arraysMb = (mem1.arrayBuffers - mem0.arrayBuffers) / 1e6;
  const clock = { now: () => Date.now() };
  const service = new RateLimitService({
    store: new MemoryStore({ clock, maxKeys: 2_000_000 }),
    stats,
    clock,
    random: { int: () => 0 },
    options: { ...DEFAULT_LIMITER_OPTIONS, expirationJitterMaxSeconds: 0 },
  });
  service.setRuleSet(rules);
  // Each request as the service hands it to the engine: decoded from its wire bytes, so the value is the flat
  // string the decoder makes (a template literal's address text is a chain of pieces, slower to read).
  const requests = pool.map((value) => {
    const wire = decodeRateLimitRequest(encodeRateLimitRequest({ domain: 'bench', descriptors: [{ entries: [{ key: 'remote_address', value }] }], hitsAddend: 0 }));
    return { domain: wire.domain, descriptors: [{ entries: wire.descriptors[0].entries.map((e) => ({ key: e.key, value: e.value })) }], hitsAddend: 0 };
  });
  return { name, service, requests, loadMs, heapMb, arraysMb, rounds: [], wall: [] };
}

/** Decisions per second of this process's CPU time (steadier than wall time on a shared machine), and per wall second. */
function measure(s) {
  const end = performance.now() + SECONDS * 1000;
  const cpu0 = process.cpuUsage();
  let n = 0;
  let i = 0;
  const reqs = s.requests;
  while (performance.now() < end) {
    for (let k = 0; k < 256; k++) {
      s.service.shouldRateLimit(reqs[i]);
      i = (i + 1) % reqs.length;
    }
    n += 256;
  }
  const cpu = process.cpuUsage(cpu0);
  s.wall.push(n / SECONDS);
  return n / ((cpu.user + cpu.system) / 1e6);
}

const scenarios = [scenario('none', []), scenario('10', big.slice(0, 10)), scenario('100000', big), scenario('list', big, true)];
// Warm-up: JIT every path before the measured rounds.
for (const s of scenarios) for (let i = 0; i < 50_000; i++) s.service.shouldRateLimit(s.requests[i % s.requests.length]);
for (let r = 0; r < ROUNDS; r++) for (const s of scenarios) s.rounds.push(measure(s));

const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};
const fmt = (x, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
console.log(`\nCIDR matching on the memory store, in process (shouldRateLimit, answered at once), ${POOL} distinct addresses, ${SECONDS}s × ${ROUNDS} alternating rounds\n`);
console.log(`| rules | decisions per CPU-second (median) | per round | decisions per wall second (median) | rule load ms | heap MB after load${globalThis.gc ? ' (retained)' : ' (with uncollected garbage)'} | typed arrays MB |`);
console.log('|---|---|---|---|---|---|---|');
for (const s of scenarios) console.log(`| ${s.name} | ${fmt(median(s.rounds))} | ${s.rounds.map((x) => fmt(x)).join(' ')} | ${fmt(median(s.wall))} | ${fmt(s.loadMs, 1)} | ${fmt(s.heapMb, 1)} | ${fmt(s.arraysMb, 1)} |`);
const ratio = (a, b) => median(scenarios[a].rounds.map((x, i) => x / scenarios[b].rounds[i]));
console.log(`\n10 vs none:     ${fmt(ratio(1, 0), 2)}× (median of per-round ratios, per CPU-second)`);
console.log(`100000 vs none: ${fmt(ratio(2, 0), 2)}× (target ≥ 0.9×)`);
console.log(`list vs none:   ${fmt(ratio(3, 0), 2)}× (the 100,000 blocks as one rule)`);
