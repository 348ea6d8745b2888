// HPACK Huffman decoding (RFC 7541 §5.2, code of Appendix B). The code is canonical, so the table
// is written out as data in its shortest faithful form — the bit length of each symbol's code,
// symbols 0..255 then EOS (256) — and the codes themselves are derived from the lengths (codes of
// equal length are consecutive in symbol order, each length starting where the previous one left
// off, shifted). From the codes we build, once at load time, a state machine that consumes four
// bits per step (no code is shorter than five bits, so a step emits at most one symbol).

// prettier-ignore
const CODE_LENGTHS: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0x00
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 0x10
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, // ' ' .. '/'
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, // '0' .. '?'
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, // '@' .. 'O'
  7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, // 'P' .. '_'
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, // '`' .. 'o'
  6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, // 'p' .. 0x7f
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 0x80
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 0x90
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 0xa0
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 0xb0
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 0xc0
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 0xd0
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 0xe0
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 0xf0
  30, // EOS
];

export const EOS = 256;

/** The code of every symbol (index = symbol), derived canonically from CODE_LENGTHS. */
export function huffmanCodes(): { code: number; bits: number }[] {
  const order = CODE_LENGTHS.map((bits, sym) => ({ sym, bits })).sort((a, b) => a.bits - b.bits || a.sym - b.sym);
  const out: { code: number; bits: number }[] = new Array<{ code: number; bits: number }>(CODE_LENGTHS.length);
  let code = 0;
  let prevBits = order[0]!.bits;
  for (let i = 0; i < order.length; i++) {
    const { sym, bits } = order[i]!;
    if (i > 0) code = (code + 1) * 2 ** (bits - prevBits);
    prevBits = bits;
    out[sym] = { code, bits };
  }
  return out;
}

// ---- decoding state machine ----
// Tree nodes: children[2n], children[2n+1] = child node index, or -(symbol + 1) for a leaf.
// Transition entry for (node, nibble): next node | (emitted symbol + 1) << 9 | FAIL.
const FAIL = 1 << 20;
const NO_SYMBOL_SHIFT = 9;

interface Machine {
  table: Int32Array;
  /** A node where the input may end: the root, or at most 7 bits of EOS's all-ones prefix. */
  accepting: Uint8Array;
}

function buildMachine(): Machine {
  const codes = huffmanCodes();
  const children: number[] = [0, 0];
  let nodes = 1;
  for (let sym = 0; sym < codes.length; sym++) {
    const { code, bits } = codes[sym]!;
    let node = 0;
    for (let b = bits - 1; b >= 0; b--) {
      const bit = Math.floor(code / 2 ** b) % 2;
      const slot = 2 * node + bit;
      if (b === 0) {
        children[slot] = -(sym + 1);
      } else {
        if (children[slot] === 0) {
          children[slot] = nodes++;
          children.push(0, 0);
        }
        node = children[slot]!;
      }
    }
  }
  const depth = new Uint8Array(nodes);
  const ones = new Uint8Array(nodes);
  ones[0] = 1;
  for (let n = 0; n < nodes; n++) {
    for (let bit = 0; bit < 2; bit++) {
      const c = children[2 * n + bit]!;
      if (c > 0) {
        depth[c] = depth[n]! + 1;
        ones[c] = ones[n]! & bit;
      }
    }
  }
  const accepting = new Uint8Array(nodes);
  for (let n = 0; n < nodes; n++) accepting[n] = n === 0 || (ones[n] === 1 && depth[n]! <= 7) ? 1 : 0;
  const table = new Int32Array(nodes * 16);
  for (let n = 0; n < nodes; n++) {
    for (let nib = 0; nib < 16; nib++) {
      let node = n;
      let emitted = -1;
      let fail = false;
      for (let b = 3; b >= 0; b--) {
        const c = children[2 * node + ((nib >> b) & 1)]!;
        if (c < 0) {
          const sym = -c - 1;
          if (sym === EOS) fail = true;
          emitted = sym;
          node = 0;
        } else node = c;
      }
      table[n * 16 + nib] = fail ? FAIL : node | ((emitted + 1) << NO_SYMBOL_SHIFT);
    }
  }
  return { table, accepting };
}

const machine = buildMachine();
let scratch = Buffer.allocUnsafe(256);

/**
 * Decodes `len` Huffman-coded bytes at `start` into a latin1 string (HTTP field bytes map 1:1 to
 * UTF-16 code units, as node:http2 reads them). Returns undefined for invalid input: EOS inside
 * the string, or padding longer than 7 bits or not all ones (RFC 7541 §5.2).
 */
export function huffmanDecode(buf: Buffer, start: number, len: number): string | undefined {
  // Five bits is the shortest code: at most 8/5 symbols per byte.
  const max = Math.ceil((len * 8) / 5);
  if (scratch.length < max) scratch = Buffer.allocUnsafe(Math.max(max, 2 * scratch.length));
  const out = scratch;
  const table = machine.table;
  let node = 0;
  let n = 0;
  const end = start + len;
  for (let i = start; i < end; i++) {
    const byte = buf[i]!;
    let e = table[node * 16 + (byte >> 4)]!;
    if ((e & FAIL) !== 0) return undefined;
    let sym = e >> NO_SYMBOL_SHIFT;
    if (sym !== 0) out[n++] = sym - 1;
    node = e & 0x1ff;
    e = table[node * 16 + (byte & 15)]!;
    if ((e & FAIL) !== 0) return undefined;
    sym = e >> NO_SYMBOL_SHIFT;
    if (sym !== 0) out[n++] = sym - 1;
    node = e & 0x1ff;
  }
  if (machine.accepting[node] !== 1) return undefined;
  return out.toString('latin1', 0, n);
}
