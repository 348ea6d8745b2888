// Interoperability with an independent gRPC implementation: Python's grpcio (gRPC C-core, the
// Debian package python3-grpcio) calls ShouldRateLimit and Health/Check over TLS and mutual TLS.
// The Python side encodes the request and decodes the response with a few lines of hand-written
// protobuf, so neither our codecs nor grpc-js take part on the client side.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clearOfWindowEdge, makeTestPki, tempDir, type TestPki } from '@rls/testkit';
import { buildRateLimitApp, type RateLimitApp } from '../../src/app.js';
import { silentLogger } from '../../src/logger.js';
import { loadSettings } from '../../src/settings.js';

const PY_CLIENT = String.raw`
import json, sys
import grpc

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def field(num, wire, payload):
    key = varint((num << 3) | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload

def s(num, text):
    return field(num, 2, text.encode())

def rate_limit_request(domain, entries):
    entry_msgs = b''.join(field(1, 2, s(1, k) + s(2, v)) for k, v in entries)
    return s(1, domain) + field(2, 2, entry_msgs) + field(3, 0, varint(1))

def read_varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7

def first_varint_field(buf, wanted):
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = read_varint(buf, i)
            if num == wanted:
                return v
        elif wire == 2:
            n, i = read_varint(buf, i)
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError('unexpected wire type %d' % wire)
    return 0

args = json.loads(sys.argv[1])
def read(p):
    if not p:
        return None
    with open(p, 'rb') as f:
        return f.read()
creds = grpc.ssl_channel_credentials(root_certificates=read(args.get('ca')), private_key=read(args.get('key')), certificate_chain=read(args.get('cert')))
options = [('grpc.ssl_target_name_override', args['serverName'])]
result = {}
with grpc.secure_channel(args['target'], creds, options=options) as channel:
    identity = lambda b: b
    rls = channel.unary_unary('/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit', request_serializer=identity, response_deserializer=identity)
    health = channel.unary_unary('/grpc.health.v1.Health/Check', request_serializer=identity, response_deserializer=identity)
    try:
        codes = []
        for _ in range(args.get('calls', 1)):
            res = rls(rate_limit_request(args['domain'], [('k', 'v')]), timeout=args.get('timeout', 5))
            codes.append(first_varint_field(res, 1))
        result['overallCodes'] = codes
        result['health'] = first_varint_field(health(s(1, 'ratelimit'), timeout=5), 1)
        result['status'] = 'OK'
    except grpc.RpcError as e:
        result['status'] = e.code().name
        result['details'] = e.details()
print(json.dumps(result))
`;

/** A python3 that can import grpc (the PATH one may be a separate installation without it). */
function findPython(): string {
  for (const candidate of ['python3', '/usr/bin/python3']) {
    const r = spawnSync(candidate, ['-c', 'import grpc'], { stdio: 'ignore' });
    if (r.status === 0) return candidate;
  }
  throw new Error('no python3 with the grpc module: install the Debian package python3-grpcio');
}

interface PyResult {
  status: string;
  overallCodes?: number[];
  health?: number;
  details?: string;
}

describe(`Python grpcio (C-core) client against the service`, () => {
  const dir = tempDir('rls-interop-');
  let pki: TestPki;
  let python: string;
  let script: string;
  let root: string;
  before(() => {
    python = findPython();
    pki = makeTestPki(dir.path);
    script = join(dir.path, 'client.py');
    writeFileSync(script, PY_CLIENT);
    root = join(dir.path, 'rules');
    mkdirSync(join(root, 'config'), { recursive: true });
    writeFileSync(join(root, 'config', 'py.yaml'), 'domain: py\ndescriptors:\n  - key: k\n    value: v\n    rate_limit:\n      unit: minute\n      requests_per_unit: 1\n');
  });
  after(() => dir.cleanup());

  async function startApp(env: Record<string, string>): Promise<{ app: RateLimitApp; target: string }> {
    const { settings } = loadSettings({
      BACKEND_TYPE: 'memory',
      USE_STATS_PUSH: 'false',
      RUNTIME_ROOT: root,
      RUNTIME_WATCH_ROOT: 'false',
      HOST: '127.0.0.1',
      PORT: '0',
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: '0',
      DEBUG_HOST: '127.0.0.1',
      DEBUG_PORT: '0',
      GRPC_SERVER_USE_TLS: 'true',
      GRPC_SERVER_TLS_CERT: pki.server.certPath,
      GRPC_SERVER_TLS_KEY: pki.server.keyPath,
      ...env,
    });
    const app = buildRateLimitApp(settings, { logger: silentLogger() });
    app.loadRules();
    const { grpc } = await app.start();
    return { app, target: `127.0.0.1:${grpc.port}` };
  }

  // Asynchronous on purpose: the service runs in this process and must keep serving meanwhile.
  function runPythonAsync(args: Record<string, unknown>): Promise<PyResult> {
    return new Promise((resolve, reject) => {
      execFile(python, [script, JSON.stringify({ serverName: 'localhost', domain: 'py', ...args })], { timeout: 30_000 }, (err, stdout, stderr) => {
        if (err !== null) reject(new Error(`python client failed: ${err.message}\n${stderr}`));
        else resolve(JSON.parse(stdout) as PyResult);
      });
    });
  }

  test('TLS: decisions and health over a C-core channel', async () => {
    const { app, target } = await startApp({});
    try {
      await clearOfWindowEdge(60, 15_000); // both calls count in one minute window (limit 1)
      const r = await runPythonAsync({ target, ca: pki.ca.certPath, calls: 2 });
      assert.deepEqual(r, { overallCodes: [1, 2], health: 1, status: 'OK' });
      const untrusted = await runPythonAsync({ target, ca: makeTestPki(dir.path, 'py-other-').ca.certPath });
      assert.equal(untrusted.status, 'UNAVAILABLE');
    } finally {
      await app.stop();
    }
  });

  test('mutual TLS with a required SAN: the right client certificate passes, none or a wrong SAN fail', async () => {
    const { app, target } = await startApp({ GRPC_CLIENT_TLS_CACERT: pki.ca.certPath, GRPC_CLIENT_TLS_SAN: 'client.test' });
    try {
      const ok = await runPythonAsync({ target, ca: pki.ca.certPath, cert: pki.client.certPath, key: pki.client.keyPath, domain: 'py-mtls' });
      assert.deepEqual(ok, { overallCodes: [1], health: 1, status: 'OK' });
      // C-core reports a connection the server keeps refusing as UNAVAILABLE or, when it is still
      // retrying at the deadline, DEADLINE_EXCEEDED; either way no call got through.
      const refused = new Set(['UNAVAILABLE', 'DEADLINE_EXCEEDED']);
      const anonymous = await runPythonAsync({ target, ca: pki.ca.certPath, timeout: 2 });
      assert.ok(refused.has(anonymous.status), JSON.stringify(anonymous));
      const wrongSan = await runPythonAsync({ target, ca: pki.ca.certPath, cert: pki.wrongSanClient.certPath, key: pki.wrongSanClient.keyPath, timeout: 2 });
      assert.ok(refused.has(wrongSan.status), JSON.stringify(wrongSan));
      assert.equal(app.stats.counterValue('ratelimit_server.ShouldRateLimit.total_requests'), 1);
    } finally {
      await app.stop();
    }
  });
});
