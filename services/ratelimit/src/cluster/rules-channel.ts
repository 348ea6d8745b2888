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

export function isRulesRequest(msg: unknown): boolean {
  return typeof msg === 'object' && msg !== null && (msg as { t?: unknown }).t === RULES_GET;
}
