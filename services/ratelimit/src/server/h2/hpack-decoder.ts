// HPACK field block decoding (RFC 7541): integers, literal and Huffman strings, the static table
// and a dynamic table with size updates and eviction. One decoder per connection (the dynamic
// table is connection state). Errors are compression errors (the connection must end with
// COMPRESSION_ERROR); a field list over the size limit is reported but still decoded to the end,
// because the dynamic table must stay in step with the peer's encoder.
import { equalBytes } from './bytes.js';
import { huffmanDecode } from './huffman.js';
import { STATIC_COUNT, STATIC_TABLE } from './hpack-static-table.js';

export class HpackError extends Error {
  override readonly name = 'HpackError';
}

/** Outcome flags of one decoded block besides the fields. */
export const FIELDS_OK = 0;
/** The field list exceeded the size limit; the fields past it were dropped. */
export const FIELDS_TOO_LARGE = 1;
/** A literal field name is not a valid lower-case HTTP/2 name (the request is malformed). */
export const FIELDS_MALFORMED = 2;

/**
 * One decoded field block. `key` names the field list: a block whose bytes decode to the same list
 * as the decoder's previous one (a repeat, `repeated`) gets the same key and the same `fields`;
 * every other block gets a key no decoder has given before (keys are unique in the process), so
 * a cache of what was read from a field list (a checked request head, say) keys on `key` and is
 * never fooled by another connection's decoder.
 */
export interface DecodedBlock {
  /** Name, value pairs, flat: [n0, v0, n1, v1, ...]. Shared with later repeats: never modified. */
  readonly fields: readonly string[];
  /** FIELDS_* flags. */
  readonly flags: number;
  /** The same bytes as the previous block this decoder decoded, decoded to the same fields. */
  readonly repeated: boolean;
  /** The field list's key (see above); equal keys mean the same fields and flags. */
  readonly key: number;
}

/** The last key given to a field list (process-wide, so keys from different decoders never meet). */
let lastKey = 0;

export class HpackDecoder {
  /** SETTINGS_HEADER_TABLE_SIZE we advertised: the most a size update may ask for. */
  private maxAllowed: number;
  /** Current maximum (the last size update, or maxAllowed). */
  private capacity: number;
  private size = 0;
  // Newest entry last; entries [first, names.length) are live.
  private names: string[] = [];
  private values: string[] = [];
  private first = 0;

  constructor(maxTableSize = 4096) {
    this.maxAllowed = maxTableSize;
    this.capacity = maxTableSize;
  }

  /**
   * A new SETTINGS_HEADER_TABLE_SIZE was acknowledged by the peer. The peer's encoder must follow
   * a smaller limit with a size update before its next reference; shrinking the table now gives
   * the same table (the update evicts the same oldest entries) and bounds memory at once.
   */
  setMaxTableSize(size: number): void {
    this.maxAllowed = size;
    if (this.capacity > size) {
      this.capacity = size;
      this.tableChanges++;
      this.evict(0);
    }
  }

  /** Entries in the dynamic table, newest first (for tests and diagnostics). */
  dynamicEntries(): [string, string][] {
    const out: [string, string][] = [];
    for (let i = this.names.length - 1; i >= this.first; i--) out.push([this.names[i]!, this.values[i]!]);
    return out;
  }

  dynamicSize(): number {
    return this.size;
  }

  // The last block, when decoding it left the dynamic table as it was (only indexed fields and
  // literals without indexing): the same bytes next time decode to the same fields. Clients
  // sending a stream of alike requests (h2load, Envoy's rate limit filter) repeat their block
  // byte for byte once their table is warm, and skipping the Huffman and string work is a
  // measurable part of a request's cost.
  private repeatBlock: Buffer | undefined = undefined;
  private repeatResult: DecodedBlock | undefined = undefined;
  private repeatLimit = 0;
  /** Bumped by every change of the dynamic table (insertion, size update). */
  private tableChanges = 0;

  /**
   * Decodes `block` and appends name, value pairs to `out` (flat: [n0, v0, n1, v1, ...]).
   * Returns FIELDS_* flags; throws HpackError on invalid input.
   */
  decode(block: Buffer, out: string[], maxListSize: number): number {
    const decoded = this.decodeBlock(block, maxListSize);
    for (const f of decoded.fields) out.push(f);
    return decoded.flags;
  }

  /**
   * Decodes `block` (throws HpackError on invalid input). A block repeating the previous one's
   * bytes, when that one left the dynamic table as it was, is not decoded again: the result is
   * `repeated`, with the previous fields and key.
   */
  decodeBlock(block: Buffer, maxListSize: number): DecodedBlock {
    const last = this.repeatBlock;
    if (last !== undefined && maxListSize === this.repeatLimit && equalBytes(block, last)) return this.repeatResult!;
    const out: string[] = [];
    this.repeatBlock = undefined;
    this.repeatResult = undefined;
    const changesBefore = this.tableChanges;
    const flags = this.decodeFields(block, out, maxListSize);
    const key = ++lastKey;
    if (this.tableChanges === changesBefore) {
      this.repeatBlock = Buffer.from(block);
      this.repeatResult = { fields: out, flags, repeated: true, key };
      this.repeatLimit = maxListSize;
    }
    return { fields: out, flags, repeated: false, key };
  }

