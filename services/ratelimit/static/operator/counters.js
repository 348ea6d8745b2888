// The operator page's counters lookup (docs/ratelimit.md, "Counters on the debug port"): asks
// /counters for one domain + descriptor and shows each limit's count. Text from the service is only
// ever set as textContent.
'use strict';

(function countersLookup() {
  const form = document.getElementById('counters-form');
  const status = document.getElementById('counters-status');
  const body = document.querySelector('#counters tbody');
  if (form === null || status === null || body === null) return;

  const cell = (text, cls) => {
    const td = document.createElement('td');
    td.textContent = String(text);
    if (cls) td.className = cls;
    return td;
  };

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const data = new FormData(form);
    const params = new URLSearchParams({ domain: String(data.get('domain') || '').trim() });
    for (const line of String(data.get('entries') || '').split('\n')) {
      const t = line.trim();
      if (t !== '') params.append('entry', t);
    }
    status.textContent = 'Looking up…';
    fetch('/counters?' + params.toString(), { headers: { accept: 'application/json' } })
      .then((r) => r.json().then((j) => ({ ok: r.ok, j })))
      .then(({ ok, j }) => {
        body.replaceChildren();
        if (!ok) {
          status.textContent = j.error || 'lookup failed';
          return;
        }
        if (j.unlimited) {
          status.textContent = 'Unlimited: this descriptor is never counted.';
          return;
        }
        status.textContent = `${j.limits.length} limit(s) on the ${j.store} store.`;
        for (const l of j.limits) {
          const tr = document.createElement('tr');
          tr.append(
            cell((l.name ? l.name + ': ' : '') + l.limit),
            cell(l.algorithm),
            cell(l.count, 'num'),
            cell(l.remaining, 'num'),
            cell(l.resetSeconds + ' s', 'num'),
            cell(l.key),
          );
          body.append(tr);
        }
      })
      .catch((err) => {
        status.textContent = 'lookup failed: ' + String(err);
      });
  });
})();
