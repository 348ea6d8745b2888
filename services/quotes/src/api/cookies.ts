import type { FastifyRequest } from 'fastify';

/** Cookie values of a request by name (first occurrence wins, as browsers send the most specific first). */
export function readCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (header === undefined) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (out.has(name)) continue;
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    try {
      out.set(name, decodeURIComponent(value));
    } catch {
      out.set(name, value);
    }
  }
  return out;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/**
 * Whether cookies get the Secure flag: on HTTPS, and on loopback hosts, which browsers treat as
 * secure contexts and accept Secure cookies from over plain HTTP. Elsewhere over plain HTTP a
 * Secure cookie would be dropped and sign-in could not work, so the flag is left off there;
 * production deployments are expected behind HTTPS (QUOTES_TRUST_PROXY for X-Forwarded-Proto).
 */
export function secureCookies(request: FastifyRequest): boolean {
  return request.protocol === 'https' || LOOPBACK_HOSTS.has(request.hostname.toLowerCase()) || request.hostname.toLowerCase().endsWith('.localhost');
}

export interface CookieOptions {
  secure: boolean;
  /** Seconds; 0 deletes the cookie; undefined = a session cookie. */
  maxAge?: number;
}

/** `HttpOnly; SameSite=Lax; Path=/` always; `Secure` per `secureCookies`. */
export function serializeCookie(name: string, value: string, opts: CookieOptions): string {
  let s = `${name}=${encodeURIComponent(value)}; Path=/; HttpOnly; SameSite=Lax`;
  if (opts.maxAge !== undefined) s += `; Max-Age=${opts.maxAge}`;
  if (opts.secure) s += '; Secure';
  return s;
}
