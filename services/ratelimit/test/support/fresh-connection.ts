// HTTP requests that each open their own connection. In worker mode node:cluster hands every new
// connection to the next worker (round robin), so N requests on N connections reach every worker;
// fetch() would reuse one kept-alive connection and keep talking to the same worker.
import http from 'node:http';

export interface FreshResponse {
  status: number;
  body: string;
}

export function requestFresh(url: string, opts: { method?: string; body?: string } = {}): Promise<FreshResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method ?? 'GET', agent: false, headers: { connection: 'close' }, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} within 10 s`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** The limit (requests_per_unit) /json reports for one descriptor, on a new connection. */
export async function limitFresh(httpUrl: string, body: unknown): Promise<number | undefined> {
  const r = await requestFresh(`${httpUrl}/json`, { method: 'POST', body: JSON.stringify(body) });
  const json = JSON.parse(r.body) as { statuses?: { currentLimit?: { requestsPerUnit?: number } }[] };
  return json.statuses?.[0]?.currentLimit?.requestsPerUnit;
}

/** One value of a `/stats` line, read on a new connection. */
export async function statFresh(debugUrl: string, name: string): Promise<string | undefined> {
  const text = (await requestFresh(`${debugUrl}/stats`)).body;
  return text.split('\n').find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
}
