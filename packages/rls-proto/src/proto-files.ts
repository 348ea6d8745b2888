// Where the .proto files of this package live, for tools that load them (protobufjs in tests, a
// future xDS client). The hand-coded codecs do not read them at run time.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// Sources run from src/, the build from dist/src/; the proto directory sits at the package root.
function findProtoDir(): string {
  for (const rel of ['../proto/', '../../proto/']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(`${dir}envoy/service/ratelimit/v3/rls.proto`)) return dir;
  }
  throw new Error('rls-proto: proto/ directory not found next to the package sources');
}

/** Absolute path of the `proto/` directory, with a trailing slash (import roots are relative to it). */
export const PROTO_DIR = findProtoDir();

export const PROTO_FILES = {
  rls: 'envoy/service/ratelimit/v3/rls.proto',
  ratelimitCommon: 'envoy/extensions/common/ratelimit/v3/ratelimit.proto',
  ratelimitUnit: 'envoy/type/v3/ratelimit_unit.proto',
  coreBase: 'envoy/config/core/v3/base.proto',
  health: 'grpc/health/v1/health.proto',
  discovery: 'envoy/service/discovery/v3/discovery.proto',
  ads: 'envoy/service/discovery/v3/ads.proto',
  rlsConfig: 'ratelimit/config/ratelimit/v3/rls_conf.proto',
  rpcStatus: 'google/rpc/status.proto',
  rlqs: 'envoy/service/rate_limit_quota/v3/rlqs.proto',
  rateLimitStrategy: 'envoy/type/v3/ratelimit_strategy.proto',
  tokenBucket: 'envoy/type/v3/token_bucket.proto',
} as const;
