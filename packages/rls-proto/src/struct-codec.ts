// google.protobuf.Struct / Value / ListValue <-> plain JSON values (dynamic_metadata, xDS
// metadata). Recursion is bounded by MAX_DEPTH on decode so hostile nesting cannot blow the stack.
import { ProtoDecodeError } from './decode-error.js';
import type { JsonValue } from './rls-messages.js';
import { MAX_DEPTH, type ProtoReader } from './wire-reader.js';
import { lenFieldSize, utf8Length, type ProtoWriter } from './wire-writer.js';

export type JsonObject = { [k: string]: JsonValue };

// ---- sizes ----------------------------------------------------------------------------------

export function structSize(obj: JsonObject): number {
  let size = 0;
  for (const key in obj) {
    const v = obj[key];
    if (v === undefined) continue;
    size += lenFieldSize(entrySize(key, v));
  }
  return size;
}

function entrySize(key: string, v: JsonValue): number {
  const klen = utf8Length(key);
  return (klen > 0 ? lenFieldSize(klen) : 0) + lenFieldSize(valueSize(v));
}

export function valueSize(v: JsonValue): number {
  switch (typeof v) {
    case 'number':
      return 9;
    case 'string':
      return lenFieldSize(utf8Length(v));
    case 'boolean':
      return 2;
    default:
      if (v === null) return 2;
      if (Array.isArray(v)) return lenFieldSize(listSize(v));
      return lenFieldSize(structSize(v));
  }
}

function listSize(list: JsonValue[]): number {
  let size = 0;
  for (const v of list) size += lenFieldSize(valueSize(v ?? null));
  return size;
}

// ---- writers ----------------------------------------------------------------------------------

/** Writes the fields of a Struct (the caller wrote the tag and length of the Struct itself). */
export function writeStruct(w: ProtoWriter, obj: JsonObject): void {
  for (const key in obj) {
    const v = obj[key];
    if (v === undefined) continue;
    w.byte(0x0a);
    w.uint32(entrySize(key, v));
    const klen = utf8Length(key);
    if (klen > 0) {
      w.byte(0x0a);
      w.string(key, klen);
    }
    w.byte(0x12);
    w.uint32(valueSize(v));
    writeValue(w, v);
  }
}

function writeValue(w: ProtoWriter, v: JsonValue): void {
  switch (typeof v) {
    case 'number':
      w.byte(0x11);
      w.double(v);
      return;
    case 'string':
      w.byte(0x1a);
      w.string(v, utf8Length(v));
      return;
    case 'boolean':
      w.byte(0x20);
      w.byte(v ? 1 : 0);
      return;
    default:
      if (v === null) {
        w.byte(0x08);
        w.byte(0);
      } else if (Array.isArray(v)) {
        w.byte(0x32);
        w.uint32(listSize(v));
        for (const item of v) {
          w.byte(0x0a);
          w.uint32(valueSize(item ?? null));
          writeValue(w, item ?? null);
        }
      } else {
        w.byte(0x2a);
        w.uint32(structSize(v));
        writeStruct(w, v);
      }
  }
}

// ---- readers ----------------------------------------------------------------------------------

function setKey(obj: JsonObject, key: string, v: JsonValue): void {
  // A plain assignment of "__proto__" would change the prototype instead of adding a key.
  if (key === '__proto__') Object.defineProperty(obj, key, { value: v, enumerable: true, writable: true, configurable: true });
  else obj[key] = v;
}

/** Reads a Struct body ending at `end` into `into` (fields merge, later keys win). */
export function readStruct(r: ProtoReader, end: number, depth: number, into: JsonObject = {}): JsonObject {
  if (depth > MAX_DEPTH) throw new ProtoDecodeError('too_deep', 'Struct nested too deeply', r.pos);
  const outer = r.end;
  r.end = end;
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x0a) {
      const e = r.lengthEnd();
      readEntry(r, e, depth, into);
    } else r.skip(tag);
  }
  r.end = outer;
  return into;
}

function readEntry(r: ProtoReader, end: number, depth: number, into: JsonObject): void {
  const outer = r.end;
  r.end = end;
  let key = '';
  let value: JsonValue = null;
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x0a) key = r.string();
    else if (tag === 0x12) value = readValue(r, r.lengthEnd(), depth + 1);
    else r.skip(tag);
  }
  r.end = outer;
  setKey(into, key, value);
}

/** Reads a Value body; a Value with no kind set reads as null. */
export function readValue(r: ProtoReader, end: number, depth: number): JsonValue {
  if (depth > MAX_DEPTH) throw new ProtoDecodeError('too_deep', 'Value nested too deeply', r.pos);
  const outer = r.end;
  r.end = end;
  let v: JsonValue = null;
  while (r.pos < end) {
    const tag = r.tag();
    switch (tag) {
      case 0x08:
        r.uint32();
        v = null;
        break;
      case 0x11:
        v = r.double();
        break;
      case 0x1a:
        v = r.string();
        break;
      case 0x20:
        v = r.bool();
        break;
      case 0x2a:
        v = readStruct(r, r.lengthEnd(), depth + 1);
        break;
      case 0x32:
        v = readList(r, r.lengthEnd(), depth + 1);
        break;
      default:
        r.skip(tag);
    }
  }
  r.end = outer;
  return v;
}

function readList(r: ProtoReader, end: number, depth: number): JsonValue[] {
  const outer = r.end;
  r.end = end;
  const out: JsonValue[] = [];
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x0a) out.push(readValue(r, r.lengthEnd(), depth + 1));
    else r.skip(tag);
  }
  r.end = outer;
  return out;
}

