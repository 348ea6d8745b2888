// Real statsd listeners for the stats tests: a UDP socket and a TCP server on loopback that
// record every line they receive, in arrival order.
import dgram from 'node:dgram';
import net from 'node:net';
import { waitFor } from '@rls/testkit';

export interface StatsdListener {
  readonly port: number;
  /** Every line received so far. */
  readonly lines: string[];
  /** Waits until `n` lines beyond `from` arrived; returns lines[from, from+n). */
  next(n: number, from: number): Promise<string[]>;
  close(): Promise<void>;
}

function nextFrom(lines: string[]) {
  return async (n: number, from: number): Promise<string[]> => {
    await waitFor(() => lines.length >= from + n, { what: `${n} statsd line(s) after #${from}; have ${JSON.stringify(lines.slice(from))}`, timeoutMs: 5000 });
    return lines.slice(from, from + n);
  };
}

export async function startUdpStatsd(): Promise<StatsdListener> {
  const socket = dgram.createSocket('udp4');
  const lines: string[] = [];
  socket.on('message', (msg) => {
    for (const l of msg.toString('utf8').split('\n')) if (l !== '') lines.push(l);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    port: socket.address().port,
    lines,
    next: nextFrom(lines),
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}

export interface TcpStatsdListener extends StatsdListener {
  /** Connections accepted so far. */
  readonly connections: () => number;
}

export async function startTcpStatsd(port = 0, lines: string[] = []): Promise<TcpStatsdListener> {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((sock) => {
    connections += 1;
    sockets.add(sock);
    let buf = '';
    sock.setEncoding('utf8');
    sock.on('data', (chunk: string) => {
      buf += chunk;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const l = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (l !== '') lines.push(l);
      }
    });
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const addr = server.address() as net.AddressInfo;
  return {
    port: addr.port,
    lines,
    connections: () => connections,
    next: nextFrom(lines),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}
