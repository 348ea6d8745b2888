import { QuotesError } from './errors.js';

/**
 * The origin of the absolute URLs in answers (coinImageUrl, CoinGecko's image links):
 * PUBLIC_BASE_URL, else `<scheme>://<Host>` of the request. The Host header is the client's to
 * choose, so an origin is only ever made here, from what the grammar below allows: a DNS name,
 * an IPv4 address or a bracketed IPv6 address, an optional port, at most MAX_HOST_CHARS. None of
 * its characters needs escaping in JSON text or a URL, which is what lets answers be built once
 * for every origin (OriginJson) and the origin put in as they are sent.
 */
export type Origin = string & { readonly __origin: unique symbol };

/** A DNS name (253 characters) and a port. */
export const MAX_HOST_CHARS = 253 + 6;

// Labels of letters, digits, '-' and '_' (container and service names use '_'), dot-separated, an
// optional final dot; or an IPv6 literal. Each label is bounded, and dots separate them, so the
// match is linear.
const HOST = /^(?:\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?)(?::(\d{1,5}))?$/;
// What may follow the host in PUBLIC_BASE_URL: a path of unreserved and sub-delimiter characters
// (RFC 3986) and percent escapes; no quote, backslash, space or control character.
const PATH = /^(?:\/[A-Za-z0-9._~!$&'()*+,;=:@%-]*)*$/;

/** The last origin made: a client polling sends the same Host every time (the cached-quote path asks per request). */
let last: { scheme: string; host: string; origin: Origin } | undefined;

/** `<scheme>://<host>` when both are acceptable (http or https; `host` as the grammar above), else undefined. */
export function originOf(scheme: string, host: string | undefined): Origin | undefined {
  if (last !== undefined && host === last.host && scheme === last.scheme) return last.origin;
  if (scheme !== 'http' && scheme !== 'https') return undefined;
  if (host === undefined || host.length === 0 || host.length > MAX_HOST_CHARS) return undefined;
  const m = HOST.exec(host);
  if (m === null) return undefined;
  const port = m[1];
  if (port !== undefined && Number(port) > 65_535) return undefined;
  if (host.length - (port === undefined ? 0 : port.length + 1) > 253) return undefined;
  const origin = `${scheme}://${host}` as Origin;
  last = { scheme, host, origin };
  return origin;
}

/** PUBLIC_BASE_URL: `http(s)://host[:port][/path]` (trailing slashes dropped), or a thrown Error saying what is wrong. */
export function parsePublicOrigin(raw: string): Origin {
  const m = /^(https?):\/\/([^/]*)(\/.*)?$/.exec(raw);
  const host = m?.[2];
  const path = (m?.[3] ?? '').replace(/\/+$/, '');
  if (m === null || originOf(m[1]!, host) === undefined || !PATH.test(path)) {
    throw new Error('must be an http(s) URL: scheme, host (a DNS name or IP address), optional port and path, e.g. https://quotes.example.com');
  }
  return `${m[1]}://${host}${path}` as Origin;
}

/**
 * The origin of a request's answers: `configured` (PUBLIC_BASE_URL) when set, else the request's
 * scheme and Host, refused with 400 HOST_INVALID when they are not an acceptable origin.
 */
export function requestOrigin(configured: Origin | undefined, scheme: string, host: string | undefined): Origin {
  if (configured !== undefined) return configured;
  const origin = originOf(scheme, host);
  if (origin === undefined) throw new QuotesError('HOST_INVALID', { limit: MAX_HOST_CHARS });
  return origin;
}

/**
 * Stands for the origin in values built once for every origin (cached quotes, stream records,
 * CoinGecko bodies). JSON.stringify writes it as the escape sequence below, which no data of ours
 * contains (a coin name or symbol with a NUL character is not in any catalogue).
 */
export const ORIGIN_MARK = '\u0000origin\u0000' as Origin;
const MARK_IN_JSON = JSON.stringify(ORIGIN_MARK).slice(1, -1);

/** One origin's text of an OriginJson, and its UTF-8 length. */
export interface RenderedJson {
  readonly origin: Origin;
  readonly json: string;
  readonly bytes: number;
}

/**
 * JSON text built with ORIGIN_MARK for the origin: held once whatever origins ask for it, with
 * the text for the origin asked last kept (most clients of a deployment use one).
 */
export class OriginJson {
  private readonly pieces: readonly string[];
  private last: RenderedJson | undefined;
  private lastText: { origin: Origin; json: string } | undefined;

  /** `text`: JSON written from values built with ORIGIN_MARK as the origin. */
  constructor(readonly text: string) {
    this.pieces = text.split(MARK_IN_JSON);
  }

  /** Places where the origin goes. */
  get origins(): number {
    return this.pieces.length - 1;
  }

  /** The text for `origin`; the last one is kept (the streams of one origin share it). */
  textFor(origin: Origin): string {
    if (this.pieces.length === 1) return this.text;
    const last = this.lastText;
    if (last?.origin === origin) return last.json;
    const json = this.pieces.join(origin);
    this.lastText = { origin, json };
    return json;
  }

  /** The text for `origin`, and its UTF-8 length; kept for the next call with the same origin. */
  render(origin: Origin): RenderedJson {
    const last = this.last;
    if (last?.origin === origin) return last;
    const json = this.textFor(origin);
    const out: RenderedJson = { origin, json, bytes: Buffer.byteLength(json) };
    this.last = out;
    return out;
  }

  /**
   * Characters held at most (the text, and the two origins' texts kept by textFor and render,
   * with the longest origin):
   * what a cache bounded in bytes counts (V8 keeps text without characters beyond Latin-1, such
   * as ours but for a rare coin name, at a byte a character).
   */
  get maxChars(): number {
    return this.text.length * 3 + 2 * this.origins * (MAX_HOST_CHARS + 8);
  }
}
