// The operator page (docs/ratelimit.md, "Operator page"): polls ./api/state and ./api/rules every
// 5 seconds and renders them. Plain DOM and SVG, no framework and no build step. Text from the
// service is only ever set as textContent, never parsed as HTML. The service has already escaped
// invisible and reordering characters in client- and file-chosen text (`\u{202E}`, `\n`, `\\`)
// and cut it to a bound; `shown` highlights those escapes so they cannot pass for ordinary text.
'use strict';

const POLL_MS = 5000;
const SVG_NS = 'http://www.w3.org/2000/svg';
let paused = false;
let rulesEtag = '';
let timer = 0;

/** An element with attributes and children (strings become text nodes). */
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = String(v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== undefined && c !== null) e.append(typeof c === 'string' ? document.createTextNode(c) : c);
  return e;
}

/** Names of the escapes a value is most likely to carry, for the highlight's tooltip. */
const ESCAPE_NAMES = {
  '\\\\': 'a backslash',
  '\\n': 'U+000A line feed',
  '\\r': 'U+000D carriage return',
  '\\t': 'U+0009 tab',
  '\\u{202A}': 'U+202A left-to-right embedding',
  '\\u{202B}': 'U+202B right-to-left embedding',
  '\\u{202C}': 'U+202C pop directional formatting',
  '\\u{202D}': 'U+202D left-to-right override',
  '\\u{202E}': 'U+202E right-to-left override',
  '\\u{2066}': 'U+2066 left-to-right isolate',
  '\\u{2067}': 'U+2067 right-to-left isolate',
  '\\u{2068}': 'U+2068 first strong isolate',
  '\\u{2069}': 'U+2069 pop directional isolate',
  '\\u{200B}': 'U+200B zero width space',
  '\\u{200C}': 'U+200C zero width non-joiner',
  '\\u{200D}': 'U+200D zero width joiner',
  '\\u{200E}': 'U+200E left-to-right mark',
  '\\u{200F}': 'U+200F right-to-left mark',
  '\\u{061C}': 'U+061C Arabic letter mark',
  '\\u{FEFF}': 'U+FEFF zero width no-break space (byte order mark)',
  '\\u{00A0}': 'U+00A0 no-break space',
  '\\u{00AD}': 'U+00AD soft hyphen',
  '\\u{001B}': 'U+001B escape',
};
const ESCAPE = /\\(?:\\|[nrt]|u\{[0-9A-F]{4,6}\})/g;

/**
 * A span with the service's display text, each escape in its own highlighted span (so `\u{202E}`
 * reads as a character that was there, not as typed text). The span isolates the text's
 * direction, so right-to-left letters in a value do not reorder what is around it.
 */
