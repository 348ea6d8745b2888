// The operator page (docs/ratelimit.md, "Operator page"): polls ./api/state and ./api/rules every
// 5 seconds and renders them. Plain DOM and SVG, no framework and no build step. Text from the
// service is only ever set as textContent, never parsed as HTML.
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
  add('Store', s.store.kind);
  add('Connected', s.store.connected ? 'yes' : 'no', s.store.connected ? 'good' : 'bad');
  const lat = s.store.latency;
  add(
    'Round trip (last min)',
    lat.samples === 0 ? 'no samples yet' : `p50 ≤ ${lat.p50Ms} ms · p99 ≤ ${lat.p99Ms} ms · max ${lat.maxMs} ms (${lat.samples} timed)`,
  );
  const health = Object.entries(s.health);
  add('Health', health.length === 0 ? '—' : health.map(([k, v]) => `${k}: ${v ? 'ok' : 'failing'}`).join(', '), health.every(([, v]) => v) ? 'good' : 'bad');
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

function descriptorText(entries, more) {
  return entries.map((e) => (e.value === '' ? e.key : `${e.key}=${e.value}`)).join(', ') + (more ? ', …' : '');
}

function renderTop(top) {
  document.getElementById('top-note').textContent =
    `Last ${top.windowMs / 2000}–${top.windowMs / 1000} s; ` +
    (top.sampleEvery > 1 ? `about one call in ${top.sampleEvery} is looked at and counted ×${top.sampleEvery}; ` : 'every call counted; ') +
    `${top.capacity} tracked, values cut at 64 characters.`;
  const body = document.querySelector('#top tbody');
  if (top.entries.length === 0) {
    body.replaceChildren(el('tr', {}, el('td', { colspan: 4, class: 'empty', text: 'No over-limit descriptors right now.' })));
    return;
  }
  body.replaceChildren(
    ...top.entries.map((t, i) =>
      el(
        'tr',
        {},
        el('td', { class: 'num', text: i + 1 }),
        el('td', { class: 'mono', text: t.domain }),
        el('td', { class: 'mono', text: descriptorText(t.entries, t.more) }),
        el('td', { class: 'num', text: fmtCount(t.count) + (t.error > 0 ? ` (±${fmtCount(t.error)})` : ''), title: 'estimated over-limit hits' }),
      ),
    ),
  );
}

// ---- charts ------------------------------------------------------------------------------------

