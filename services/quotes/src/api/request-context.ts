declare module 'fastify' {
  interface FastifyRequest {
    /** performance.now() when the request arrived, for `took`. */
    startedAt: number;
  }
}

export {};
