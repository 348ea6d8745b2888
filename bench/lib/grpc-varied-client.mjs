// A gRPC load client whose requests differ (h2load sends one body): node:http2 sessions, each keeping
// STREAMS unary calls in flight, cycling through the length-prefixed bodies in BODIES_FILE (a JSON
// array of base64 gRPC frames). Runs DURATION_MS, then prints {"ok":N,"failed":N} on stdout.
// Usage (from a bench script): node bench/lib/grpc-varied-client.mjs PORT PATH BODIES_FILE DURATION_MS SESSIONS STREAMS
import { connect } from 'node:http2';
import { readFileSync } from 'node:fs';

const [port, path, file, durationMs, sessions, streams] = process.argv.slice(2);
const bodies = JSON.parse(readFileSync(file, 'utf8')).map((b) => Buffer.from(b, 'base64'));
const end = Date.now() + Number(durationMs);
let ok = 0;
let failed = 0;
let next = 0;

function call(session) {
  return new Promise((resolve) => {
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
    let status;
    req.on('trailers', (t) => (status = t['grpc-status']));
    req.on('response', (h) => {
      if (h['grpc-status'] !== undefined) status = h['grpc-status'];
    });
    req.on('data', () => {});
    req.on('close', () => {
      if (status === '0') ok++;
      else failed++;
      resolve();
    });
    req.on('error', () => {});
    req.end(bodies[next]);
    next = (next + 1) % bodies.length;
  });
}

async function loop(session) {
  while (Date.now() < end) await call(session);
}

const all = [];
const open = [];
for (let s = 0; s < Number(sessions); s++) {
  const session = connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  open.push(session);
  for (let i = 0; i < Number(streams); i++) all.push(loop(session));
}
await Promise.all(all);
for (const s of open) s.close();
process.stdout.write(JSON.stringify({ ok, failed }) + '\n');
process.exit(0);
