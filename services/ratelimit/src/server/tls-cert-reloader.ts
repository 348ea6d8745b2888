// Hot reload of the gRPC server's certificate and key (GRPC_SERVER_TLS_CERT / _KEY). The
// directories holding the two files are watched (which also sees files renamed over the old ones
// and Kubernetes' symlink swaps); a change is debounced, the pair is read and checked by building
// a TLS context from it, and only a pair that loads is applied — a broken or half-written pair
// keeps the previous one and is logged. A slow poll backs up the watcher on file systems that do
// not report changes. Existing connections keep the context they were established with.
import { watch, readFileSync, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import tls from 'node:tls';
import type { Logger } from '../logger.js';

export interface KeyPair {
  readonly key: Buffer;
  readonly cert: Buffer;
}

/** Reads the pair and checks that it forms a usable TLS context (key matches certificate). Throws. */
export function loadKeyPair(certPath: string, keyPath: string): KeyPair {
  const cert = readFileSync(certPath);
  const key = readFileSync(keyPath);
  tls.createSecureContext({ cert, key });
  return { key, cert };
}

export interface CertReloaderOptions {
  certPath: string;
  keyPath: string;
  /** The pair currently served (loaded at start-up). */
  initial: KeyPair;
  /** Installs a new pair for new handshakes. */
  apply: (pair: KeyPair) => void;
  logger: Logger;
  /** Quiet period after the last file event before reloading, ms (default 100). */
  debounceMs?: number | undefined;
  /** Poll interval backing up the watcher, ms (default 10 000; 0 disables). */
  pollMs?: number | undefined;
}

export class CertificateReloader {
  private readonly opts: CertReloaderOptions;
  private readonly watchers: FSWatcher[] = [];
  private current: KeyPair;
  private debounce: NodeJS.Timeout | undefined;
  private poll: NodeJS.Timeout | undefined;
  private reloadCount = 0;

  constructor(opts: CertReloaderOptions) {
    this.opts = opts;
    this.current = opts.initial;
  }

  /** Pairs applied since start (for tests and logs). */
  get reloads(): number {
    return this.reloadCount;
  }

  start(): void {
    for (const dir of new Set([dirname(this.opts.certPath), dirname(this.opts.keyPath)])) {
      try {
        const w = watch(dir, { persistent: false }, () => this.schedule());
        w.on('error', (err) => this.opts.logger.warn({ dir, err: err.message }, 'certificate directory watch failed; polling only'));
        this.watchers.push(w);
      } catch (err) {
        this.opts.logger.warn({ dir, err: err instanceof Error ? err.message : String(err) }, 'cannot watch certificate directory; polling only');
      }
    }
    const pollMs = this.opts.pollMs ?? 10_000;
    if (pollMs > 0) {
      this.poll = setInterval(() => this.reloadNow(), pollMs);
      this.poll.unref();
    }
  }

  stop(): void {
    for (const w of this.watchers) w.close();
    this.watchers.length = 0;
    if (this.debounce !== undefined) clearTimeout(this.debounce);
    if (this.poll !== undefined) clearInterval(this.poll);
    this.debounce = undefined;
    this.poll = undefined;
  }

  private schedule(): void {
    if (this.debounce !== undefined) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      this.reloadNow();
    }, this.opts.debounceMs ?? 100);
    this.debounce.unref();
  }

  /** Reads the files; applies them when they changed and load. Returns true when a new pair was applied. */
  reloadNow(): boolean {
    let pair: KeyPair;
    try {
      pair = loadKeyPair(this.opts.certPath, this.opts.keyPath);
    } catch (err) {
      this.opts.logger.error({ cert: this.opts.certPath, key: this.opts.keyPath, err: err instanceof Error ? err.message : String(err) }, 'cannot load the new TLS certificate; keeping the previous one');
      return false;
    }
    if (pair.cert.equals(this.current.cert) && pair.key.equals(this.current.key)) return false;
    try {
      this.opts.apply(pair);
    } catch (err) {
      this.opts.logger.error({ err: err instanceof Error ? err.message : String(err) }, 'cannot install the new TLS certificate; keeping the previous one');
      return false;
    }
    this.current = pair;
    this.reloadCount++;
    this.opts.logger.info({ cert: this.opts.certPath }, 'TLS certificate reloaded');
    return true;
  }
}
