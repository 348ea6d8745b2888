// The Redis counter store for KVSTORE_TYPE=cluster, on the lean RESP client. Each op's key is
// routed by slot to the master serving it; a call's commands are grouped per node and every group
// is written at once, so a request costs one round trip per node with all nodes in parallel
// (upstream runs the groups one after the other). MOVED updates the slot map, retries the command
// on the named node and schedules a topology refresh (CLUSTER SLOTS); ASK retries once on the
// named node behind ASKING. Every node has its own pool (KVSTORE_POOL_SIZE connections).
//
// "Connected" (health, isConnected) means at least one node has a ready connection, as in single
// mode: a cluster with one master down still serves the keys of the other masters.
import { SATURATED_COUNT, StoreError, saturate, type Algorithm, type CounterOp, type CounterStore, type OpResult } from '@rls/engine';
import { ConnectionPool } from './connection-pool.js';
import { keySlot, parseClusterSlots, parseRedirect, SLOT_COUNT, type SlotRange } from './cluster-slots.js';
import { ExpiryMemo } from './expiry-memo.js';
import { anyExpireOnCreate, encodeCommand, expireCommands, ExpireReplies, IncrementPlan, IncrementPlanReplies, isIncrOverflow, opCommands, opResults, RawReplies, type KeyedCommand, type KeyedCommandSender } from './redis-commands.js';
import { maskUrl, parseRedisEndpoint, poolOptionsFrom, REDIS_ALGORITHMS, type RedisStoreOptions } from './redis-store.js';
import { RespErrorReply, type RespReply } from './resp-parser.js';

export type ClusterStoreOptions = Omit<RedisStoreOptions, 'url' | 'socketType'> & {
  /** KVSTORE_URL: `host:port,host:port,...` (any nodes; the rest is learned). */
  nodes: readonly string[];
  /** Least time between two topology refreshes, ms (default 250). */
  refreshMinIntervalMs?: number | undefined;
};

interface Cmd {
  slot: number;
  text: string;
}

interface Item {
  index: number;
  cmd: Cmd;
  /** Where a redirection sent it; undefined = the slot's owner. */
  target: string | undefined;
  asking: boolean;
}

const ASKING = encodeCommand(['ASKING']);
const CLUSTER_SLOTS = encodeCommand(['CLUSTER', 'SLOTS']);
const MAX_REDIRECTS = 5;

export class ClusterStore implements CounterStore, KeyedCommandSender {
  readonly kind = 'redis';
  readonly algorithms: ReadonlySet<Algorithm> = REDIS_ALGORITHMS;
  private readonly pools = new Map<string, ConnectionPool>();
  private readonly slotPools = new Array<ConnectionPool | undefined>(SLOT_COUNT);
  private readonly seeds: readonly string[];
  private readonly listeners: ((connected: boolean) => void)[] = [];
  private connected = false;
  private closed = false;
  private refreshing: Promise<void> | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private lastRefresh = 0;
  private readonly refreshMinIntervalMs: number;
  private topologyKnown = false;
  private topologyWaiters: (() => void)[] = [];
  private lastTopologyError: Error | undefined;
  /** `expireOnCreate` keys given their TTL (one memo: a key lives on one node); forgotten on any topology or connection change. */
  private readonly expiry = new ExpiryMemo();

  constructor(private readonly opts: ClusterStoreOptions) {
    if (opts.nodes.length === 0) throw new StoreError('redis cluster: no nodes given');
    for (const n of opts.nodes) parseRedisEndpoint(n, 'tcp');
    this.seeds = opts.nodes;
    this.refreshMinIntervalMs = opts.refreshMinIntervalMs ?? 250;
    for (const n of opts.nodes) this.pool(n);
    void this.refresh();
  }