/** An SVG line chart of per-second rates; `lines` are [{ cls, values (per bucket) }]. */
function lineChart(lines, bucketMs, endAt, width, height, label) {
  const pad = { l: 34, r: 6, t: 6, b: 16 };
  const w = width - pad.l - pad.r;
  const h = height - pad.t - pad.b;
  const perSecond = (v) => v / (bucketMs / 1000);
  let max = 0;
  for (const l of lines) for (const v of l.values) max = Math.max(max, perSecond(v));
  const top = max > 0 ? max * 1.1 : 1;
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label });
  for (const f of [0, 0.5, 1]) {
    const y = pad.t + h - f * h;
    root.append(svg('line', { class: 'grid', x1: pad.l, x2: pad.l + w, y1: y, y2: y }));
    const t = svg('text', { class: 'axis', x: pad.l - 4, y: y + 3, 'text-anchor': 'end' });
    t.textContent = fmtRate(f * top);
    root.append(t);
  }
  // The x axis spans 15 minutes ending at the newest bucket; a young process fills from the right.
  const slots = 90;
  const x = (i, len) => pad.l + ((slots - len + i + 1) / slots) * w;
  const left = svg('text', { class: 'axis', x: pad.l, y: height - 3 });
  left.textContent = '−15 min';
  const right = svg('text', { class: 'axis', x: pad.l + w, y: height - 3, 'text-anchor': 'end' });
  right.textContent = endAt > 0 ? new Date(endAt).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) : 'now';
  root.append(left, right);
  for (const l of lines) {
    if (l.values.length === 0) continue;
    const pts = l.values.map((v, i) => `${x(i, l.values.length).toFixed(1)},${(pad.t + h - (perSecond(v) / top) * h).toFixed(1)}`);
    if (l.area) {
      const first = x(0, l.values.length).toFixed(1);
      const last = x(l.values.length - 1, l.values.length).toFixed(1);
      root.append(svg('polygon', { class: 'area-over', points: `${first},${pad.t + h} ${pts.join(' ')} ${last},${pad.t + h}` }));
    }
    root.append(svg('polyline', { class: l.cls, points: pts.join(' ') }));
    // While the history is short, each bucket is marked so a young process's few points show.
    if (pts.length <= 30) {
      for (const p of pts) {
        const [cx, cy] = p.split(',');
        root.append(svg('circle', { class: `dot ${l.cls}`, cx, cy, r: 2.6 }));
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
      el('figcaption', {}, 'All rules ', el('span', { class: 'peak', text: `· peak ${peak(r.totalHits, r.bucketMs)} hits/s, ${peak(r.totalOverLimit, r.bucketMs)} over/s` })),
      lineChart(
        [
          { cls: 'reqs', values: r.requests },
          { cls: 'hits', values: r.totalHits },
          { cls: 'over', values: r.totalOverLimit, area: true },
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
        el('figcaption', {}, el('span', { class: 'mono', text: s.key }), el('span', { class: 'peak', text: ` · peak ${peak(s.hits, r.bucketMs)} hits/s, ${peak(s.overLimit, r.bucketMs)} over/s` })),
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

function limitBadges(d) {
  const out = [];
  // A rate_limits descriptor lists several limits (d.limits); one limit is d.limit.
  for (const l of d.limits || (d.limit ? [d.limit] : [])) {
    if (l.unlimited) out.push(el('span', { class: 'badge unlimited', text: 'unlimited' }));
    else out.push(el('span', { class: 'badge limit', text: `${l.requestsPerUnit}/${l.unit}` }));
    if (!l.unlimited) out.push(el('span', { class: 'badge algo', text: l.algorithm + (l.burst !== undefined ? ` burst ${l.burst}` : '') }));
    if (l.name) out.push(el('span', { class: 'badge', text: `name ${l.name}` }));
    if (l.replaces.length > 0) out.push(el('span', { class: 'badge', text: `replaces ${l.replaces.join(', ')}` }));
  }
  if (d.shadowMode) out.push(el('span', { class: 'badge shadow', text: 'shadow' }));
  if (d.quotaMode) out.push(el('span', { class: 'badge', text: 'quota' }));
  if (d.detailedMetric) out.push(el('span', { class: 'badge', text: 'detailed_metric' }));
  return out;
}

function descriptorList(list) {
  const ul = el('ul', {});
  for (const d of list) {
    const label = el('span', { class: 'mono', text: d.value === '' ? d.key : `${d.key}=${d.value}` });
    const li = el('li', { class: 'rule' }, label, ...limitBadges(d));
    if (d.children.length > 0) li.append(descriptorList(d.children));
    ul.append(li);
  }
  return ul;
}

function renderRules(v) {
  const src = v.source;
  const parts = [];
  if (src.kind === 'none') parts.push('No rules loaded yet.');
  else {
    parts.push(src.kind === 'file' ? `From ${src.files ?? '?'} file(s)${src.directory ? ' in ' + src.directory : ''}` : 'From xDS');
    if (src.version) parts.push(`version ${src.version}`);
    parts.push(`loaded ${fmtTime(v.loadedAt)}`, `${v.descriptorCount} descriptors`);
    if (v.truncated) parts.push('tree cut at 5000 descriptors');
  }
  document.getElementById('rules-source').textContent = parts.join(' · ');
  const box = document.getElementById('rules');
  const open = new Set([...box.querySelectorAll('details[open]')].map((d) => d.dataset.id));
  const first = box.childElementCount === 0;
  box.replaceChildren(
    ...v.domains.map((d) => {
      const id = `${d.domain}\u0000${d.source}`;
      const details = el(
        'details',
        { class: 'domain', open: first || open.has(id) },
        el('summary', {}, el('strong', { class: 'mono', text: d.domain }), el('span', { class: 'badge', text: d.source })),
        d.descriptors.length === 0 ? el('p', { class: 'empty', text: 'no descriptors' }) : descriptorList(d.descriptors),
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
        el('td', { text: r.source + (r.version ? ` ${r.version}` : '') }),
        el('td', { class: r.ok ? 'good' : 'bad', text: r.ok ? 'ok' : 'error' }),
        el('td', { class: 'num wrap', text: r.ok ? `${r.rules} in ${r.domains} domain(s)` : '—' }),
      ),
    );
    if (!r.ok) {
      const text = r.file && !r.error.startsWith(`${r.file}:`) ? `${r.file}: ${r.error}` : r.error;
      rows.push(el('tr', { class: 'reload-detail' }, el('td', { colspan: 4, class: 'mono', text })));
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
