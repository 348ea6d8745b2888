/** The dashboard's JSON API (same origin, session cookie) and the public quotes API (token). */

export interface SessionInfo {
  signedIn: boolean;
  email?: string;
  csrfToken: string;
}

export interface PlanInfo {
  id: string;
  name: string;
  crypto: boolean;
  monthlyRequests: number;
  maxCoinsPerRequest: number;
  historyDays: number | null;
  ranges: string[];
  intervals: string[];
}

export interface AccountInfo {
  email: string;
  plan: PlanInfo;
  token: { id: string; prefix: string; createdAt: string } | null;
  usage: { month: string; count: number; limit: number; remaining: number; resetAt: string; daily: Array<{ day: string; count: number }> };
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

let csrfToken = '';

async function parse<T>(res: Response): Promise<T> {
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  const body = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  if (!res.ok) throw new ApiError(res.status, typeof body.message === 'string' ? body.message : `HTTP ${res.status}`);
  return body as T;
}

export async function loadSession(): Promise<SessionInfo> {
  const s = await parse<SessionInfo>(await fetch('/dashboard/api/session', { credentials: 'same-origin' }));
  csrfToken = s.csrfToken;
  return s;
}

/** State-changing calls: JSON body plus the CSRF token header. */
export async function post<T>(path: string, body: unknown = {}): Promise<T> {
  const res = await fetch(`/dashboard/api/${path}`, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken },
    body: JSON.stringify(body),
  });
  const out = await parse<T & { csrfToken?: string }>(res);
  if (out !== undefined && typeof out.csrfToken === 'string') csrfToken = out.csrfToken;
  return out;
}

export async function account(): Promise<AccountInfo> {
  return await parse<AccountInfo>(await fetch('/dashboard/api/account', { credentials: 'same-origin' }));
}

const TOKEN_KEY = 'quotes.token';

/**
 * The API token is shown once; the dashboard keeps it in this tab's sessionStorage (never sent to
 * the dashboard API) so the market page can call the public API with it.
 */
export function rememberToken(token: string | undefined): void {
  if (token === undefined) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

export function storedToken(): string | undefined {
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

export async function publicApi<T>(path: string, token: string): Promise<T> {
  const res = await fetch(path, { headers: { authorization: `Bearer ${token}` } });
  return await parse<T>(res);
}