function shown(text, cls) {
  const span = document.createElement('span');
  span.className = cls ? `val ${cls}` : 'val';
  const t = String(text);
  let last = 0;
  for (const m of t.matchAll(ESCAPE)) {
    if (m.index > last) span.append(document.createTextNode(t.slice(last, m.index)));
    const e = document.createElement('span');
    e.className = 'esc';
    e.textContent = m[0];
    e.title = ESCAPE_NAMES[m[0]] || `U+${m[0].slice(3, -1)}: an invisible, control or formatting character in the value`;
    span.append(e);
    last = m.index + m[0].length;
  }
  if (last < t.length) span.append(document.createTextNode(t.slice(last)));
  return span;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

function fmtRate(v) {
  if (v === 0) return '0';
  if (v >= 100) return String(Math.round(v));
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

function fmtCount(v) {
  return v >= 1e6 ? (v / 1e6).toFixed(1) + 'M' : v >= 1e4 ? (v / 1e3).toFixed(1) + 'k' : String(Math.round(v));
}

function fmtTime(ms) {
  return ms > 0 ? new Date(ms).toLocaleTimeString() : '—';
}

function fmtDuration(s) {
  if (s < 120) return s + ' s';
  if (s < 7200) return Math.round(s / 60) + ' min';
  return (s / 3600).toFixed(1) + ' h';
}

async function getJson(path, etag) {
  const headers = etag ? { 'if-none-match': etag } : {};
  const r = await fetch(path, { headers, cache: 'no-store' });
  if (r.status === 304) return { status: 304 };
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status} ${(await r.text()).slice(0, 300)}`);
  return { status: r.status, etag: r.headers.get('etag') || '', body: await r.json() };
}

function showError(message) {
  const box = document.getElementById('error');
  if (message) {
    box.textContent = message;
    box.hidden = false;
  } else box.hidden = true;
}

// ---- store and process -------------------------------------------------------------------------

function renderStore(s) {
  const dl = document.getElementById('store');
  const rows = [];
  const add = (label, value, cls) => rows.push(el('dt', { text: label }), el('dd', cls ? { class: cls, text: value } : { text: value }));
  add('Store', s.store.description);
  add('Connected', s.store.connected ? 'yes' : 'no', s.store.connected ? 'good' : 'bad');
  const lat = s.store.latency;
  add(
    'Round trip (last min)',
    lat.samples === 0 ? 'no samples yet' : `p50 ≤ ${lat.p50Ms} ms · p99 ≤ ${lat.p99Ms} ms · max ${lat.maxMs} ms (${lat.samples} timed)`,
  );
  // The store component is `redis` in /healthcheck whatever the store (upstream's name); the label names the real one.
  add('Health', s.health.length === 0 ? '—' : s.health.map((h) => `${h.label}: ${h.healthy ? 'ok' : 'failing'}`).join(', '), s.health.every((h) => h.healthy) ? 'good' : 'bad');
  const lc = s.localCache;
  add(
    'Local over-limit cache',
    lc.enabled ? `${lc.entries} keys in a ${fmtCount(lc.budgetBytes)}-byte budget · ${lc.hits} hits, ${lc.misses} misses` : 'off (LOCAL_CACHE_SIZE_IN_BYTES=0)',
  );
  const w = s.process.workers;
  add('Workers', w.mode === 'single' ? '1 (single process)' : `${w.count}; this page shows worker ${w.id}'s counts (rules are the same in every worker)`);
  if (w.mode === 'worker' && w.serving !== undefined && (w.serving < w.count || w.startFailures > 0)) {
    // A replacement that cannot start: the others serve meanwhile; the primary retries with backoff.
    const parts = [`${w.serving} of ${w.count} serving`];
    if (w.startFailures > 0) parts.push(`a replacement failed to start ${w.startFailures}× since ${fmtTime(w.failingSince ?? 0)}`);
    if (w.lastFailure) parts.push(`last: ${w.lastFailure.reason}`);
    if (w.nextStartAt !== undefined) parts.push(`next try in ${fmtDuration(Math.max(0, Math.round((w.nextStartAt - s.now) / 1000)))}`);
    add('Worker starts', parts.join(' · '), 'bad');
  }
  add('Process', `pid ${s.process.pid} · up ${fmtDuration(s.process.uptimeSeconds)}`);
  dl.replaceChildren(...rows);
}

// ---- top list ----------------------------------------------------------------------------------

/** `key=value, key=value` with every key and value highlighted as display text. */
function descriptorCell(entries, more) {
  const td = el('td', { class: 'mono descriptor' });
  entries.forEach((e, i) => {
    if (i > 0) td.append(', ');
    td.append(shown(e.key));
    if (e.value !== '') td.append('=', shown(e.value));
  });
  if (more) td.append(', …');
  return td;
}

function renderTop(top) {
  document.getElementById('top-note').textContent =
    `Last ${top.windowMs / 2000}–${top.windowMs / 1000} s; ` +
    (top.sampleEvery > 1 ? `about one call in ${top.sampleEvery} is looked at and counted ×${top.sampleEvery}; ` : 'every call counted; ') +
    `${top.capacity} tracked; keys and values cut at 64 characters, invisible characters shown as \\u{…}.`;
  const warning = document.getElementById('top-warning');
  if (!top.complete) {
    warning.className = 'warning';
    warning.textContent =
      `Incomplete: more distinct over-limit descriptors than the ${top.capacity} tracked (${fmtCount(top.dropped)} dropped). ` +
      `A descriptor that is not listed may have had up to ${fmtCount(top.hiddenMax)} over-limit hits, more than the rows marked “?”; ` +
      'a flood of distinct descriptors can hide a real offender. Raise OPERATOR_TOP_SIZE or look at the statistics.';
    warning.hidden = false;
  } else if (top.dropped > 0) {
    warning.className = 'note';
    warning.textContent = `${fmtCount(top.dropped)} descriptors were dropped from tracking; none of them can rank above the listed ones (each had at most ${fmtCount(top.hiddenMax)} over-limit hits).`;
    warning.hidden = false;
  } else warning.hidden = true;
  const body = document.querySelector('#top tbody');
  if (top.entries.length === 0) {
    body.replaceChildren(el('tr', {}, el('td', { colspan: 4, class: 'empty', text: 'No over-limit descriptors right now.' })));
    return;
  }
  body.replaceChildren(
    ...top.entries.map((t, i) =>
      el(
        'tr',
        t.uncertain ? { class: 'uncertain', title: 'a descriptor that is not listed may have had more over-limit hits than this one' } : {},
        el('td', { class: 'num', text: i + 1 }),
        el('td', { class: 'mono domain' }, shown(t.domain)),
        descriptorCell(t.entries, t.more),
        el('td', { class: 'num', text: fmtCount(t.count) + (t.error > 0 ? ` (±${fmtCount(t.error)})` : '') + (t.uncertain ? ' ?' : ''), title: 'estimated over-limit hits' }),
      ),
    ),
  );
}

// ---- charts ------------------------------------------------------------------------------------

/** A round step (1, 2 or 5 × 10^n) that splits `max` into about `parts` intervals. */
function niceStep(max, parts) {
  const raw = max / parts;
  const pow = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * pow >= raw) return m * pow;
  return 10 * pow;
}

