// A setting that is a credential (a store password, `user:password`, a token). Its bytes are kept in
// a Buffer and never in a JavaScript string once parsed: a V8 heap snapshot (the ratelimit debug
// server's /debug/pprof/heap) contains the text of every live string but not the contents of
// Buffers, so a snapshot taken for a memory problem does not hand out the password. It prints as
// `[redacted]` wherever it is turned into text (logs, JSON, util.inspect, template strings).
// Consumers take the bytes (`copyBytes`) and keep what they build from them in Buffers too.
import { inspect } from 'node:util';

const REDACTED = '[redacted]';

export class Secret {
  readonly #bytes: Buffer;

  private constructor(bytes: Buffer) {
    this.#bytes = bytes;
  }

  /**
   * From the text of an environment variable. The caller's string cannot be wiped (strings are
   * immutable); it becomes garbage when the caller drops it, and a heap snapshot collects garbage
   * before it walks the heap.
   */
  static fromText(text: string): Secret {
    return new Secret(Buffer.from(text, 'utf8'));
  }

  static readonly NONE: Secret = new Secret(Buffer.alloc(0));

  get empty(): boolean {
    return this.#bytes.length === 0;
  }

  get byteLength(): number {
    return this.#bytes.length;
  }

  /** A copy of the bytes, for building what is sent (zero it with `fill(0)` when it is not kept). */
  copyBytes(): Buffer {
    return Buffer.from(this.#bytes);
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return `Secret(${REDACTED})`;
  }
}

/** A secret setting's parser: any text (empty: no secret). */
export function parseSecret(raw: string): Secret {
  return raw === '' ? Secret.NONE : Secret.fromText(raw);
}

/** A secret setting's `redact`: what error and warning messages show instead of the value. */
export function redactSecret(): string {
  return REDACTED;
}
