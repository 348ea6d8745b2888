import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

export interface FakePtaxOptions {
  /** currency -> `YYYY-MM-DD` -> closing PTAX (BRL per unit, cotacaoVenda). Dates absent = no bulletin (weekends, holidays). */
  closings: Record<string, Record<string, number>>;
}

export interface FakePtax {
  /** Base to use as FX_PTAX_URL (…/olinda/servico/PTAX/versao/v1/odata). */
  url: string;
  requests: string[];
  /** The next `times` requests answer HTTP `status`. */
  failNext(times: number, status?: number): void;
  close(): Promise<void>;
}

/** `MM-DD-YYYY` (with the OData quotes) -> `YYYY-MM-DD`. */
function isoOf(v: string | null): string | undefined {
  const m = /^'?(\d{2})-(\d{2})-(\d{4})'?$/.exec(v ?? '');
  return m === null ? undefined : `${m[3]}-${m[1]}-${m[2]}`;
}

/**
 * BCB's PTAX OData service (Olinda) on loopback: CotacaoMoedaDia and CotacaoMoedaPeriodo in the
 * real JSON shape, three bulletins per business day (opening and intermediate ones differ from
 * the closing PTAX) and an empty `value` on days without a bulletin.
 */
export async function startFakePtax(opts: FakePtaxOptions): Promise<FakePtax> {
  const requests: string[] = [];
  let failures: { times: number; status: number } = { times: 0, status: 500 };
  const bulletins = (cur: string, iso: string): unknown[] => {
    const close = opts.closings[cur]?.[iso];
    if (close === undefined) return [];
    const row = (rate: number, hour: string, tipo: string) => ({
      paridadeCompra: cur === 'USD' ? 1 : 1.1,
      paridadeVenda: cur === 'USD' ? 1 : 1.1,
      cotacaoCompra: Math.round((rate - 0.0006) * 10_000) / 10_000,
      cotacaoVenda: rate,
      dataHoraCotacao: `${iso} ${hour}`,
      tipoBoletim: tipo,
    });
    return [row(close * 1.002, '10:09:19.123', 'Abertura'), row(close * 0.998, '11:04:22.48', 'Intermediário'), row(close, '13:05:31.5', 'Fechamento PTAX')];
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests.push(req.url ?? '');
    if (failures.times > 0) {
      failures.times--;
      res.writeHead(failures.status, { 'content-type': 'text/plain' });
      res.end('Service Unavailable');
      return;
    }
    const u = new URL(req.url ?? '/', 'http://fake');
    const q = u.searchParams;
    const cur = (q.get('@moeda') ?? '').replace(/'/g, '');
    const send = (value: unknown[], fn: string): void => {
      res.writeHead(200, { 'content-type': 'application/json;odata.metadata=minimal' });
      res.end(JSON.stringify({ '@odata.context': `https://olinda.bcb.gov.br/olinda/servico/PTAX/versao/v1/odata$metadata#_CotacaoMoeda${fn}`, value }));
    };
    if (u.pathname.endsWith('/CotacaoMoedaDia(moeda=@moeda,dataCotacao=@dataCotacao)')) {
      const iso = isoOf(q.get('@dataCotacao'));
      if (iso === undefined) return void res.writeHead(400).end('bad date');
      return send(bulletins(cur, iso), 'Dia');
    }
    if (u.pathname.endsWith('/CotacaoMoedaPeriodo(moeda=@moeda,dataInicial=@dataInicial,dataFinalCotacao=@dataFinalCotacao)')) {
      const from = isoOf(q.get('@dataInicial'));
      const to = isoOf(q.get('@dataFinalCotacao'));
      if (from === undefined || to === undefined) return void res.writeHead(400).end('bad date');
      const dates = Object.keys(opts.closings[cur] ?? {}).filter((d) => d >= from && d <= to).sort();
      return send(dates.flatMap((d) => bulletins(cur, d)), 'Periodo');
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'not found' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}/olinda/servico/PTAX/versao/v1/odata`,
    requests,
    failNext(times, status = 503) {
      failures = { times, status };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