  async increment(ops: readonly CounterOp[]): Promise<number[]> {
    if (ops.length === 0) return [];
    if (anyExpireOnCreate(ops)) return this.incrementPlanned(new IncrementPlan(ops, this.expiry));
    const cmds: Cmd[] = new Array<Cmd>(ops.length * 2);
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as CounterOp;
      const slot = keySlot(op.key);
      cmds[2 * i] = { slot, text: encodeCommand(['INCRBY', op.key, String(op.addend)]) };
      cmds[2 * i + 1] = { slot, text: encodeCommand(['EXPIRE', op.key, String(op.expireSeconds)]) };
    }
    const replies = await this.run(cmds);
    const out = new Array<number>(ops.length);
    for (let i = 0; i < replies.length; i++) {
      const r = replies[i] as RespReply;
      if ((i & 1) === 0 && isIncrOverflow(r)) {
        out[i >> 1] = SATURATED_COUNT;
        continue;
      }
      if (typeof r !== 'number') throw new StoreError(`redis error: ${r instanceof RespErrorReply ? r.message : `unexpected reply ${JSON.stringify(r)}`}`);
      if ((i & 1) === 0) out[i >> 1] = saturate(r);
    }
    return out;
  }

  /**
   * `increment` with `expireOnCreate` ops (expiry-memo.ts): EXPIRE only for keys the memo does not
   * know, every command routed by its key's slot; keys INCRBY created without a TTL get their
   * EXPIRE in a second round trip.
   */
  private async incrementPlanned(plan: IncrementPlan): Promise<number[]> {
    const replies = await this.run(plan.commands().map((c) => ({ slot: keySlot(c.key), text: c.text })));
    const decoded = await new Promise<{ values: number[]; fresh: number[] | undefined }>((resolve, reject) => {
      const h = new IncrementPlanReplies(plan, this.expiry, (values, fresh) => resolve({ values, fresh }), reject);
      for (const r of replies) h.accept(r);
    });
    const fresh = decoded.fresh;
    if (fresh === undefined) return decoded.values;
    const again = await this.run(expireCommands(plan.ops, fresh).map((c) => ({ slot: keySlot(c.key), text: c.text })));
    await new Promise<void>((resolve, reject) => {
      const h = new ExpireReplies(
        fresh.map((i) => plan.hashes[i] as number),
        this.expiry,
        resolve,
        reject,
      );
      for (const r of again) h.accept(r);
    });
    return decoded.values;
  }

  /**
   * Every command routed by its own key's slot (a sliding op's previous key may live on another
   * node; a bucket op's script touches its one key), all nodes at once. Bucket ops that met
   * NOSCRIPT (flushed cache, a node that took over or was redirected to) are sent again with EVAL.
   */
  async execute(ops: readonly CounterOp[]): Promise<OpResult[]> {
    if (ops.length === 0) return [];
    const out = new Array<OpResult>(ops.length);
    const missing = opResults(ops, await this.run(this.commandsOf(ops, false)), out);
    if (missing === undefined) return out;
    const retryOps = missing.map((i) => ops[i] as CounterOp);
    const retried = new Array<OpResult>(retryOps.length);
    if (opResults(retryOps, await this.run(this.commandsOf(retryOps, true)), retried) !== undefined) throw new StoreError('redis error: NOSCRIPT after EVAL');
    missing.forEach((i, j) => (out[i] = retried[j] as OpResult));
    return out;
  }

  async get(keys: readonly string[]): Promise<number[]> {
    if (keys.length === 0) return [];
    // MGET cannot span slots; one GET per key, still one round trip per node.
    const replies = await this.run(keys.map((k) => ({ slot: keySlot(k), text: encodeCommand(['GET', k]) })));
    return replies.map((r) => {
      if (r === null) return 0;
      const n = typeof r === 'string' ? Number(r) : NaN;
      if (!Number.isInteger(n)) throw new StoreError(`redis error: ${r instanceof RespErrorReply ? r.message : JSON.stringify(r)} is not a counter`);
      return saturate(n);
    });
  }

  /** KeyedCommandSender: each command to its key's slot owner, all nodes at once, following MOVED/ASK. */
  sendKeyed(commands: readonly KeyedCommand[]): Promise<RespReply[]> {
    if (commands.length === 0) return Promise.resolve([]);
    return this.run(commands.map((c) => ({ slot: keySlot(c.key), text: c.text })));
  }

  /** One `DEL` per key (a DEL cannot span slots), each to its key's master, all nodes at once. */
  async delete(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    const replies = await this.run(keys.map((k) => ({ slot: keySlot(k), text: encodeCommand(['DEL', k]) })));
    for (const r of replies) if (typeof r !== 'number') throw new StoreError(`redis error: DEL answered ${r instanceof RespErrorReply ? r.message : JSON.stringify(r)}`);
  }

  isConnected(): boolean {
    return this.connected;
  }

  onConnectionChange(listener: (connected: boolean) => void): void {
    this.listeners.push(listener);
  }

  /** Resolves once the topology is known and a node is connected; rejects after `timeoutMs`. */
  async waitUntilConnected(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    await this.waitForTopology(timeoutMs);
    while (!this.connected) {
      const left = deadline - Date.now();
      if (left <= 0) throw new StoreError(`redis cluster not connected after ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 20));
        t.unref();
      });
    }
  }

  private commandsOf(ops: readonly CounterOp[], viaEval: boolean): Cmd[] {
    const cmds: Cmd[] = [];
    for (const op of ops) for (const c of opCommands(op, viaEval)) cmds.push({ slot: keySlot(c.key), text: c.text });
    return cmds;
  }

  /** Addresses of the masters the slot map points to (for tests and logs). */
  masters(): string[] {
    const out = new Set<string>();
    for (const [addr, p] of this.pools) if (this.slotPools.includes(p)) out.add(addr);
    return [...out].sort();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.refreshTimer !== undefined) clearTimeout(this.refreshTimer);
    for (const w of this.topologyWaiters) w();
    this.topologyWaiters = [];
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.updateConnected();
  }

  /** Sends `cmds` grouped per node, all groups at once; follows MOVED/ASK; replies in command order. */
  private async run(cmds: readonly Cmd[]): Promise<RespReply[]> {
    if (this.closed) throw new StoreError('redis store closed');
    if (!this.topologyKnown) await this.waitForTopology(this.opts.timeoutMs);
    const out = new Array<RespReply>(cmds.length);
    let pending: Item[] = cmds.map((cmd, index) => ({ index, cmd, target: undefined, asking: false }));
    for (let round = 0; round <= MAX_REDIRECTS; round++) {
      const groups = new Map<ConnectionPool, Item[]>();
      for (const it of pending) {
        const pool = it.target !== undefined ? this.pool(it.target) : this.slotPools[it.cmd.slot];
        if (pool === undefined) {
          this.scheduleRefresh();
          throw new StoreError(`redis cluster: no node serves slot ${it.cmd.slot}${this.lastTopologyError ? ` (${this.lastTopologyError.message})` : ''}`);
        }
        let g = groups.get(pool);
        if (g === undefined) groups.set(pool, (g = []));
        g.push(it);
      }
      const sent = [...groups].map(([pool, items]) => this.sendGroup(pool, items).then((replies) => ({ items, replies })));
      const results = await Promise.all(sent);
      const next: Item[] = [];
      for (const { items, replies } of results) {
        for (let i = 0; i < items.length; i++) {
          const it = items[i] as Item;
          const reply = replies[i] as RespReply;
          const redirect = parseRedirect(reply);
          if (redirect === undefined) {
            out[it.index] = reply;
            continue;
          }
          if (redirect.kind === 'MOVED') {
            this.slotPools[redirect.slot] = this.pool(redirect.address);
            this.scheduleRefresh();
          }
          next.push({ index: it.index, cmd: it.cmd, target: redirect.address, asking: redirect.kind === 'ASK' });
        }
      }
      if (next.length === 0) return out;
      // Keep command order within a node (the same key twice in one call).
      pending = next.sort((a, b) => a.index - b.index);
    }
    throw new StoreError(`redis cluster: more than ${MAX_REDIRECTS} redirections`);
  }

  private sendGroup(pool: ConnectionPool, items: readonly Item[]): Promise<RespReply[]> {
    let text = '';
    let count = 0;
    for (const it of items) {
      if (it.asking) {
        text += ASKING;
        count++;
      }
      text += it.cmd.text;
      count++;
    }
    return new Promise<RespReply[]>((resolve, reject) =>
      pool.send(
        text,
        new RawReplies(
          count,
          (replies) => {
            if (count === items.length) {
              resolve(replies);
              return;
            }
            // Drop the ASKING replies.
            const mine: RespReply[] = [];
            let j = 0;
            for (const it of items) {
              if (it.asking) j++;
              mine.push(replies[j++] as RespReply);
            }
            resolve(mine);
          },
          reject,
        ),
      ),
    );
  }

  /** The pool of a node, created on first use. */
  private pool(address: string): ConnectionPool {
    let p = this.pools.get(address);
    if (p === undefined) {
      const endpoint = parseRedisEndpoint(address, 'tcp');
      p = new ConnectionPool({
        ...poolOptionsFrom(this.opts, endpoint, maskUrl(address)),
        onConnectionError: () => this.scheduleRefresh(),
      });
      p.onConnectionChange(() => {
        this.expiry.clear();
        this.updateConnected();
      });
      this.pools.set(address, p);
    }
    return p;
  }

  private updateConnected(): void {
    const up = !this.closed && [...this.pools.values()].some((p) => p.isConnected());
    if (up === this.connected) return;
    this.connected = up;
    for (const l of [...this.listeners]) {
      try {
        l(up);
      } catch (err) {
        this.opts.logger?.warn({ err: (err as Error).message }, 'connection listener failed');
      }
    }
  }

  private waitForTopology(timeoutMs: number): Promise<void> {
    if (this.topologyKnown) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        const i = this.topologyWaiters.indexOf(done);
        if (i >= 0) this.topologyWaiters.splice(i, 1);
        const why = this.lastTopologyError?.message ?? 'no node answered';
        reject(new StoreError(`redis cluster topology unknown after ${timeoutMs} ms: ${why}`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        if (this.closed) reject(new StoreError('redis store closed'));
        else resolve();
      };
      this.topologyWaiters.push(done);
    });
  }

  private scheduleRefresh(): void {
    if (this.closed || this.refreshing !== undefined || this.refreshTimer !== undefined) return;
    const delay = Math.max(0, this.lastRefresh + this.refreshMinIntervalMs - Date.now());
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      void this.refresh();
    }, delay);
    this.refreshTimer.unref();
  }

  /** Asks the known nodes, one after the other, for CLUSTER SLOTS; installs the first answer. */
  private refresh(): Promise<void> {
    if (this.refreshing !== undefined) return this.refreshing;
    this.refreshing = (async () => {
      this.lastRefresh = Date.now();
      const candidates = [...new Set([...[...this.pools.entries()].filter(([, p]) => p.isConnected()).map(([a]) => a), ...this.pools.keys(), ...this.seeds])];
      for (const address of candidates) {
        if (this.closed) return;
        try {
          const ranges = await this.askSlots(address);
          if (ranges.length === 0) throw new Error('CLUSTER SLOTS is empty (cluster not set up?)');
          this.install(ranges);
          this.lastTopologyError = undefined;
          return;
        } catch (err) {
          this.lastTopologyError = err instanceof Error ? err : new Error(String(err));
        }
      }
    })().finally(() => {
      this.refreshing = undefined;
      // Nothing answered: keep trying (throttled) while there is no topology at all.
      if (!this.topologyKnown && !this.closed) this.scheduleRefresh();
    });
    return this.refreshing;
  }

  private askSlots(address: string): Promise<SlotRange[]> {
    const p = this.pool(address);
    const host = address.slice(0, address.lastIndexOf(':')).replace(/^\[|\]$/g, '');
    return new Promise<SlotRange[]>((resolve, reject) =>
      p.send(
        CLUSTER_SLOTS,
        new RawReplies(
          1,
          (replies) => {
            try {
              resolve(parseClusterSlots(replies[0] ?? null, host));
            } catch (err) {
              reject(err instanceof Error ? err : new Error(String(err)));
            }
          },
          reject,
        ),
      ),
    );
  }

  private install(ranges: readonly SlotRange[]): void {
    // Slots may have moved to nodes that lack TTLs the old owner set.
    this.expiry.clear();
    this.slotPools.fill(undefined);
    for (const r of ranges) {
      const p = this.pool(r.master);
      for (let s = r.start; s <= r.end; s++) this.slotPools[s] = p;
    }
    // Pools of nodes that serve no slot any more (replicas given as seeds, removed masters) go.
    for (const [addr, p] of this.pools) {
      if (!this.slotPools.includes(p) && !this.seeds.includes(addr)) {
        this.pools.delete(addr);
        void p.close();
      }
    }
    if (!this.topologyKnown) {
      this.topologyKnown = true;
      this.opts.logger?.info({ masters: this.masters().length }, 'redis cluster topology loaded');
      const ws = this.topologyWaiters;
      this.topologyWaiters = [];
      for (const w of ws) w();
    }
    this.updateConnected();
  }
}
