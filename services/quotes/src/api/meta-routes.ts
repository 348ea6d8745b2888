import type { FastifyInstance } from 'fastify';
import type { Clock } from '../clock.js';
import type { MarketSnapshots } from '../market/market-snapshots.js';
import { DOCS_PAGE } from './docs-page.js';
import { fallbackIcon, type IconStore } from './icons.js';

export interface MetaRoutesDeps {
  /** Where `GET /` redirects: the market page (when public) or the docs. */
  home: string;
  openapi: Record<string, unknown>;
  icons: IconStore;
  snapshots: MarketSnapshots;
  clock: Clock;
  marketSource: string;
  storeKind: string;
  staleMs: number;
}

/** Unauthenticated routes: health, OpenAPI, docs page, icons, CORS preflight. */
export function registerMetaRoutes(app: FastifyInstance, deps: MetaRoutesDeps): void {
  const openapiJson = JSON.stringify(deps.openapi);

  app.get('/health', async (_request, reply) => {
    const snap = await deps.snapshots.current();
    const now = deps.clock.now();
    let newest = 0;
    for (const t of snap.tickers.values()) newest = Math.max(newest, t.closeTime);
    const fresh = newest > 0 && now - newest <= deps.staleMs;
    reply.header('cache-control', 'no-store');
    return {
      status: fresh ? 'ok' : 'degraded',
      marketSource: deps.marketSource,
      store: deps.storeKind,
      coins: snap.tickers.size,
      marketTime: newest > 0 ? new Date(newest).toISOString() : null,
    };
  });

  app.get('/', (_request, reply) => {
    void reply.code(302).header('location', deps.home).header('cache-control', 'no-store').send();
  });

  // The pages' icon: a rising price line on a rounded square, drawn once.
  const favicon =
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#0f172a"/>' +
    '<path d="M5 23l7-8 5 5 10-11" fill="none" stroke="#34d399" stroke-width="3.2" stroke-linecap="round" stroke-linejoin="round"/>' +
    '<circle cx="27" cy="9" r="2.6" fill="#fbbf24"/></svg>';
  app.get('/favicon.svg', (_request, reply) => {
    void reply.header('cache-control', 'public, max-age=86400').type('image/svg+xml').send(favicon);
  });
  app.get('/favicon.ico', (_request, reply) => {
    void reply.code(301).header('location', '/favicon.svg').send();
  });

  app.get('/openapi.json', (_request, reply) => {
    void reply.header('cache-control', 'public, max-age=300').type('application/json; charset=utf-8').send(openapiJson);
  });

  app.get('/docs', (_request, reply) => {
    void reply.header('cache-control', 'public, max-age=300').type('text/html; charset=utf-8').send(DOCS_PAGE);
  });

  app.get<{ Params: { file: string } }>('/icons/:file', (request, reply) => {
    const m = /^(.+)\.svg$/i.exec(request.params.file);
    const icon = m?.[1] === undefined ? undefined : deps.icons.get(m[1]);
    if (icon === undefined) return reply.callNotFound();
    void reply.header('cache-control', 'public, max-age=86400').header('x-icon-fallback', icon.found ? '0' : '1').type('image/svg+xml').send(icon.svg);
  });

  // Exchange logos (CoinGecko's `image` and `include_exchange_logo`): a generated icon per exchange id.
  app.get<{ Params: { file: string } }>('/icons/exchanges/:file', (request, reply) => {
    const m = /^([a-z0-9_-]{1,40})\.svg$/i.exec(request.params.file);
    if (m?.[1] === undefined) return reply.callNotFound();
    void reply.header('cache-control', 'public, max-age=86400').type('image/svg+xml').send(fallbackIcon(`exchange:${m[1].toLowerCase()}`));
  });

  app.options('*', (_request, reply) => {
    void reply
      .code(204)
      .header('access-control-allow-methods', 'GET, HEAD, OPTIONS')
      .header('access-control-allow-headers', 'Authorization, Content-Type, If-None-Match, Accept-Language, X-Cg-Demo-Api-Key, X-Cg-Pro-Api-Key')
      .header('access-control-max-age', '86400')
      .send();
  });
}
