// protobufjs codecs for the comparison servers: what a Node user would use with grpc-js
// (@grpc/proto-loader is protobufjs underneath).
import protobuf from 'protobufjs';
import { repoRoot } from '../lib/harness.mjs';

const protoDir = `${repoRoot}packages/rls-proto/proto/`;

export function loadRls() {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => (target.startsWith('google/protobuf/') ? protobuf.util.path.resolve('', target) : protoDir + target);
  root.loadSync('envoy/service/ratelimit/v3/rls.proto', { keepCase: false });
  const Req = root.lookupType('envoy.service.ratelimit.v3.RateLimitRequest');
  const Res = root.lookupType('envoy.service.ratelimit.v3.RateLimitResponse');
  return { Req, Res };
}

export const SERVICE_PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
