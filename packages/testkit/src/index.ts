export { freePort } from './ports.js';
export { waitFor, GiveUp, clearOfWindowEdge, type WaitOptions } from './wait.js';
export { FakeClock } from './clock.js';
export { ruleCounters, type RuleCounters } from './rule-counters.js';
export { tempDir, spawnManaged, type Managed } from './process.js';
export {
  startRedis,
  rawRedisCommand,
  redisCall,
  readReply,
  RedisReplyError,
  type RedisServer,
  type RedisOptions,
  type RedisTarget,
  type RespValue,
} from './redis.js';
export { startPostgres, type PostgresServer, type PostgresOptions } from './postgres.js';
export { startMemcached, memcachedCommand, type MemcachedServer, type MemcachedOptions, type MemcachedTlsOptions } from './memcached.js';
export { startDnsServer, type DnsServer, type SrvRecord } from './dns.js';
export { makeCa, issueCert, makeTestPki, type CertFiles, type LeafOptions, type TestPki } from './certs.js';
export {
  startXdsServer,
  RLS_CONFIG_TYPE_URL,
  type XdsManagementServer,
  type XdsServerOptions,
  type XdsServerTls,
  type RecordedRequest,
  type RlsConfigResource,
  type RlsConfigDescriptor,
  type RawResource,
} from './xds-server.js';
export { makeTlsFiles, startRedisTls, type TlsFiles, type TlsRedisServer, type TlsRedisOptions } from './redis-tls.js';
export { startSentinelSet, type SentinelSet, type SentinelNode, type SentinelOptions } from './redis-sentinel.js';
export { startRedisCluster, type RedisCluster, type ClusterNode } from './redis-cluster.js';
export { startFakeBinance, type FakeBinance, type FakeBinanceOptions, type FakeMarket, type FakeTicker, type FakeKline, type FakeFault, type RecordedHttpRequest } from './fake-binance.js';
export { startFakeBinanceUs } from './fake-exchange2.js';
export { startFakePtax, type FakePtax, type FakePtaxOptions } from './fake-ptax.js';
export { startFakeEcb, type FakeEcb, type FakeEcbOptions } from './fake-ecb.js';
export * from './h2-raw.js';
export * from './property-support.js';
export { assertMayStartServers, tierOfTestFile, UnitTierViolation, TEST_TIER_ENV, type TestTier } from './tier-guard.js';
export { pngVariety } from './png.js';
export * from './rlqs-envoy.js';
export { fileGraph, roomOf, roomGraph, findLoop, roomLoop, floorsOf, importGraphTests } from './floors.js';
