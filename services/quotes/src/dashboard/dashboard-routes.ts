import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RandomBytes } from '../accounts/tokens.js';
import type { UserService } from '../accounts/user-service.js';
import { QuotesError } from '../errors.js';
import type { LoginThrottle } from '../ratelimit/login-throttle.js';
import type { UserRecord } from '../domain/dashboard-repositories.js';
import { readCookies, secureCookies, serializeCookie } from '../api/cookies.js';
import type { DashboardAssets } from './dashboard-assets.js';

export interface DashboardRoutesDeps {
  users: UserService;
  throttle: LoginThrottle;
  assets: DashboardAssets;
  random: RandomBytes;
  sessionTtlSeconds: number;
  /** QUOTES_PUBLIC_MARKET: signed-out visitors may see the market and coin pages. */
  publicMarket: boolean;
}

export const SESSION_COOKIE = 'qd_session';
/** Pre-session CSRF secret for the sign-in and sign-up forms (before any session exists). */
export const PRE_SESSION_COOKIE = 'qd_csrf';

/** The sign-up answer, the same for a new and a taken email. */
export const SIGNUP_ACCEPTED = 'If this email had no account, it has one now: sign in with your password to get your API token';

const CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

function derive(label: string, secret: string): string {
  return createHash('sha256').update(`${label}\u0000${secret}`, 'utf8').digest('base64url');
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

interface Credentials {
  email: string;
  password: string;
}

function credentials(body: unknown): Credentials {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof b.email !== 'string' || typeof b.password !== 'string') throw new QuotesError('SIGNUP_INVALID', { reason: 'Email and password are required' });
  return { email: b.email, password: b.password };
}

/**
 * The account dashboard: the built single-page app under /dashboard and its JSON API under
 * /dashboard/api. Sessions live in an HttpOnly SameSite=Lax cookie holding a random id (only its
 * hash is stored); every POST needs the synchroniser CSRF token (derived from the session id, or
 * from a pre-session cookie for sign-in/sign-up) in `X-CSRF-Token`, a JSON body and, when the
 * browser sends one, a same-origin `Origin`.
 */
