// A general HPACK encoder (RFC 7541) for tests only: the service's own encoder writes a few fixed
// response blocks, which cannot exercise the decoder. Every representation is reachable — indexed,
// literal with / without / never indexing, name by index or literal, Huffman or raw strings,
// dynamic table size updates — and the caller picks per field, so property tests can drive the
// decoder through all of its paths with blocks whose decoded list is known.
import { huffmanCodes } from '../../src/server/h2/huffman.js';
import { STATIC_TABLE } from '../../src/server/h2/hpack-static-table.js';

export type Representation = 'indexed' | 'incremental' | 'without' | 'never';

/** How one field is written; a choice that is impossible (index of a missing entry) falls back. */
export interface FieldChoice {
  representation: Representation;
  /** Refer to the name by index when a table has it. */
  nameByIndex: boolean;
  huffmanName: boolean;
  huffmanValue: boolean;
}

const codes = huffmanCodes();

function pushInt(out: number[], head: number, prefixBits: number, value: number): void {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out.push(head | value);
    return;
  }
  out.push(head | max);
  let rest = value - max;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
}

/** Huffman-codes the latin1 bytes of `s`, padded with the high bits of EOS (all ones). */
export function huffmanEncode(s: string): number[] {
  const out: number[] = [];
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const { code, bits: n } = codes[s.charCodeAt(i) & 0xff]!;
    for (let b = n - 1; b >= 0; b--) {
      acc = (acc << 1) | (Math.floor(code / 2 ** b) % 2);
      bits++;
      if (bits === 8) {
        out.push(acc);
        acc = 0;
        bits = 0;
      }
    }
  }
  if (bits > 0) out.push(((acc << (8 - bits)) | ((1 << (8 - bits)) - 1)) & 0xff);
  return out;
}

function pushString(out: number[], s: string, huffman: boolean): void {
  if (huffman) {
    const h = huffmanEncode(s);
    pushInt(out, 0x80, 7, h.length);
    for (const b of h) out.push(b);
  } else {
    pushInt(out, 0, 7, s.length);
    for (let i = 0; i < s.length; i++) out.push(s.charCodeAt(i) & 0xff);
  }
}

export class TestHpackEncoder {
  /** Newest first. */
  private table: [string, string][] = [];
  private size = 0;
  private capacity: number;

  constructor(capacity = 4096) {
    this.capacity = capacity;
  }

  private evict(incoming: number): void {
    while (this.size + incoming > this.capacity && this.table.length > 0) {
      const [n, v] = this.table.pop()!;
      this.size -= n.length + v.length + 32;
    }
  }

  private insert(name: string, value: string): void {
    const entry = name.length + value.length + 32;
    if (entry > this.capacity) {
      this.table = [];
      this.size = 0;
      return;
    }
    this.evict(entry);
    this.table.unshift([name, value]);
    this.size += entry;
  }

  private find(name: string, value: string): { full: number; name: number } {
    let nameIdx = 0;
    for (let i = 0; i < STATIC_TABLE.length; i++) {
      const [n, v] = STATIC_TABLE[i]!;
      if (n === name) {
        if (v === value) return { full: i + 1, name: i + 1 };
        if (nameIdx === 0) nameIdx = i + 1;
      }
    }
    for (let i = 0; i < this.table.length; i++) {
      const [n, v] = this.table[i]!;
      if (n === name) {
        if (v === value) return { full: STATIC_TABLE.length + i + 1, name: nameIdx || STATIC_TABLE.length + i + 1 };
        if (nameIdx === 0) nameIdx = STATIC_TABLE.length + i + 1;
      }
    }
    return { full: 0, name: nameIdx };
  }

  /**
   * One header block. `sizeUpdates` are emitted first (each must be at most the decoder's
   * SETTINGS_HEADER_TABLE_SIZE); `choose(i)` decides how field i is written.
   */
  encode(fields: readonly (readonly [string, string])[], choose: (i: number) => FieldChoice, sizeUpdates: readonly number[] = []): Buffer {
    const out: number[] = [];
    for (const s of sizeUpdates) {
      pushInt(out, 0x20, 5, s);
      this.capacity = s;
      this.evict(0);
    }
    fields.forEach(([name, value], i) => {
      const c = choose(i);
      const found = this.find(name, value);
      if (c.representation === 'indexed' && found.full !== 0) {
        pushInt(out, 0x80, 7, found.full);
        return;
      }
      const rep = c.representation === 'indexed' ? 'incremental' : c.representation;
      const nameIndex = c.nameByIndex ? found.name : 0;
      if (rep === 'incremental') pushInt(out, 0x40, 6, nameIndex);
      else pushInt(out, rep === 'never' ? 0x10 : 0x00, 4, nameIndex);
      if (nameIndex === 0) pushString(out, name, c.huffmanName);
      pushString(out, value, c.huffmanValue);
      if (rep === 'incremental') this.insert(name, value);
    });
    return Buffer.from(out);
  }

  /** The encoder's view of the dynamic table, newest first (must equal the decoder's). */
  entries(): [string, string][] {
    return this.table.map(([n, v]) => [n, v]);
  }
}
