// Bounds on the shape of one RateLimitRequest, enforced while decoding (protobuf and JSON) so an
// oversized request is refused before its descriptors are built: one definition of the limits,
// handed to both decoders by the server that owns the settings.

export interface RequestLimits {
  /** Most descriptors in one request. */
  readonly maxDescriptors: number;
  /** Most entries in one descriptor. */
  readonly maxEntriesPerDescriptor: number;
  /** Most bytes (UTF-8) of one entry's key plus value. */
  readonly maxEntryBytes: number;
  /**
   * Where each limit is configured (e.g. an environment variable name), quoted in the error
   * message so an operator knows which knob to turn; omitted when empty.
   */
  readonly sources?: Partial<Readonly<Record<RequestLimitName, string>>> | undefined;
}

export type RequestLimitName = 'maxDescriptors' | 'maxEntriesPerDescriptor' | 'maxEntryBytes';

/**
 * Far above what Envoy sends (one descriptor per rate limit action of a route, each with a few
 * entries), small enough that the largest accepted request is processed in a few milliseconds.
 */
export const DEFAULT_REQUEST_LIMITS: RequestLimits = Object.freeze({
  maxDescriptors: 256,
  maxEntriesPerDescriptor: 32,
  maxEntryBytes: 4096,
});

/** A request beyond one of the RequestLimits: the client's problem (INVALID_ARGUMENT / 400). */
export class RequestLimitError extends Error {
  readonly limit: RequestLimitName;
  readonly max: number;
  /** Field path of the offending element, e.g. `descriptors[3].entries`. */
  readonly path: string;
  constructor(limits: RequestLimits, limit: RequestLimitName, path: string, what: string) {
    const max = limits[limit];
    const source = limits.sources?.[limit];
    super(`${path}: ${what} (limit ${max}${source !== undefined && source !== '' ? `, set by ${source}` : ''})`);
    this.limit = limit;
    this.max = max;
    this.path = path;
    this.name = 'RequestLimitError';
  }
}

export function isRequestLimitError(err: unknown): err is RequestLimitError {
  return err instanceof RequestLimitError;
}

export function tooManyDescriptors(limits: RequestLimits): RequestLimitError {
  return new RequestLimitError(limits, 'maxDescriptors', 'descriptors', `more than ${limits.maxDescriptors} descriptors in one request`);
}

export function tooManyEntries(limits: RequestLimits, descriptorIndex: number): RequestLimitError {
  return new RequestLimitError(
    limits,
    'maxEntriesPerDescriptor',
    `descriptors[${descriptorIndex}].entries`,
    `more than ${limits.maxEntriesPerDescriptor} entries in one descriptor`,
  );
}

export function entryTooLong(limits: RequestLimits, descriptorIndex: number, entryIndex: number): RequestLimitError {
  return new RequestLimitError(
    limits,
    'maxEntryBytes',
    `descriptors[${descriptorIndex}].entries[${entryIndex}]`,
    `key and value longer than ${limits.maxEntryBytes} bytes`,
  );
}
