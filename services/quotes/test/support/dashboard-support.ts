// Shared by the dashboard tests: an app with the embedded rate limiter on the shipped rules, a
// known SQLite file (the CLI opens it too), captured logs, and a cookie-aware inject client.
import { join } from 'node:path';
import { FakeClock, tempDir } from '@rls/testkit';
import pino from 'pino';
import type { LightMyRequestResponse } from 'fastify';
import { EmbeddedDecider } from '../../src/ratelimit/embedded-decider.js';
import { shippedRulesDir } from '../../src/ratelimit/create-gate.js';
import { RateLimitGate } from '../../src/ratelimit/rate-limit-gate.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import { makeTestApp, T0, type TestApp } from './helpers.js';

export interface DashboardApp extends TestApp {
  file: string;
  dir: ReturnType<typeof tempDir>;
}

export async function makeDashboardApp(settings: Record<string, string> = {}): Promise<DashboardApp> {
  const dir = tempDir('quotes-dash-');
  const file = join(dir.path, 'quotes.sqlite');
  const clock = new FakeClock(T0);
  const gate = new RateLimitGate(new EmbeddedDecider({ rulesDir: shippedRulesDir(), clock, random: { int: () => 0 } }), 'quotes', 'allow', pino({ level: 'silent' }), clock);
  const t = await makeTestApp({ clock, store: openSqliteStore(file), rateLimit: gate, logLevel: 'trace', settings });
  return {
    ...t,
    file,
    dir,
    close: async () => {
      await t.close();
      dir.cleanup();
    },
  };
}

/** A browser-like client: keeps cookies, sends the CSRF token it was given. */
export class Browser {
  readonly cookies = new Map<string, string>();
  csrf = '';
  constructor(
    private readonly t: TestApp,
    private readonly host = 'localhost',
  ) {}

  private absorb(res: LightMyRequestResponse): void {
    const raw = res.headers['set-cookie'];
    for (const c of raw === undefined ? [] : Array.isArray(raw) ? raw : [raw]) {
      const [pair = ''] = c.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = decodeURIComponent(pair.slice(eq + 1));
      if (/max-age=0/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('; ');
  }

  async get(url: string): Promise<LightMyRequestResponse> {
    const res = await this.t.app.inject({ method: 'GET', url, headers: { host: this.host, cookie: this.cookieHeader() } });
    this.absorb(res);
    const body = res.headers['content-type']?.toString().startsWith('application/json') ? (res.json<{ csrfToken?: string }>()) : {};
    if (typeof body.csrfToken === 'string') this.csrf = body.csrfToken;
    return res;
  }

  async post(url: string, payload: unknown, opts: { csrf?: string | null; contentType?: string; origin?: string } = {}): Promise<LightMyRequestResponse> {
    const headers: Record<string, string> = { host: this.host, cookie: this.cookieHeader(), 'content-type': opts.contentType ?? 'application/json' };
    const csrf = opts.csrf === undefined ? this.csrf : opts.csrf;
    if (csrf !== null) headers['x-csrf-token'] = csrf;
    if (opts.origin !== undefined) headers.origin = opts.origin;
    const res = await this.t.app.inject({ method: 'POST', url, headers, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) });
    this.absorb(res);
    if (res.statusCode < 300 && res.body !== '') {
      const body = res.json<{ csrfToken?: string }>();
      if (typeof body.csrfToken === 'string') this.csrf = body.csrfToken;
    }
    return res;
  }
}
