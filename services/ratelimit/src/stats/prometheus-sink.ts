// Pull metrics: the stats registry seen through a statsd_exporter-style mapping, in a prom-client
// Registry. Counters are read at scrape time (Prometheus value = running total, summed when a
// mapping folds several stats into one series); gauges are read at scrape time; timers feed
// histograms/summaries on every observation. A series exists only for stats that exist, so the
// cost is one binding (name, labels) per stat — bounded by the stats the rules and the request
// keys create (reference §3.18), plus prom-client's per-series state (a histogram keeps one
// number per bucket).
//
// A stat whose mapped name is already used with another kind or label set is not exported
// (statsd_exporter drops such samples too); it is logged once.
import { collectDefaultMetrics, Counter as PromCounter, Gauge as PromGauge, Histogram, Registry, Summary } from 'prom-client';
import type { Logger } from '../logger.js';
import { escapeMetricName, mapStat, type MappingRule, type StatKind, type StatsMapping } from './prom-mapping.js';
import { mergedTagPairs } from './stat-tags.js';
import type { Counter, Gauge, StatsStore, StatTags, Timer } from './stats-store.js';

export interface PrometheusSinkOptions {
  mapping: StatsMapping;
  /** EXTRA_TAGS: a label on every metric. */
  extraTags: StatTags;
  /** Export prom-client's process_* / nodejs_* metrics too (upstream exports Go's). Default true. */
  processMetrics?: boolean;
}

type Kind = 'counter' | 'gauge' | 'histogram' | 'summary';
type PromMetric = PromCounter | PromGauge | Histogram | Summary;

interface Family {
  kind: Kind;
  labelNames: string[];
  metric: PromMetric;
}

interface Binding {
  family: Family;
  labels: Record<string, string>;
}

interface TimerBinding {
  observe(v: number): void;
  scale: number;
}

export class PrometheusSink {
  readonly registry = new Registry();
  private readonly families = new Map<string, Family>();
  private readonly counterBindings = new Map<Counter, Binding | null>();
  private readonly gaugeBindings = new Map<Gauge, Binding | null>();
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

  /** The text exposition (format 0.0.4) of every metric, counters and gauges read now. */
  async metrics(): Promise<string> {
    this.refresh();
    return this.registry.metrics();
  }

