// The store key of one bucket's shared record: the domain as a JSON string, then the canonical
// bucket key (itself JSON), so no domain or bucket value can be read as another's. One key per
// bucket: every script touches one key, so Redis Cluster routes it by that key alone.
export function quotaShareKey(prefix: string, domain: string, bucketKey: string): string {
  return `${prefix}rlqs:${JSON.stringify(domain)}:${bucketKey}`;
}
