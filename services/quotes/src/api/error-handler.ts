import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { QuotesError } from '../errors.js';
import { errorAnswer, sendAnswer } from './answers.js';
import { errorResponse } from './messages.js';

export interface ErrorLimits {
  /** QUOTES_MAX_BODY_BYTES (fastify's bodyLimit), named in 413 answers. */
  maxBodyBytes: number;
  /** QUOTES_MAX_HEADER_BYTES (node's maxHeaderSize), named in 431 answers. */
  maxHeaderBytes: number;
}

/** Most characters of a client-sent value (a content type) repeated in a message. */
const ECHO_MAX = 100;

/**
 * fastify's own errors (body parsing, a malformed URL) as typed errors, so they get the brapi
 * shape and a message naming the problem; anything else is returned as it is.
 */
export function frameworkError(err: unknown, limits: ErrorLimits): unknown {
  const code = (err as { code?: unknown } | undefined)?.code;
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new QuotesError('PAYLOAD_TOO_LARGE', { limit: limits.maxBodyBytes });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': {
      const type = /Unsupported Media Type: (.*)$/s.exec((err as Error).message)?.[1];
      return new QuotesError('UNSUPPORTED_MEDIA_TYPE', type === undefined || type === '' ? {} : { reason: type.slice(0, ECHO_MAX) });
    }
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new QuotesError('BAD_REQUEST', { reason: 'the body is not valid JSON' });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new QuotesError('BAD_REQUEST', { reason: 'the JSON body is empty' });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new QuotesError('BAD_REQUEST', { reason: 'the body does not match Content-Length' });
    case 'FST_ERR_BAD_URL':
      return new QuotesError('BAD_REQUEST', { reason: 'malformed URL' });
    default:
      return err;
  }
}

/**
 * The answer to a request node's HTTP parser refused before any route saw it (fastify's
 * `clientErrorHandler`): 431 when the request line and headers exceed QUOTES_MAX_HEADER_BYTES,
 * 408 when it did not arrive in time, 400 for anything else malformed; in the brapi error shape
 * (English: the headers, Accept-Language included, were never parsed), then the connection is
 * closed, as node and fastify do.
 */
export function clientErrorResponse(err: { code?: string }, limits: ErrorLimits): string {
  const failure =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new QuotesError('HEADERS_TOO_LARGE', { limit: limits.maxHeaderBytes })
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new QuotesError('REQUEST_TIMEOUT')
        : new QuotesError('BAD_REQUEST', { reason: 'malformed HTTP request' });
  const res = errorResponse(failure.code, failure.details, 'en');
  const body = JSON.stringify(res.body);
  return (
    `HTTP/1.1 ${res.status} ${STATUS_CODES[res.status] ?? ''}\r\n` +
    `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\n` +
    `Content-Language: en\r\nConnection: close\r\n\r\n${body}`
  );
}

function onClientError(err: Error & { code?: string }, socket: Duplex, limits: ErrorLimits): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) socket.end(clientErrorResponse(err, limits));
  // end() flushes the answer first; the timer bounds a peer that never reads it.
  setTimeout(() => socket.destroy(), 1000).unref();
}

/** fastify options that route the parser's refusals through `clientErrorResponse`. */
export function clientErrorOptions(limits: ErrorLimits): { clientErrorHandler: (err: Error, socket: Duplex) => void } {
  return { clientErrorHandler: (err, socket) => onClientError(err, socket, limits) };
}

/**
 * Routes every failure of the fastify app to the one error answer (answers.ts): route errors,
 * fastify's own (`frameworkErrors`, body parsing), unknown paths, and requests that arrive
 * while the server is closing (503, instead of fastify's own body).
 */
export function installErrorHandling(app: FastifyInstance, limits: ErrorLimits): void {
  const answer = (err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply => sendAnswer(reply, errorAnswer(frameworkError(err, limits), request.headers['accept-language'], request.log));
  app.setErrorHandler((err, request, reply) => answer(err, request, reply));
  app.setNotFoundHandler((request, reply) => answer(new QuotesError('ROUTE_NOT_FOUND'), request, reply));
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) {
      done();
      return;
    }
    void reply.header('connection', 'close');
    done(new QuotesError('SHUTTING_DOWN', { retryAfterSeconds: 1 }));
  });
}

/** fastify's `frameworkErrors` option: a malformed URL or the like, before routing, in the brapi shape. */
export function frameworkErrorsOption(limits: ErrorLimits): (err: Error, request: FastifyRequest, reply: FastifyReply) => void {
  return (err, request, reply) => {
    void sendAnswer(reply, errorAnswer(frameworkError(err, limits), request.headers['accept-language'], request.log));
  };
}
