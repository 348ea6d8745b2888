// A gRPC load client that keeps a server busy with requests that differ (h2load sends one body; a
// node:http2 client spends more CPU per call than the server does, so on a 2-core machine it drove
// the service at about a fifth of a core: 18,000 against 140,000-180,000 calls/s with this one).
// Each connection speaks HTTP/2 itself:
// request HEADERS are one pre-encoded block of literal fields (they leave the server's dynamic table
// alone), the body goes in one DATA frame with END_STREAM, and a call counts as done when its
// HEADERS frame with END_STREAM arrives (trailers, or trailers-only), ok when grpc-status is 0. It
// follows the server's SETTINGS (concurrent streams), answers PING, keeps the server's windows open
// and stops sending at GOAWAY. The frame helpers come from the testkit (packages/testkit/src/h2-raw.ts),
// the response HPACK decoder is the service's own (Huffman included), both from dist/.
// Runs DURATION_MS, waits up to 5 s for the calls in flight, then prints {"ok":N,"failed":N} on stdout.
// Usage (from a bench script): node bench/lib/grpc-raw-load.mjs PORT PATH BODIES_FILE DURATION_MS SESSIONS STREAMS
import { connect } from 'node:net';
import { readFileSync } from 'node:fs';
import {
  encodeFrame,
  FrameFlag,
  FrameType,
  grpcRequestHeaders,
  H2_PREFACE,
  hpackLiteralBlock,
  SettingId,
  settingsPayload,
} from '../../packages/testkit/dist/src/h2-raw.js';
import { HpackDecoder } from '../../services/ratelimit/dist/src/server/h2/hpack-decoder.js';

const [port, path, file, durationMs, sessions, streams] = process.argv.slice(2);
const bodies = JSON.parse(readFileSync(file, 'utf8')).map((b) => Buffer.from(b, 'base64'));
const headerBlock = hpackLiteralBlock(grpcRequestHeaders(path));
const end = Date.now() + Number(durationMs);
const MAX_WINDOW = 2 ** 31 - 1;
let ok = 0;
let failed = 0;
let next = 0;

function windowUpdate(increment) {
  const p = Buffer.allocUnsafe(4);
  p.writeUInt32BE(increment);
  return encodeFrame(FrameType.WINDOW_UPDATE, 0, 0, p);
}

function session() {
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1');
    socket.setNoDelay(true);
    let stream = 1;
    let inflight = 0;
    let maxStreams = Number(streams);
    let sendWindow = 65535;
    let received = 0;
    let stopped = false;
    let buffered = Buffer.alloc(0);
    let block = [];
    let blockEnds = false;
    const hpack = new HpackDecoder(4096);
    const fields = [];
    // Calls still in flight when the connection ends (GOAWAY, a close, the 5 s grace) count as failed.
    const done = () => {
      failed += inflight;
      inflight = 0;
      stopped = true;
      socket.destroy();
      resolve();
    };
    const fill = () => {
      if (stopped) return;
      if (Date.now() >= end) {
        if (inflight === 0) done();
        return;
      }
      const out = [];
      while (inflight < maxStreams) {
        const body = bodies[next];
        if (body.length > sendWindow) break;
        next = (next + 1) % bodies.length;
        out.push(encodeFrame(FrameType.HEADERS, FrameFlag.END_HEADERS, stream, headerBlock), encodeFrame(FrameType.DATA, FrameFlag.END_STREAM, stream, body));
        sendWindow -= body.length;
        stream += 2;
        inflight++;
      }
      if (out.length > 0) socket.write(Buffer.concat(out));
    };
    const finish = (status) => {
      if (status === '0') ok++;
      else failed++;
      inflight--;
    };
    socket.on('connect', () => {
      socket.write(
        Buffer.concat([
          H2_PREFACE,
          encodeFrame(FrameType.SETTINGS, 0, 0, settingsPayload([[SettingId.ENABLE_PUSH, 0], [SettingId.INITIAL_WINDOW_SIZE, MAX_WINDOW]])),
          windowUpdate(MAX_WINDOW - 65535),
        ]),
      );
      fill();
    });
    socket.on('data', (chunk) => {
      let buf = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      let at = 0;
      const replies = [];
      while (buf.length - at >= 9) {
        const len = (buf[at] << 16) | (buf[at + 1] << 8) | buf[at + 2];
        if (buf.length - at < 9 + len) break;
        const type = buf[at + 3];
        const flags = buf[at + 4];
        const payload = buf.subarray(at + 9, at + 9 + len);
        at += 9 + len;
        if (type === FrameType.HEADERS || type === FrameType.CONTINUATION) {
          // A HEADERS frame here carries no padding or priority (the service sends neither).
          if (type === FrameType.HEADERS) blockEnds = (flags & FrameFlag.END_STREAM) !== 0;
          block.push(payload);
          if ((flags & FrameFlag.END_HEADERS) !== 0) {
            fields.length = 0;
            hpack.decode(block.length === 1 ? block[0] : Buffer.concat(block), fields, 65536);
            block = [];
            if (blockEnds) {
              let status;
              for (let i = 0; i < fields.length; i += 2) if (fields[i] === 'grpc-status') status = fields[i + 1];
              finish(status);
            }
          }
        } else if (type === FrameType.DATA) {
          received += len;
          if (received > 1 << 26) {
            replies.push(windowUpdate(received));
            received = 0;
          }
        } else if (type === FrameType.SETTINGS && (flags & FrameFlag.ACK) === 0) {
          for (let i = 0; i + 6 <= payload.length; i += 6) {
            if (payload.readUInt16BE(i) === SettingId.MAX_CONCURRENT_STREAMS) maxStreams = Math.min(Number(streams), payload.readUInt32BE(i + 2));
          }
          replies.push(encodeFrame(FrameType.SETTINGS, FrameFlag.ACK, 0));
        } else if (type === FrameType.PING && (flags & FrameFlag.ACK) === 0) {
          replies.push(encodeFrame(FrameType.PING, FrameFlag.ACK, 0, Buffer.from(payload)));
        } else if (type === FrameType.WINDOW_UPDATE && (buf.readUInt32BE(at - len - 4) & 0x7fffffff) === 0) {
          // The connection's window (stream 0, read from the frame header); a body fits any stream's.
          sendWindow += payload.readUInt32BE(0) & 0x7fffffff;
        } else if (type === FrameType.RST_STREAM) {
          finish(undefined);
        } else if (type === FrameType.GOAWAY) {
          done();
          return;
        }
      }
      buffered = at === buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(at));
      if (replies.length > 0) socket.write(Buffer.concat(replies));
      fill();
    });
    socket.on('error', () => done());
    socket.on('close', () => done());
    setTimeout(done, Number(durationMs) + 5000).unref();
  });
}

await Promise.all(Array.from({ length: Number(sessions) }, () => session()));
process.stdout.write(JSON.stringify({ ok, failed }) + '\n');
process.exit(0);
