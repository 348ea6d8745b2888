import { ByteLru } from './byte-lru.js';
import type { SeriesBlock } from './series-block.js';

/** Closed series blocks, least recently used out first, bounded by QUOTES_HISTORY_CACHE_BYTES. */
export class BlockCache extends ByteLru<SeriesBlock> {
  constructor(maxBytes: number) {
    super(maxBytes, (b) => b.bytes);
  }
}
