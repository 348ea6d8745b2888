// Pull metrics: the stats registry seen through a statsd_exporter-style mapping. Counters are
// read at scrape time (Prometheus value = running total, summed when a mapping folds several
// stats into one series); gauges are read at scrape time; timers feed prom-client
// histograms/summaries on every observation. A series exists only for stats that exist, so the
// cost is one binding per stat — bounded by the stats the rules create and, for per-value stats,
// by STATS_MAX_SERIES_PER_RULE (docs/ratelimit.md, "Statistics") — plus prom-client's per-series state for timers.
//
// Counter and gauge series are rendered here, not by prom-client: each binding formats its
// `name{labels}` text once, so a scrape is one addition and one string append per series.
// prom-client re-hashed and re-formatted every label set on every scrape, which took about
// 40 µs per series (a 6,000-series scrape blocked the event loop for a quarter of a second on a
// loaded machine); the text is also produced in slices with the event loop free in between.
//
// A stat whose mapped name is already used with another kind or label set is not exported
// (statsd_exporter drops such samples too); it is logged once.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { collectDefaultMetrics, Histogram, Registry, Summary } from 'prom-client';
import type { Logger } from '../logger.js';
import { escapeMetricName, mapStat, type MappingRule, type StatKind, type StatsMapping } from './prom-mapping.js';
import { mergedTagPairs } from './stat-tags.js';
import type { Counter, Gauge, StatsStore, StatTags, Timer } from '@rls/engine';

export interface PrometheusSinkOptions {
  mapping: StatsMapping;
  /** EXTRA_TAGS: a label on every metric. */
  extraTags: StatTags;
  /** Export prom-client's process_* / nodejs_* metrics too (upstream exports Go's). Default true. */
  processMetrics?: boolean;
}

/** One counter or gauge series: its formatted `name{labels}` and the value being assembled. */
interface Series {
  readonly text: string;
  value: number;
  /** A gauge series is shown only when some gauge set it this scrape (non-finite values are not). */
  present: boolean;
}

/** A counter or gauge family, rendered by the sink. */
interface SeriesFamily {
  readonly kind: 'counter' | 'gauge';
  readonly name: string;
  readonly help: string;
  /** By formatted text: stats mapped to the same labels share (and sum into) one series. */
  readonly series: Map<string, Series>;
}

/** A histogram or summary family, kept in prom-client (it keeps the buckets / quantile windows). */
interface ObserverFamily {
  readonly kind: 'histogram' | 'summary';
  labelNames: string[];
  metric: Histogram | Summary;
}

type Family = SeriesFamily | ObserverFamily;

