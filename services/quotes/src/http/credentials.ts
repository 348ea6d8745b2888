import { parseQueryString } from './query-string.js';

/** brapi's query parameter for the token (also read on CoinGecko routes). */
export const TOKEN_PARAM = 'token';
/** CoinGecko's key query parameters; either names a token here. */
export const CG_KEY_PARAMS = ['x_cg_pro_api_key', 'x_cg_demo_api_key'] as const;
/** CoinGecko's key headers. */
export const CG_KEY_HEADERS = ['x-cg-pro-api-key', 'x-cg-demo-api-key'] as const;

/** Every query parameter name a token is read from (tokenOf, coingeckoToken). */
const CREDENTIAL_PARAMS: ReadonlySet<string> = new Set([TOKEN_PARAM, ...CG_KEY_PARAMS]);

const MASK = '[REDACTED]';

/**
 * Whether a query parameter, given as the router's query parser decodes its name, may carry a
 * token: a name the authenticators read, compared after trimming and in lower case so that
 * near-misses (`TOKEN=`, `token+=`) are masked too (masking more than authenticates costs nothing).
 */
function isCredentialName(decoded: string): boolean {
  return CREDENTIAL_PARAMS.has(decoded.trim().toLowerCase());
}

/**
 * A request URL as it may be logged: the value of every query parameter that can carry a token
 * replaced by [REDACTED]. "Can carry" is decided as the authenticators decide it: the query is
 * where the router finds it (after the first `?` or `#` past the first character, as find-my-way
 * splits a URL), cut at `&`, and each name decoded by the query parser the routes and the fast
 * path read the token with (parseQueryString), so `%74oken=` and `x_cg_pro_api_key=` are masked
 * exactly because they authenticate. Never throws (it runs inside the logger).
 */
export function maskCredentials(url: string): string {
  let start = -1;
  for (let i = 1; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 63 /* ? */ || c === 35 /* # */) {
      start = i + 1;
      break;
    }
  }
  if (start < 0) return url;
  const parts = url.slice(start).split('&');
  let masked = false;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const eq = part.indexOf('=');
    const rawName = eq < 0 ? part : part.slice(0, eq);
    if (rawName === '') continue;
    let decoded: string;
    try {
      decoded = Object.keys(parseQueryString(`${rawName}=`))[0] ?? rawName;
    } catch {
      decoded = rawName;
    }
    if (isCredentialName(decoded)) {
      parts[i] = `${rawName}=${MASK}`;
      masked = true;
    }
  }
  return masked ? `${url.slice(0, start)}${parts.join('&')}` : url;
}