  private decodeFields(block: Buffer, out: string[], maxListSize: number): number {
    let flags = FIELDS_OK;
    let listSize = 0;
    let pos = 0;
    const end = block.length;
    let fieldsSeen = false;
    while (pos < end) {
      const b = block[pos]!;
      let name: string;
      let value: string;
      if (b >= 0x80) {
        // Indexed field (7-bit prefix).
        pos = this.readInt(block, pos, 7);
        const index = this.int;
        if (index === 0) throw new HpackError('indexed field with index 0');
        name = this.nameAt(index);
        value = this.valueAt(index);
      } else if (b >= 0x40 || b < 0x20) {
        // Literal: with incremental indexing (01, 6-bit prefix), without indexing (0000) or
        // never indexed (0001), both with a 4-bit prefix.
        const indexing = b >= 0x40;
        pos = this.readInt(block, pos, indexing ? 6 : 4);
        const nameIndex = this.int;
        if (nameIndex === 0) {
          pos = this.readString(block, pos);
          name = this.str;
          if (!validName(name)) flags |= FIELDS_MALFORMED;
        } else {
          name = this.nameAt(nameIndex);
        }
        pos = this.readString(block, pos);
        value = this.str;
        if (indexing) this.insert(name, value);
      } else {
        // Dynamic table size update (001, 5-bit prefix): only before the first field.
        if (fieldsSeen) throw new HpackError('dynamic table size update after a field');
        pos = this.readInt(block, pos, 5);
        if (this.int > this.maxAllowed) throw new HpackError(`dynamic table size update to ${this.int} above the limit ${this.maxAllowed}`);
        this.capacity = this.int;
        this.tableChanges++;
        this.evict(0);
        continue;
      }
      fieldsSeen = true;
      listSize += name.length + value.length + 32;
      if (listSize > maxListSize) flags |= FIELDS_TOO_LARGE;
      else out.push(name, value);
    }
    return flags;
  }

  // Results of readInt/readString (fields instead of tuples: no allocation per field).
  private int = 0;
  private str = '';

  private readInt(buf: Buffer, pos: number, prefixBits: number): number {
    const mask = (1 << prefixBits) - 1;
    let value = buf[pos++]! & mask;
    if (value < mask) {
      this.int = value;
      return pos;
    }
    let shift = 0;
    for (;;) {
      if (pos >= buf.length) throw new HpackError('truncated integer');
      const b = buf[pos++]!;
      value += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if ((b & 0x80) === 0) break;
      // Nothing in a field block needs more than 2^31; longer encodings are an attack or garbage.
      if (shift > 28) throw new HpackError('integer too large');
    }
    if (value > 0x7fffffff) throw new HpackError('integer too large');
    this.int = value;
    return pos;
  }

  private readString(buf: Buffer, pos: number): number {
    if (pos >= buf.length) throw new HpackError('truncated string');
    const huffman = (buf[pos]! & 0x80) !== 0;
    pos = this.readInt(buf, pos, 7);
    const len = this.int;
    if (len > buf.length - pos) throw new HpackError('string longer than the field block');
    if (huffman) {
      const s = huffmanDecode(buf, pos, len);
      if (s === undefined) throw new HpackError('invalid Huffman-coded string');
      this.str = s;
    } else {
      this.str = buf.toString('latin1', pos, pos + len);
    }
    return pos + len;
  }

  private nameAt(index: number): string {
    if (index <= STATIC_COUNT) return STATIC_TABLE[index - 1]![0];
    const i = this.names.length - (index - STATIC_COUNT);
    if (i < this.first) throw new HpackError(`index ${index} outside the tables`);
    return this.names[i]!;
  }

  private valueAt(index: number): string {
    if (index <= STATIC_COUNT) return STATIC_TABLE[index - 1]![1];
    return this.values[this.names.length - (index - STATIC_COUNT)]!;
  }

  private insert(name: string, value: string): void {
    this.tableChanges++;
    const entry = name.length + value.length + 32;
    if (entry > this.capacity) {
      // An entry larger than the table empties it and is not added (RFC 7541 §4.4).
      this.evict(this.capacity + 1);
      return;
    }
    this.evict(entry);
    this.names.push(name);
    this.values.push(value);
    this.size += entry;
  }

  /** Evicts oldest entries until `incoming` more octets fit. */
  private evict(incoming: number): void {
    while (this.size + incoming > this.capacity && this.first < this.names.length) {
      this.size -= this.names[this.first]!.length + this.values[this.first]!.length + 32;
      this.first++;
    }
    if (this.first > 64 && this.first * 2 > this.names.length) {
      this.names = this.names.slice(this.first);
      this.values = this.values.slice(this.first);
      this.first = 0;
    }
  }
}

/** HTTP/2 field names: lower case token characters, or a pseudo-header (RFC 9113 §8.2.1). */
function validName(name: string): boolean {
  if (name.length === 0) return false;
  for (let i = name.charCodeAt(0) === 0x3a ? 1 : 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    // token chars minus upper case: ! # $ % & ' * + - . ^ _ ` | ~ digits lower-case letters
    if (c >= 0x61 && c <= 0x7a) continue;
    if (c >= 0x30 && c <= 0x39) continue;
    if (c === 0x2d || c === 0x5f || c === 0x2e || c === 0x21 || c === 0x23 || c === 0x24 || c === 0x25 || c === 0x26 || c === 0x27) continue;
    if (c === 0x2a || c === 0x2b || c === 0x5e || c === 0x60 || c === 0x7c || c === 0x7e) continue;
    return false;
  }
  return true;
}
