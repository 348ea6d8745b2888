import { createServer } from 'node:http';

export interface FakeEcbOptions {
  /** `YYYY-MM-DD` -> currency -> units per euro (TARGET days only). */
  days: Record<string, Record<string, number>>;
}

export interface FakeEcb {
  /** Base to use as FX_ECB_URL (…/stats/eurofxref). */
  url: string;
  requests: string[];
  close(): Promise<void>;
}

function xml(days: Array<[string, Record<string, number>]>): string {
  const cubes = days
    .map(([d, rates]) => `\t\t<Cube time='${d}'>\n${Object.entries(rates).map(([c, r]) => `\t\t\t<Cube currency='${c}' rate='${r}'/>`).join('\n')}\n\t\t</Cube>`)
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>
<gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01" xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">
\t<gesmes:subject>Reference rates</gesmes:subject>
\t<gesmes:Sender>
\t\t<gesmes:name>European Central Bank</gesmes:name>
\t</gesmes:Sender>
\t<Cube>
${cubes}
\t</Cube>
</gesmes:Envelope>`;
}

/** The ECB reference-rate files on loopback: eurofxref-daily.xml (newest day) and eurofxref-hist.xml (all, newest first). */
export async function startFakeEcb(opts: FakeEcbOptions): Promise<FakeEcb> {
  const requests: string[] = [];
  const sorted = Object.entries(opts.days).sort(([a], [b]) => (a < b ? 1 : -1));
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    if (path.endsWith('/eurofxref-daily.xml')) {
      res.writeHead(200, { 'content-type': 'text/xml' });
      return void res.end(xml(sorted.slice(0, 1)));
    }
    if (path.endsWith('/eurofxref-hist.xml')) {
      res.writeHead(200, { 'content-type': 'text/xml' });
      return void res.end(xml(sorted));
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  return { url: `http://127.0.0.1:${port}/stats/eurofxref`, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
