import type { FastifyInstance } from 'fastify';
import { QuotesError } from '../errors.js';
import { errorAnswer, sendAnswer } from './answers.js';

/** Routes every failure and unknown path of the fastify app to the one error answer (answers.ts). */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => sendAnswer(reply, errorAnswer(err, request.headers['accept-language'], request.log)));
  app.setNotFoundHandler((request, reply) => sendAnswer(reply, errorAnswer(new QuotesError('ROUTE_NOT_FOUND'), request.headers['accept-language'], request.log)));
}