  private refresh(): void {
    for (const c of this.store.allCounters()) {
      if (!this.counterBindings.has(c)) this.counterBindings.set(c, this.bind(c.name, c.tags, 'counter'));
    }
    for (const g of this.store.allGauges()) {
      if (!this.gaugeBindings.has(g)) this.gaugeBindings.set(g, this.bind(g.name, g.tags, 'gauge'));
    }
    // Values are recomputed from the registry on each scrape, so the series are reset first.
    for (const f of this.families.values()) if (f.kind === 'counter' || f.kind === 'gauge') (f.metric as PromCounter | PromGauge).reset();
    for (const [c, b] of this.counterBindings) {
      if (b === null) continue;
      (b.family.metric as PromCounter).inc(b.labels, c.total);
    }
    for (const [g, b] of this.gaugeBindings) {
      if (b === null || !Number.isFinite(g.current)) continue;
      (b.family.metric as PromGauge).set(b.labels, g.current);
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
    const kind: Kind = (rule?.observerType ?? d.observerType) === 'histogram' ? 'histogram' : 'summary';
    const b = this.bind(timer.name, timer.tags, 'observer', kind);
    if (b === null) return null;
    try {
      const child = (b.family.metric as Histogram | Summary).labels(b.labels);
      return { observe: (v) => child.observe(v), scale: rule?.scale ?? 1 };
    } catch (err) {
      this.warnOnce(timer.name, `cannot export timer ${timer.name}: ${err instanceof Error ? err.message : String(err)}`);
      return null;
    }
  }

  /** Maps one stat to its family and labels, creating the family on first use; null = not exported. */
  private bind(statName: string, tags: StatTags, statKind: StatKind, observerKind?: Kind): Binding | null {
    const mapped = mapStat(this.opts.mapping, statName, statKind);
    if (mapped?.action === 'drop') return null;
    const labels: Record<string, string> = {};
    for (const [k, v] of mergedTagPairs(tags, this.opts.extraTags)) labels[escapeMetricName(k)] = v;
    let name: string;
    let rule: MappingRule | undefined;
    if (mapped === undefined) {
      name = escapeMetricName(statName);
    } else {
      name = mapped.name;
      rule = mapped.rule;
      Object.assign(labels, mapped.labels);
    }
    const kind: Kind = statKind === 'observer' ? (observerKind ?? 'summary') : statKind;
    const wanted = Object.keys(labels);
    let family = this.families.get(name);
    if (family !== undefined && family.kind !== kind) {
      this.warnOnce(statName, `stat ${statName} maps to ${name} as a ${kind}, but ${name} is already a ${family.kind}; not exported`);
      return null;
    }
    // One metric name may carry different label sets (2-level keys have {domain,key1}, deeper ones
    // add key2): prom-client accepts any subset of a metric's label names, so the family is
    // declared with the union of the names its rules can produce.
    const missing = family === undefined ? wanted : wanted.filter((k) => !family?.labelNames.includes(k));
    if (family === undefined || missing.length > 0) {
      const labelNames = [...new Set([...(family?.labelNames ?? []), ...this.ruleLabelNames(name), ...wanted])].sort();
      if (family !== undefined && (family.kind === 'histogram' || family.kind === 'summary')) {
        // Observations live in the metric; re-declaring it would lose them.
        this.warnOnce(statName, `stat ${statName} maps to ${name} with labels {${wanted.join(',')}} beyond its declared {${family.labelNames.join(',')}}; not exported`);
        return null;
      }
      try {
        // Counter and gauge values are recomputed from the stats at every scrape, so re-declaring is lossless.
        if (family !== undefined) this.registry.removeSingleMetric(name);
        family = this.createFamily(name, kind, labelNames, rule, statName);
      } catch (err) {
        this.warnOnce(statName, `cannot export ${statName} as ${name}: ${err instanceof Error ? err.message : String(err)}`);
        return null;
      }
      const old = this.families.get(name);
      this.families.set(name, family);
      if (old !== undefined) this.rebind(old, family);
    }
    return { family, labels };
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

  private rebind(old: Family, replacement: Family): void {
    for (const m of [this.counterBindings, this.gaugeBindings] as Map<unknown, Binding | null>[]) {
      for (const b of m.values()) if (b !== null && b.family === old) b.family = replacement;
    }
  }

  private createFamily(name: string, kind: Kind, labelNames: string[], rule: MappingRule | undefined, statName: string): Family {
    const help = rule?.help ?? (rule === undefined ? `statsd stat ${statName}` : `statsd stats matching ${rule.match} (${this.opts.mapping.source})`);
    const common = { name, help, labelNames, registers: [this.registry] };
    const d = this.opts.mapping.defaults;
    let metric: PromMetric;
    switch (kind) {
      case 'counter':
        metric = new PromCounter(common);
        break;
      case 'gauge':
        metric = new PromGauge(common);
        break;
      case 'histogram':
        metric = new Histogram({ ...common, buckets: [...(rule?.buckets ?? d.buckets)] });
        break;
      case 'summary':
        metric = new Summary({
          ...common,
          percentiles: (rule?.quantiles ?? d.quantiles).map((q) => q.quantile),
          maxAgeSeconds: rule?.maxAgeSeconds ?? d.maxAgeSeconds,
          ageBuckets: rule?.ageBuckets ?? d.ageBuckets,
        });
        break;
    }
    return { kind, labelNames, metric };
  }

  private warnOnce(key: string, msg: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.logger.warn(msg);
  }
}
