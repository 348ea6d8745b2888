// The rule messages of worker mode's IPC channel. A worker asks for the current rules when it
// starts (`rls-rules-get`: a respawned worker gets them before it listens); the primary answers,
// and sends every later good load to every worker unasked. `seq` orders them: a worker keeps the
// highest it has seen, so an answer and a broadcast crossing each other do no harm.
import type { RuleSnapshot } from '../provider/rule-snapshot.js';

export const RULES_GET = 'rls-rules-get';

export interface RulesMessage {
  t: 'rls-rules';
  /** Increases with every snapshot the primary publishes. */
  seq: number;
  /** null: no load has succeeded yet (the worker serves "no rate limit configuration loaded"). */
  snapshot: RuleSnapshot | null;
}

export function isRulesMessage(msg: unknown): msg is RulesMessage {
  return typeof msg === 'object' && msg !== null && (msg as { t?: unknown }).t === 'rls-rules' && typeof (msg as { seq?: unknown }).seq === 'number';
}

/**
 * A load the primary rejected (the workers keep their rules), sent to every worker for the operator
 * page's reload history. Texts are cut by the sender; a worker that starts later does not get it.
 */
export interface RulesErrorMessage {
  t: 'rls-rules-error';
  at: number;
  /** `file` or `xds`. */
  source: string;
  error: string;
  file?: string;
}

export function isRulesErrorMessage(msg: unknown): msg is RulesErrorMessage {
  if (typeof msg !== 'object' || msg === null) return false;
  const m = msg as { t?: unknown; at?: unknown; source?: unknown; error?: unknown; file?: unknown };
  return m.t === 'rls-rules-error' && typeof m.at === 'number' && typeof m.source === 'string' && typeof m.error === 'string' && (m.file === undefined || typeof m.file === 'string');
}

export function isRulesRequest(msg: unknown): boolean {
  return typeof msg === 'object' && msg !== null && (msg as { t?: unknown }).t === RULES_GET;
}
