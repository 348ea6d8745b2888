// Turns rule-file text into a small typed tree that remembers what yaml.v2 (the Go library
// upstream uses) would have seen: the YAML 1.1 type of every scalar and its source text. The
// validation rules of upstream depend on those types (a float leaf is an error, `value: 123` is
// the string "123"), which plain JS values would lose.
import { isAlias, isMap, isScalar, isSeq, parseAllDocuments, type Document, type Node } from 'yaml';

export type ScalarType = 'str' | 'int' | 'float' | 'bool' | 'null' | 'timestamp' | 'other';

export interface YScalar {
  readonly kind: 'scalar';
  readonly type: ScalarType;
  /** The resolved value (ints as bigint). */
  readonly value: string | number | bigint | boolean | null;
  /** The scalar as written (unquoted/unescaped); what yaml.v2 stores into a string field. */
  readonly text: string;
  readonly line: number;
}
export interface YMap {
  readonly kind: 'map';
  readonly pairs: readonly { readonly key: YNode; readonly value: YNode }[];
  readonly line: number;
}
export interface YSeq {
  readonly kind: 'seq';
  readonly items: readonly YNode[];
  readonly line: number;
}
export type YNode = YScalar | YMap | YSeq;

/** A YAML syntax error; the caller prefixes the source name. */
export class YamlSyntaxError extends Error {}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
// Guards against alias bombs: operators write rule files, but a runaway file must not hang a reload.
// 4M nodes is about 360,000 one-line rules (a CIDR allow list of 100,000 blocks is about 1.1M nodes).
export const MAX_YAML_NODES = 4_000_000;

/**
 * Parses every document of `text`. Documents without content (an empty file, comments only, a
 * trailing `---`) are returned as `null`.
 */
export function parseYamlDocuments(text: string): (YNode | null)[] {
  const lineStarts = computeLineStarts(text);
  const docs = parseAllDocuments(text, {
    version: '1.1',
    intAsBigInt: true,
    // yaml.v2 keeps the last of duplicate map keys instead of failing.
    uniqueKeys: false,
    prettyErrors: false,
  });
  const list: Document.Parsed[] = Array.isArray(docs) ? docs : [];
  for (const doc of list) {
    const err = doc.errors[0];
    if (err !== undefined) {
      const line = lineOf(lineStarts, err.pos[0]);
      throw new YamlSyntaxError(`yaml: line ${line}: ${firstLine(err.message)}`);
    }
  }
  return list.map((doc) => {
    const budget = { left: MAX_YAML_NODES };
    if (doc.contents === null) return null;
    const root = convert(doc, doc.contents, lineStarts, budget, 0);
    // A document that is only `---` (or only comments after it) has a null root: no content.
    return root.kind === 'scalar' && root.type === 'null' ? null : root;
  });
}

function convert(doc: Document.Parsed, node: Node, lineStarts: number[], budget: { left: number }, depth: number): YNode {
  if (--budget.left < 0 || depth > 1000) throw new YamlSyntaxError(`yaml: document too large: more than ${MAX_YAML_NODES} nodes after alias expansion, or nested more than 1000 deep`);
  const line = lineOf(lineStarts, node.range?.[0] ?? 0);
  if (isAlias(node)) {
    const target = node.resolve(doc);
    if (target === undefined) throw new YamlSyntaxError(`yaml: line ${line}: unknown anchor '${node.source}' referenced`);
    return convert(doc, target, lineStarts, budget, depth + 1);
  }
  if (isScalar(node)) return scalarOf(node.value, node.source, line);
  if (isSeq(node)) {
    return { kind: 'seq', items: node.items.map((n) => convert(doc, n as Node, lineStarts, budget, depth + 1)), line };
  }
  if (isMap(node)) {
    const explicit: { key: YNode; value: YNode }[] = [];
    const merged: { key: YNode; value: YNode }[] = [];
    for (const pair of node.items) {
      const keyNode = pair.key as Node | null;
      const valueNode = pair.value as Node | null;
      // YAML 1.1 merge key (`<<: *base`): yaml.v2 resolves it before anything validates keys.
      if (keyNode !== null && isScalar(keyNode) && typeof keyNode.value === 'symbol') {
        const source = valueNode === null ? null : convert(doc, valueNode, lineStarts, budget, depth + 1);
        const maps = source === null ? [] : source.kind === 'seq' ? source.items : [source];
        for (const m of maps) {
          if (m.kind !== 'map') throw new YamlSyntaxError(`yaml: line ${line}: map merge requires map or sequence of maps as the value`);
          merged.push(...m.pairs);
        }
        continue;
      }
      const key = keyNode === null ? nullScalar(line) : convert(doc, keyNode, lineStarts, budget, depth + 1);
      const value = valueNode === null ? nullScalar(line) : convert(doc, valueNode, lineStarts, budget, depth + 1);
      explicit.push({ key, value });
    }
    const pairs = dedupeKeepLast(explicit);
    if (merged.length > 0) {
      const present = new Set(pairs.map((p) => identity(p.key)));
      for (const p of dedupeKeepLast(merged)) if (!present.has(identity(p.key))) pairs.push(p);
    }
    return { kind: 'map', pairs, line };
  }
  throw new YamlSyntaxError(`yaml: line ${line}: unsupported node`);
}

function scalarOf(value: unknown, source: string | undefined, line: number): YScalar {
  const text = source ?? (value === null || value === undefined ? '' : String(value as string));
  if (value === null || value === undefined) return { kind: 'scalar', type: 'null', value: null, text, line };
  if (typeof value === 'string') return { kind: 'scalar', type: 'str', value, text, line };
  if (typeof value === 'boolean') return { kind: 'scalar', type: 'bool', value, text, line };
  if (typeof value === 'bigint') {
    const type: ScalarType = value >= INT64_MIN && value <= INT64_MAX ? 'int' : 'other';
    return { kind: 'scalar', type, value, text, line };
  }
  if (typeof value === 'number') return { kind: 'scalar', type: 'float', value, text, line };
  if (value instanceof Date) return { kind: 'scalar', type: 'timestamp', value: text, text, line };
  return { kind: 'scalar', type: 'other', value: text, text, line };
}

function nullScalar(line: number): YScalar {
  return { kind: 'scalar', type: 'null', value: null, text: '', line };
}

/** A printable identity of a key, used for duplicate and merge handling. */
function identity(n: YNode): string {
  return n.kind === 'scalar' ? `${n.type}:${n.text}` : `${n.kind}@${n.line}`;
}

function dedupeKeepLast(pairs: { key: YNode; value: YNode }[]): { key: YNode; value: YNode }[] {
  const last = new Map<string, number>();
  pairs.forEach((p, i) => last.set(identity(p.key), i));
  return pairs.filter((p, i) => last.get(identity(p.key)) === i);
}

function computeLineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return starts;
}

function lineOf(starts: number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((starts[mid] ?? 0) <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

function firstLine(s: string): string {
  const i = s.indexOf('\n');
  return i < 0 ? s : s.slice(0, i);
}

/** Go-`%v`-like rendering of a node, used inside upstream's error texts. */
export function renderNode(n: YNode): string {
  if (n.kind === 'scalar') {
    if (n.type === 'null') return '<nil>';
    if (typeof n.value === 'number' || typeof n.value === 'bigint' || typeof n.value === 'boolean') return String(n.value);
    return n.text;
  }
  if (n.kind === 'seq') return `[${n.items.map(renderNode).join(' ')}]`;
  return `map[${n.pairs.map((p) => `${renderNode(p.key)}:${renderNode(p.value)}`).join(' ')}]`;
}
