import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { pipeline, Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { MaybePromise } from '../maybe-promise.js';
import { addVary, chooseEncoding, compressAsync, compressStream, compressSync, SYNC_COMPRESS_MAX, type Encoding } from './compression.js';
import { isQuotesError, QuotesError } from '../errors.js';
import type { CryptoResult } from '../service/quote-service.js';
import { etagMatches } from './http-cache.js';
import { errorResponse, pickLanguage } from './messages.js';

/**
 * A response of the API as a value: the routes fastify answers alone send it with `sendAnswer`;
 * the `/api/v2/crypto` pipeline (crypto-pipeline.ts) writes it with its one AnswerWriter, whichever
 * server object received the request.
 */
export interface Answer {
  status: number;
  /** Header name, value pairs in order; lower-case names, each at most once. */
  headers: string[];
  /** Undefined for a response without a body (304) or with a streamed one. */
  body: string | undefined;
  /** UTF-8 bytes of `body`, when known. */
  bodyBytes?: number | undefined;
  /** A body written as it is produced (chunked), instead of `body`. */
  stream?: AnswerStream | undefined;
}

/** A streamed body and what to release once the response is over (written, abandoned or not wanted). */
export interface AnswerStream {
  chunks: () => AsyncIterable<string>;
  release: () => void;
}

// Lower case, as @fastify/compress looks for `accept-encoding` before adding it.
const QUOTE_VARY = 'authorization, accept-language, accept-encoding';
const JSON_TYPE = 'application/json; charset=utf-8';

let isoAt = NaN;
let iso = '';

/** The `/api/v2/crypto` body around the cached `coins` JSON; `took` in whole milliseconds. */
function quoteBody(coinsJson: string, now: number, took: number): string {
  if (now !== isoAt) {
    isoAt = now;
    iso = new Date(now).toISOString();
  }
  return `{"coins":${coinsJson},"requestedAt":"${iso}","took":${took}}`;
}

/**
 * A JSON answer clients may cache privately (per token and language) and revalidate: 304 when
 * If-None-Match names `etag`, else 200 with `body`. Appends to `headers` (the headers already
 * decided, e.g. the limiters'), which the answer then owns.
 */
export function cacheableAnswer(body: string, etag: string, maxAgeSeconds: number, ifNoneMatch: string | undefined, headers: string[] = []): Answer {
  headers.push('cache-control', `private, max-age=${maxAgeSeconds}`, 'etag', etag, 'vary', QUOTE_VARY);
  if (etagMatches(ifNoneMatch, etag)) return { status: 304, headers, body: undefined };
  headers.push('content-type', JSON_TYPE);
  return { status: 200, headers, body };
}

/** The `/api/v2/crypto` answer for a quote (see cacheableAnswer); `took` in whole milliseconds. */
export function quoteAnswer(result: CryptoResult, ifNoneMatch: string | undefined, now: number, took: number, headers: string[] = []): Answer {
  const body = quoteBody(result.coinsJson, now, took);
  const answer = cacheableAnswer(body, result.etag, result.maxAgeSeconds, ifNoneMatch, headers);
  // The envelope around the coins is ASCII (a date and digits).
  if (answer.body !== undefined && result.coinsBytes !== undefined) answer.bodyBytes = result.coinsBytes + body.length - result.coinsJson.length;
  return answer;
}

/** Sets `name` in a header list as fastify's `reply.header` does: replaced in place when present. */
function setHeader(headers: string[], name: string, value: string): void {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] === name) {
      headers[i + 1] = value;
      return;
    }
  }
  headers.push(name, value);
}

function removeHeader(headers: string[], name: string): void {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] === name) {
      headers.splice(i, 2);
      return;
    }
  }
}

/** Where an unexpected failure is logged (pino's and fastify's loggers both fit). */
export interface ErrorLog {
  error(obj: object, msg: string): void;
}

/**
 * The one place failures become brapi status codes and bodies (`{"error": true, "message": ...}`,
 * in Portuguese when Accept-Language prefers it): typed errors by their code, other 4xx errors
 * (the framework's, e.g. a malformed body) as BAD_REQUEST with their status, anything else as
 * INTERNAL, logged. The error's headers are set over `headers` (the headers already decided).
 */
export function errorAnswer(err: unknown, acceptLanguage: string | undefined, log: ErrorLog, headers: string[] = []): Answer {
  let failure: QuotesError;
  let status: number | undefined;
  if (isQuotesError(err)) failure = err;
  else {
    const code = (err as { statusCode?: unknown } | undefined)?.statusCode;
    if (typeof code === 'number' && code >= 400 && code < 500) {
      failure = new QuotesError('BAD_REQUEST');
      status = code;
    } else {
      log.error({ err }, 'request failed');
      failure = new QuotesError('INTERNAL');
    }
  }
  const lang = pickLanguage(acceptLanguage);
  const res = errorResponse(failure.code, failure.details, lang);
  for (const k in res.headers) setHeader(headers, k, res.headers[k]!);
  setHeader(headers, 'cache-control', 'no-store');
  setHeader(headers, 'content-language', lang);
  // fastify drops a Content-Type set before an error and adds the handler's last.
  removeHeader(headers, 'content-type');
  headers.push('content-type', JSON_TYPE);
  return { status: status ?? res.status, headers, body: JSON.stringify(res.body) };
}

