// `ratelimit-client`: sends one ShouldRateLimit request and prints the response, like upstream's
// ratelimit_client. Flags: -dial_string (default localhost:8081), -domain, -descriptors
// (repeatable; `k=v,k2=v2` is one descriptor). Go's flag syntax is accepted: `-flag value`,
// `-flag=value`, `--flag value`, `--flag=value`. hits_addend is always 1. TLS: -grpc-use-tls with
// -grpc-server-ca-file (system roots when absent), -grpc-cert-file/-grpc-key-file for mutual TLS,
// and our -grpc-server-name to verify a name other than the dialled host.
import { readFileSync } from 'node:fs';
import { createRateLimitClient, type RateLimitClientTls, rateLimitResponseToJson, type RateLimitClient, type RequestDescriptorMsg } from '@rls/rls-proto';

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

const processIo: CliIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
};

const USAGE = `Usage of ratelimit-client:
  -descriptors value
    \tdescriptor list to query in <key>=<value>,<key>=<value>,... form; repeat for several descriptors
  -dial_string string
    \turl of ratelimit server in <host>:<port> form (default "localhost:8081")
  -domain string
    \trate limit configuration domain to query
  -grpc-cert-file string
    \tclient certificate file (PEM) for mutual TLS
  -grpc-key-file string
    \tclient private key file (PEM) for mutual TLS
  -grpc-server-ca-file string
    \tCA file (PEM) to verify the server; the system roots when empty
  -grpc-server-name string
    \tname to verify in the server certificate (and send as SNI) instead of the dialled host
  -grpc-use-tls
    \tuse TLS to connect to the server
`;

export interface ClientFlags {
  dialString: string;
  domain: string;
  descriptors: RequestDescriptorMsg[];
  useTls: boolean;
  serverCaFile: string;
  certFile: string;
  keyFile: string;
  serverName: string;
}

const BOOL_FLAGS = new Set(['grpc-use-tls']);

export class FlagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FlagError';
  }
}

/** One `-descriptors` value: comma-separated pairs, each split on its first `=` into exactly two parts. */
export function parseDescriptor(value: string): RequestDescriptorMsg {
  const entries = value.split(',').map((pair) => {
    const eq = pair.indexOf('=');
    if (eq < 0) throw new FlagError('invalid descriptor list');
    return { key: pair.slice(0, eq), value: pair.slice(eq + 1) };
  });
  return { entries };
}

/** Parses argv (without node and script). Throws FlagError; `help` is returned for -h/-help. */
export function parseFlags(argv: readonly string[]): ClientFlags | 'help' {
  const flags: ClientFlags = { dialString: 'localhost:8081', domain: '', descriptors: [], useTls: false, serverCaFile: '', certFile: '', keyFile: '', serverName: '' };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') break;
    if (!arg.startsWith('-') || arg === '-') throw new FlagError(`unexpected argument: ${arg}`);
    const body = arg.startsWith('--') ? arg.slice(2) : arg.slice(1);
    const eq = body.indexOf('=');
    const name = eq < 0 ? body : body.slice(0, eq);
    if (name === 'h' || name === 'help') return 'help';
    let value: string;
    if (eq >= 0) value = body.slice(eq + 1);
    else if (BOOL_FLAGS.has(name)) value = 'true';
    else {
      const next = argv[i + 1];
      if (next === undefined) throw new FlagError(`flag needs an argument: -${name}`);
      value = next;
      i++;
    }
    switch (name) {
      case 'dial_string':
        flags.dialString = value;
        break;
      case 'domain':
        flags.domain = value;
        break;
      case 'descriptors':
        flags.descriptors.push(parseDescriptor(value));
        break;
      case 'grpc-use-tls':
        if (!/^(1|t|T|TRUE|true|True|0|f|F|FALSE|false|False)$/.test(value)) throw new FlagError(`parse error on -grpc-use-tls: ${value}`);
        flags.useTls = /^(1|t|T|TRUE|true|True)$/.test(value);
        break;
      case 'grpc-server-ca-file':
        flags.serverCaFile = value;
        break;
      case 'grpc-cert-file':
        flags.certFile = value;
        break;
      case 'grpc-key-file':
        flags.keyFile = value;
        break;
      case 'grpc-server-name':
        flags.serverName = value;
        break;
      default:
        throw new FlagError(`flag provided but not defined: -${name}`);
    }
  }
  return flags;
}

export interface MainDeps {
  io?: CliIo;
  /** Builds the client; replaced in tests only to point at TLS settings etc. */
  connect?: (address: string) => RateLimitClient;
  /** Per-call deadline in milliseconds (default 5000). */
  timeoutMs?: number;
}

/** TLS settings from the flags, files read now (a read error is a connect error); undefined without -grpc-use-tls. */
export function clientTls(flags: ClientFlags): RateLimitClientTls | undefined {
  if (!flags.useTls) return undefined;
  if ((flags.certFile === '') !== (flags.keyFile === '')) throw new Error('-grpc-cert-file and -grpc-key-file must be given together');
  const read = (p: string): Buffer | undefined => (p === '' ? undefined : readFileSync(p));
  return { ca: read(flags.serverCaFile), cert: read(flags.certFile), key: read(flags.keyFile), servername: flags.serverName === '' ? undefined : flags.serverName };
}

/** Runs the CLI; resolves with the process exit code (0 ok, 1 request/connect error, 2 usage). */
export async function main(argv: readonly string[], deps: MainDeps = {}): Promise<number> {
  const io = deps.io ?? processIo;
  let flags: ClientFlags | 'help';
  try {
    flags = parseFlags(argv);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    io.stderr(`invalid value for flag: ${msg}\n${USAGE}`);
    return 2;
  }
  if (flags === 'help') {
    io.stderr(USAGE);
    return 0;
  }
  const timeoutMs = deps.timeoutMs ?? 5000;
  let client: RateLimitClient;
  try {
    client = deps.connect !== undefined ? deps.connect(flags.dialString) : createRateLimitClient({ address: flags.dialString, timeoutMs, tls: clientTls(flags) });
  } catch (err) {
    io.stdout(`error connecting: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  try {
    const res = await client.shouldRateLimit({ domain: flags.domain, descriptors: flags.descriptors, hitsAddend: 1 }, { deadlineMs: timeoutMs });
    io.stdout(`response: ${JSON.stringify(rateLimitResponseToJson(res), null, 2)}\n`);
    return 0;
  } catch (err) {
    io.stdout(`request error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  } finally {
    client.close();
  }
}
