// The panel queries of the Grafana dashboards in examples/grafana/, for the tests that check them
// (test/unit/grafana-dashboards.test.ts: promtool; test/e2e/grafana-dashboards.test.ts: a real Prometheus).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const GRAFANA_DIR = fileURLToPath(new URL('../../../../examples/grafana/', import.meta.url));
export const DASHBOARDS = ['ratelimit', 'quotes'] as const;

export interface PanelQuery {
  dashboard: string;
  panel: string;
  refId: string;
  /** The expression as written, with Grafana variables. */
  expr: string;
}

interface Panel {
  title: string;
  type: string;
  targets?: { refId: string; expr: string }[];
  panels?: Panel[];
}

/** Every target of every panel (rows included), in order. */
export function panelQueries(dashboard: (typeof DASHBOARDS)[number]): PanelQuery[] {
  const doc = JSON.parse(readFileSync(`${GRAFANA_DIR}${dashboard}.json`, 'utf8')) as { panels: Panel[] };
  const out: PanelQuery[] = [];
  const walk = (panels: Panel[]): void => {
    for (const p of panels) {
      for (const t of p.targets ?? []) out.push({ dashboard, panel: p.title, refId: t.refId, expr: t.expr });
      walk(p.panels ?? []);
    }
  };
  walk(doc.panels);
  return out;
}

/**
 * The expression as Grafana sends it for one job and every instance: `$job` and `$instance` as
 * regexes, `$__rate_interval` as `interval` (Grafana makes it at least four scrape intervals).
 */
export function concrete(expr: string, job: string, interval = '1m'): string {
  return expr.replaceAll('$__rate_interval', interval).replaceAll('$job', job).replaceAll('$instance', '.+');
}
