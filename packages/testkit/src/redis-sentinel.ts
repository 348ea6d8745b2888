// A Redis Sentinel deployment for tests: one master, replicas, and sentinels (redis-sentinel
// binary) monitoring it with quorum 2, all on free loopback ports. Failover is fast (down after
// 1 s by default) so tests can kill the master and wait for the switch within a bound.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { spawnManaged, tempDir, type Managed } from './process.js';
import { redisCall, startRedis, type RedisServer } from './redis.js';
import { GiveUp, waitFor } from './wait.js';
import { assertMayStartServers } from './tier-guard.js';

export interface SentinelNode {
  port: number;
  /** `127.0.0.1:<port>`. */
  address: string;
  stop: () => Promise<void>;
  start: () => Promise<void>;
}

export interface SentinelSet {
  masterName: string;
  /** The master the set started with. */
  master: RedisServer;
  replicas: RedisServer[];
  sentinels: SentinelNode[];
  /** KVSTORE_URL for type sentinel: `<master>,<sentinel>,...`. */
  url: string;
  /** The master's `host:port` as the first answering sentinel reports it. */
  currentMaster: () => Promise<string>;
  /** The data node (master or replica) listening on `host:port`. */
  node: (address: string) => RedisServer;
  /** A command to a sentinel (authenticated when the set has a sentinel password). */
  sentinelCall: (index: number, ...parts: string[]) => Promise<unknown>;
  stop: () => Promise<void>;
}

export interface SentinelOptions {
  masterName?: string;
  replicas?: number;
  sentinels?: number;
  /** `requirepass` of the sentinels (KVSTORE_SENTINEL_AUTH). */
  sentinelPassword?: string;
  /** `requirepass`/`masterauth` of master and replicas (KVSTORE_AUTH). */
  dataPassword?: string;
  downAfterMs?: number;
  failoverTimeoutMs?: number;
}

export async function startSentinelSet(opts: SentinelOptions = {}): Promise<SentinelSet> {
  assertMayStartServers('startSentinelSet');
  const masterName = opts.masterName ?? 'mymaster';
  const pw = opts.dataPassword;
  const dataArgs = pw !== undefined ? ['--masterauth', pw] : [];
  const master = await startRedis({ args: dataArgs, ...(pw !== undefined ? { requirepass: pw } : {}) });
  const replicas: RedisServer[] = [];
  for (let i = 0; i < (opts.replicas ?? 1); i++) {
    const r = await startRedis({ args: [...dataArgs, '--replicaof', master.host, String(master.port)], ...(pw !== undefined ? { requirepass: pw } : {}) });
    replicas.push(r);
  }
  for (const r of replicas) {
    await waitFor(async () => String(await r.call('INFO', 'replication')).includes('master_link_status:up'), { what: 'replica link up', timeoutMs: 10_000 });
  }

  const sp = opts.sentinelPassword;
  const sentinels: SentinelNode[] = [];
  for (let i = 0; i < (opts.sentinels ?? 3); i++) {
    const port = await freePort();
    const dir = tempDir('rls-sentinel-').path;
    const conf = join(dir, 'sentinel.conf');
    const lines = [
      `port ${port}`,
      'bind 127.0.0.1',
      'protected-mode no',
      `dir ${dir}`,
      `sentinel monitor ${masterName} 127.0.0.1 ${master.port} 2`,
      `sentinel down-after-milliseconds ${masterName} ${opts.downAfterMs ?? 1000}`,
      `sentinel failover-timeout ${masterName} ${opts.failoverTimeoutMs ?? 5000}`,
      `sentinel parallel-syncs ${masterName} 1`,
      ...(pw !== undefined ? [`sentinel auth-pass ${masterName} ${pw}`] : []),
      ...(sp !== undefined ? [`requirepass ${sp}`, `sentinel sentinel-pass ${sp}`] : []),
    ];
    writeFileSync(conf, lines.join('\n') + '\n');
    let proc: Managed | undefined;
    const start = async (): Promise<void> => {
      const p = spawnManaged('redis-sentinel', [conf]);
      proc = p;
      await waitFor(
        async () => {
          if (p.proc.exitCode !== null) throw new GiveUp(`redis-sentinel exited: ${p.output()}`);
          return (await redisCall({ host: '127.0.0.1', port }, ['PING'], sp)) === 'PONG';
        },
        { what: `sentinel on ${port}`, timeoutMs: 10_000 },
      );
    };
    await start();
    sentinels.push({ port, address: `127.0.0.1:${port}`, start, stop: async () => await proc?.stop() });
  }
  const sentinelCall = (index: number, ...parts: string[]): Promise<unknown> => {
    const s = sentinels[index];
    if (s === undefined) throw new Error(`no sentinel ${index}`);
    return redisCall({ host: '127.0.0.1', port: s.port }, parts, sp);
  };
  // Failover needs the sentinels to know each other and the replicas (hello messages, ~2 s).
  await waitFor(
    async () => {
      for (let i = 0; i < sentinels.length; i++) {
        const others = (await sentinelCall(i, 'SENTINEL', 'SENTINELS', masterName)) as unknown[];
        const reps = (await sentinelCall(i, 'SENTINEL', 'REPLICAS', masterName)) as unknown[];
        if (others.length < sentinels.length - 1 || reps.length < replicas.length) return false;
      }
      return true;
    },
    { what: 'sentinels to discover each other and the replicas', timeoutMs: 20_000, intervalMs: 100 },
  );

  const all = [master, ...replicas];
  return {
    masterName,
    master,
    replicas,
    sentinels,
    url: [masterName, ...sentinels.map((s) => s.address)].join(','),
    currentMaster: async () => {
      for (let i = 0; i < sentinels.length; i++) {
        try {
          const r = (await sentinelCall(i, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName)) as string[];
          return `${r[0]}:${r[1]}`;
        } catch {
          // next sentinel
        }
      }
      throw new Error('no sentinel answered');
    },
    node: (address) => {
      const n = all.find((s) => s.url === address);
      if (n === undefined) throw new Error(`no data node at ${address}`);
      return n;
    },
    sentinelCall,
    stop: async () => {
      await Promise.all([...sentinels.map((s) => s.stop()), ...all.map((s) => s.stop())]);
    },
  };
}
