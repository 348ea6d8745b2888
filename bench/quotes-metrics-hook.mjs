// CPU of the quotes metrics' per-request work (the onResponse hook: request-stats.ts), measured alone:
// the HTTP A/B (bench/quotes-metrics-ab.sh) is within the noise of a shared machine. On the 2-core VM,
// 2026-11-28: about 100 ns per request; prom-client's Counter.inc + Histogram.observe with label
// objects, which it replaced, cost about 1,250 ns. Prints figures, asserts nothing. Run: node --conditions=source --import tsx bench/quotes-metrics-hook.mjs
import { QuotesMetrics } from '../services/quotes/src/observability/quotes-metrics.ts';

const metrics = new QuotesMetrics();
const hooks = [];
// Capture the hook the metrics install, without the services (the scrape-time part is not per request).
const fake = { addHook: (name, fn) => hooks.push(fn) };
const proto = Object.getPrototypeOf(metrics);
proto.registerComponents = () => undefined; // the scrape-time part
metrics.instrument(fake, {});
const hook = hooks[0];
const request = { routeOptions: { url: '/api/v2/crypto' }, method: 'GET' };
const reply = { statusCode: 200, elapsedTime: 1.7 };
const done = () => undefined;
for (let round = 0; round < 5; round++) {
  const n = 1_000_000;
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) hook(request, reply, done);
  const t = process.cpuUsage(t0);
  console.log(`round ${round + 1}: ${(((t.user + t.system) * 1000) / n).toFixed(0)} ns of CPU per request`);
}
