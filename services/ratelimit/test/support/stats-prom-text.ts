// A strict parser for the Prometheus text exposition format 0.0.4, for tests: it throws on
// anything a Prometheus server would reject (bad names, bad escapes, bad numbers, TYPE after
// samples, split or duplicate families, duplicate series, inconsistent histograms), so a test
// that parses a scrape proves the output is scrapeable — not just that a substring is there.
// (The npm parser we looked at, parse-prometheus-text-format, drops labelled histogram sums.)

export type PromType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface PromFamily {
  name: string;
  type: PromType;
  help: string | undefined;
  samples: PromSample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set<PromType>(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(s: string, line: number): number {
  // Prometheus reads special values with Go's ParseFloat, which ignores case (prom-client prints `Nan`).
  const lower = s.toLowerCase();
  if (lower === '+inf' || lower === 'inf') return Infinity;
  if (lower === '-inf') return -Infinity;
  if (lower === 'nan') return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) throw new Error(`line ${line}: bad value ${JSON.stringify(s)}`);
  return Number(s);
}

function unescapeHelp(s: string, line: number): string {
  return s.replace(/\\(.)?/g, (_m, c: string | undefined) => {
    if (c === '\\') return '\\';
    if (c === 'n') return '\n';
    throw new Error(`line ${line}: bad escape in HELP`);
  });
}

/** Family a sample name belongs to, given the declared types. */
function familyOf(sampleName: string, types: Map<string, PromType>): string {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!sampleName.endsWith(suffix)) continue;
    const base = sampleName.slice(0, -suffix.length);
    const t = types.get(base);
    if (t === 'histogram' || (t === 'summary' && suffix !== '_bucket')) return base;
  }
  return sampleName;
}

function parseSample(text: string, line: number): PromSample {
  let i = 0;
  const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(text);
  if (nameMatch === null) throw new Error(`line ${line}: bad metric name`);
  const name = nameMatch[0];
  i = name.length;
  const labels: Record<string, string> = {};
  if (text[i] === '{') {
    i++;
    for (;;) {
      if (text[i] === '}') {
        i++;
        break;
      }
      const ln = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(text.slice(i));
      if (ln === null) throw new Error(`line ${line}: bad label name`);
      i += ln[0].length;
      if (text[i] !== '=' || text[i + 1] !== '"') throw new Error(`line ${line}: expected ="`);
      i += 2;
      let v = '';
      for (;;) {
        const c = text[i];
        if (c === undefined) throw new Error(`line ${line}: unterminated label value`);
        if (c === '"') break;
        if (c === '\\') {
          const n = text[i + 1];
          if (n === '\\') v += '\\';
          else if (n === '"') v += '"';
          else if (n === 'n') v += '\n';
          else throw new Error(`line ${line}: bad escape in label value`);
          i += 2;
          continue;
        }
        v += c;
        i++;
      }
      i++;
      if (Object.hasOwn(labels, ln[0])) throw new Error(`line ${line}: duplicate label ${ln[0]}`);
      labels[ln[0]] = v;
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] !== '}') throw new Error(`line ${line}: expected , or }`);
    }
  }
  if (text[i] !== ' ') throw new Error(`line ${line}: expected a space before the value`);
  const rest = text.slice(i + 1).split(' ');
  if (rest.length < 1 || rest.length > 2 || rest.some((x) => x === '')) throw new Error(`line ${line}: expected value [timestamp]`);
  const value = parseValue(rest[0] ?? '', line);
  if (rest[1] !== undefined && !/^-?\d+$/.test(rest[1])) throw new Error(`line ${line}: bad timestamp`);
  return { name, labels, value };
}

