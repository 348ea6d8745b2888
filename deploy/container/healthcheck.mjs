// HEALTHCHECK of the service images, run without a shell: GET the service's own health endpoint
// on loopback and exit 0 only for a 200 answer within the timeout.
// Usage: node healthcheck.mjs ratelimit|quotes
const targets = {
  // Ports follow the services' settings, so an image started with PORT / QUOTES_PORT still checks itself.
  ratelimit: () => `http://127.0.0.1:${process.env.PORT || '8080'}/healthcheck`,
  quotes: () => `http://127.0.0.1:${process.env.QUOTES_PORT || '3000'}/health`,
};
const target = targets[process.argv[2] ?? ''];
if (target === undefined) {
  console.error('usage: healthcheck.mjs ratelimit|quotes');
  process.exit(2);
}
try {
  // Below the HEALTHCHECK --timeout, so a hung service is reported by us and not killed mid-check.
  const res = await fetch(target(), { signal: AbortSignal.timeout(2000) });
  process.exit(res.status === 200 ? 0 : 1);
} catch (err) {
  console.error(String(err));
  process.exit(1);
}
