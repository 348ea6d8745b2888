import type { IncomingHttpHeaders } from 'node:http';
import * as zlib from 'node:zlib';
import { promisify } from 'node:util';
import type { FastifyCompressOptions } from '@fastify/compress';
import { negotiate } from '@fastify/accept-negotiator';

/**
 * node's zlib with one change: a body compressed in one go by brotli tells the encoder its size
 * (BROTLI_PARAM_SIZE_HINT), so the encoder sizes its window for it; measured 2.5x faster on a
 * 1.5 KB quote, and the same output size.
 */
const sizedZlib = {
  ...zlib,
  brotliCompressSync: (buf: zlib.InputType, opts?: zlib.BrotliOptions): Buffer =>
    zlib.brotliCompressSync(buf, { ...opts, params: { ...opts?.params, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: typeof buf === 'string' ? Buffer.byteLength(buf) : buf.byteLength } }),
};

/**
 * Response compression (@fastify/compress): brotli, else gzip, as the request's Accept-Encoding
 * allows (`identity`, `br;q=0` and the like are honoured); bodies from `minBytes` up. Brotli at
 * quality 4 (the plugin's default) compresses JSON about as well as gzip -9 at a fraction of
 * brotli's default cost. `deflate` is left out: clients disagree on whether it means raw deflate
 * or zlib. Compressed answers get `Vary: Accept-Encoding`; ETags are weak (`W/"..."`, see
 * answers.ts), so an identity and a compressed answer of the same data share one ETag and
 * If-None-Match revalidates either (RFC 9110 §8.8.1: weak validators for equivalent
 * representations).
 */
export function compressionOptions(minBytes: number): FastifyCompressOptions {
  return { global: true, encodings: [...ENCODINGS], threshold: minBytes, zlib: sizedZlib, brotliOptions: BROTLI };
}

/** The encodings offered, in the server's order of preference. */
const ENCODINGS = ['br', 'gzip'] as const;
export type Encoding = (typeof ENCODINGS)[number];
/** The plugin's default brotli quality, set here so both writers name it. */
const BROTLI: zlib.BrotliOptions = { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } };
// As the plugin reads the header: `*` (no preference) and `x-gzip` stand for gzip (RFC 9110 §8.4.1.3).
const GZIP_ALIAS = /\*|x-gzip/gu;

/**
 * The encoding the compression plugin would choose for a request (AnswerWriter, for the answers
 * it writes itself; the plugin for every other route): none when compression is off, when the
 * request carries `x-no-compression`, or when its Accept-Encoding names none of ENCODINGS
 * acceptably (`identity`, `br;q=0`, unknown codings). The threshold is the caller's.
 */
export function chooseEncoding(request: IncomingHttpHeaders, minBytes: number | undefined): Encoding | undefined {
  if (minBytes === undefined || request['x-no-compression'] !== undefined) return undefined;
  const header = request['accept-encoding'];
  if (header === undefined) return undefined;
  const chosen = negotiate(header.toLowerCase().replace(GZIP_ALIAS, 'gzip'), [...ENCODINGS]);
  return chosen === 'br' || chosen === 'gzip' ? chosen : undefined;
}

/** Whole bodies up to this many bytes are compressed on the event loop (well under a millisecond); larger ones on zlib's threads. */
export const SYNC_COMPRESS_MAX = 64 * 1024;

export function compressSync(encoding: Encoding, body: string): Buffer {
  return encoding === 'br' ? sizedZlib.brotliCompressSync(body, BROTLI) : zlib.gzipSync(body);
}

const brotliAsync = promisify(zlib.brotliCompress);
const gzipAsync = promisify(zlib.gzip);

export function compressAsync(encoding: Encoding, body: string): Promise<Buffer> {
  if (encoding === 'gzip') return gzipAsync(body);
  const buf = Buffer.from(body);
  return brotliAsync(buf, { params: { ...BROTLI.params, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: buf.byteLength } });
}

export function compressStream(encoding: Encoding): zlib.BrotliCompress | zlib.Gzip {
  return encoding === 'br' ? zlib.createBrotliCompress(BROTLI) : zlib.createGzip();
}

/** Adds `accept-encoding` to the Vary of a header list, as the plugin does for a compressed answer. */
export function addVary(headers: string[]): void {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] === 'vary') {
      if (!headers[i + 1]!.includes('accept-encoding')) headers[i + 1] += ', accept-encoding';
      return;
    }
  }
  headers.push('vary', 'accept-encoding');
}