function labelKey(labels: Record<string, string>, without?: string): string {
  return Object.keys(labels)
    .filter((k) => k !== without)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`)
    .join(',');
}

function checkHistogram(f: PromFamily): void {
  const groups = new Map<string, { buckets: [number, number][]; sum?: number; count?: number }>();
  for (const s of f.samples) {
    const key = labelKey(s.labels, 'le');
    let g = groups.get(key);
    if (g === undefined) {
      g = { buckets: [] };
      groups.set(key, g);
    }
    if (s.name === `${f.name}_bucket`) {
      const le = s.labels.le;
      if (le === undefined) throw new Error(`${f.name}: bucket without le`);
      g.buckets.push([parseValue(le, 0), s.value]);
    } else if (s.name === `${f.name}_sum`) g.sum = s.value;
    else if (s.name === `${f.name}_count`) g.count = s.value;
    else throw new Error(`${f.name}: unexpected sample ${s.name} in a histogram`);
  }
  for (const [key, g] of groups) {
    if (g.sum === undefined || g.count === undefined) throw new Error(`${f.name}{${key}}: missing _sum or _count`);
    for (let i = 1; i < g.buckets.length; i++) {
      const [le0, v0] = g.buckets[i - 1] ?? [0, 0];
      const [le1, v1] = g.buckets[i] ?? [0, 0];
      if (!(le1 > le0)) throw new Error(`${f.name}{${key}}: buckets not in increasing le order`);
      if (v1 < v0) throw new Error(`${f.name}{${key}}: bucket counts are not cumulative`);
    }
    const last = g.buckets[g.buckets.length - 1];
    if (last === undefined || last[0] !== Infinity || last[1] !== g.count) throw new Error(`${f.name}{${key}}: +Inf bucket missing or not equal to _count`);
  }
}

export function parsePromText(text: string): Map<string, PromFamily> {
  if (text !== '' && !text.endsWith('\n')) throw new Error('exposition must end with a newline');
  const families = new Map<string, PromFamily>();
  const types = new Map<string, PromType>();
  const seenSeries = new Set<string>();
  const closed = new Set<string>();
  let current: PromFamily | undefined;
  const lines = text.split('\n');
  lines.pop();
  const open = (name: string): PromFamily => {
    if (current?.name === name) return current;
    if (current !== undefined) closed.add(current.name);
    if (closed.has(name)) throw new Error(`family ${name} is split`);
    let f = families.get(name);
    if (f === undefined) {
      f = { name, type: types.get(name) ?? 'untyped', help: undefined, samples: [] };
      families.set(name, f);
    }
    current = f;
    return f;
  };
  lines.forEach((raw, idx) => {
    const line = idx + 1;
    if (raw.trim() === '') return;
    if (raw.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(raw);
      if (m === null) return; // a plain comment
      const [, kind, name = '', rest = ''] = m;
      if (!METRIC_NAME.test(name)) throw new Error(`line ${line}: bad metric name ${name}`);
      const f = open(name);
      if (kind === 'HELP') {
        if (f.help !== undefined) throw new Error(`line ${line}: second HELP for ${name}`);
        f.help = unescapeHelp(rest, line);
      } else {
        if (types.has(name)) throw new Error(`line ${line}: second TYPE for ${name}`);
        if (f.samples.length > 0) throw new Error(`line ${line}: TYPE after samples of ${name}`);
        if (!TYPES.has(rest as PromType)) throw new Error(`line ${line}: unknown type ${rest}`);
        types.set(name, rest as PromType);
        f.type = rest as PromType;
      }
      return;
    }
    const s = parseSample(raw, line);
    for (const k of Object.keys(s.labels)) if (!LABEL_NAME.test(k)) throw new Error(`line ${line}: bad label name ${k}`);
    const f = open(familyOf(s.name, types));
    const series = `${s.name}{${labelKey(s.labels)}}`;
    if (seenSeries.has(series)) throw new Error(`line ${line}: duplicate series ${series}`);
    seenSeries.add(series);
    if (f.type === 'counter' && (s.value < 0 || Number.isNaN(s.value))) throw new Error(`line ${line}: negative counter`);
    if (f.type === 'summary' && s.name === f.name && s.labels.quantile === undefined) throw new Error(`line ${line}: summary sample without quantile`);
    f.samples.push(s);
  });
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

/** The value of the one sample with exactly these labels; throws when absent. */
export function sampleValue(families: Map<string, PromFamily>, family: string, sampleName: string, labels: Record<string, string>): number {
  const f = families.get(family);
  if (f === undefined) throw new Error(`no family ${family}; have ${[...families.keys()].filter((k) => !k.startsWith('process_') && !k.startsWith('nodejs_')).join(', ')}`);
  const want = labelKey(labels);
  const s = f.samples.find((x) => x.name === sampleName && labelKey(x.labels) === want);
  if (s === undefined) throw new Error(`no sample ${sampleName}{${want}} in ${family}; have ${f.samples.map((x) => `${x.name}{${labelKey(x.labels)}}`).join(' ')}`);
  return s.value;
}
