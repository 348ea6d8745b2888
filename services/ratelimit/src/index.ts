// Library entry point: the decision engine and stores, reusable in-process (the quotes service
// embeds them) and the building blocks of the standalone service.
export * from './domain.js';
export * from './errors.js';
export * from './clock.js';
export type { CounterStore, CounterOp } from './backends/counter-store.js';
export { MemoryStore } from './backends/memory-store.js';
export { RedisStore } from './backends/redis-store.js';
export { StatsStore, Counter, Gauge, Timer } from './stats/stats-store.js';
export { loadRuleSet, RuleSet, type RuleSource, type LoadOptions } from './config/rule-set.js';
export { readRuleFiles } from './provider/file-source.js';
export { RateLimitService, type RateLimitServiceDeps } from './service.js';
export { DEFAULT_LIMITER_OPTIONS, type LimiterOptions } from './limiter/options.js';
export { buildRateLimitApp, limiterOptionsFrom, type RateLimitApp } from './app.js';
export { loadSettings, type Settings } from './settings.js';
export { createLogger, silentLogger } from './logger.js';