/** A tick value as short text: 0, 0.5, 12, 1.5k, 20k, 1.2M. */
function fmtTick(v, step) {
  if (v === 0) return '0';
  if (v >= 1e6) return `${+(v / 1e6).toFixed(step >= 1e6 ? 0 : 1)}M`;
  if (v >= 1e3) return `${+(v / 1e3).toFixed(step >= 1e3 ? 0 : 1)}k`;
  const decimals = step >= 1 ? 0 : Math.min(3, Math.ceil(-Math.log10(step)));
  return v.toFixed(decimals);
}

const WINDOW_MS = 15 * 60_000;
/** Time axis labels every this many minutes, at round clock minutes. */
const TIME_TICK_MIN = 5;

/**
 * An SVG line chart of per-second rates; `lines` are [{ cls, values (per bucket), area?, dashed? }].
 * The y axis ends on a round number with ticks at round steps; the x axis spans 15 minutes
 * ending at the newest bucket, labelled at round clock minutes.
 */
function lineChart(lines, bucketMs, endAt, width, height, label) {
  const pad = { l: 36, r: 8, t: 8, b: 18 };
  const w = width - pad.l - pad.r;
  const h = height - pad.t - pad.b;
  const perSecond = (v) => v / (bucketMs / 1000);
  let max = 0;
  for (const l of lines) for (const v of l.values) max = Math.max(max, perSecond(v));
  const parts = height >= 160 ? 4 : 3;
  const step = max > 0 ? niceStep(max, parts) : 1;
  const top = max > 0 ? Math.ceil(max / step) * step : parts;
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label });
  for (let v = 0; v <= top + step / 2; v += step) {
    const y = pad.t + h - (v / top) * h;
    root.append(svg('line', { class: 'grid', x1: pad.l, x2: pad.l + w, y1: y, y2: y }));
    const t = svg('text', { class: 'axis y-tick', x: pad.l - 4, y: y + 3, 'text-anchor': 'end' });
    t.textContent = fmtTick(v, step);
    root.append(t);
  }
  // A young process fills from the right: bucket i of len ends (len - 1 - i) buckets before endAt.
  const slots = WINDOW_MS / bucketMs;
  const x = (i, len) => pad.l + ((slots - len + i + 1) / slots) * w;
  const xAt = (ms) => pad.l + (1 - (endAt - ms) / WINDOW_MS) * w;
  const tickMs = TIME_TICK_MIN * 60_000;
  if (endAt > 0) {
    const fmt = new Intl.DateTimeFormat([], { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    for (let at = Math.ceil((endAt - WINDOW_MS) / tickMs) * tickMs; at <= endAt; at += tickMs) {
      const px = xAt(at);
      root.append(svg('line', { class: 'grid', x1: px, x2: px, y1: pad.t, y2: pad.t + h }));
      const t = svg('text', { class: 'axis x-tick', x: px, y: height - 4, 'text-anchor': px - pad.l < 16 ? 'start' : pad.l + w - px < 16 ? 'end' : 'middle' });
      t.textContent = fmt.format(new Date(at));
      root.append(t);
    }
  } else {
    // No bucket yet: minutes before now.
    for (let m = 15; m >= 0; m -= TIME_TICK_MIN) {
      const px = pad.l + (1 - m / 15) * w;
      const t = svg('text', { class: 'axis x-tick', x: px, y: height - 4, 'text-anchor': m === 15 ? 'start' : m === 0 ? 'end' : 'middle' });
      t.textContent = m === 0 ? 'now' : `−${m} min`;
      root.append(t);
    }
  }
  // Areas first, then lines; a dashed line (requests) goes last so it shows on top of a solid one
  // that has the same values (a request with one descriptor is one hit).
  const ordered = [...lines].sort((a, b) => Number(Boolean(a.dashed)) - Number(Boolean(b.dashed)));
  const points = new Map(lines.map((l) => [l, l.values.map((v, i) => `${x(i, l.values.length).toFixed(1)},${(pad.t + h - (perSecond(v) / top) * h).toFixed(1)}`)]));
  for (const l of lines) {
    if (!l.area || l.values.length === 0) continue;
    const first = x(0, l.values.length).toFixed(1);
    const last = x(l.values.length - 1, l.values.length).toFixed(1);
    root.append(svg('polygon', { class: `area-${l.cls}`, points: `${first},${pad.t + h} ${points.get(l).join(' ')} ${last},${pad.t + h}` }));
  }
  for (const l of ordered) {
    const pts = points.get(l);
    if (pts.length === 0) continue;
    root.append(svg('polyline', { class: `line ${l.cls}`, points: pts.join(' ') }));
    // While the history is short, each bucket is marked so a young process's few points show.
    if (pts.length <= 30) {
      for (const p of pts) {
        const [cx, cy] = p.split(',');
        root.append(svg('circle', { class: `dot ${l.cls}`, cx, cy, r: l.dashed ? 2 : 2.6 }));
      }
    }
  }
  return root;
}

/** The drawing width in CSS pixels (so labels keep their size on any screen), from a laid-out box. */
function chartWidth(box, fallback) {
  const w = box && box.clientWidth ? box.clientWidth - 18 : fallback;
  return Math.max(240, Math.min(1600, Math.round(w)));
}

function peak(values, bucketMs) {
  let m = 0;
  for (const v of values) m = Math.max(m, v);
  return fmtRate(m / (bucketMs / 1000));
}

function renderRates(r) {
  const total = document.getElementById('total-chart');
  const label = `All rules: requests, hits and over-limit hits per second over the last ${Math.round((r.buckets * r.bucketMs) / 60000)} minutes`;
  total.replaceChildren(
    el(
      'figure',
      { class: 'chart', id: 'chart-total' },
      el('figcaption', {}, 'All rules', el('span', { class: 'peak', text: `peak ${peak(r.totalHits, r.bucketMs)} hits/s, ${peak(r.totalOverLimit, r.bucketMs)} over/s` })),
      lineChart(
        [
          { cls: 'hits', values: r.totalHits },
          { cls: 'over', values: r.totalOverLimit, area: true },
          { cls: 'reqs', values: r.requests, dashed: true },
        ],
        r.bucketMs,
        r.endAt,
        chartWidth(total, 900),
        180,
        label,
      ),
    ),
  );
  const charts = document.getElementById('charts');
  if (r.buckets === 0) {
    charts.replaceChildren(el('p', { class: 'empty', text: 'The first 10-second bucket is not complete yet.' }));
    return;
  }
  if (r.series.length === 0) {
    charts.replaceChildren(el('p', { class: 'empty', text: 'No rule has been hit in the last 15 minutes.' }));
    return;
  }
  charts.replaceChildren(
    ...r.series.map((s) =>
      el(
        'figure',
        { class: 'chart rule-chart' },
        el('figcaption', {}, el('span', { class: 'series-key', title: s.key }, shown(s.key, 'mono')), el('span', { class: 'peak', text: `peak ${peak(s.hits, r.bucketMs)} hits/s, ${peak(s.overLimit, r.bucketMs)} over/s` })),
        lineChart(
          [
            { cls: 'hits', values: s.hits },
            { cls: 'over', values: s.overLimit, area: true },
          ],
          r.bucketMs,
          r.endAt,
          chartWidth(charts.firstElementChild, 400),
          120,
          `${s.key}: hits and over-limit hits per second`,
        ),
      ),
    ),
  );
}

// ---- rules and reloads -------------------------------------------------------------------------

function badge(cls, ...children) {
  return el('span', { class: cls ? `badge ${cls}` : 'badge' }, ...children);
}

function limitBadges(d) {
  const out = [];
  // A rate_limits descriptor lists several limits (d.limits); one limit is d.limit.
  const limits = d.limits || (d.limit ? [d.limit] : []);
  for (const l of limits) {
    if (l.unlimited) out.push(el('span', { class: 'badge unlimited', text: 'unlimited', title: 'unlimited: true — matching requests are never limited' }));
    else out.push(badge('limit', `${l.requestsPerUnit}/`, shown(l.unit)));
    if (!l.unlimited) out.push(badge('algo', shown(l.algorithm), l.burst !== undefined ? ` burst ${l.burst}` : ''));
    if (l.name) out.push(badge('', 'name ', shown(l.name)));
    if (l.replaces.length > 0) {
      const b = badge('', 'replaces ');
      l.replaces.forEach((r, i) => b.append(...(i > 0 ? [', '] : []), shown(r)));
      out.push(b);
    }
  }
  if (limits.length === 0 && d.children.length === 0) {
    // A leaf without rate_limit: a request matching it is not limited by this rule (upstream's whitelist).
    out.push(el('span', { class: 'badge unlimited', text: 'no limit', title: 'no rate_limit on this descriptor: matching requests are not limited (whitelisted)' }));
  }
  if (d.shadowMode) out.push(el('span', { class: 'badge shadow', text: 'shadow' }));
  if (d.quotaMode) out.push(el('span', { class: 'badge', text: 'quota' }));
  if (d.detailedMetric) out.push(el('span', { class: 'badge', text: 'detailed_metric' }));
  return out;
}

function descriptorList(list) {
  const ul = el('ul', {});
  for (const d of list) {
    const label = el('span', { class: 'mono' }, shown(d.key), ...(d.value === '' ? [] : ['=', shown(d.value)]));
    const li = el('li', { class: 'rule' }, label, ...limitBadges(d));
    if (d.children.length > 0) li.append(descriptorList(d.children));
    ul.append(li);
  }
  return ul;
}

// RLQS quota rules of a document (quota_buckets entries, then default_quota).
function quotaList(list) {
  const ul = el('ul', { class: 'quota-buckets' });
  for (const q of list) {
    ul.append(
      el('li', { class: 'rule' }, el('span', { class: 'mono' }, shown(q.bucketId)), badge('limit', shown(q.quota)), ...(q.isDefault ? [] : [badge('', 'name ', shown(q.name))])),
    );
  }
  return ul;
}

function renderRules(v) {
  const src = v.source;
  const line = document.getElementById('rules-source');
  if (src.kind === 'none') line.replaceChildren('No rules loaded yet.');
  else {
    const parts = [src.kind === 'file' ? `From ${src.files ?? '?'} file(s)` : 'From xDS'];
    if (src.directory) parts.push(' in ', shown(src.directory));
    if (src.version) parts.push(' · version ', shown(src.version));
    parts.push(` · loaded ${fmtTime(v.loadedAt)} · ${v.descriptorCount} descriptors`);
    if (v.truncated) parts.push(' · tree cut at 5000 descriptors');
    line.replaceChildren(...parts);
  }
  const box = document.getElementById('rules');
  const open = new Set([...box.querySelectorAll('details[open]')].map((d) => d.dataset.id));
  const first = box.childElementCount === 0;
  box.replaceChildren(
    ...v.domains.map((d) => {
      const id = `${d.domain}\u0000${d.source}`;
      const details = el(
        'details',
        { class: 'domain', open: first || open.has(id) },
        el('summary', {}, el('strong', { class: 'mono' }, shown(d.domain)), badge('', shown(d.source))),
        d.descriptors.length === 0 ? el('p', { class: 'empty', text: 'no descriptors' }) : descriptorList(d.descriptors),
        ...(d.quotaBuckets ? [el('p', { text: 'RLQS quota buckets' }), quotaList(d.quotaBuckets)] : []),
      );
      details.dataset.id = id;
      return details;
    }),
  );
  if (v.domains.length === 0) box.replaceChildren(el('p', { class: 'empty', text: 'No domains.' }));
  const body = document.querySelector('#reloads tbody');
  if (v.reloads.length === 0) {
    body.replaceChildren(el('tr', {}, el('td', { colspan: 4, class: 'empty', text: 'No loads recorded yet.' })));
    return;
  }
  const rows = [];
  for (const r of v.reloads) {
    rows.push(
      el(
        'tr',
        { class: r.ok ? 'reload-ok' : 'reload-error' },
        el('td', { text: fmtTime(r.at) }),
        el('td', {}, shown(r.source), ...(r.version ? [' ', shown(r.version)] : [])),
        el('td', { class: r.ok ? 'good' : 'bad', text: r.ok ? 'ok' : 'error' }),
        el('td', { class: 'num wrap', text: r.ok ? `${r.rules} in ${r.domains} domain(s)` : '—' }),
      ),
    );
    if (!r.ok) {
      const named = r.file && !r.error.startsWith(`${r.file}:`);
      rows.push(el('tr', { class: 'reload-detail' }, el('td', { colspan: 4, class: 'mono' }, ...(named ? [shown(r.file), ': '] : []), shown(r.error))));
    }
  }
  body.replaceChildren(...rows);
}

// ---- polling -----------------------------------------------------------------------------------

async function poll() {
  clearTimeout(timer);
  try {
    const [state, rules] = await Promise.all([getJson('api/state'), getJson('api/rules', rulesEtag)]);
    renderStore(state.body);
    renderTop(state.body.top);
    renderRates(state.body.rates);
    if (rules.status !== 304) {
      rulesEtag = rules.etag;
      renderRules(rules.body);
    }
    showError('');
    document.getElementById('status').textContent = `Updated ${fmtTime(state.body.now)}${paused ? ' · paused' : ` · every ${POLL_MS / 1000} s`}`;
    document.body.dataset.ready = 'true';
  } catch (err) {
    showError(`Cannot read the service's state: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!paused) timer = setTimeout(poll, POLL_MS);
}

document.getElementById('pause').addEventListener('click', (e) => {
  paused = !paused;
  e.currentTarget.setAttribute('aria-pressed', String(paused));
  e.currentTarget.textContent = paused ? 'Resume updates' : 'Pause updates';
  if (!paused) void poll();
  else clearTimeout(timer);
});

void poll();