export function registerDashboardRoutes(app: FastifyInstance, deps: DashboardRoutesDeps): void {
  const { users } = deps;

  const cookie = (request: FastifyRequest, name: string): string | undefined => readCookies(request.headers.cookie).get(name);

  const setCookie = (request: FastifyRequest, reply: FastifyReply, name: string, value: string, maxAge?: number): void => {
    // Fastify appends repeated set-cookie headers instead of replacing them.
    void reply.header('set-cookie', serializeCookie(name, value, { secure: secureCookies(request), ...(maxAge === undefined ? {} : { maxAge }) }));
  };

  async function currentUser(request: FastifyRequest): Promise<UserRecord | undefined> {
    return await users.resolveSession(cookie(request, SESSION_COOKIE));
  }

  async function requireUser(request: FastifyRequest): Promise<UserRecord> {
    const user = await currentUser(request);
    if (user === undefined) throw new QuotesError('SIGNED_OUT');
    return user;
  }

  /**
   * Every state-changing request: same origin, JSON, and the CSRF token of this browser. While a
   * session is live only its token counts; the pre-session token (its cookie is replaced at
   * sign-in and sign-out, see `rotatePreSession`) is accepted only by the forms that have no
   * session yet (sign-in, sign-up) and by sign-out.
   */
  async function checkCsrf(request: FastifyRequest): Promise<void> {
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== `${request.protocol}://${request.host}`) throw new QuotesError('CSRF_REJECTED');
    if (!/^application\/json\b/i.test(request.headers['content-type'] ?? '')) throw new QuotesError('CSRF_REJECTED');
    const sent = request.headers['x-csrf-token'];
    if (typeof sent !== 'string' || sent === '') throw new QuotesError('CSRF_REJECTED');
    const sid = cookie(request, SESSION_COOKIE);
    if (sid !== undefined && (await users.resolveSession(sid)) !== undefined) {
      if (sameText(sent, derive('csrf', sid))) return;
      throw new QuotesError('CSRF_REJECTED');
    }
    const url = request.routeOptions.url;
    if (url !== '/dashboard/api/signin' && url !== '/dashboard/api/signup' && url !== '/dashboard/api/signout') throw new QuotesError('CSRF_REJECTED');
    const pre = cookie(request, PRE_SESSION_COOKIE);
    if (pre !== undefined && pre.length >= 32 && sameText(sent, derive('pre', pre))) return;
    throw new QuotesError('CSRF_REJECTED');
  }

  /**
   * A new pre-session secret for this browser, replacing the one whose token was shown before
   * sign-in or while signed in, so that token stops working; returns the new token.
   */
  function rotatePreSession(request: FastifyRequest, reply: FastifyReply): string {
    const pre = deps.random(32).toString('base64url');
    setCookie(request, reply, PRE_SESSION_COOKIE, pre);
    return derive('pre', pre);
  }

  /** Fixation defence: whatever session the browser had is dropped, and a new id is issued. */
  async function signInAs(request: FastifyRequest, reply: FastifyReply, user: UserRecord): Promise<string> {
    await users.endSession(cookie(request, SESSION_COOKIE));
    const sid = await users.startSession(user.id);
    setCookie(request, reply, SESSION_COOKIE, sid, deps.sessionTtlSeconds);
    // The pre-session token of the sign-in form is dead from here on.
    setCookie(request, reply, PRE_SESSION_COOKIE, '', 0);
    return derive('csrf', sid);
  }

  void app.register(
    (scope, _opts, done) => {
      scope.addHook('onRequest', (_request, reply, next) => {
        // The dashboard is same-origin only: no CORS, no framing, never cached.
        reply.removeHeader('access-control-allow-origin');
        reply.removeHeader('access-control-expose-headers');
        void reply.header('cache-control', 'no-store').header('x-frame-options', 'DENY').header('x-content-type-options', 'nosniff').header('referrer-policy', 'same-origin');
        next();
      });
      // Before the body is parsed, so a cross-site form post (any content type) is a plain 403.
      scope.addHook('onRequest', async (request) => {
        if (request.method !== 'GET' && request.method !== 'HEAD') await checkCsrf(request);
      });

      const page = (_request: FastifyRequest, reply: FastifyReply): FastifyReply => {
        const index = deps.assets.get('index.html');
        if (index === undefined) {
          return reply.code(503).type('text/plain; charset=utf-8').send(`dashboard not built: run \`npm run build\` (expected ${deps.assets.dir}/index.html)`);
        }
        return reply.header('content-security-policy', CSP).type(index.type).send(index.body);
      };
      scope.get('/dashboard', page);
      scope.get('/dashboard/', page);
      scope.get<{ Params: { '*': string } }>('/dashboard/assets/*', (request, reply) => {
        const asset = deps.assets.get(`assets/${request.params['*']}`);
        if (asset === undefined) return reply.callNotFound();
        // File names carry a content hash, so they can be cached for good.
        return reply.header('cache-control', 'public, max-age=31536000, immutable').type(asset.type).send(asset.body);
      });

      scope.get('/dashboard/api/session', async (request, reply) => {
        const sid = cookie(request, SESSION_COOKIE);
        const user = await users.resolveSession(sid);
        if (user !== undefined && sid !== undefined) return { signedIn: true, email: user.email, csrfToken: derive('csrf', sid), publicMarket: deps.publicMarket };
        let pre = cookie(request, PRE_SESSION_COOKIE);
        if (pre === undefined || pre.length < 32) {
          pre = deps.random(32).toString('base64url');
          setCookie(request, reply, PRE_SESSION_COOKIE, pre);
        }
        return { signedIn: false, csrfToken: derive('pre', pre), publicMarket: deps.publicMarket };
      });

      // The same answer whether or not the email already has an account (no enumeration):
      // nothing is signed in here; the account is used by signing in with its password.
      scope.post('/dashboard/api/signup', async (request, reply) => {
        await deps.throttle.signup(request.ip);
        const { email, password } = credentials(request.body);
        await users.signUp(email, password);
        return reply.code(202).send({ message: SIGNUP_ACCEPTED });
      });

      scope.post('/dashboard/api/signin', async (request, reply) => {
        const { email, password } = credentials(request.body);
        await deps.throttle.attempt(request.ip, email.trim().toLowerCase());
        const user = await users.signIn(email, password);
        if (user === undefined) throw new QuotesError('LOGIN_FAILED');
        const csrfToken = await signInAs(request, reply, user);
        // The first sign-in of an account issues its API token, shown this once.
        const token = await users.issueFirstToken(user);
        return token === undefined ? { email: user.email, csrfToken } : { email: user.email, csrfToken, token };
      });

      scope.post('/dashboard/api/signout', async (request, reply) => {
        await users.endSession(cookie(request, SESSION_COOKIE));
        setCookie(request, reply, SESSION_COOKIE, '', 0);
        return { signedIn: false, csrfToken: rotatePreSession(request, reply) };
      });

      scope.get('/dashboard/api/account', async (request) => {
        const user = await requireUser(request);
        const o = await users.overview(user);
        const p = o.plan;
        return {
          email: o.email,
          plan: { id: p.id, name: p.name, crypto: p.crypto, monthlyRequests: p.monthlyRequests, maxCoinsPerRequest: p.maxCoinsPerRequest, historyDays: p.historyDays, ranges: p.ranges, intervals: p.intervals },
          token: o.token,
          usage: o.usage,
        };
      });

      scope.post('/dashboard/api/token/rotate', async (request, reply) => {
        const user = await requireUser(request);
        const { record, token } = await users.rotateToken(user);
        return reply.code(201).send({ token, id: record.id, prefix: record.prefix, createdAt: new Date(record.createdAt).toISOString() });
      });
      done();
    },
  );
}