interface ObserverBinding {
  family: ObserverFamily;
  labels: Record<string, string>;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Series appended per turn of the event loop while a scrape is rendered. */
const RENDER_SLICE = 5000;
/** New stats bound (mapped through the mapping's rules, ~50-100 µs each) per turn of the event loop. */
const BIND_SLICE = 500;

/** Text format 0.0.4 escapes, as prom-client writes them. */
function escapeHelp(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function escapeLabelValue(s: string): string {
  return escapeHelp(s).replace(/"/g, '\\"');
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'Nan';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

function seriesText(name: string, labels: Record<string, string>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(labels)) parts.push(`${k}="${escapeLabelValue(v)}"`);
  return parts.length === 0 ? name : `${name}{${parts.join(',')}}`;
}

interface TimerBinding {
  observe(v: number): void;
  scale: number;
}

export class PrometheusSink {
  readonly registry = new Registry();
  private readonly families = new Map<string, Family>();
  /** Counter and gauge families in creation order (the order they are rendered in). */
  private readonly seriesFamilies: SeriesFamily[] = [];
  private readonly counterBindings = new Map<Counter, Series | null>();
  private readonly gaugeBindings = new Map<Gauge, Series | null>();
  private readonly timerBindings = new Map<Timer, TimerBinding | null>();
  private readonly warned = new Set<string>();
  private readonly staticLabelNames = new Map<string, string[]>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly store: StatsStore,
    private readonly opts: PrometheusSinkOptions,
    private readonly logger: Logger,
  ) {
    if (opts.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  start(): void {
    if (this.unsubscribe !== undefined) return;
    this.unsubscribe = this.store.onTimer((_name, ms, timer) => this.observe(timer, ms));
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * The text exposition (format 0.0.4) of every metric, counters and gauges read now. Built in
   * slices of RENDER_SLICE series with the event loop free in between.
   */
  async metrics(): Promise<string> {
    await this.refresh();
    const blocks: string[] = [];
    let n = 0;
    for (const f of this.seriesFamilies) {
      let block = `# HELP ${f.name} ${escapeHelp(f.help)}\n# TYPE ${f.name} ${f.kind}`;
      for (const s of f.series.values()) {
        if (!s.present) continue;
        block += `\n${s.text} ${formatValue(s.value)}`;
        if (++n % RENDER_SLICE === 0) await nextTurn();
      }
      blocks.push(block);
    }
    const rest = await this.registry.metrics();
    // prom-client separates families by a blank line and ends with a newline; so do we.
    const mine = blocks.join('\n\n');
    if (mine === '') return rest;
    if (rest.trim() === '') return mine + '\n';
    return mine + '\n\n' + rest;
  }

  private async refresh(): Promise<void> {
    let bound = 0;
    for (const c of this.store.allCounters()) {
      if (this.counterBindings.has(c)) continue;
      this.counterBindings.set(c, this.bindSeries(c.name, c.tags, 'counter'));
      if (++bound % BIND_SLICE === 0) await nextTurn();
    }
    for (const g of this.store.allGauges()) {
      if (this.gaugeBindings.has(g)) continue;
      this.gaugeBindings.set(g, this.bindSeries(g.name, g.tags, 'gauge'));
      if (++bound % BIND_SLICE === 0) await nextTurn();
    }
    // Values are recomputed from the registry on each scrape (synchronously from here on, so
    // the scrape is one consistent reading).
    for (const f of this.seriesFamilies) {
      for (const s of f.series.values()) {
        s.value = 0;
        s.present = f.kind === 'counter';
      }
    }
    for (const [c, s] of this.counterBindings) if (s !== null) s.value += c.total;
    for (const [g, s] of this.gaugeBindings) {
      if (s === null || !Number.isFinite(g.current)) continue;
      s.value = g.current;
      s.present = true;
    }
  }

  private observe(timer: Timer, ms: number): void {
    let b = this.timerBindings.get(timer);
    if (b === undefined) {
      b = this.bindTimer(timer);
      this.timerBindings.set(timer, b);
    }
    if (b !== null) b.observe(ms * b.scale);
  }

  private bindTimer(timer: Timer): TimerBinding | null {
    const mapped = mapStat(this.opts.mapping, timer.name, 'observer');
    if (mapped?.action === 'drop') return null;
    const rule = mapped?.rule;
    const d = this.opts.mapping.defaults;
    const kind = (rule?.observerType ?? d.observerType) === 'histogram' ? 'histogram' : 'summary';
    const b = this.bindObserver(timer.name, timer.tags, kind);
    if (b === null) return null;
    try {
      const child = b.family.metric.labels(b.labels);
      return { observe: (v) => child.observe(v), scale: rule?.scale ?? 1 };
    } catch (err) {
      this.warnOnce(timer.name, `cannot export timer ${timer.name}: ${err instanceof Error ? err.message : String(err)}`);
      return null;
    }
  }

  /** The mapped name, labels and rule of one stat; null = dropped by the mapping. */
  private mapped(statName: string, tags: StatTags, statKind: StatKind): { name: string; labels: Record<string, string>; rule: MappingRule | undefined } | null {
    const mapped = mapStat(this.opts.mapping, statName, statKind);
    if (mapped?.action === 'drop') return null;
    const labels: Record<string, string> = {};
    for (const [k, v] of mergedTagPairs(tags, this.opts.extraTags)) labels[escapeMetricName(k)] = v;
    if (mapped === undefined) return { name: escapeMetricName(statName), labels, rule: undefined };
    Object.assign(labels, mapped.labels);
    return { name: mapped.name, labels, rule: mapped.rule };
  }

  /** Maps a counter or gauge to its series, creating the family on first use; null = not exported. */
  private bindSeries(statName: string, tags: StatTags, kind: 'counter' | 'gauge'): Series | null {
    const m = this.mapped(statName, tags, kind);
    if (m === null) return null;
    const { name, labels, rule } = m;
    let family = this.families.get(name);
    if (family !== undefined && family.kind !== kind) {
      this.warnOnce(statName, `stat ${statName} maps to ${name} as a ${kind}, but ${name} is already a ${family.kind}; not exported`);
      return null;
    }
    const badLabel = Object.keys(labels).find((k) => !LABEL_NAME.test(k));
    if (!METRIC_NAME.test(name) || badLabel !== undefined) {
      this.warnOnce(statName, `cannot export ${statName} as ${name}: ${badLabel !== undefined ? `invalid label name ${badLabel}` : 'invalid metric name'}`);
      return null;
    }
    if (family === undefined) {
      const f: SeriesFamily = { kind, name, help: this.help(rule, statName), series: new Map() };
      this.families.set(name, f);
      this.seriesFamilies.push(f);
      family = f;
    }
    const series = family.series;
    const text = seriesText(name, labels);
    let s = series.get(text);
    if (s === undefined) {
      s = { text, value: 0, present: false };
      series.set(text, s);
    }
    return s;
  }

  /** Maps a timer to its histogram/summary family and labels, creating the family on first use; null = not exported. */
  private bindObserver(statName: string, tags: StatTags, kind: 'histogram' | 'summary'): ObserverBinding | null {
    const m = this.mapped(statName, tags, 'observer');
    if (m === null) return null;
    const { name, labels, rule } = m;
    const wanted = Object.keys(labels);
    const family = this.families.get(name);
    if (family !== undefined && family.kind !== kind) {
      this.warnOnce(statName, `stat ${statName} maps to ${name} as a ${kind}, but ${name} is already a ${family.kind}; not exported`);
      return null;
    }
    const observer = family;
    // One metric name may carry different label sets: prom-client accepts any subset of a
    // metric's label names, so the family is declared with the union of the names its rules can produce.
    const missing = observer === undefined ? wanted : wanted.filter((k) => !observer.labelNames.includes(k));
    if (observer !== undefined && missing.length > 0) {
      // Observations live in the metric; re-declaring it would lose them.
      this.warnOnce(statName, `stat ${statName} maps to ${name} with labels {${wanted.join(',')}} beyond its declared {${observer.labelNames.join(',')}}; not exported`);
      return null;
    }
    if (observer !== undefined) return { family: observer, labels };
    try {
      const labelNames = [...new Set([...this.ruleLabelNames(name), ...wanted])].sort();
      const created = this.createObserverFamily(name, kind, labelNames, rule, statName);
      this.families.set(name, created);
      return { family: created, labels };
    } catch (err) {
      this.warnOnce(statName, `cannot export ${statName} as ${name}: ${err instanceof Error ? err.message : String(err)}`);
      return null;
    }
  }

  private help(rule: MappingRule | undefined, statName: string): string {
    return rule?.help ?? (rule === undefined ? `statsd stat ${statName}` : `statsd stats matching ${rule.match} (${this.opts.mapping.source})`);
  }

  /** Label names every rule with this (static) metric name can produce, plus the extra tags. */
  private ruleLabelNames(name: string): string[] {
    let names = this.staticLabelNames.get(name);
    if (names === undefined) {
      const set = new Set<string>(Object.keys(this.opts.extraTags).map(escapeMetricName));
      for (const r of this.opts.mapping.rules) if (r.action === 'map' && r.nameTemplate === name) for (const [k] of r.labels) set.add(k);
      names = [...set];
      this.staticLabelNames.set(name, names);
    }
    return names;
  }

  private createObserverFamily(name: string, kind: 'histogram' | 'summary', labelNames: string[], rule: MappingRule | undefined, statName: string): ObserverFamily {
    const common = { name, help: this.help(rule, statName), labelNames, registers: [this.registry] };
    const d = this.opts.mapping.defaults;
    const metric =
      kind === 'histogram'
        ? new Histogram({ ...common, buckets: [...(rule?.buckets ?? d.buckets)] })
        : new Summary({
            ...common,
            percentiles: (rule?.quantiles ?? d.quantiles).map((q) => q.quantile),
            maxAgeSeconds: rule?.maxAgeSeconds ?? d.maxAgeSeconds,
            ageBuckets: rule?.ageBuckets ?? d.ageBuckets,
          });
    return { kind, labelNames, metric };
  }

  private warnOnce(key: string, msg: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.logger.warn(msg);
  }
}
