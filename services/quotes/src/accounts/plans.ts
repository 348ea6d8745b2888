import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isInterval, isRange, type Interval, type Range } from '../domain/intervals.js';
import type { HistoryPolicy } from '../history/range-rules.js';

export interface Plan extends HistoryPolicy {
  id: string;
  name: string;
  /** Whether the crypto endpoints are included at all. */
  crypto: boolean;
  monthlyRequests: number;
  maxCoinsPerRequest: number;
}

export type PlanCatalog = ReadonlyMap<string, Plan>;

/** The plans file shipped with the service (overridable with QUOTES_PLANS_FILE). */
export function defaultPlansFile(root: string): string {
  return join(root, 'plans.json');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Validates a parsed plans document; every problem is listed, each naming the plan. */
export function parsePlans(doc: unknown, source: string): PlanCatalog {
  const problems: string[] = [];
  const plans = new Map<string, Plan>();
  const list = isObject(doc) ? doc.plans : undefined;
  if (!Array.isArray(list) || list.length === 0) throw new Error(`${source}: expected {"plans": [ ... ]} with at least one plan`);
  list.forEach((p: unknown, i) => {
    const where = `${source}: plans[${i}]`;
    if (!isObject(p)) {
      problems.push(`${where}: not an object`);
      return;
    }
    const id = p.id;
    const label = typeof id === 'string' ? `${where} (${id})` : where;
    const bad = (m: string): void => void problems.push(`${label}: ${m}`);
    if (typeof id !== 'string' || !/^[a-z0-9_-]+$/.test(id)) bad('"id" must be a lower-case word');
    if (typeof p.crypto !== 'boolean') bad('"crypto" must be true or false');
    const nonNegInt = (k: string): number => {
      const v = p[k];
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) bad(`"${k}" must be a non-negative integer`);
      return typeof v === 'number' ? v : 0;
    };
    const monthlyRequests = nonNegInt('monthlyRequests');
    const maxCoinsPerRequest = nonNegInt('maxCoinsPerRequest');
    const hd = p.historyDays;
    if (hd !== null && (typeof hd !== 'number' || !Number.isInteger(hd) || hd <= 0)) bad('"historyDays" must be a positive integer or null');
    const ranges = Array.isArray(p.ranges) ? (p.ranges as unknown[]) : [];
    const intervals = Array.isArray(p.intervals) ? (p.intervals as unknown[]) : [];
    if (!Array.isArray(p.ranges) || ranges.some((r) => typeof r !== 'string' || !isRange(r))) bad('"ranges" must list brapi ranges');
    if (!Array.isArray(p.intervals) || intervals.some((r) => typeof r !== 'string' || !isInterval(r))) bad('"intervals" must list brapi intervals');
    if (typeof id === 'string' && plans.has(id)) bad('duplicate id');
    if (typeof id === 'string') {
      plans.set(id, Object.freeze({
        id,
        name: typeof p.name === 'string' ? p.name : id,
        crypto: p.crypto === true,
        monthlyRequests,
        maxCoinsPerRequest,
        historyDays: typeof hd === 'number' ? hd : null,
        ranges: Object.freeze(ranges.filter((r): r is Range => typeof r === 'string' && isRange(r))),
        intervals: Object.freeze(intervals.filter((r): r is Interval => typeof r === 'string' && isInterval(r))),
      }));
    }
  });
  if (problems.length > 0) throw new Error(`invalid plans file:\n  ${problems.join('\n  ')}`);
  return plans;
}

export function loadPlans(file: string): PlanCatalog {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${file}: cannot read plans file (${(err as Error).message})`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file}: not valid JSON (${(err as Error).message})`);
  }
  return parsePlans(doc, file);
}
