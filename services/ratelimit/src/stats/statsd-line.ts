// Renders one stat observation as a statsd line. Two dialects:
//   plain:   `<name>[.__k=v…]:<value>|<type>` — tags folded into the name as upstream (gostats);
//   tagged:  `<name>:<value>|<type>|#k:v,k2:v2` — DogStatsD, after the mogrifiers ran.
// The name/tag part of a stat never changes, so it is rendered once per stat and cached.
import { mogrify, type Mogrifier } from './mogrifiers.js';
import { mergedTagPairs, serializeTaggedName } from './stat-tags.js';
import type { StatTags } from '@rls/engine';

export type StatsdType = 'c' | 'g' | 'ms';

/** A stat as the formatter sees it (Counter, Gauge and Timer all fit). */
export interface NamedStat {
  readonly name: string;
  readonly tags: StatTags;
}

export interface StatsdLineFormatter {
  line(stat: NamedStat, value: number, type: StatsdType): string;
}

/** Integral values print without a fraction; others in JavaScript's shortest round-trip form. */
function formatValue(v: number): string {
  return Number.isInteger(v) ? v.toFixed(0) : String(v);
}

interface Rendered {
  head: string;
  tail: string;
}

abstract class CachingFormatter implements StatsdLineFormatter {
  private readonly cache = new WeakMap<NamedStat, Rendered>();
  protected abstract render(stat: NamedStat): Rendered;
  line(stat: NamedStat, value: number, type: StatsdType): string {
    let r = this.cache.get(stat);
    if (r === undefined) {
      r = this.render(stat);
      this.cache.set(stat, r);
    }
    return `${r.head}:${formatValue(value)}|${type}${r.tail}`;
  }
}

export class PlainStatsdFormatter extends CachingFormatter {
  constructor(private readonly extraTags: StatTags) {
    super();
  }
  protected override render(stat: NamedStat): Rendered {
    return { head: serializeTaggedName(stat.name, mergedTagPairs(stat.tags, this.extraTags)), tail: '' };
  }
}

/** DogStatsD tag text cannot hold `,` (separator) or `|` (field separator). */
function dogTagText(s: string): string {
  return s.replace(/[,|]/g, '_');
}

export class TaggedStatsdFormatter extends CachingFormatter {
  constructor(
    private readonly extraTags: StatTags,
    private readonly mogrifiers: readonly Mogrifier[],
  ) {
    super();
  }
  protected override render(stat: NamedStat): Rendered {
    const pairs = mergedTagPairs(stat.tags, this.extraTags);
    const m = mogrify(stat.name, this.mogrifiers);
    const name = m?.name ?? stat.name;
    const all = m === undefined ? pairs : [...pairs, ...m.tags];
    const tail = all.length === 0 ? '' : `|#${all.map(([k, v]) => `${dogTagText(k)}:${dogTagText(v)}`).join(',')}`;
    return { head: name, tail };
  }
}
