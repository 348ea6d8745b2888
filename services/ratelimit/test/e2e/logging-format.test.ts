// Log formats of the real process (docs/ratelimit.md "Logging"): LOG_FORMAT=text lines
// `time=<ts> level=<level> msg=<text>` and LOG_FORMAT=json objects with `@message`, `@timestamp`
// (RFC 3339 with nanoseconds) and `level`, read from the process's stderr; the start-up lines
// for every rule and for the debug, HTTP and gRPC listen addresses; LOG_LEVEL filtering.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { freePort, waitFor, GiveUp } from '@rls/testkit';
import { writeRules } from '../support/service-process.js';

const mainTs = new URL('../../src/main.ts', import.meta.url).pathname;
const RULES = `domain: logs
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 7 }
  - key: path
    value: /api
    rate_limit: { unit: hour, requests_per_unit: 100, name: api }
`;
const RFC3339_NANO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$/;

interface Run {
  stdout: string;
  stderr: string;
  code: number | null;
  ports: { http: number; grpc: number; debug: number };
}

/** Starts the service, waits for the HTTP listener line, then stops it with SIGTERM. */
async function runService(env: Record<string, string>, ready: RegExp): Promise<Run> {
  const rules = writeRules({ 'logs.yaml': RULES });
  const ports = { http: await freePort(), grpc: await freePort(), debug: await freePort() };
  const proc = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', '-e', `import(${JSON.stringify(mainTs)}).then((m) => m.run())`], {
    env: {
      ...process.env,
      ...rules.env,
      BACKEND_TYPE: 'memory',
      USE_STATS_PUSH: 'false',
      HOST: '127.0.0.1',
      PORT: String(ports.http),
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: String(ports.grpc),
      DEBUG_HOST: '127.0.0.1',
      DEBUG_PORT: String(ports.debug),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = once(proc, 'exit');
  try {
    await waitFor(
      async () => {
        if (proc.exitCode !== null) throw new GiveUp(`exited early: ${stderr}`);
        return ready.test(stderr) && (await fetch(`http://127.0.0.1:${ports.http}/healthcheck`)).status === 200;
      },
      { what: 'the service to be ready', timeoutMs: 20_000, intervalMs: 50 },
    );
  } finally {
    proc.kill('SIGTERM');
  }
  const [code] = (await exited) as [number | null];
  rules.cleanup();
  return { stdout, stderr, code, ports };
}

test('LOG_FORMAT=text: logrus-style lines on stderr with the start-up details', async () => {
  const r = await runService({ LOG_FORMAT: 'text', LOG_LEVEL: 'info' }, /HTTP server listening/);
  assert.equal(r.code, 0);
  assert.equal(r.stdout, '', 'logs go to stderr');
  const lines = r.stderr.trimEnd().split('\n');
  for (const l of lines) assert.match(l, /^time=\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z level=(trace|debug|info|warn|error|fatal) msg=/, l);
  const has = (re: RegExp): void => assert.ok(lines.some((l) => re.test(l)), `a line matching ${re}`);
  has(/level=info msg="loaded rate limit rule" (\S+ )?domain=logs descriptor=logs\.user limit=7\/MINUTE/);
  has(/level=info msg="loaded rate limit rule" (\S+ )?domain=logs descriptor=logs\.path_\/api limit=100\/HOUR name=api/);
  has(new RegExp(`msg="debug server listening" address=127\\.0\\.0\\.1:${r.ports.debug}( |$)`));
  has(new RegExp(`msg="gRPC server listening" address=127\\.0\\.0\\.1:${r.ports.grpc}( |$)`));
  has(new RegExp(`msg="HTTP server listening" address=127\\.0\\.0\\.1:${r.ports.http}( |$)`));
  has(/level=warn msg="shutting down" signal=SIGTERM/);
});

test('LOG_FORMAT=json: @message, @timestamp with nanoseconds, level', async () => {
  const r = await runService({ LOG_FORMAT: 'json', LOG_LEVEL: 'debug' }, /HTTP server listening/);
  assert.equal(r.code, 0);
  const records = r.stderr
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  for (const rec of records) {
    assert.equal(typeof rec['@message'], 'string');
    assert.match(String(rec['@timestamp']), RFC3339_NANO);
    assert.match(String(rec.level), /^(trace|debug|info|warn|error|fatal)$/);
  }
  const stamps = records.map((rec) => String(rec['@timestamp']));
  assert.deepEqual(stamps, [...stamps].sort(), 'timestamps never go backwards');
  const rule = records.find((rec) => rec['@message'] === 'loaded rate limit rule' && rec.descriptor === 'logs.user');
  assert.deepEqual({ level: rule?.level, domain: rule?.domain, limit: rule?.limit }, { level: 'info', domain: 'logs', limit: '7/MINUTE' });
  for (const [msg, port] of [
    ['debug server listening', r.ports.debug],
    ['gRPC server listening', r.ports.grpc],
    ['HTTP server listening', r.ports.http],
  ] as const) {
    assert.equal(records.find((rec) => rec['@message'] === msg)?.address, `127.0.0.1:${port}`, msg);
  }
  assert.ok(records.some((rec) => rec.level === 'debug'), 'LOG_LEVEL=debug lets debug lines through');
});

test('LOG_LEVEL=warn drops info lines', async () => {
  const r = await runService({ LOG_FORMAT: 'json', LOG_LEVEL: 'warn' }, /^/);
  assert.equal(r.code, 0);
  const records = r.stderr
    .trimEnd()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.ok(records.length > 0);
  for (const rec of records) assert.match(String(rec.level), /^(warn|error|fatal)$/);
  assert.ok(records.some((rec) => rec['@message'] === 'shutting down'));
});
