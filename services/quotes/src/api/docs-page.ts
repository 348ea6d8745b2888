/**
 * A small self-contained page that renders /openapi.json and lets one try the endpoints;
 * no CDN, no framework, so it works offline.
 */
export const DOCS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Crypto quotes API</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}
code,pre{font-family:ui-monospace,monospace;background:#f5f5f7;border-radius:4px}pre{padding:.8em;overflow:auto;max-height:30em}
.get{background:#2a7;color:#fff;padding:.1em .5em;border-radius:3px;font-weight:bold;margin-right:.5em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
input{font:inherit;padding:.2em .4em;width:14em}button{font:inherit;padding:.3em 1em}
</style></head>
<body>
<h1 id="title">Crypto quotes API</h1>
<div id="desc"></div>
<p>Token (sent as <code>Authorization: Bearer</code>): <input id="token" placeholder="qt_..." autocomplete="off"></p>
<div id="ops">Loading /openapi.json ...</div>
<script>
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
const md = (s) => esc(s || '').replace(/\\*\\*(.+?)\\*\\*/g, '<b>$1</b>').replace(/\`([^\`]+)\`/g, '<code>$1</code>').replace(/\\n\\n/g, '<br><br>');
fetch('openapi.json').then((r) => r.json()).then((doc) => {
  document.getElementById('title').textContent = doc.info.title + ' ' + doc.info.version;
  document.getElementById('desc').innerHTML = md(doc.info.description);
  const ops = document.getElementById('ops'); ops.innerHTML = '';
  let n = 0;
  for (const [path, item] of Object.entries(doc.paths)) {
    const op = item.get; if (!op) continue; const id = 'op' + (n++);
    const params = (op.parameters || []).filter((p) => p.name !== 'token');
    const rows = params.map((p) => '<tr><td><code>' + esc(p.name) + '</code>' + (p.required ? ' *' : '') + '</td><td>' + esc(p.in) + '</td><td>' +
      md(p.description || '') + (p.schema && p.schema.enum ? '<br><small>' + esc(p.schema.enum.join(', ')) + '</small>' : '') +
      '</td><td><input data-op="' + id + '" data-in="' + esc(p.in) + '" name="' + esc(p.name) + '" value="' + esc(p.example || '') + '"></td></tr>').join('');
    const codes = Object.entries(op.responses || {}).map(([c, r]) => '<code>' + esc(c) + '</code> ' + esc(r.description)).join('<br>');
    const sec = document.createElement('section');
    sec.innerHTML = '<h2><span class="get">GET</span>' + esc(path) + '</h2><p>' + md(op.summary) + '</p>' +
      (rows ? '<table><tr><th>name</th><th>in</th><th>meaning</th><th>value</th></tr>' + rows + '</table>' : '') +
      '<p>' + codes + '</p><button data-run="' + id + '">Send</button><pre id="' + id + '-out" hidden></pre>';
    sec.querySelector('button').onclick = async () => {
      let url = path; const qs = new URLSearchParams();
      for (const i of sec.querySelectorAll('input[data-op="' + id + '"]')) {
        if (i.dataset.in === 'path') url = url.replace('{' + i.name + '}', encodeURIComponent(i.value));
        else if (i.value) qs.set(i.name, i.value);
      }
      const tok = document.getElementById('token').value.trim();
      const res = await fetch(url.replace(/^\\//, '') + (qs.toString() ? '?' + qs : ''), { headers: tok ? { Authorization: 'Bearer ' + tok } : {} });
      const text = await res.text(); let body = text;
      try { body = JSON.stringify(JSON.parse(text), null, 2); } catch {}
      const out = document.getElementById(id + '-out'); out.hidden = false;
      out.textContent = res.status + ' ' + res.statusText + '\\n' + body;
    };
    ops.appendChild(sec);
  }
}).catch((e) => { document.getElementById('ops').textContent = 'Could not load openapi.json: ' + e; });
</script>
</body></html>
`;
