import fastQuerystring from 'fast-querystring';

/** A query string as parsed: repeated names collect into arrays. */
export type RawQuery = Record<string, string | string[] | undefined>;

/**
 * The query-string parser of every route (fastify's router is configured with it) and of the
 * fast path, so both read a URL the same way: fast-querystring, the router's own default, with
 * repeated names collected into arrays.
 */
export function parseQueryString(query: string): RawQuery {
  return query.length === 0 ? {} : (fastQuerystring.parse(query) as RawQuery);
}
