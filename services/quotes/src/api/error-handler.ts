import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isQuotesError, type ErrorCode, type ErrorDetails } from '../errors.js';
import { errorResponse, pickLanguage } from './messages.js';

function send(request: FastifyRequest, reply: FastifyReply, code: ErrorCode, details: ErrorDetails, status?: number): FastifyReply {
  const lang = pickLanguage(request.headers['accept-language']);
  const res = errorResponse(code, details, lang);
  for (const [k, v] of Object.entries(res.headers)) reply.header(k, v);
  return reply
    .code(status ?? res.status)
    .header('cache-control', 'no-store')
    .header('content-language', lang)
    .type('application/json; charset=utf-8')
    .send(res.body);
}

/** The one place typed errors become brapi status codes and bodies. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | Error, request, reply) => {
    if (isQuotesError(err)) return send(request, reply, err.code, err.details);
    const status = (err as FastifyError).statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) return send(request, reply, 'BAD_REQUEST', {}, status);
    request.log.error({ err }, 'request failed');
    return send(request, reply, 'INTERNAL', {});
  });
  app.setNotFoundHandler((request, reply) => send(request, reply, 'ROUTE_NOT_FOUND', {}));
}
