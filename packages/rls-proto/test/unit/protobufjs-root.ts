// Loads this package's .proto files with protobufjs: the independent codec the hand-coded one is
// checked against. google/protobuf/* come from protobufjs's bundled well-known types.
import protobuf from 'protobufjs';
import { PROTO_DIR, PROTO_FILES } from '../../src/proto-files.js';

export async function loadProtobufRoot(): Promise<protobuf.Root> {
  const root = new protobuf.Root();
  root.resolvePath = (_origin: string, target: string): string => (target.startsWith('google/protobuf/') ? target : `${PROTO_DIR}${target}`);
  await root.load([PROTO_FILES.rls, PROTO_FILES.health, PROTO_FILES.ads, PROTO_FILES.rlsConfig, PROTO_FILES.rlqs], { keepCase: false });
  root.resolveAll();
  return root;
}

/** Small deterministic PRNG (mulberry32) so failures reproduce from the printed seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
