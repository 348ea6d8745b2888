// A Redis Cluster for tests: N masters on free loopback ports (client and bus ports), slots split
// evenly with CLUSTER ADDSLOTSRANGE and the nodes joined with CLUSTER MEET — no redis-cli needed.
// Helpers move a slot between nodes in the documented steps, so tests can observe ASK (during the
// move) and MOVED (after it).
import { freePort } from './ports.js';
import { startRedis, type RedisServer } from './redis.js';
import { waitFor } from './wait.js';
import { assertMayStartServers } from './tier-guard.js';

export interface ClusterNode extends RedisServer {
  id: string;
  busPort: number;
}

export interface RedisCluster {
  nodes: ClusterNode[];
  /** KVSTORE_URL for type cluster: every node's `host:port`. */
  url: string;
  /** CLUSTER KEYSLOT as the server computes it. */
  keySlot: (key: string) => Promise<number>;
  /** The node currently serving `slot` (as node 0 sees it). */
  ownerOf: (slot: number) => Promise<ClusterNode>;
  /** Step 1 of a slot move: IMPORTING on the target, MIGRATING on the source (clients now get ASK for missing keys). */
  beginMigration: (slot: number, from: ClusterNode, to: ClusterNode) => Promise<void>;
  /** Step 2: MIGRATE every key of the slot from the source to the target. */
  moveKeys: (slot: number, from: ClusterNode, to: ClusterNode) => Promise<number>;
  /** Step 3: SETSLOT NODE on every node (clients now get MOVED). */
  finishMigration: (slot: number, to: ClusterNode) => Promise<void>;
  /** Waits until every running node reports cluster_state:ok. */
  waitHealthy: (timeoutMs?: number) => Promise<void>;
  stop: () => Promise<void>;
}

export async function startRedisCluster(opts: { masters?: number; nodeTimeoutMs?: number; args?: string[] } = {}): Promise<RedisCluster> {
  assertMayStartServers('startRedisCluster');
  const n = opts.masters ?? 3;
  const nodes: ClusterNode[] = [];
  for (let i = 0; i < n; i++) {
    const busPort = await freePort();
    const s = await startRedis({
      args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(busPort), '--cluster-node-timeout', String(opts.nodeTimeoutMs ?? 2000), ...(opts.args ?? [])],
    });
    const id = String(await s.call('CLUSTER', 'MYID'));
    nodes.push(Object.assign(s, { id, busPort }));
  }
  const per = Math.floor(16384 / n);
  for (let i = 0; i < n; i++) {
    const from = i * per;
    const to = i === n - 1 ? 16383 : (i + 1) * per - 1;
    await nodes[i]!.call('CLUSTER', 'ADDSLOTSRANGE', String(from), String(to));
  }
  for (const node of nodes.slice(1)) await nodes[0]!.call('CLUSTER', 'MEET', node.host, String(node.port), String(node.busPort));

  const waitHealthy = async (timeoutMs = 20_000): Promise<void> => {
    await waitFor(
      async () => {
        for (const node of nodes) {
          const info = String(await node.call('CLUSTER', 'INFO'));
          if (!info.includes('cluster_state:ok') || !info.includes(`cluster_known_nodes:${n}`)) return false;
        }
        return true;
      },
      { what: 'cluster_state:ok on every node', timeoutMs, intervalMs: 100 },
    );
  };
  await waitHealthy();

  const byId = (id: string): ClusterNode => {
    const node = nodes.find((x) => x.id === id);
    if (node === undefined) throw new Error(`unknown node ${id}`);
    return node;
  };
  return {
    nodes,
    url: nodes.map((x) => x.url).join(','),
    keySlot: async (key) => Number(await nodes[0]!.call('CLUSTER', 'KEYSLOT', key)),
    ownerOf: async (slot) => {
      const ranges = (await nodes[0]!.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, string]][];
      const r = ranges.find(([a, b]) => a <= slot && slot <= b);
      if (r === undefined) throw new Error(`slot ${slot} unassigned`);
      return byId(r[2][2]);
    },
    beginMigration: async (slot, from, to) => {
      await to.call('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', from.id);
      await from.call('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', to.id);
    },
    moveKeys: async (slot, from, to) => {
      let moved = 0;
      for (;;) {
        const keys = (await from.call('CLUSTER', 'GETKEYSINSLOT', String(slot), '100')) as string[];
        if (keys.length === 0) return moved;
        await from.call('MIGRATE', to.host, String(to.port), '', '0', '5000', 'KEYS', ...keys);
        moved += keys.length;
      }
    },
    finishMigration: async (slot, to) => {
      // The target first (Redis's documented order): a source told first would redirect to a target
      // still importing, which redirects back. The target also takes the greatest config epoch, so
      // its claim wins over any older one still gossiped. Then every node, and until each names the
      // target (a node still naming another owner is told again).
      await to.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', to.id);
      await to.call('CLUSTER', 'BUMPEPOCH');
      for (const node of nodes) if (node !== to) await node.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', to.id);
      await waitFor(
        async () => {
          let agreed = true;
          for (const node of nodes) {
            const ranges = (await node.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, string]][];
            if (ranges.find(([a, b]) => a <= slot && slot <= b)?.[2][2] !== to.id) {
              agreed = false;
              await node.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', to.id);
            }
          }
          return agreed;
        },
        { what: `every node names the new owner of slot ${slot}`, timeoutMs: 20_000, intervalMs: 50 },
      );
    },
    waitHealthy,
    stop: async () => {
      await Promise.all(nodes.map((x) => x.stop()));
    },
  };
}
