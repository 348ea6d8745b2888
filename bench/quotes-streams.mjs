// Concurrent live-price streams: opens STREAMS (default 1000) SSE connections to a quotes server
// (bench/quotes-stream-server.mjs, started here as a child process), holds them for SECONDS
// (STREAM_SECONDS, default 10) while the market refreshes every REFRESH_SECONDS (default 2), and prints the
// server's memory per open stream (RSS and V8 heap from /proc and the server's own report) and
// the fan-out latency: from the moment the server starts writing an update (the event's
// requestedAt) to its arrival at each client (same machine clock). Prints, asserts nothing.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

const STREAMS = Number(process.env.STREAMS ?? '1000');
const SECONDS = Number(process.env.STREAM_SECONDS ?? '10');
const COINS = process.env.COINS ?? 'BTC,ETH,SOL';
const root = new URL('..', import.meta.url).pathname;

const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', 'bench/quotes-stream-server.mjs'], {
  cwd: root,
  env: { ...process.env, TOKENS: String(Math.ceil(STREAMS / 1000)) },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const stop = () => child.kill('SIGTERM');
process.on('exit', stop);
const first = await new Promise((resolve, reject) => {
  createInterface({ input: child.stdout }).once('line', resolve);
  child.once('exit', (code) => reject(new Error(`server exited (${code})`)));
});
const { port, tokens } = JSON.parse(first);
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) * 1024;

const latencies = [];
let events = 0;
let opened = 0;
let failed = 0;
function openStream(i) {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    let buf = '';
    let head = false;
    let initial = true;
    s.setEncoding('utf8');
    s.on('connect', () => s.write(`GET /api/v2/crypto/stream?coin=${COINS}&currency=BRL&token=${tokens[Math.floor(i / 1000)]} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`));
    s.on('error', () => {
      failed++;
      resolve();
    });
    s.on('data', (chunk) => {
      const now = Date.now();
      buf += chunk;
      if (!head) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        if (!buf.startsWith('HTTP/1.1 200')) failed++;
        else opened++;
        head = true;
        buf = buf.slice(end + 4);
        resolve();
      }
      let at;
      while ((at = buf.indexOf('"requestedAt":"')) >= 0) {
        const t = Date.parse(buf.slice(at + 15, at + 39));
        buf = buf.slice(at + 40);
        if (initial) initial = false;
        else {
          latencies.push(now - t);
          events++;
        }
      }
      if (buf.length > 65536) buf = buf.slice(-1024);
    });
  });
}

await sleep(500);
const rssBefore = rss();
const t0 = Date.now();
for (let i = 0; i < STREAMS; i += 100) await Promise.all(Array.from({ length: Math.min(100, STREAMS - i) }, (_, k) => openStream(i + k)));
const openMs = Date.now() - t0;
await sleep(1000);
const rssOpen = rss();
latencies.length = 0;
events = 0;
await sleep(SECONDS * 1000);
const rssEnd = rss();
latencies.sort((a, b) => a - b);
const q = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
console.log(`${opened} streams open (${failed} failed) in ${openMs} ms; coins ${COINS} in BRL; refresh every ${process.env.REFRESH_SECONDS ?? 2} s`);
console.log(`server RSS: ${(rssBefore / 1e6).toFixed(1)} MB before, ${(rssOpen / 1e6).toFixed(1)} MB with the streams open, ${(rssEnd / 1e6).toFixed(1)} MB after ${SECONDS} s of updates: ${((rssOpen - rssBefore) / Math.max(1, opened) / 1024).toFixed(1)} KiB per stream`);
console.log(`updates received in ${SECONDS} s: ${events} (${(events / Math.max(1, opened)).toFixed(1)} per stream); fan-out latency (server write start -> client) p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${latencies.at(-1) ?? NaN} ms`);
stop();
process.exit(0);
