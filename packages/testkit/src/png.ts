// Pixel checks on screenshots without an image library: a PNG's size and how varied its pixel
// bytes are (a blank or uniform image has very few distinct byte values).
import { inflateSync } from 'node:zlib';

/** Width, height and the number of distinct byte values in the decompressed pixel rows of `png`. */
export function pngVariety(png: Buffer): { width: number; height: number; distinct: number } {
  if (png.subarray(1, 4).toString('latin1') !== 'PNG') throw new Error('not a PNG image');
  let off = 8;
  const idat: Buffer[] = [];
  let width = 0;
  let height = 0;
  while (off < png.length) {
    const len = png.readUInt32BE(off);
    const type = png.subarray(off + 4, off + 8).toString('latin1');
    const data = png.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') [width, height] = [data.readUInt32BE(0), data.readUInt32BE(4)];
    if (type === 'IDAT') idat.push(data);
    off += 12 + len;
  }
  return { width, height, distinct: new Set(inflateSync(Buffer.concat(idat))).size };
}
