import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

/**
 * The requests per minute each plan's burst rules admit, read from the rule files the burst
 * limits enforce (the `quotes` domain of RATELIMIT_RULES_DIR, or the shipped directory that a
 * remote ratelimit service loads too). A plan's API requests send descriptors under
 * `plan=<id>, token=<token id>`; every limit under that path counts each request, so the most a
 * client can make in one minute is the smallest of: a per-second limit times 60 (divided by its
 * unit multiplier), and any limit of a minute or longer. Reported by CoinGecko's `/key` as
 * `rate_limit_request_per_minute`.
 */

interface RawLimit {
  unit?: unknown;
  requests_per_unit?: unknown;
  unit_multiplier?: unknown;
}

interface RawDescriptor {
  key?: unknown;
  value?: unknown;
  rate_limit?: RawLimit;
  rate_limits?: RawLimit[];
  descriptors?: RawDescriptor[];
}

const SECONDS: Readonly<Record<string, number>> = { second: 1, minute: 60, hour: 3600, day: 86_400, week: 604_800, month: 2_592_000, year: 31_536_000 };

/** What one limit allows within a minute; undefined for a limit we cannot read (or `unlimited`). */
function perMinute(l: RawLimit): number | undefined {
  const unit = typeof l.unit === 'string' ? SECONDS[l.unit.toLowerCase()] : undefined;
  const n = typeof l.requests_per_unit === 'number' ? l.requests_per_unit : undefined;
  if (unit === undefined || n === undefined || !(n >= 0)) return undefined;
  const mult = typeof l.unit_multiplier === 'number' && l.unit_multiplier > 0 ? l.unit_multiplier : 1;
  const window = unit * mult;
  return window >= 60 ? n : Math.floor((n * 60) / window);
}

function limitsUnder(d: RawDescriptor, out: number[]): void {
  for (const l of [...(d.rate_limit === undefined ? [] : [d.rate_limit]), ...(Array.isArray(d.rate_limits) ? d.rate_limits : [])]) {
    const v = perMinute(l);
    if (v !== undefined) out.push(v);
  }
  for (const child of Array.isArray(d.descriptors) ? d.descriptors : []) limitsUnder(child, out);
}

/**
 * Per plan id, the requests per minute its rules admit (plans without a rule are absent). Reads
 * every `.yaml`/`.yml` file of `dir` whose domain is `domain`; an unreadable file counts for
 * nothing (the rate limiter itself reports rule errors).
 */
export function planMinuteLimits(dir: string, domain: string): ReadonlyMap<string, number> {
  const out = new Map<string, number>();
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => /\.ya?ml$/i.test(f)).sort();
  } catch {
    return out;
  }
  for (const f of files) {
    let docs: unknown[];
    try {
      docs = parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as unknown);
    } catch {
      continue;
    }
    for (const doc of docs) {
      const root = doc as { domain?: unknown; descriptors?: RawDescriptor[] } | null;
      if (root === null || typeof root !== 'object' || root.domain !== domain || !Array.isArray(root.descriptors)) continue;
      for (const plan of root.descriptors) {
        if (plan.key !== 'plan' || typeof plan.value !== 'string') continue;
        const limits: number[] = [];
        for (const token of Array.isArray(plan.descriptors) ? plan.descriptors : []) if (token.key === 'token') limitsUnder(token, limits);
        if (limits.length > 0) out.set(plan.value, Math.min(...limits, out.get(plan.value) ?? Infinity));
      }
    }
  }
  return out;
}