/** Writes an answer through fastify (which adds Content-Length, and drops the body of HEAD). */
export function sendAnswer(reply: FastifyReply, answer: Answer): FastifyReply {
  const h = answer.headers;
  for (let i = 0; i < h.length; i += 2) reply.header(h[i]!, h[i + 1]);
  return reply.code(answer.status).send(answer.body);
}

/** Bytes buffered ahead of the socket per streamed answer. */
const STREAM_HIGH_WATER = 64 * 1024;

/**
 * The one writer of the `/api/v2/crypto` answers, on node's response object (fastify's route
 * hands it `reply.raw` after `reply.hijack()`; the pre-router its own): the header lines in order,
 * Content-Length for a whole body, no body for HEAD, and the response compression that
 * @fastify/compress gives every other route, with the same choices (compression.ts,
 * `chooseEncoding`): the same encodings, threshold and Vary. Whole bodies up to
 * SYNC_COMPRESS_MAX bytes are compressed at once; larger ones on zlib's thread pool.
 */
export class AnswerWriter {
  constructor(
    /** QUOTES_COMPRESSION_MIN_BYTES when compression is on. */
    private readonly compressMinBytes: number | undefined,
    private readonly log: ErrorLog,
  ) {}

  /** Writes `answer` for a request with these headers; settles when written (a stream: when it ended or failed). */
  write(res: ServerResponse, answer: Answer, request: IncomingHttpHeaders, head: boolean): MaybePromise<void> {
    const { headers, body } = answer;
    const stream = answer.stream;
    // Compressed as the plugin would: never partial content; a whole body only from the threshold on
    // (below it Accept-Encoding is not even read), a stream whatever its size.
    const minBytes = answer.status === 206 ? undefined : this.compressMinBytes;
    if (stream !== undefined) return this.writeStream(res, answer, stream, chooseEncoding(request, minBytes), head);
    if (body === undefined) {
      // No Content-Length for 204 and 304 (RFC 9110 §8.6), as fastify.
      if (answer.status >= 200 && answer.status !== 204 && answer.status !== 304) headers.push('content-length', '0');
      res.writeHead(answer.status, headers);
      res.end();
      return;
    }
    const bytes = answer.bodyBytes ?? Buffer.byteLength(body);
    const encoding = minBytes === undefined || bytes < minBytes ? undefined : chooseEncoding(request, minBytes);
    if (encoding === undefined) {
      headers.push('content-length', String(bytes));
      res.writeHead(answer.status, headers);
      res.end(head ? undefined : body);
      return;
    }
    if (bytes <= SYNC_COMPRESS_MAX) {
      this.writeCompressed(res, answer, encoding, compressSync(encoding, body), head);
      return;
    }
    return compressAsync(encoding, body).then(
      (compressed) => this.writeCompressed(res, answer, encoding, compressed, head),
      (err: unknown) => {
        this.log.error({ err }, 'compressing an answer failed');
        res.destroy();
      },
    );
  }

  private writeCompressed(res: ServerResponse, answer: Answer, encoding: Encoding, compressed: Buffer, head: boolean): void {
    const headers = answer.headers;
    addVary(headers);
    headers.push('content-encoding', encoding, 'content-length', String(compressed.length));
    res.writeHead(answer.status, headers);
    res.end(head ? undefined : compressed);
  }

  private writeStream(res: ServerResponse, answer: Answer, stream: AnswerStream, encoding: Encoding | undefined, head: boolean): MaybePromise<void> {
    const headers = answer.headers;
    if (encoding !== undefined) {
      addVary(headers);
      headers.push('content-encoding', encoding);
    }
    res.writeHead(answer.status, headers);
    // HEAD: the same headers (chunked, no length) without producing a body nobody reads.
    if (head) {
      stream.release();
      res.end();
      return;
    }
    const source = Readable.from(stream.chunks(), { objectMode: false, highWaterMark: STREAM_HIGH_WATER });
    // The pipeline calls back once the response is over: written, failed, or the client gone.
    return new Promise<void>((resolve) => {
      const finish = (err: Error | null | undefined): void => {
        stream.release();
        // A client that went away mid-answer is no failure of ours.
        if (err && (err as { code?: string }).code !== 'ERR_STREAM_PREMATURE_CLOSE') this.log.error({ err }, 'streaming an answer failed');
        resolve();
      };
      if (encoding === undefined) pipeline(source, res, finish);
      else pipeline(source, compressStream(encoding), res, finish);
    });
  }
}
