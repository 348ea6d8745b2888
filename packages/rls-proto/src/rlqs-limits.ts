// Bounds on one RateLimitQuotaUsageReports message, enforced while decoding so a hostile or
// runaway data plane is refused before the excess buckets are built. The server that owns the
// settings hands one RlqsReportLimits to the decoder (as request-limits.ts does for RLS).

export interface RlqsReportLimits {
  /** Most bytes of one encoded report message (checked before anything is decoded). */
  readonly maxMessageBytes: number;
  /** Most bucket_quota_usages in one message. */
  readonly maxBucketsPerReport: number;
  /** Most entries in one bucket_id map. */
  readonly maxBucketIdEntries: number;
  /** Most bytes (UTF-8) of one bucket_id entry's key plus value. */
  readonly maxBucketEntryBytes: number;
  /** Most bytes (UTF-8) of the domain. */
  readonly maxDomainBytes: number;
  /** Where each limit is configured (an environment variable name), quoted in the error message. */
  readonly sources?: Partial<Readonly<Record<RlqsLimitName, string>>> | undefined;
}

export type RlqsLimitName = 'maxMessageBytes' | 'maxBucketsPerReport' | 'maxBucketIdEntries' | 'maxBucketEntryBytes' | 'maxDomainBytes';

/**
 * Envoy sends every bucket it tracks in one message per reporting interval, so a message holds as
 * many buckets as a data plane has active: a few to a few thousand. A bucket id is what a
 * bucket_id_builder makes: a handful of short entries. Beyond these a report is either broken or
 * an attack; the defaults keep the largest accepted message decodable in a few milliseconds.
 */
export const DEFAULT_RLQS_REPORT_LIMITS: RlqsReportLimits = Object.freeze({
  maxMessageBytes: 4 * 1024 * 1024,
  maxBucketsPerReport: 4096,
  maxBucketIdEntries: 16,
  maxBucketEntryBytes: 1024,
  maxDomainBytes: 256,
});

/** A report beyond one of the RlqsReportLimits: the client's problem (INVALID_ARGUMENT / RESOURCE_EXHAUSTED). */
export class RlqsLimitError extends Error {
  readonly limit: RlqsLimitName;
  readonly max: number;
  /** Field path of the offending element, e.g. `bucket_quota_usages[3].bucket_id`. */
  readonly path: string;
  constructor(limits: RlqsReportLimits, limit: RlqsLimitName, path: string, what: string) {
    const max = limits[limit];
    const source = limits.sources?.[limit];
    super(`${path}: ${what} (limit ${max}${source !== undefined && source !== '' ? `, set by ${source}` : ''})`);
    this.limit = limit;
    this.max = max;
    this.path = path;
    this.name = 'RlqsLimitError';
  }
}

export function isRlqsLimitError(err: unknown): err is RlqsLimitError {
  return err instanceof RlqsLimitError;
}
