// The rate limit decision engine, shared through packages/ by the ratelimit server and the quotes
// service's embedded limiter: rule files and xDS resources -> validated rule snapshots, descriptor
// matching, the fixed-window limiter with its local over-limit cache, the CounterStore contract
// with the in-memory store, and the stats registry the limiter counts into. No network I/O.
export * from './clock.js';
export * from './config/algorithm-support.js';
export * from './config/file-source.js';
export * from './config/ip-address.js';
export * from './config/rule-file.js';
export * from './config/rule-set.js';
export * from './config/rule-stats.js';
export * from './config/rule-tree.js';
export * from './config/value-index.js';
export * from './config/wildcard.js';
export * from './config/xds-rule-source.js';
export * from './config/yaml-document.js';
export * from './domain.js';
export * from './errors.js';
export * from './limiter/algorithms.js';
export * from './limiter/cache-key.js';
export * from './limiter/counter-view.js';
export * from './limiter/descriptor-status.js';
export * from './limiter/dynamic-metadata.js';
export * from './limiter/fixed-window-limiter.js';
export * from './limiter/hits-addend.js';
export * from './limiter/limit-group.js';
export * from './limiter/local-cache.js';
export * from './limiter/options.js';
export * from './limiter/overall-code.js';
export * from './limiter/policy-headers.js';
export * from './limiter/response-headers.js';
export * from './limiter/window.js';
export * from './quota/fair-share.js';
export * from './quota/quota-assignment.js';
export * from './quota/quota-balancer.js';
export * from './quota/quota-matcher.js';
export * from './quota/quota-rule-set.js';
export * from './quota/quota-rules.js';
export * from './quota/quota-share-key.js';
export * from './quota/memory-share-store.js';
export * from './quota/share-ledger.js';
export * from './quota/share-store.js';
export * from './service.js';
export * from './stats/stats-store.js';
export * from './units.js';
export * from './store/counter-store.js';
export * from './store/decorate-store.js';
export * from './store/memory-store.js';
