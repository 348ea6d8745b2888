// grpc.health.v1 messages: HealthCheckRequest {service=1 string}, HealthCheckResponse {status=1 enum}.
import type { Buffer } from 'node:buffer';
import { ProtoReader } from './wire-reader.js';
import { int32Size, lenFieldSize, ProtoWriter, utf8Length } from './wire-writer.js';
import type { HealthCheckRequestMsg, HealthCheckResponseMsg } from './rls-messages.js';

export function decodeHealthCheckRequest(bytes: Uint8Array): HealthCheckRequestMsg {
  const r = new ProtoReader(bytes);
  let service = '';
  while (r.pos < r.end) {
    const tag = r.tag();
    if (tag === 0x0a) service = r.string();
    else r.skip(tag);
  }
  return { service };
}

export function encodeHealthCheckRequest(req: HealthCheckRequestMsg, headroom = 0): Buffer {
  const n = utf8Length(req.service);
  const w = ProtoWriter.alloc(n > 0 ? lenFieldSize(n) : 0, headroom);
  if (n > 0) {
    w.byte(0x0a);
    w.string(req.service, n);
  }
  return w.buf;
}

export function decodeHealthCheckResponse(bytes: Uint8Array): HealthCheckResponseMsg {
  const r = new ProtoReader(bytes);
  let status = 0;
  while (r.pos < r.end) {
    const tag = r.tag();
    if (tag === 0x08) status = r.int32();
    else r.skip(tag);
  }
  return { status };
}

export function encodeHealthCheckResponse(res: HealthCheckResponseMsg, headroom = 0): Buffer {
  const w = ProtoWriter.alloc(res.status !== 0 ? 1 + int32Size(res.status) : 0, headroom);
  if (res.status !== 0) {
    w.byte(0x08);
    w.int32(res.status);
  }
  return w.buf;
}
